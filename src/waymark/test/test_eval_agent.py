# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's evaluation rows: AgentAnswerer over a small real memory, planned by the
scripted planner through the scripted OpenAI-compatible server (real HTTP), and the
harness rows, report columns and options that carry what each answer cost."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import socket
import zlib
from datetime import UTC, datetime

import cv2
import numpy as np
import pytest

from waymark.agent.agent import AgentConfig
from waymark.agent.evidence import describe_hits
from waymark.agent.llm import LLMConfig
from waymark.evaluation import harness
from waymark.evaluation.agent_answerer import UNKNOWN_MODEL, AgentAnswerer, served_model
from waymark.evaluation.answerers import (
    AnswererError,
    agent_name,
    check_answerer_name,
    model_label,
    parse_agent_name,
    row_label,
)
from waymark.evaluation.harness import EvaluationConfig, open_memory, run
from waymark.evaluation.questions import Question, QuestionSet, save_questions
from waymark.evaluation.suite import table
from waymark.geometry import Pose
from waymark.memory.entries import FRAME, SEGMENT, Hit, Keyframe
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.ingest.segments import Segmenter
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.ocr import TextLine
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims
from waymark_testing.scripted_llm import ScriptedLLMServer
from waymark_testing.scripted_planner import ScriptedPlanner, parse_hits, plan, planner_server
from waymark_testing.scripted_vlm import verification_targets, verifier_policy

T0 = 1_750_000_000 * 10**9
HALF_SECOND = 5 * 10**8
WORDS = ('pharmacy', 'bakery', 'library', 'museum', 'station')
# One sign a 1.5 s window, three frames each, walking along x: the bakery is passed twice.
ROUTE = ('pharmacy', 'bakery', 'library', 'bakery', 'museum', 'station')
FRAMES = 3 * len(ROUTE)


class WordEmbedder:
    """Bag of hashed words: texts sharing a word are similar."""

    dim = 64

    def embed_texts(self, texts):
        vectors = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r'[a-z]+', text.lower()):
                vectors[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        vectors[:, 0] += 1e-3  # never all zero
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class GreyReader:
    """Reads the word encoded in a grey image's brightness (40, 80, ...: WORDS)."""

    def read(self, image):
        word = WORDS[round(float(image.mean()) / 40) - 1]
        return [TextLine(word.upper(), 1.0, ((0, 0), (9, 0), (9, 8), (0, 8)))]


def grey_jpeg(word: str) -> bytes:
    ok, data = cv2.imencode('.jpg', np.full((48, 64, 3), 40 * (WORDS.index(word) + 1), np.uint8))
    assert ok
    return data.tobytes()


def fill(service: MemoryService) -> None:
    for step in range(FRAMES):
        service.ingest(
            Keyframe(
                session='walk',
                index=step,
                stamp_ns=T0 + step * HALF_SECOND,
                pose=Pose.from_xyz_yaw(float(step), 0.0, 0.5, 0.1 * step),
                pose_valid=True,
                map_epoch=0,
                image=grey_jpeg(ROUTE[step // 3]),
            )
        )
    service.close_segments()


@pytest.fixture
def memory(tmp_path):
    views = [TextView(WordEmbedder(), GreyReader())]
    store = MemoryStore(
        str(tmp_path / 'memory.db'),
        level_dims(views, FRAME),
        segment_views=level_dims(views, SEGMENT),
    )
    images = ImageStore(tmp_path)
    service = MemoryService(
        store, images, views, SegmentMemory(store, images, Segmenter(1.5), views)
    )
    fill(service)
    yield service
    store.close()


def ask(text: str, answer_type: str = 'position', category: str = 'basic', **truth) -> Question:
    defaults = {'position': {'position': (0.0, 0.0, 0.0)}, 'time': {'time_ns': T0}}
    fields = {**defaults.get(answer_type, {}), **truth}
    return Question(id='q', category=category, question=text, answer_type=answer_type, **fields)


def clock(stamp_ns: int) -> str:
    return datetime.fromtimestamp(stamp_ns / 10**9, UTC).strftime('%H:%M:%S')


def llm(server: ScriptedLLMServer, **changes) -> LLMConfig:
    settings = {'timeout_s': 5.0, 'retry_backoff_s': 0.01, **changes}
    return LLMConfig(base_url=server.base_url, model=server.model, **settings)


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def tools_called(server: ScriptedLLMServer) -> list[str]:
    """Names of the tool calls the planner made before its last reply (for an answered
    question: its searches), as the agent sent them back."""
    last = server.requests[-1]['messages']
    return [c['function']['name'] for m in last for c in m.get('tool_calls') or []]


def offered(server: ScriptedLLMServer) -> set[str]:
    return {t['function']['name'] for body in server.requests for t in body.get('tools') or []}


# -- the planner reads questions and hits as a model would ------------------------------


@pytest.mark.parametrize(
    ('question', 'kind', 'target', 'route', 'clock_time'),
    [
        ('Where are the red keys on the way from the gym sign to the room 1n2?', 'position',
         'red keys', ('gym sign', 'room 1n2'), None),
        ('Where did I see the cone between the bank sign and the kitchen?', 'position', 'cone',
         ('bank sign', 'kitchen'), None),
        ('Where was I at 10:01:30 UTC?', 'position', None, None, '10:01:30'),
        ('When did I last see the green potion?', 'time', 'green potion', None, None),
        ('Did I see a sign saying GYM?', 'yes_no', 'GYM sign', None, None),
        ('Where are the yellow keys near the dentist sign?', 'position',
         'yellow keys near the dentist sign', None, None),
    ],
)  # fmt: skip
def test_the_planner_reads_the_form_of_a_question(question, kind, target, route, clock_time):
    the_plan = plan(question)
    assert the_plan.kind == kind and the_plan.route == route and the_plan.clock == clock_time
    if target is not None:
        assert the_plan.target == target
    assert plan('When did I last see the museum?').which == 'last'


def test_the_planner_parses_hits_as_the_agent_renders_them(memory):
    hits = memory.search(SearchQuery(Mode.TEXT, 2, text='museum')) + memory.search(
        SearchQuery(Mode.TIME, 1, level=SEGMENT, stamp_ns=T0)
    )
    parsed = parse_hits(describe_hits(hits, T0 + 60 * 10**9))
    assert [h.id for h in parsed] == [h.record.id for h in hits]
    for seen, hit in zip(parsed, hits, strict=True):
        assert seen.pose[:2] == pytest.approx((hit.record.x, hit.record.y), abs=0.005)
    assert parsed[0].similarity == pytest.approx(hits[0].score, abs=5e-4)
    assert parsed[-1].similarity is None  # a time hit has no similarity
    unplaced = Hit(dataclasses.replace(hits[0].record, pose_valid=False), 1.0, 'text')
    assert parse_hits(describe_hits([unplaced], T0))[0].pose is None


@pytest.mark.parametrize(
    ('question', 'spoken'),
    [
        ('Where was I a minute and a half after I started?', 'a minute and a half after i started'),
        ('Where was I five minutes ago?', 'five minutes ago'),
        ('Where was I this morning at ten?', 'this morning at ten'),
        ('Where was I at ten?', 'ten'),
        ('Where was I in the kitchen?', None),
    ],
)
def test_the_planner_passes_a_spoken_time_to_the_time_tool(question, spoken):
    the_plan = plan(question)
    assert the_plan.spoken == spoken and the_plan.kind == 'position'


@pytest.mark.parametrize('verb', ['pass', 'visit', 'go through', 'go by', 'walk past', 'see'])
def test_the_planner_reads_when_did_i_pass_a_place_as_when_did_i_see_it(verb):
    the_plan = plan(f'When did I last {verb} the kitchen?')
    assert (the_plan.kind, the_plan.target, the_plan.which) == ('time', 'kitchen', 'last')


def test_the_planner_parses_hits_shown_in_a_local_zone(memory):
    hits = memory.search(SearchQuery(Mode.TEXT, 2, text='museum'))
    parsed = parse_hits(describe_hits(hits, T0 + 60 * 10**9, zone='Asia/Kolkata'))
    assert [h.id for h in parsed] == [h.record.id for h in hits]


# -- AgentAnswerer ----------------------------------------------------------------------


def test_answers_map_to_predictions_with_their_cost(memory):
    with planner_server() as server:
        answerer = AgentAnswerer(memory, llm(server), label='scripted')
        assert answerer.name == 'agent[scripted]'
        last = T0 + (FRAMES - 1) * HALF_SECOND  # asked a minute after the last window ends
        assert last + 60 * 10**9 <= answerer.now_ns <= last + 62 * 10**9

        where = answerer.answer(ask('Where is the museum?'))
        frames = {(float(x), 0.0, 0.5) for x in range(12, 15)}  # the museum's frames
        assert where.answered and where.position in frames and not where.used_fallback
        assert where.llm_calls == 2 and where.retrievals == 1 and where.verifier_calls == 0
        assert where.tokens > 0 and where.latency_s > 0
        assert where.entries_shown == 5  # one search, top-5
        assert where.memory_entries == FRAMES + len(ROUTE)  # frames and segments
        assert tools_called(server) == ['retrieve_from_text']

        stamp = T0 + 8 * HALF_SECOND
        at = answerer.answer(ask(f'Where was I at {clock(stamp)} UTC?', category='temporal'))
        assert at.position == (8.0, 0.0, 0.5) and at.time_ns == stamp
        assert tools_called(server)[0] == 'retrieve_from_time'

        when = answerer.answer(ask('When did I last see the museum?', 'time', 'temporal'))
        assert when.answered and when.time_ns == T0 + 14 * HALF_SECOND and when.position is None

        yes = answerer.answer(ask('Did I see a sign saying LIBRARY?', 'yes_no', 'yes_no', yes=True))
        no = answerer.answer(ask('Did I see a zebra?', 'yes_no', 'yes_no', yes=False))
        assert (yes.answered, yes.yes, no.answered, no.yes) == (True, True, True, False)


def test_binary_tracking_finds_the_target_between_the_anchors(memory):
    # The bakery is passed twice; only the second pass lies between the library and the museum.
    route = ask(
        'Where did I see the bakery between the library and the museum?',
        category='route',
        position=(10.0, 0.0, 0.0),
    )
    with planner_server() as server:
        bintrack = AgentAnswerer(memory, llm(server), label='scripted').answer(route)
        assert tools_called(server) == ['search_between']
        arguments = json.loads(
            next(
                c['function']['arguments']
                for m in server.requests[-1]['messages']
                for c in m.get('tool_calls') or []
            )
        )
    assert arguments == {'target': 'bakery', 'from_place': 'library', 'to_place': 'museum'}
    assert bintrack.position == pytest.approx((10.0, 0.0, 0.5))  # the segment's mean pose
    assert bintrack.retrievals > 1 and not bintrack.used_fallback


@pytest.mark.parametrize('zone', ['UTC', 'Europe/Berlin'])
def test_spoken_questions_are_answered_through_the_tools_at_the_questions_now(memory, zone):
    asked = T0 + 10 * 10**9
    questions = [
        ask('Where was I three seconds after I started?', category='spoken', now_ns=asked),
        ask('Where was I four seconds ago?', category='spoken', now_ns=asked),
        ask('When did I last pass the bakery?', 'time', 'spoken', now_ns=asked),
    ]
    with planner_server() as server:
        answerer = AgentAnswerer(memory, llm(server), AgentConfig(time_zone=zone), 'scripted')
        after, ago, passed = (answerer.answer(q) for q in questions)
    assert after.position == pytest.approx((6.0, 0.0, 0.5))  # T0 + 3 s: step 6
    assert ago.position == pytest.approx((12.0, 0.0, 0.5))  # T0 + 6 s: step 12
    # In the second bakery visit (steps 9-11; top_k 5 of the 6 bakery frames may drop one).
    assert T0 + 9 * HALF_SECOND <= passed.time_ns <= T0 + 11 * HALF_SECOND
    assert not (after.used_fallback or ago.used_fallback or passed.used_fallback)


def grey_words(jpeg: bytes) -> set[str]:
    """What the VLM stand-in sees in a picture: the word its grey level encodes."""
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    return {WORDS[round(float(image.mean()) / 40) - 1]}


@pytest.mark.parametrize('bintrack', [True, False], ids=['bt', 'no-bt'])
def test_with_a_verifier_each_position_question_costs_one_call(memory, bintrack):
    questions = [
        ask('Where did I see the bakery between the library and the museum?', category='route'),
        ask('Where is the museum?'),
        ask('Where is the station?'),
    ]
    with planner_server() as server, ScriptedLLMServer(verifier_policy(grey_words)) as vlm:
        vlm_config = harness.verifier_config(
            EvaluationConfig(None, None, None, verifier_url=vlm.base_url), llm(server)
        )
        answerer = AgentAnswerer(
            memory, llm(server), AgentConfig(search_between=bintrack), 'x', verifier=vlm_config
        )
        predictions = [answerer.answer(question) for question in questions]
        asked = [verification_targets(body) for body in vlm.requests]
    assert [p.verifier_calls for p in predictions] == [1, 1, 1]
    assert asked == [['bakery'], ['museum'], ['station']]
    route, museum, station = predictions
    # With Binary Tracking the route's leaf was verified: the second bakery pass.
    if bintrack:
        assert route.position == pytest.approx((10.0, 0.0, 0.5))
    assert museum.position[0] in {12.0, 13.0, 14.0} and station.position[0] in {15.0, 16.0, 17.0}
    assert answerer.settings['verifier'] == vlm.model


def test_the_no_bt_row_is_never_offered_search_between(memory):
    route = ask('Where is the bakery on the way from the library to the museum?', category='route')
    with planner_server() as server:
        answerer = AgentAnswerer(memory, llm(server), AgentConfig(search_between=False), 'x')
        assert answerer.name == 'agent/no-bt[x]'
        prediction = answerer.answer(route)
        assert server.requests and 'search_between' not in offered(server)
        assert tools_called(server) == ['retrieve_from_text']
        assert json.loads(server.requests[-1]['messages'][2]['tool_calls'][0]['function'][
            'arguments'
        ]) == {'query': 'bakery'}  # fmt: skip
    # A bakery frame of either pass: without the route search the question is plain search.
    assert prediction.answered and prediction.position[0] in {3.0, 4.0, 5.0, 9.0, 10.0, 11.0}
    assert prediction.memory_entries == FRAMES  # segments are not searchable without BT


def test_an_unreachable_llm_gives_flagged_fallback_answers(memory):
    down = LLMConfig(base_url=closed_port_url(), model='absent', timeout_s=2.0, max_retries=0)
    answerer = AgentAnswerer(memory, down)
    where = answerer.answer(ask('Where is the station?'))
    assert where.used_fallback and where.answered and 'LLM unreachable' in where.message
    assert where.position[0] in {15.0, 16.0, 17.0}  # the embedder-only top hit
    assert where.llm_calls == 0 and where.tokens == 0 and where.entries_shown > 0
    yes_no = answerer.answer(ask('Did I see a zebra?', 'yes_no', 'yes_no', yes=False))
    assert yes_no.used_fallback and not yes_no.answered  # a place is not a yes or a no
    assert served_model(closed_port_url(), timeout_s=1.0) == UNKNOWN_MODEL


def test_a_refused_answer_is_given_again_by_citation(memory):
    """A goal far from anything shown is refused; the planner then cites without a goal."""
    planner = ScriptedPlanner()

    def policy(body):
        reply = planner(body)
        call = reply.tool_calls[0]
        if call.name == 'final_answer' and 'goal' in call.arguments:
            moved = {**call.arguments, 'goal': {'x': 500.0, 'y': 0.0}}
            return reply.__class__(tool_calls=(call.__class__(call.name, moved),))
        return reply

    with ScriptedLLMServer(policy) as server:
        prediction = AgentAnswerer(memory, llm(server)).answer(ask('Where is the museum?'))
    assert prediction.llm_calls == 3 and not prediction.used_fallback
    assert prediction.position in {(float(x), 0.0, 0.5) for x in range(12, 15)}


# -- row names, harness, report ---------------------------------------------------------


def test_agent_row_names():
    assert agent_name() == 'agent' and agent_name(False) == 'agent/no-bt'
    assert agent_name(True, 'scripted') == 'agent[scripted]'
    assert parse_agent_name('agent/no-bt[qwen2.5-0.5b]') == (False, 'qwen2.5-0.5b')
    assert parse_agent_name('embedder-only') is None
    check_answerer_name('agent/no-bt[scripted]')
    for bad in ('agent/bt', 'agent[a/b]', 'agents'):
        with pytest.raises(AnswererError):
            check_answerer_name(bad)
    with pytest.raises(AnswererError, match='label'):
        agent_name(True, 'a b')


def test_an_agent_row_that_mostly_fell_back_is_not_labelled_the_models():
    assert row_label('agent[qwen]', 0.10) == 'agent[qwen]'
    assert (
        row_label('agent[qwen]', 0.43) == "agent[qwen] (fell back on 43%: not the model's result)"
    )
    # embedder-only is the fallback itself: its rate is always 100%
    assert row_label('embedder-only', 1.0) == 'embedder-only'
    served = model_label('Qwen/Qwen2.5-VL-7B-Instruct')  # a served name becomes a label
    assert agent_name(True, served) == 'agent[Qwen-Qwen2.5-VL-7B-Instruct]'


def build_walk(config, truth, data):
    """A MemoryBuilder: the walk above, embedded with the configured (tiny) model."""
    service = open_memory(config, data)
    try:
        for step in range(FRAMES):
            service.ingest(
                Keyframe(
                    session=harness.SESSION,
                    index=step,
                    stamp_ns=T0 + step * HALF_SECOND,
                    pose=Pose.from_xyz_yaw(float(step), 0.0, 0.5, 0.0),
                    pose_valid=True,
                    map_epoch=0,
                    image=grey_jpeg(ROUTE[step // 3]),
                )
            )
        service.close_segments()
    finally:
        service.store.close()
    return {'mode': 'walk', 'keyframes': FRAMES, 'seconds': 0.0}


@pytest.fixture
def walk_questions(tmp_path):
    questions = [
        ask('Where is the museum?', position=(13.0, 1.0, 0.0)).model_copy(update={'id': 'where'}),
        ask('Did I see a sign saying LIBRARY?', 'yes_no', 'yes_no', yes=True).model_copy(
            update={'id': 'yes'}
        ),
    ]
    path = tmp_path / 'questions.json'
    save_questions(QuestionSet(world='walk', questions=questions), path)
    return path


def evaluation(tmp_path, questions, tiny_siglip, **changes) -> EvaluationConfig:
    return EvaluationConfig(
        tmp_path / 'no-bag',
        questions,
        tmp_path / 'eval',
        image_model=tiny_siglip,
        text_model='',
        progress=False,
        **changes,
    )


def cells(markdown: str, row: str, first: str = 'answerer') -> dict[str, str]:
    """The first table row holding the cell `row`, by column header (which starts with
    the cell `first`)."""
    lines = markdown.splitlines()
    at = next(i for i, line in enumerate(lines) if f'| {row} |' in line)
    header = next(lines[i] for i in range(at, -1, -1) if lines[i].startswith(f'| {first} |'))
    names = [c.strip() for c in header.strip('|').split('|')]
    return dict(zip(names, [c.strip() for c in lines[at].strip('|').split('|')], strict=True))


def test_the_harness_adds_agent_rows_only_with_an_llm(tmp_path, walk_questions, tiny_siglip):
    plain = run(evaluation(tmp_path, walk_questions, tiny_siglip), build_walk)
    assert not any(parse_agent_name(name) for name in plain['answerers'])
    with pytest.raises(AnswererError, match='LLM server'):
        run(evaluation(tmp_path, walk_questions, tiny_siglip, answerers=('agent',)), build_walk)

    with planner_server() as server:
        settings = evaluation(
            tmp_path, walk_questions, tiny_siglip, llm_url=server.base_url, agent_label='scripted'
        )
        report = run(settings, build_walk)
    rows = list(report['answerers'])
    assert rows == [*plain['answerers'], 'agent[scripted]', 'agent/no-bt[scripted]']
    for name in ('agent[scripted]', 'agent/no-bt[scripted]'):
        overall = report['answerers'][name]['overall']
        assert overall['llm_calls_per_query'] == 2.0 and overall['tokens_per_query'] > 0
        assert overall['fallback_rate'] == 0.0 and overall['retrievals_per_query'] >= 1.0
        predictions = report['answerers'][name]['predictions']
        assert {p['llm_calls'] for p in predictions} == {2}
        assert all(p['tokens'] > 0 and p['entries_shown'] > 0 for p in predictions)
    embedder = report['answerers']['embedder-only']['overall']
    assert embedder['llm_calls_per_query'] == 0.0 and embedder['fallback_rate'] == 1.0

    markdown = (settings.out / 'report.md').read_text()
    agent_row, embedder_row = cells(markdown, 'agent[scripted]'), cells(markdown, 'embedder-only')
    assert agent_row['LLM calls'] == '2.0' and int(agent_row['tokens']) > 0
    assert agent_row['fallback'] == '0%' and embedder_row['fallback'] == '100%'
    assert embedder_row['LLM calls'] == '0.0' and embedder_row['retrievals'] == '1.0'
    suite = table({'walk': {'report': report, 'wall_s': 1.0}})
    suite_row = cells(suite, 'agent[scripted]', first='world')
    assert (suite_row['LLM calls'], suite_row['fallback']) == ('2.0', '0%')
    assert int(suite_row['tokens']) > 0


def one_agent_row(tmp_path, questions, tiny_siglip, server, **changes) -> EvaluationConfig:
    """The agent/no-bt row alone, planned by `server`."""
    return evaluation(
        tmp_path,
        questions,
        tiny_siglip,
        answerers=('agent/no-bt',),
        llm_url=server.base_url,
        llm_model=server.model,
        **changes,
    )


def test_agent_answers_are_reused_only_with_the_same_settings(
    tmp_path, walk_questions, tiny_siglip
):
    with planner_server() as server:
        settings = one_agent_row(tmp_path, walk_questions, tiny_siglip, server)
        run(settings, build_walk)
        asked = len(server.requests)
        run(settings, build_walk)
        assert len(server.requests) == asked  # all answers reused
        run(dataclasses.replace(settings, agent_steps=2), build_walk)
        assert len(server.requests) == 2 * asked  # other limits: answered again


def test_a_rerun_with_the_same_weights_is_answered_from_the_reply_cache(
    tmp_path, walk_questions, tiny_siglip
):
    weights = tmp_path / 'planner.gguf'
    weights.write_bytes(b'the scripted planner stands in for weights')
    sha256 = hashlib.sha256(weights.read_bytes()).hexdigest()
    with planner_server() as server:
        settings = one_agent_row(
            tmp_path,
            walk_questions,
            tiny_siglip,
            server,
            llm_model_file=weights,
            reply_cache=tmp_path / 'replies',
        )
        first = run(settings, build_walk)
        asked = len(server.requests)
        # Another output folder: no answer to reuse, every reply kept.
        again = run(dataclasses.replace(settings, out=tmp_path / 'again'), build_walk)
        assert len(server.requests) == asked > 0
    answers = [
        [
            (p['question_id'], p['goal'], p['time_ns'])
            for p in report['answerers']['agent/no-bt']['predictions']
        ]
        for report in (first, again)
    ]
    assert answers[0] == answers[1]
    assert again['model'] == {'name': server.model, 'file': str(weights), 'sha256': sha256}
    assert f'sha256 {sha256}' in (tmp_path / 'again' / 'report.md').read_text()


def test_the_cli_passes_the_agent_options(tmp_path, walk_questions, tiny_siglip, capsys):
    common = [
        str(tmp_path / 'no-bag'),
        str(walk_questions),
        '--out',
        str(tmp_path / 'cli'),
        '--mode',
        'walk',
        '--image-model',
        tiny_siglip,
        '--no-progress',
    ]
    builders = {'walk': build_walk}
    assert harness.main([*common, '--answerers', 'agent'], builders) == 2
    assert 'needs an LLM server' in capsys.readouterr().err
    bad = ['--llm-url', 'http://127.0.0.1:9/v1', '--bt-alpha', '0', '--bt-beta', '0']
    assert harness.main([*common, *bad], builders) == 2
    assert 'alpha and beta are both 0' in capsys.readouterr().err
    assert harness.main([*common, '--time-zone', 'Mars/Olympus'], builders) == 2
    assert "--time-zone: 'Mars/Olympus' is not an IANA time zone" in capsys.readouterr().err
    assert harness.main([*common, '--verifier-url', 'http://127.0.0.1:9/v1'], builders) == 2
    assert '--verifier-url needs --llm-url' in capsys.readouterr().err

    with planner_server() as server:
        options = [
            '--llm-url',
            server.base_url,
            '--agent-label',
            'cli',
            '--agent-steps',
            '4',
            '--bt-alpha',
            '0.25',
            '--bt-beta',
            '0.75',
            '--bt-k-leaf',
            '4',
            '--time-zone',
            'Europe/Berlin',
            '--answerers',
            'agent[cli]',
        ]
        assert harness.main([*common, *options], builders) == 0
        seen = server.requests
    assert '| agent[cli] |' in capsys.readouterr().out
    stored = json.loads((tmp_path / 'cli' / 'predictions-agent[cli].settings.json').read_text())
    assert stored['model'] == 'scripted/planner'  # asked of the server
    assert stored['agent']['max_steps'] == 4
    bintrack = stored['agent']['bintrack']
    assert (bintrack['alpha'], bintrack['beta'], bintrack['k_leaf']) == (0.25, 0.75, 4)
    assert stored['agent']['time_zone'] == 'Europe/Berlin'
    assert all(body['model'] == 'scripted/planner' for body in seen)
