# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Memory's message <-> core conversions: keyframes, camera models, hits. Everything that
reads a message validates it here."""

from __future__ import annotations

import math

from sensor_msgs.msg import CameraInfo

from waymark.geometry import Pose
from waymark.memory.entries import (
    FRAME,
    PLACE,
    SEGMENT,
    CameraModel,
    DepthSamples,
    FrameRecord,
    Hit,
    Keyframe,
    TextBox,
    check_session_name,
)
from waymark.memory.ingest.admission import (
    KeyframeRules,
    RefusedError,
    check_keyframe_input,
    check_stamp,
)
from waymark.memory.places import name_and_room, place_entry_id, place_text
from waymark.memory.storage import sighting_codec
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import MemoryHit
from waymark_ros.ros.conversions import (
    ns_to_stamp,
    pose_from_msg,
    pose_stamped,
    pose_to_msg,
    stamp_to_ns,
)


def keyframe_to_msg(keyframe: Keyframe) -> KeyframeMsg:
    msg = KeyframeMsg()
    msg.header.stamp = ns_to_stamp(keyframe.stamp_ns)
    msg.header.frame_id = keyframe.frame_id
    msg.session = keyframe.session
    msg.index = keyframe.index
    msg.image.header = msg.header
    msg.image.format = keyframe.image_format
    msg.image.data = keyframe.image
    msg.pose.pose = pose_to_msg(keyframe.pose)
    msg.pose_valid = keyframe.pose_valid
    msg.map_epoch = keyframe.map_epoch
    if keyframe.camera is not None:
        msg.has_camera_info = True
        msg.camera_info = camera_info_msg(keyframe.camera)
        msg.camera_info.header = msg.header
    if keyframe.depth is not None:
        msg.depth_columns = keyframe.depth.columns
        msg.depth_rows = keyframe.depth.rows
        msg.depth_m = [float(v) for v in keyframe.depth.metres]
    return msg


def camera_info_msg(camera: CameraModel) -> CameraInfo:
    """A CameraInfo of a distortion-free pinhole camera (rectified images)."""
    msg = CameraInfo()
    msg.width, msg.height = camera.width, camera.height
    msg.distortion_model = 'plumb_bob'
    msg.d = [0.0] * 5
    msg.k = [camera.fx, 0.0, camera.cx, 0.0, camera.fy, camera.cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [camera.fx, 0.0, camera.cx, 0.0, 0.0, camera.fy, camera.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def _camera_from_msg(msg: KeyframeMsg) -> CameraModel | None:
    if not msg.has_camera_info:
        return None
    info = msg.camera_info
    k = [float(v) for v in info.k]
    try:
        return CameraModel(int(info.width), int(info.height), k[0], k[4], k[2], k[5])
    except ValueError as error:
        raise RefusedError('camera_info_invalid', f'camera_info: {error}') from error


def _depth_from_msg(msg: KeyframeMsg) -> DepthSamples | None:
    if not (msg.depth_columns or msg.depth_rows or len(msg.depth_m)):
        return None
    try:
        return DepthSamples(
            int(msg.depth_columns), int(msg.depth_rows), tuple(float(v) for v in msg.depth_m)
        )
    except ValueError as error:
        raise RefusedError('depth_invalid', f'depth: {error}') from error


def keyframe_from_msg(msg: KeyframeMsg, rules: KeyframeRules) -> Keyframe:
    """Raises RefusedError (a ValueError naming its reason) on a keyframe that must not be
    stored: see waymark.memory.ingest.admission. Nothing is decoded here.

    A keyframe whose pose is marked invalid (tracking lost) is kept with an identity pose:
    whatever numbers it carries are not a position. Intrinsics that are not a camera's
    (zero focal length, NaN) or depths that do not fill their grid are refused too.
    """
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    image = bytes(msg.image.data)
    check_keyframe_input(
        rules,
        session=msg.session,
        frame_id=msg.header.frame_id,
        position=(p.x, p.y, p.z),
        orientation=(q.x, q.y, q.z, q.w),
        pose_valid=msg.pose_valid,
        image=image,
    )
    stamp_ns = check_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec, 'keyframe stamp')
    pose = pose_from_msg(msg.pose.pose) if msg.pose_valid else Pose()
    return Keyframe(
        session=msg.session,
        index=int(msg.index),
        stamp_ns=stamp_ns,
        pose=pose,
        pose_valid=bool(msg.pose_valid),
        map_epoch=int(msg.map_epoch),
        image=image,
        image_format=msg.image.format or 'jpeg',
        frame_id=msg.header.frame_id,
        camera=_camera_from_msg(msg),
        depth=_depth_from_msg(msg),
    )


_HIT_KINDS = {
    FRAME: MemoryHit.KIND_FRAME,
    SEGMENT: MemoryHit.KIND_SEGMENT,
    PLACE: MemoryHit.KIND_PLACE,
}


def hit_to_msg(hit: Hit, frame_id: str) -> MemoryHit:
    record = hit.record
    msg = MemoryHit()
    msg.id = record.id
    msg.session = record.session
    msg.kind = _HIT_KINDS[record.kind]
    msg.index = record.index
    msg.start_stamp = ns_to_stamp(record.stamp_ns)
    msg.end_stamp = ns_to_stamp(record.end_stamp_ns)
    msg.pose = pose_stamped(record.pose, frame_id, record.stamp_ns)
    msg.pose_valid = record.pose_valid
    msg.map_epoch = max(0, min(int(record.map_epoch), 2**32 - 1))
    msg.score = float(hit.score) if math.isfinite(hit.score) else 0.0
    msg.view = hit.view
    msg.text = record.text
    msg.image_ref = record.image_ref
    msg.sighting = sighting_codec.encode(record.sighting, sighting_codec.SIGHTING_MAX_BYTES)
    if hit.region is not None:
        box = hit.region
        msg.photo_region_valid = True
        msg.photo_region = [box.left, box.top, box.right, box.bottom]
    if record.kind == PLACE:
        # A place is named by its name: the row that matched is memory's own business.
        name = name_and_room(record)[0]
        msg.id, msg.text = place_entry_id(name), name
    return msg


def hit_from_msg(msg: MemoryHit) -> Hit:
    """The core hit a MemoryHit was made from (see hit_to_msg).

    Raises ValueError on a hit that cannot stand for a memory entry: an unknown kind, an
    invalid session name, an id that does not match session, kind and index, an end before
    the start, or a non-finite pose marked valid. A hit whose pose is marked invalid gets
    a zero position, whatever numbers it carries. The OCR text size is not carried by the
    message and comes back as 0. A sighting that is too long or does not parse is dropped
    (None): the hit still stands for its entry. A place hit's id must be its name's, and
    its room label (not carried) comes back empty. A photo region outside the picture or
    inverted is dropped (None).
    """
    kind = {value: key for key, value in _HIT_KINDS.items()}.get(msg.kind)
    if kind is None:
        raise ValueError(f'memory hit {msg.id!r} has an unknown kind {msg.kind!r}')
    check_session_name(msg.session)
    start, end = stamp_to_ns(msg.start_stamp), stamp_to_ns(msg.end_stamp)
    if end < start:
        raise ValueError(f'memory hit {msg.id!r} ends before it starts')
    x = y = z = yaw = 0.0
    if msg.pose_valid:
        pose = pose_from_msg(msg.pose.pose)
        x, y, z = pose.position
        yaw = pose.yaw
    record = FrameRecord(
        session=msg.session,
        index=int(msg.index),
        stamp_ns=start,
        x=x,
        y=y,
        z=z,
        yaw=yaw,
        map_epoch=int(msg.map_epoch),
        pose_valid=bool(msg.pose_valid),
        image_ref=msg.image_ref,
        text=place_text(msg.text, '') if kind == PLACE else msg.text,
        kind=kind,
        end_ns=None if kind == FRAME else end,
        sighting=sighting_codec.decode(msg.sighting)
        if len(msg.sighting.encode('utf-8')) <= sighting_codec.SIGHTING_MAX_BYTES
        else None,
    )
    expected = place_entry_id(msg.text) if kind == PLACE else record.id
    if msg.id and msg.id != expected:
        raise ValueError(f'memory hit id {msg.id!r} does not match its entry {expected!r}')
    score = float(msg.score)
    return Hit(
        record=record,
        score=score if math.isfinite(score) else 0.0,
        view=msg.view,
        region=_photo_region(msg),
    )


def _photo_region(msg: MemoryHit) -> TextBox | None:
    """The hit's verified photo region; None when not valid, or not a box within the
    picture (a non-finite or inverted one says nothing of where to look)."""
    if not msg.photo_region_valid:
        return None
    left, top, right, bottom = (float(v) for v in msg.photo_region)
    if not all(0.0 <= v <= 1.0 for v in (left, top, right, bottom)):
        return None
    if right < left or bottom < top:
        return None
    return TextBox('', left, top, right, bottom)
