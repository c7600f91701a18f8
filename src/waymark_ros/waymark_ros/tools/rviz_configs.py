# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Writes rviz/<preset>.rviz for each sensor preset from rviz/waymark.rviz, so each layout
follows its preset's frame and topics (a test compares them).

    python -m waymark_ros.tools.rviz_configs [--root .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from waymark_ros.launch_support.rviz_layout import (
    PRESET_LAUNCHES,
    launch_arguments,
    launch_topics,
    render_text,
)

TEMPLATE = 'waymark.rviz'


def preset_layouts(root: Path) -> dict[Path, str]:
    """Each preset's layout file and its text, from the workspace at `root`."""
    config, rviz = root / 'config', root / 'rviz'
    layouts = {}
    for preset, (camera, odometry) in PRESET_LAUNCHES.items():
        topics = launch_topics(config, launch_arguments(config, camera, odometry))
        title = f'camera:={camera} odometry:={odometry}'
        layouts[rviz / f'{preset}.rviz'] = render_text(rviz / TEMPLATE, topics, title)
    return layouts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--root', type=Path, default=Path('.'), help='workspace root')
    args = parser.parse_args(argv)
    for path, text in preset_layouts(args.root).items():
        path.write_text(text)
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
