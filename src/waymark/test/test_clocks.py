# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The image/pose clock check, alone and inside the keyframe builder."""

import heapq

import numpy as np
import pytest

from waymark.memory.ingest.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.ingest.clocks import ClockCheck, ClockCheckConfig
from waymark.memory.ingest.keyframes import KeyframePolicy

S = 1_000_000_000
MS = 1_000_000
T0 = 1_768_471_200 * S
IDENTITY = (0.0, 0.0, 0.0, 1.0)
SPEED_MPS = 1.0  # the robot drives along x: x = SPEED_MPS * true time since T0


def streams(
    seconds: float,
    image_offset_s=lambda _t: 0.0,
    pose_offset_s=lambda _t: 0.0,
    image_hz: float = 15.0,
    pose_hz: float = 100.0,
    jitter_s: float = 0.0,
    seed: int = 0,
):
    """Images and poses in arrival order: (kind, stamp_ns, received_ns, true_ns). Each
    stream's stamp is the true time plus its clock's offset (a function of true time in
    s); it arrives 30 ms (images) or 20 ms (poses) later, plus jitter, in order (as DDS
    delivers one publisher's messages)."""
    rng = np.random.default_rng(seed)
    events = []
    for kind, hz, latency_s, offset in (
        ('image', image_hz, 0.03, image_offset_s),
        ('pose', pose_hz, 0.02, pose_offset_s),
    ):
        received_ns = 0
        for i in range(int(seconds * hz)):
            t = i / hz
            delay = latency_s + abs(rng.normal(0.0, jitter_s)) if jitter_s else latency_s
            true_ns = T0 + round(t * S)
            stamp_ns = true_ns + round(offset(t) * S)
            received_ns = max(received_ns, true_ns + round(delay * S))
            events.append((received_ns, kind, stamp_ns, true_ns))
    heapq.heapify(events)
    while events:
        received_ns, kind, stamp_ns, true_ns = heapq.heappop(events)
        yield kind, stamp_ns, received_ns, true_ns


def measure(check: ClockCheck, events) -> list[tuple[str, bool]]:
    flagged = []
    for kind, stamp_ns, received_ns, _ in events:
        add = check.add_image if kind == 'image' else check.add_pose
        flagged.append((kind, add(stamp_ns, received_ns)))
    return flagged


@pytest.mark.parametrize('offset_s', [30.0, -30.0, 2.0, -0.8])
def test_a_consistent_offset_is_found_with_its_sign(offset_s):
    check = ClockCheck(ClockCheckConfig())
    measure(check, streams(5.0, pose_offset_s=lambda _t: -offset_s))
    assert check.disagree is True
    # Image clock minus pose clock, plus the latency difference (poses 10 ms earlier).
    assert check.offset_s == pytest.approx(offset_s - 0.01, abs=1e-6)


def test_jittered_streams_are_measured_to_within_the_jitter():
    check = ClockCheck(ClockCheckConfig())
    measure(check, streams(10.0, pose_offset_s=lambda _t: -30.0, jitter_s=0.05, seed=3))
    assert check.disagree is True
    assert check.offset_s == pytest.approx(30.0, abs=0.05)


@pytest.mark.parametrize('seed', range(5))
def test_no_false_alarm_when_the_clocks_agree(seed):
    check = ClockCheck(ClockCheckConfig())
    flagged = measure(check, streams(20.0, jitter_s=0.05, pose_hz=200.0, seed=seed))
    assert check.disagree is False
    assert abs(check.offset_s) < 0.1
    assert not any(f for _, f in flagged)


def test_undecided_until_both_streams_have_min_samples():
    check = ClockCheck(ClockCheckConfig(min_samples=10))
    events = list(streams(2.0, pose_offset_s=lambda _t: 30.0, image_hz=5.0))
    images = 0
    for kind, stamp_ns, received_ns, _ in events:
        if kind == 'image':
            images += 1
            check.add_image(stamp_ns, received_ns)
        else:
            check.add_pose(stamp_ns, received_ns)
        if images < 10:
            assert check.disagree is None and check.offset_s is None
    assert images == 10 and check.disagree is True


def test_memory_is_bounded_by_max_samples_and_the_window():
    config = ClockCheckConfig(max_samples=50, window_s=1.0)
    check = ClockCheck(config)
    measure(check, streams(5.0, pose_hz=500.0, image_hz=100.0))
    images, poses = check.lateness()
    assert poses.samples == 50 and images.samples == 50
    check.add_image(T0 + 100 * S, T0 + 100 * S)  # 95 s later: the rest fell out of the window
    images, poses = check.lateness()
    assert images.samples == 1 and poses is None


def test_a_burst_or_fast_replay_decides_nothing():
    """Messages published at once (a test, a replay faster than recorded) arrive with
    lateness that says nothing about clocks: no verdict, no message flagged."""
    check = ClockCheck(ClockCheckConfig())
    flagged = [check.add_pose(T0 + i * 100 * MS, 0) for i in range(50)]
    flagged += [check.add_image(T0 + i * 100 * MS + 10 * MS, 0) for i in range(50)]
    assert check.disagree is None and not any(flagged)
    replay = ClockCheck(ClockCheckConfig())  # rate 3: lateness falls 2 s per second
    flagged = measure(replay, ((k, s, T0 + (r - T0) // 3, t) for k, s, r, t in streams(10.0)))
    assert replay.disagree is not True and not any(f for _, f in flagged)


def test_the_verdict_clears_when_the_clocks_agree_again():
    check = ClockCheck(ClockCheckConfig())
    measure(check, streams(20.0, pose_offset_s=lambda t: -30.0 if 5 <= t < 10 else 0.0))
    assert check.disagree is False and abs(check.offset_s) < 0.1


def test_zero_max_offset_turns_the_check_off():
    check = ClockCheck(ClockCheckConfig(max_offset_s=0.0))
    flagged = measure(check, streams(5.0, pose_offset_s=lambda _t: 30.0))
    assert check.disagree is None and not any(f for _, f in flagged)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match='max_samples'):
        ClockCheckConfig(min_samples=20, max_samples=10)


# In the keyframe builder --------------------------------------------------------------
def drive(builder: KeyframeBuilder, events) -> list:
    """Feed the streams; the keyframes with the true time of their image (which each
    image carries as its bytes: stamps repeat when a clock steps back)."""
    keyframes = []
    for kind, stamp_ns, received_ns, true_ns in events:
        if kind == 'image':
            image = b'\xff\xd8' + true_ns.to_bytes(8, 'big')
            keyframes += builder.add_image(stamp_ns, 3, lambda i=image: i, received_ns=received_ns)
        else:
            x = SPEED_MPS * (true_ns - T0) / S
            keyframes += builder.add_pose(
                stamp_ns, 'map', (x, 0.0, 0.0), IDENTITY, received_ns=received_ns
            )
    keyframes += builder.poll(flush=True)
    return [(k, int.from_bytes(k.image[2:], 'big')) for k in keyframes]


def misplaced(keyframes) -> list:
    """Keyframes with a position that is not where the robot was when the image was taken."""
    return [
        k
        for k, true_ns in keyframes
        if k.pose_valid and abs(k.pose.position[0] - SPEED_MPS * (true_ns - T0) / S) > 0.01
    ]


def capture(**config) -> KeyframeBuilder:
    policy = KeyframePolicy(min_interval_s=0, max_interval_s=0.5, min_distance_m=0.2)
    return KeyframeBuilder(
        CaptureConfig(policy=policy, max_speed_mps=0.0, **config), clock=lambda: 0.0
    )


@pytest.mark.parametrize(
    ('image_offset', 'pose_offset'),
    [(0.0, -30.0), (0.0, 30.0), (-30.0, 0.0), (30.0, 0.0)],
    ids=['poses-behind', 'poses-ahead', 'images-behind', 'images-ahead'],
)
def test_no_keyframe_is_placed_with_a_pose_of_another_clock(image_offset, pose_offset):
    """A clock steps by 30 s for 40 s mid-run, then back; poses are buffered for 100 s,
    so a pose stamped near each image exists: only the clock check keeps them apart."""

    def step(offset):
        return lambda t: offset if 10 <= t < 50 else 0.0

    b = capture()
    events = streams(70.0, step(image_offset), step(pose_offset), pose_hz=50.0, jitter_s=0.01)
    keyframes = drive(b, events)
    assert misplaced(keyframes) == []
    during = [k for k, t in keyframes if T0 + 12 * S <= t < T0 + 50 * S]
    after = [k for k, t in keyframes if t >= T0 + 55 * S]
    before = [k for k, t in keyframes if t < T0 + 10 * S]
    assert during and not any(k.pose_valid for k in during)  # kept, without a position
    assert all(k.pose_valid for k in before) and all(k.pose_valid for k in after)
    assert b.counts['images_clock_mismatch'] > 0
    assert b.clocks.disagree is False


def test_clocks_that_agree_change_nothing():
    keyframes = drive(capture(), streams(20.0, pose_hz=200.0, jitter_s=0.02, seed=7))
    assert keyframes and all(k.pose_valid for k, _ in keyframes)
    assert misplaced(keyframes) == []


def test_an_image_that_waited_in_a_loaded_process_keeps_its_pose_but_a_clock_step_does_not():
    check = ClockCheck(ClockCheckConfig())
    measure(check, streams(3.0))  # both steady, the clocks agree
    last_ns = T0 + 3 * S
    # One image waited 0.9 s in the queue before it was taken: late, not another clock.
    assert not check.add_image(last_ns, last_ns + round(0.93 * S))
    # The pose clock stepped 30 s: the next pose is from another clock at once.
    assert check.add_pose(last_ns - 30 * S, last_ns + 20 * MS)


def test_a_step_threshold_below_the_offset_limit_is_refused():
    with pytest.raises(ValueError, match=r'clock\.step_s'):
        ClockCheckConfig(max_offset_s=1.0, step_s=0.5)
