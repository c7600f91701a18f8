# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The VLM captioner and its worker, against a small OpenAI-compatible test server.

The test server stands in for vLLM, which cannot run here: it answers
/v1/chat/completions the way an OpenAI-compatible server does, records each request, and
can be told to answer badly, slowly or with an error.
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from waymark.memory.views.captioner import (
    CAPTION_VIEWS,
    PROMPTS,
    Captioner,
    CaptionerConfig,
    CaptionError,
    CaptionJob,
    CaptionUnavailableError,
    CaptionWorker,
    clean_caption,
)

GRID = b'\xff\xd8grid-picture\xff\xd9'
CENTER = b'\xff\xd8center-picture\xff\xd9'
JOB = CaptionJob('walk/s3', GRID, CENTER)


class FakeVLM(ThreadingHTTPServer):
    """Answers chat completions; `mode` picks the answer, `requests` records the asks."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(('127.0.0.1', 0), _Handler)
        self.mode = 'ok'
        self.delay_s = 0.0
        self.requests: list[dict] = []

    @property
    def base_url(self) -> str:
        return f'http://127.0.0.1:{self.server_address[1]}/v1'

    def asked(self) -> list[tuple[str, bytes]]:
        """(prompt, picture) of each request received."""
        found = []
        for request in self.requests:
            parts = request['messages'][0]['content']
            text = next(p['text'] for p in parts if p['type'] == 'text')
            url = next(p['image_url']['url'] for p in parts if p['type'] == 'image_url')
            assert url.startswith('data:image/jpeg;base64,')
            found.append((text, base64.b64decode(url.split(',', 1)[1])))
        return found


class _Handler(BaseHTTPRequestHandler):
    server: FakeVLM

    def log_message(self, *args) -> None:  # keep the test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        server = self.server
        server.requests.append(body)
        if server.delay_s:
            time.sleep(server.delay_s)
        mode = server.mode
        if mode == 'garbled':
            return self._send(200, b'<html>not a completion', 'text/html')
        if mode in ('500', '400', '429'):
            return self._send(int(mode), b'{"error": {"message": "no"}}')
        prompt = next(p['text'] for p in body['messages'][0]['content'] if p['type'] == 'text')
        view = next(view for view, text in PROMPTS.items() if text == prompt)
        content = {
            'ok': f'  A corridor with a red door.\x07 \n\n  Sign: ROOM 204 ({view})  ',
            'empty': '   \n ',
            'null': None,
            'parts': [{'type': 'image_url', 'image_url': {'url': 'data:,'}}],
            'long': 'word ' * 2000,
        }.get(mode)
        message = {'role': 'assistant', 'content': content}
        choices = (
            []
            if mode == 'no_choices'
            else [{'index': 0, 'message': message, 'finish_reason': 'stop'}]
        )
        answer = {
            'id': 'cmpl-1',
            'object': 'chat.completion',
            'created': 0,
            'model': body['model'],
            'choices': choices,
        }
        self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, data: bytes, kind: str = 'application/json') -> None:
        self.send_response(status)
        self.send_header('Content-Type', kind)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def vlm():
    server = FakeVLM()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def config(base_url: str, **changes) -> CaptionerConfig:
    settings = {'model': 'test/vlm', 'timeout_s': 5.0, 'max_retries': 0, **changes}
    return CaptionerConfig(base_url=base_url, **settings)


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def test_each_view_is_asked_with_its_own_prompt_and_picture(vlm):
    captions = Captioner(config(vlm.base_url)).caption(JOB)
    assert list(captions) == list(CAPTION_VIEWS)
    asked = vlm.asked()
    assert asked == [
        (PROMPTS['caption_full'], GRID),
        (PROMPTS['caption_center'], CENTER),
        (PROMPTS['caption_detail'], GRID),
    ]
    assert len(set(PROMPTS.values())) == 3
    assert all(r['model'] == 'test/vlm' and r['temperature'] == 0.0 for r in vlm.requests)
    assert all(r['max_tokens'] == 200 for r in vlm.requests)
    # Whitespace collapsed, blank lines and control characters removed.
    assert captions['caption_center'] == (
        'A corridor with a red door.\nSign: ROOM 204 (caption_center)'
    )


def test_only_the_configured_views_are_asked(vlm):
    captions = Captioner(config(vlm.base_url, views=('caption_detail',))).caption(JOB)
    assert list(captions) == ['caption_detail'] and len(vlm.requests) == 1
    with pytest.raises(ValueError):
        config(vlm.base_url, views=('caption_everything',))


def test_the_cache_prevents_asking_twice(vlm, tmp_path):
    first = Captioner(config(vlm.base_url, cache_dir=tmp_path)).caption(JOB)
    assert len(vlm.requests) == 3
    again = Captioner(config(vlm.base_url, cache_dir=tmp_path))  # as after a restart
    assert again.caption(JOB) == first
    assert len(vlm.requests) == 3 and again.counts['cache_hits'] == 3
    # Another picture, or another model, is asked for.
    Captioner(config(vlm.base_url, cache_dir=tmp_path)).caption(CaptionJob('k', GRID, b'x'))
    assert len(vlm.requests) == 4
    Captioner(config(vlm.base_url, cache_dir=tmp_path, model='other')).caption(JOB)
    assert len(vlm.requests) == 7
    assert not list(tmp_path.rglob('*.tmp'))


def test_a_corrupt_cache_file_is_ignored_and_rewritten(vlm, tmp_path):
    Captioner(config(vlm.base_url, cache_dir=tmp_path)).caption(JOB)
    files = sorted(tmp_path.rglob('*.json'))
    assert len(files) == 3
    files[0].write_bytes(b'{"caption": "half a wri')
    files[1].write_text(json.dumps({'model': 'test/vlm', 'caption': ''}))
    captioner = Captioner(config(vlm.base_url, cache_dir=tmp_path))
    captioner.caption(JOB)
    assert len(vlm.requests) == 5 and captioner.counts['cache_corrupt'] == 2
    assert all(json.loads(f.read_text())['caption'] for f in files)


def test_a_failed_view_does_not_lose_the_others(vlm, tmp_path):
    captioner = Captioner(config(vlm.base_url, cache_dir=tmp_path))
    with pytest.raises(CaptionError, match='no picture'):
        captioner.caption(CaptionJob('k', GRID, b''))
    assert len(vlm.requests) == 1  # caption_full was asked and cached
    captioner.caption(JOB)
    assert len(vlm.requests) == 3


def test_an_unreachable_server_fails_within_the_bounded_retries():
    captioner = Captioner(config(closed_port_url(), max_retries=1, timeout_s=1.0))
    started = time.monotonic()
    with pytest.raises(CaptionUnavailableError):
        captioner.caption(JOB)
    assert time.monotonic() - started < 10.0
    assert captioner.counts['requests'] == 1 and captioner.counts['request_failures'] == 1


def test_a_server_that_does_not_answer_in_time_times_out(vlm):
    vlm.delay_s = 3.0
    started = time.monotonic()
    with pytest.raises(CaptionUnavailableError):
        Captioner(config(vlm.base_url, timeout_s=0.3)).caption(JOB)
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize('mode', ['empty', 'null', 'parts', 'no_choices', 'garbled'])
def test_an_answer_without_usable_text_is_an_error(vlm, mode, tmp_path):
    vlm.mode = mode
    captioner = Captioner(config(vlm.base_url, cache_dir=tmp_path))
    with pytest.raises(CaptionError) as raised:
        captioner.caption(JOB)
    assert not isinstance(raised.value, CaptionUnavailableError)
    assert not list(tmp_path.rglob('*.json'))  # nothing unusable is cached


@pytest.mark.parametrize(('mode', 'unavailable'), [('500', True), ('429', True), ('400', False)])
def test_error_statuses(vlm, mode, unavailable):
    vlm.mode = mode
    with pytest.raises(CaptionError) as raised:
        Captioner(config(vlm.base_url)).caption(JOB)
    assert isinstance(raised.value, CaptionUnavailableError) == unavailable


def test_long_answers_are_capped(vlm):
    vlm.mode = 'long'
    captions = Captioner(config(vlm.base_url, max_caption_chars=300)).caption(JOB)
    assert all(0 < len(text) <= 300 for text in captions.values())


def test_clean_caption():
    assert clean_caption('  a\tb \x00c\n\n d  ', 100) == 'a b c\nd'
    assert clean_caption(None, 100) == ''
    assert clean_caption(['a'], 100) == ''
    assert clean_caption('abc def', 4) == 'abc'


# -- worker --------------------------------------------------------------------------------


class Results:
    def __init__(self) -> None:
        self.done: dict[str, dict[str, str]] = {}
        self.errors: dict[str, Exception] = {}
        self.error_at: dict[str, float] = {}  # monotonic seconds
        self.event = threading.Event()

    def on_done(self, key: str, captions: dict[str, str]) -> None:
        self.done[key] = captions
        self.event.set()

    def on_error(self, key: str, error: Exception) -> None:
        self.error_at[key] = time.monotonic()
        self.errors[key] = error
        self.event.set()


class GatedCaptioner:
    """Captions only when let through, so that tests control what the worker is doing."""

    def __init__(self, error: Exception | None = None) -> None:
        self.gate = threading.Semaphore(0)
        self.error = error
        self.calls: list[tuple[str, float]] = []
        self.counts = {'requests': 0}

    def caption(self, job: CaptionJob) -> dict[str, str]:
        self.calls.append((job.key, time.monotonic()))
        if self.error is None:
            self.gate.acquire()
            return {view: job.key for view in CAPTION_VIEWS}
        raise self.error


def wait_for(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.01)


def test_the_worker_delivers_captions(vlm):
    results = Results()
    worker = CaptionWorker(Captioner(config(vlm.base_url)), results.on_done, results.on_error)
    assert worker.submit(JOB)
    wait_for(lambda: JOB.key in results.done)
    assert set(results.done[JOB.key]) == set(CAPTION_VIEWS)
    assert worker.stop(timeout_s=5.0) == 0
    counts = worker.counts
    assert counts['jobs_done'] == 1 and counts['requests'] == 3 and worker.pending == 0
    assert not worker.submit(JOB) and worker.counts['jobs_rejected_stopped'] == 1


def test_waiting_until_idle_is_bounded_and_ends_when_the_queue_is_done():
    captioner = GatedCaptioner()
    results = Results()
    worker = CaptionWorker(captioner, results.on_done, results.on_error)
    for key in ('a', 'b', 'c'):
        assert worker.submit(CaptionJob(key, GRID, CENTER))
    assert worker.wait_until_idle(0.05) == 3  # none can finish before the gate opens
    for _ in range(3):
        captioner.gate.release()
    assert worker.wait_until_idle(10.0) == 0
    assert worker.stop(timeout_s=5.0) == 0  # and the last result has been delivered
    assert set(results.done) == {'a', 'b', 'c'} and not results.errors


def test_the_worker_reports_an_unreachable_server_and_backs_off():
    results = Results()
    captioner = Captioner(config(closed_port_url()))
    worker = CaptionWorker(
        captioner, results.on_done, results.on_error, backoff_s=0.3, max_backoff_s=0.6
    )
    for i in range(5):
        assert worker.submit(CaptionJob(f'walk/s{i}', GRID, CENTER))
    wait_for(lambda: 'walk/s0' in results.errors)
    assert isinstance(results.errors['walk/s0'], CaptionUnavailableError)
    wait_for(lambda: len(results.errors) == 2)
    # Paused, not spinning through the queue: the pause begins after the first error is
    # delivered (on the worker's thread), so the next comes backoff_s later at the least.
    assert results.error_at['walk/s1'] - results.error_at['walk/s0'] >= 0.3
    assert worker.stop(timeout_s=5.0) == 3
    assert worker.counts['backoffs'] >= 1 and not results.done


def test_the_backoff_doubles_up_to_its_cap_and_resets_after_an_answer():
    captioner = GatedCaptioner(error=CaptionUnavailableError('away'))
    results = Results()
    worker = CaptionWorker(
        captioner, results.on_done, results.on_error, backoff_s=0.05, max_backoff_s=0.2
    )
    for i in range(6):
        worker.submit(CaptionJob(f'k{i}', GRID, CENTER))
    wait_for(lambda: len(results.errors) == 6)
    times = [t for _, t in captioner.calls]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    for gap, pause in zip(gaps, [0.05, 0.1, 0.2, 0.2, 0.2], strict=True):
        assert gap >= pause * 0.9
    assert worker._pause_s == pytest.approx(0.2)
    captioner.error = CaptionError('garbled')  # the server answers again
    worker.submit(CaptionJob('k6', GRID, CENTER))
    wait_for(lambda: 'k6' in results.errors)
    wait_for(lambda: worker._pause_s == 0.0)
    worker.stop(timeout_s=5.0)


def test_submit_never_blocks_and_refuses_when_full():
    captioner = GatedCaptioner()
    results = Results()
    worker = CaptionWorker(captioner, results.on_done, results.on_error, queue_size=2)
    assert worker.submit(CaptionJob('k0', GRID, CENTER))
    wait_for(lambda: len(captioner.calls) == 1)  # k0 is in progress, the queue is empty
    assert worker.submit(CaptionJob('k1', GRID, CENTER))
    assert worker.submit(CaptionJob('k2', GRID, CENTER))
    started = time.monotonic()
    assert not worker.submit(CaptionJob('k3', GRID, CENTER))
    assert time.monotonic() - started < 0.1
    assert worker.counts['jobs_rejected_full'] == 1 and worker.pending == 3
    captioner.gate.release()
    wait_for(lambda: 'k0' in results.done)
    # k1 is now in progress and k2 queued: both are left when stopping.
    wait_for(lambda: len(captioner.calls) == 2)
    started = time.monotonic()
    assert worker.stop(timeout_s=0.2) == 2
    assert time.monotonic() - started < 1.0
    captioner.gate.release()  # k1 finishes after stop: its result is not delivered
    wait_for(lambda: worker.counts['results_dropped_at_stop'] == 1)
    assert set(results.done) == {'k0'}


def test_a_failing_callback_does_not_stop_the_worker():
    captioner = GatedCaptioner()
    calls = []

    def on_done(key: str, captions: dict[str, str]) -> None:
        calls.append(key)
        raise RuntimeError('store away')

    worker = CaptionWorker(captioner, on_done, lambda key, error: None)
    for key in ('a', 'b'):
        worker.submit(CaptionJob(key, GRID, CENTER))
        captioner.gate.release()
    # The error is counted after the callback raised: wait for the count, not the call.
    wait_for(lambda: worker.counts['callback_errors'] == 2)
    assert calls == ['a', 'b']
    assert worker.stop(timeout_s=5.0) == 0
