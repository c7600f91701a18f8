# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the Go1's driver (snt-arg/unitree_ros) declares, as its source reads: the tests
check waymark's use of it against this, since the driver cannot run here."""

# src/unitree_ros.cpp, read_parameters(): a parameter of no other name is ignored.
PARAMETERS = frozenset(
    {
        'robot_ip',
        'robot_target_port',
        'ns',
        'cmd_vel_topic_name',
        'imu_topic_name',
        'odom_topic_name',
        'bms_state_topic_name',
        'imu_frame_id',
        'odom_frame_id',
        'odom_child_frame_id',
        'low_batt_shutdown_threshold',
        'use_obstacle_avoidance',
    }
)
# init_subscriptions(): the topics it takes besides cmd_vel, relative, with their types.
SUBSCRIPTIONS = {'stand_up': 'std_msgs/msg/Empty', 'stand_down': 'std_msgs/msg/Empty'}
