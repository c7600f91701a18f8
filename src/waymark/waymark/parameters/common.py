# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Choices that more than one node offers."""

# Message types of a pose source: LIO SLAM publishes Odometry, the ZED's tracking a
# PoseWithCovarianceStamped, other drivers a PoseStamped.
POSE_TYPES = ('odometry', 'pose_stamped', 'pose_with_covariance')
