# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
from setuptools import find_packages, setup

package_name = 'waymark'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='waymark maintainers',
    maintainer_email='maintainers@waymark.dev',
    description='ROS-free core of waymark: memory, retrieval, reasoning and synthetic worlds.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={'console_scripts': []},
)
