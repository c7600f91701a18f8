# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
from glob import glob

from setuptools import find_packages, setup

package_name = 'waymark_ros'
share = 'share/' + package_name
# Launch files, parameter files and the RViz layout live at the workspace root; installed
# with the same layout under share/, so each launch file finds them next to itself.
ROOT = '../..'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        (share, ['package.xml']),
        (share + '/launch', sorted(glob(ROOT + '/launch/*.launch.py'))),
        (share + '/config', sorted(glob(ROOT + '/config/*.yaml'))),
        (share + '/config/sensors', sorted(glob(ROOT + '/config/sensors/*.yaml'))),
        (share + '/config/models', sorted(glob(ROOT + '/config/models/*.yaml'))),
        (share + '/rviz', sorted(glob(ROOT + '/rviz/*.rviz'))),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='waymark maintainers',
    maintainer_email='maintainers@waymark.dev',
    description='ROS 2 nodes and command-line tools of waymark.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'capture_node = waymark_ros.nodes.capture.capture_node:main',
            'memory_node = waymark_ros.nodes.memory.memory_node:main',
            'reasoner_node = waymark_ros.nodes.reasoner.reasoner_node:main',
            'navigator_node = waymark_ros.nodes.navigator.navigator_node:main',
            'sim_base_node = waymark_ros.nodes.sim_base.sim_base_node:main',
            'task_node = waymark_ros.nodes.task.task_node:main',
            'safety_node = waymark_ros.nodes.safety.safety_node:main',
            'replay = waymark_ros.tools.replay:main',
            'demo = waymark_ros.tools.demo:main',
            'evaluate = waymark_ros.tools.evaluate:main',
        ],
    },
)
