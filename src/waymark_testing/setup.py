# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
from setuptools import find_packages, setup

package_name = 'waymark_testing'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['fastdds_loopback.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='waymark maintainers',
    maintainer_email='maintainers@waymark.dev',
    description='Test helpers and pytest fixtures shared by the waymark packages.',
    license='Apache-2.0',
    # Loaded by every pytest run that sees the package: the fixtures (ros, launch,
    # milvus_uri) reach each package's tests however they are run.
    entry_points={'pytest11': ['waymark_testing = waymark_testing.pytest_plugin']},
)
