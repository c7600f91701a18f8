# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RosBody and PoseTrack without a node: the views a mark keeps and the recovery signals."""

from __future__ import annotations

import math
import threading
import time

import pytest
from geometry_msgs.msg import Pose as PoseMsg
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import Header

from waymark.navigation.follower import wrap_angle
from waymark.tasks.attempts import DriveOutcome, DriveResult
from waymark.tasks.coverage import CoverageParams
from waymark.tasks.stop_views import heading_bucket
from waymark_ros.nodes.task.body import RosBody
from waymark_ros.nodes.task.pose_track import PoseTrack, PoseUnavailableError


def at(track: PoseTrack, x: float, y: float, yaw: float = 0.0) -> None:
    msg = PoseMsg()
    msg.position.x, msg.position.y = x, y
    msg.orientation.z, msg.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
    track.on_pose(Header(frame_id='map'), msg, None)


def look(body: RosBody, track: PoseTrack, x: float, y: float, yaw: float, tag: str) -> None:
    at(track, x, y, yaw)
    body.on_image(CompressedImage(format='jpeg', data=tag.encode()))


@pytest.fixture
def track() -> PoseTrack:
    return PoseTrack('map', timeout_s=60.0, coverage=CoverageParams(cell_m=0.5))


@pytest.fixture
def body(track) -> RosBody:
    return RosBody(track, drive=None, frame_period_s=0.0, ring_length=32)


def test_a_mark_keeps_the_latest_view_per_heading_nearby_and_leaves_far_frames_out(track, body):
    for k, yaw in enumerate((0.0, math.pi / 2, math.pi, -math.pi / 2)):
        look(body, track, 0.0, 0.0, yaw, f'near-{k}')
    look(body, track, 5.0, 0.0, 0.0, 'far')  # the latest facing 0, but 5 m away
    at(track, 0.3, 0.0, 0.0)

    views = body.place_views(radius_m=1.0, max_age_s=60.0)

    assert [view.image for view in views] == [b'near-0', b'near-1', b'near-2', b'near-3']
    assert sorted(heading_bucket(view.heading) for view in views) == [0, 1, 2, 3]
    wide = body.place_views(radius_m=10.0, max_age_s=60.0)  # the far frame counts now
    assert [view.image for view in wide] == [b'near-1', b'near-2', b'near-3', b'far']


def test_a_mark_keeps_no_frame_older_than_the_max_age(track, body):
    look(body, track, 0.0, 0.0, 0.0, 'old')
    time.sleep(0.2)  # the behaviour under test: the frame ages past max_age_s
    assert body.place_views(radius_m=1.0, max_age_s=0.1) == []


def test_signals_measure_the_area_covered_and_a_first_visit_since_the_task_began(track, body):
    at(track, 0.1, 0.1)
    at(track, 0.6, 0.1)
    body.begin_task()
    at(track, 1.1, 0.1)
    signals = body.signals()
    assert signals.explored_area_m2 == pytest.approx(0.75)
    assert signals.first_visit and not signals.tracking_lost
    at(track, 0.2, 0.2)  # the task began after this cell was passed
    assert not body.signals().first_visit
    body.begin_task()
    at(track, 1.2, 0.2)
    assert not body.signals().first_visit
    assert body.signals().explored_area_m2 == pytest.approx(0.75)


def test_without_a_pose_tracking_is_lost_and_nothing_is_new(body):
    signals = body.signals()
    assert signals.tracking_lost and not signals.first_visit
    assert signals.explored_area_m2 == 0.0


def test_the_first_pose_is_waited_for_a_stale_one_is_not():
    track = PoseTrack('map', timeout_s=1.0, coverage=CoverageParams(cell_m=0.5))
    # A task sent just after start: the first pose arrives while current() waits.
    threading.Timer(0.2, at, (track, 3.0, 4.0)).start()
    assert track.current().position[:2] == (3.0, 4.0)
    # Later, a pose older than timeout_s fails at once instead of waiting again.
    time.sleep(1.1)  # the behaviour under test: the pose ages past timeout_s
    started = time.monotonic()
    with pytest.raises(PoseUnavailableError, match=r'within 1\.0 s'):
        track.current()
    assert time.monotonic() - started < track.timeout_s  # waiting again would take that


def test_no_pose_at_all_fails_after_the_timeout():
    track = PoseTrack('map', timeout_s=0.3, coverage=CoverageParams(cell_m=0.5))
    started = time.monotonic()
    with pytest.raises(PoseUnavailableError):
        track.current()
    assert time.monotonic() - started >= 0.3


class TurningDrive:
    """A GoTo that turns the base where it was sent; a camera thread shows a frame of
    wherever the base stands every 20 ms, as a live camera does."""

    def __init__(self, body: RosBody, track: PoseTrack) -> None:
        self.body, self.track = body, track
        self.headings: list[float] = []
        self.pose = (0.0, 0.0, 0.0)
        self.stop = threading.Event()
        self.camera = threading.Thread(target=self._film, daemon=True)
        self.camera.start()

    def _film(self) -> None:
        while not self.stop.wait(0.02):
            look(self.body, self.track, *self.pose, 'frame')

    def drive(self, goal, deadline, cancel):
        self.headings.append(goal.yaw)
        x, y, _ = goal.position
        self.pose = (x, y, goal.yaw)
        return DriveResult(DriveOutcome.REACHED)


def test_stop_views_start_facing_the_target_and_turn_a_full_circle_from_there(track):
    body = RosBody(track, drive=None, frame_period_s=0.0, ring_length=32)
    body._drive = drive = TurningDrive(body, track)
    try:
        wait_for_frame = time.monotonic() + 5.0
        while body.latest_frame() is None and time.monotonic() < wait_for_frame:
            time.sleep(0.02)
        views = body.stop_views(4, time.monotonic() + 10.0, facing=(0.0, 2.0))
        expected = [wrap_angle(math.pi / 2 + k * math.pi / 2) for k in range(4)]
        assert drive.headings == pytest.approx(expected)  # the first turn faces the target
        assert {heading_bucket(view.heading) for view in views} == {0, 1, 2, 3}
        drive.headings.clear()
        body.stop_views(2, time.monotonic() + 10.0, facing=(2.0, 0.05))  # faced already
        assert len(drive.headings) == 1  # no first turn, one turn for the second view
    finally:
        drive.stop.set()
