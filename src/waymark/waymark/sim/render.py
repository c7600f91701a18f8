# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A column raycaster (as in early 3-D games) for the synthetic world, in plain numpy.

Walls are vertical quads over 2-D segments and the floor and ceiling are flat, so one ray
per image column gives the nearest wall, and its depth alone fixes where that wall starts
and ends in the column. Signs are textured quads a little in front of their walls; their
textures carry mip levels so text stays legible (for OCR) from near and far.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from waymark.geometry import Pose
from waymark.sim.objects import SPRITE_PX_PER_M, sprite
from waymark.sim.world import Sign, World

FLOOR_RGB = np.array([122, 110, 96], dtype=np.float32)
CEILING_RGB = np.array([216, 216, 220], dtype=np.float32)
BASEBOARD_HEIGHT = 0.1
SIGN_TEXTURE_SIZE = (640, 160)  # texels, width x height, of the finest mip level
MIP_LEVELS = 4


@dataclass(frozen=True)
class _Scene:
    """The world as arrays, prepared once per world."""

    wall_a: np.ndarray  # (N, 2) segment starts
    wall_e: np.ndarray  # (N, 2) segment vectors
    wall_rgb: np.ndarray  # (N, 3) float, lit by the face's orientation
    wall_height: np.ndarray  # (N,)
    ceiling_height: float
    sign_a: np.ndarray  # (S, 2) left ends as seen from the front
    sign_e: np.ndarray  # (S, 2) left-to-right vectors
    sign_normal: np.ndarray  # (S, 2)
    sign_top: np.ndarray  # (S,) z of the top edge
    sign_height: np.ndarray  # (S,)
    sign_texels_per_m: np.ndarray  # (S,) vertical density of mip level 0
    sign_mips: tuple[np.ndarray, ...]  # level k: (S, H >> k, W >> k, 3) uint8
    object_xy: np.ndarray  # (O, 2) footprint centres
    object_size: np.ndarray  # (O, 2) width, height in metres
    object_mips: tuple[tuple[np.ndarray, ...], ...]  # per object, level k: RGBA uint8


def render(
    world: World,
    camera_pose: Pose,
    width: int = 640,
    height: int = 480,
    hfov_deg: float = 90.0,
    camera_height: float | None = None,
) -> np.ndarray:
    """An RGB image (height, width, 3) uint8 seen from `camera_pose` (a pinhole looking along
    the pose's yaw, level with the floor; roll and pitch are ignored).

    The camera sits at the pose's z unless `camera_height` overrides it.
    """
    return _render(world, camera_pose, width, height, hfov_deg, camera_height, None)


def render_with_depth(
    world: World,
    camera_pose: Pose,
    width: int = 640,
    height: int = 480,
    hfov_deg: float = 90.0,
    camera_height: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The RGB image of `render` and its depth image (height, width) float32: the distance
    (m) along the optical axis to what each pixel shows, as a depth camera registered to
    the colour image gives it (inf where no surface is hit)."""
    depth = np.full((height, width), np.inf, dtype=np.float32)
    image = _render(world, camera_pose, width, height, hfov_deg, camera_height, depth)
    return image, depth


def _render(
    world: World,
    camera_pose: Pose,
    width: int,
    height: int,
    hfov_deg: float,
    camera_height: float | None,
    depth_out: np.ndarray | None,
) -> np.ndarray:
    """The RGB image; fills `depth_out` with each pixel's depth when given."""
    scene = _scene(world)
    focal = 0.5 * width / math.tan(math.radians(hfov_deg) / 2.0)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    ox, oy, oz = camera_pose.position
    eye_z = float(oz if camera_height is None else camera_height)
    yaw = camera_pose.yaw
    cos_y, sin_y = math.cos(yaw), math.sin(yaw)
    # Ray per column: forward + lateral * left, so the hit parameter is the depth itself.
    lateral = (cx - np.arange(width)) / focal
    dirs = np.stack([cos_y - sin_y * lateral, sin_y + cos_y * lateral], axis=1)
    origin = np.array([ox, oy])
    rise = ((cy - np.arange(height)) / focal)[:, None]  # height gained per metre of depth

    image = np.broadcast_to(
        _background(height, cy, focal, eye_z, scene.ceiling_height)[:, None, :],
        (height, width, 3),
    ).copy()

    if depth_out is not None:
        with np.errstate(divide='ignore'):
            plane = np.where(rise < 0, eye_z / -rise, (scene.ceiling_height - eye_z) / rise)
        depth_out[:] = plane.astype(np.float32)
    depth, wall, _ = _cast(origin, dirs, scene.wall_a, scene.wall_e)
    hit = np.isfinite(depth)
    if hit.any():
        depth_f = np.where(hit, depth, 1.0)
        z = eye_z + rise * depth_f
        visible = hit & (depth_f > 1e-3)
        on_wall = (z >= 0.0) & (z <= scene.wall_height[wall]) & visible
        shade = np.clip(1.0 - 0.035 * depth_f, 0.55, 1.0)[:, None]
        wall_rgb = (scene.wall_rgb[wall] * shade).astype(np.uint8)
        board_rgb = (scene.wall_rgb[wall] * shade * 0.45).astype(np.uint8)
        column_rgb = np.where((z < BASEBOARD_HEIGHT)[..., None], board_rgb, wall_rgb)
        image = np.where(on_wall[..., None], column_rgb, image)
        if depth_out is not None:
            depth_out[on_wall] = np.broadcast_to(depth_f, on_wall.shape)[on_wall]

    _draw_signs(image, scene, origin, dirs, depth, rise, eye_z, focal, depth_out)
    _draw_objects(image, scene, origin, yaw, depth, eye_z, focal, depth_out)
    return image


def _draw_objects(
    image: np.ndarray,
    scene: _Scene,
    origin: np.ndarray,
    yaw: float,
    wall_depth: np.ndarray,
    eye_z: float,
    focal: float,
    depth_out: np.ndarray | None = None,
) -> None:
    if len(scene.object_xy) == 0:
        return
    rows_n, cols_n = image.shape[:2]
    cx, cy = 0.5 * (cols_n - 1), 0.5 * (rows_n - 1)
    rel = scene.object_xy - origin
    forward = rel @ np.array([math.cos(yaw), math.sin(yaw)])
    left = rel @ np.array([-math.sin(yaw), math.cos(yaw)])
    for i in np.argsort(-forward, kind='stable'):
        depth = float(forward[i])
        if depth < 0.1:
            continue
        width_m, height_m = scene.object_size[i]
        half = 0.5 * focal * width_m / depth
        centre = cx - focal * left[i] / depth
        cols = np.arange(
            max(0, math.ceil(centre - half)), min(cols_n - 1, math.floor(centre + half)) + 1
        )
        cols = cols[wall_depth[cols] > depth]
        top, bottom = cy - focal * (height_m - eye_z) / depth, cy + focal * eye_z / depth
        rows = np.arange(max(0, math.ceil(top)), min(rows_n - 1, math.floor(bottom)) + 1)
        if cols.size == 0 or rows.size == 0:
            continue
        texels_per_pixel = SPRITE_PX_PER_M * depth / focal
        mips = scene.object_mips[i]
        level = int(np.clip(math.floor(math.log2(max(texels_per_pixel, 1.0))), 0, len(mips) - 1))
        tex = mips[level]
        tu = np.clip(
            ((cols - (centre - half)) / (2 * half) * tex.shape[1]).astype(int), 0, tex.shape[1] - 1
        )
        tv = np.clip(
            ((rows - top) / (bottom - top) * tex.shape[0]).astype(int), 0, tex.shape[0] - 1
        )
        patch = tex[tv[:, None], tu[None, :]]
        shade = min(1.0, max(0.6, 1.0 - 0.03 * depth))
        under = image[rows[:, None], cols[None, :]]
        over = (patch[..., :3] * shade).astype(np.uint8)
        opaque = patch[..., 3:] > 127
        image[rows[:, None], cols[None, :]] = np.where(opaque, over, under)
        if depth_out is not None:
            # A sprite is a billboard: one depth, that of its footprint centre.
            block = depth_out[rows[:, None], cols[None, :]]
            depth_out[rows[:, None], cols[None, :]] = np.where(opaque[..., 0], depth, block)


def _draw_signs(
    image: np.ndarray,
    scene: _Scene,
    origin: np.ndarray,
    dirs: np.ndarray,
    wall_depth: np.ndarray,
    rise: np.ndarray,
    eye_z: float,
    focal: float,
    depth_out: np.ndarray | None = None,
) -> None:
    depth, sign, u = _cast(origin, dirs, scene.sign_a, scene.sign_e, scene.sign_normal)
    cols = np.nonzero(depth < wall_depth)[0]
    if cols.size == 0:
        return
    depth, sign, u = depth[cols], sign[cols], u[cols]
    v = (scene.sign_top[sign] - (eye_z + rise * depth)) / scene.sign_height[sign]  # 0 at top
    inside = (v >= 0.0) & (v < 1.0)
    # Pick the mip level whose texel spacing is closest to (not coarser than) a pixel.
    texels_per_pixel = scene.sign_texels_per_m[sign] * depth / focal
    level = np.clip(np.floor(np.log2(np.maximum(texels_per_pixel, 1.0))), 0, MIP_LEVELS - 1)
    shade = np.clip(1.0 - 0.015 * depth, 0.85, 1.0)
    for k in np.unique(level).astype(int):
        tex = scene.sign_mips[k]
        n_rows, n_cols = tex.shape[1:3]
        in_level = np.nonzero(level == k)[0]
        rr, cc = np.nonzero(inside[:, in_level])
        cc = in_level[cc]
        tu = np.minimum((u[cc] * n_cols).astype(int), n_cols - 1)
        tv = np.minimum((v[rr, cc] * n_rows).astype(int), n_rows - 1)
        image[rr, cols[cc]] = (tex[sign[cc], tv, tu] * shade[cc, None]).astype(np.uint8)
        if depth_out is not None:
            depth_out[rr, cols[cc]] = depth[cc]


def _cast(
    origin: np.ndarray,
    dirs: np.ndarray,
    seg_a: np.ndarray,
    seg_e: np.ndarray,
    facing: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest segment hit per ray: (ray parameter or inf, segment index, position 0..1 on it).

    With `facing` (segment normals) only segments whose front faces the ray count.
    """
    if len(seg_a) == 0:
        return np.full(len(dirs), np.inf), np.zeros(len(dirs), int), np.zeros(len(dirs))
    denom = dirs[:, None, 0] * seg_e[None, :, 1] - dirs[:, None, 1] * seg_e[None, :, 0]
    ao = seg_a - origin
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (ao[None, :, 0] * seg_e[None, :, 1] - ao[None, :, 1] * seg_e[None, :, 0]) / denom
        s = (ao[None, :, 0] * dirs[:, None, 1] - ao[None, :, 1] * dirs[:, None, 0]) / denom
    valid = (np.abs(denom) > 1e-12) & (t > 1e-6) & (s >= 0.0) & (s <= 1.0)
    if facing is not None:
        valid &= (dirs @ facing.T) < 0.0
    t = np.where(valid, t, np.inf)
    index = np.argmin(t, axis=1)
    rows = np.arange(len(dirs))
    return t[rows, index], index, np.where(valid[rows, index], s[rows, index], 0.0)


def _background(height: int, cy: float, focal: float, eye_z: float, ceiling: float) -> np.ndarray:
    """Per-row floor and ceiling colours, darker towards the horizon (farther away)."""
    rise = (cy - np.arange(height)) / focal
    with np.errstate(divide='ignore'):
        distance = np.where(rise < 0, eye_z / -rise, (ceiling - eye_z) / rise)
    shade = np.clip(1.0 - 0.03 * distance, 0.45, 1.0)[:, None]
    rgb = np.where((rise < 0)[:, None], FLOOR_RGB, CEILING_RGB) * shade
    return rgb.astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _scene(world: World) -> _Scene:
    walls = world.walls
    wall_a = np.array([w.a for w in walls], dtype=float).reshape(-1, 2)
    wall_e = np.array([w.b for w in walls], dtype=float).reshape(-1, 2) - wall_a
    # Faces along x are lit a little more than faces along y, so corners read as corners.
    along_x = np.abs(wall_e[:, 0]) / np.maximum(np.linalg.norm(wall_e, axis=1), 1e-9)
    wall_rgb = np.array([w.color for w in walls], dtype=float).reshape(-1, 3)
    wall_rgb *= (0.82 + 0.18 * along_x)[:, None]
    ends = [s.endpoints for s in world.signs]
    sign_a = np.array([a for a, _ in ends], dtype=float).reshape(-1, 2)
    sign_e = np.array([b for _, b in ends], dtype=float).reshape(-1, 2) - sign_a
    textures = [_sign_texture(s) for s in world.signs]
    mips = tuple(
        np.stack(
            [
                np.asarray(t.resize((t.width >> k, t.height >> k), Image.Resampling.BOX))
                for t in textures
            ]
        )
        if textures
        else np.zeros((0, 1, 1, 3), np.uint8)
        for k in range(MIP_LEVELS)
    )
    return _Scene(
        wall_a=wall_a,
        wall_e=wall_e,
        wall_rgb=wall_rgb,
        wall_height=np.array([w.height for w in walls], dtype=float),
        ceiling_height=max((w.height for w in walls), default=2.5),
        sign_a=sign_a,
        sign_e=sign_e,
        sign_normal=np.array([s.normal for s in world.signs], dtype=float).reshape(-1, 2),
        sign_top=np.array([s.position[2] + 0.5 * s.height for s in world.signs], dtype=float),
        sign_height=np.array([s.height for s in world.signs], dtype=float),
        sign_texels_per_m=np.array([SIGN_TEXTURE_SIZE[1] / s.height for s in world.signs]),
        sign_mips=mips,
        object_xy=np.array([o.position for o in world.objects], dtype=float).reshape(-1, 2),
        object_size=np.array([(o.width, o.height) for o in world.objects]).reshape(-1, 2),
        object_mips=tuple(_sprite_mips(o.category, o.color) for o in world.objects),
    )


@functools.lru_cache(maxsize=64)
def _sprite_mips(category: str, color: str) -> tuple[np.ndarray, ...]:
    """The sprite at full, half, quarter and eighth resolution (alpha-aware box filter)."""
    image = Image.fromarray(sprite(category, color), 'RGBA')
    return tuple(
        np.asarray(
            image.resize(
                (max(1, image.width >> k), max(1, image.height >> k)), Image.Resampling.BOX
            )
        )
        for k in range(MIP_LEVELS)
    )


def _sign_texture(sign: Sign) -> Image.Image:
    """The sign's face: a framed panel with its text as large and bold as fits.

    Words are set with a wide gap because OCR tends to merge normally spaced words.
    """
    width, height = SIGN_TEXTURE_SIZE
    image = Image.new('RGB', SIGN_TEXTURE_SIZE, sign.background)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width - 1, height - 1), outline=sign.foreground, width=height // 20)
    words = sign.text.split()
    size = int(0.62 * height)
    while True:
        font = ImageFont.load_default(size=size)
        stroke = max(1, size // 16)
        gap = 0.5 * size
        advances = [font.getlength(word) + 2 * stroke for word in words]
        line = sum(advances) + gap * (len(words) - 1)
        if line <= 0.86 * width or size <= 12:
            break
        size -= 2
    x = 0.5 * (width - line)
    for word, advance in zip(words, advances, strict=True):
        draw.text(
            (x + stroke, height / 2),
            word,
            font=font,
            fill=sign.foreground,
            anchor='lm',
            stroke_width=stroke,
            stroke_fill=sign.foreground,
        )
        x += advance + gap
    return image
