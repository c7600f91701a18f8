# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the robot and replay launch files share: the stack's arguments and its nodes.

Imported only by launch files: it needs ROS 2 `launch` and `launch_ros`. Which files and
parameters each node gets is worked out in launch_plan.py.

The lifecycle nodes (launch_plan.MANAGED) are started with `autostart` false and brought up
by the launch, the standard way (launch_ros's LifecycleNode, ChangeState, OnStateTransition):
configure at start, activate once configured. Until a node is active, a transition that
fails or raises, or the process's exit, ends the launch with the reason, so a stack whose
memory or navigator could not start never stays up looking healthy. A transition the node
has not begun `RESEND_TRANSITION_S` after it was asked for is asked again: a change_state
request, or its response, can be lost (DDS drops a request sent before the service has
matched the caller back), and launch_ros then waits for the response forever.
"""

from __future__ import annotations

import time
from pathlib import Path

from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    GroupAction,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    Shutdown,
    TimerAction,
)
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit, OnProcessStart
from launch.events import matches_action
from launch.launch_context import LaunchContext
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node, PushRosNamespace
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition

from waymark.parameters.navigator import BACKENDS
from waymark_ros.launch_support.base_plan import (
    BASES,
    FROM_FILE,
    GO1,
    GO1_PARAMS,
    GO1_SAFETY_PARAMS,
    NO_BASE,
    base_driver,
    base_mux,
    require_installed,
)
from waymark_ros.launch_support.bring_up import (
    RESEND_CHECK_S,
    bring_up_over,
    transition_to_resend,
)
from waymark_ros.launch_support.launch_plan import (
    DEFAULT_DISCOVERY_RANGE,
    DEFAULT_DOMAIN_ID,
    DISCOVERY_RANGES,
    FROM_PRESET,
    MANAGED,
    MODEL_PRESETS,
    NO_ODOMETRY,
    NODES,
    REQUIRED,
    dds_environment,
    node_overrides,
    parameter_files,
    sim_time,
)
from waymark_ros.launch_support.rviz_layout import write_launch_layout

ARGUMENTS = (
    'namespace',
    'camera',
    'odometry',
    'models',
    'memory_uri',
    'llm_base_url',
    'llm_model',
    'image_model',
    'backend',
    'params_file',
    'ros_domain_id',
    'discovery_range',
    'use_sim_time',
)
# Read by the stack too (safety_node's file on the Go1); a launch without a base has neither.
BASE_DEFAULTS = {'base': NO_BASE, 'go1_safety_params_file': ''}


def stack_arguments(params_file: Path, use_sim_time: bool) -> list[DeclareLaunchArgument]:
    """The arguments of a launch that starts the stack; `params_file` is its own file,
    `use_sim_time` its default clock."""
    return [
        DeclareLaunchArgument('namespace', default_value='', description='namespace of the nodes'),
        DeclareLaunchArgument(
            'camera',
            default_value='zed2i',
            description='camera preset: config/sensors/<camera>.yaml',
        ),
        DeclareLaunchArgument(
            'odometry',
            default_value='fast_lio_mid360',
            description=f'pose preset: config/sensors/<odometry>.yaml; {NO_ODOMETRY}: the camera',
        ),
        DeclareLaunchArgument(
            'models',
            default_value='workstation',
            choices=list(MODEL_PRESETS),
            description='model preset: config/models/<models>.yaml',
        ),
        DeclareLaunchArgument(
            'memory_uri',
            default_value='',
            description='Milvus server URI; empty: the embedded Milvus Lite file',
        ),
        DeclareLaunchArgument(
            'llm_base_url',
            default_value='',
            description='OpenAI-compatible server (vLLM) for agent, verifier and captions; '
            'empty: embedder-only answers, no captions',
        ),
        DeclareLaunchArgument(
            'llm_model', default_value='', description="served model id; empty: the preset's"
        ),
        DeclareLaunchArgument(
            'image_model',
            default_value=FROM_PRESET,
            description=f'image embedder (Hugging Face id or directory); {FROM_PRESET}: the '
            "models preset's; empty: no image view",
        ),
        DeclareLaunchArgument(
            'backend',
            default_value='internal',
            choices=list(BACKENDS),
            description='who drives: the built-in planner, Nav2, or goal_pose',
        ),
        DeclareLaunchArgument(
            'params_file', default_value=str(params_file), description='parameter file, last'
        ),
        DeclareLaunchArgument(
            'rviz', default_value='false', choices=['true', 'false'], description='start RViz'
        ),
        DeclareLaunchArgument(
            'ros_domain_id',
            default_value=EnvironmentVariable('ROS_DOMAIN_ID', default_value=DEFAULT_DOMAIN_ID),
            description=f'DDS domain of the nodes; default: ROS_DOMAIN_ID, else '
            f'{DEFAULT_DOMAIN_ID}',
        ),
        DeclareLaunchArgument(
            'discovery_range',
            default_value=EnvironmentVariable(
                'ROS_AUTOMATIC_DISCOVERY_RANGE', default_value=DEFAULT_DISCOVERY_RANGE
            ),
            description=f'how far the nodes look for peers ({", ".join(DISCOVERY_RANGES)}); '
            f'default: ROS_AUTOMATIC_DISCOVERY_RANGE, else {DEFAULT_DISCOVERY_RANGE}',
        ),
        DeclareLaunchArgument(
            'use_sim_time',
            default_value=str(use_sim_time).lower(),
            choices=['true', 'false'],
            description='every node (and RViz) on /clock: true for a bag played with --clock, '
            'false for the robot',
        ),
        DeclareLaunchArgument(
            'stop_timeout_s',
            default_value='90',
            description='on shutdown, how long a node may take after SIGINT before it gets '
            "SIGTERM; longer than memory_node's shutdown_wait_s (it ingests what is queued)",
        ),
    ]


# The arguments base_nodes reads: the base's own and those it shares with the stack.
BASE_ARGUMENTS = (
    'namespace',
    'base',
    'go1_robot_ip',
    'go1_params_file',
    'ros_domain_id',
    'discovery_range',
)
# What stops the launch when a base node exits: the command path to the robot is broken.
BASE_EXIT = 'exited: the command path to the base is broken'


def base_arguments(config: Path) -> list[DeclareLaunchArgument]:
    """The arguments that choose the robot base's driver; `config` holds its parameters."""
    return [
        DeclareLaunchArgument(
            'base',
            default_value=NO_BASE,
            choices=list(BASES),
            description=f'robot base driver to start beside the nodes: {NO_BASE} (the '
            f'default: nothing that moves a robot), or {GO1} (the unitree_ros driver)',
        ),
        DeclareLaunchArgument(
            'go1_robot_ip',
            default_value=FROM_FILE,
            description="with base:=go1, the Go1's address (192.168.12.1 on its Wi-Fi); "
            "empty: go1_params_file's (Ethernet, 192.168.123.161)",
        ),
        DeclareLaunchArgument(
            'go1_params_file',
            default_value=str(config / GO1_PARAMS),
            description="with base:=go1, the driver's parameter file (topics, frames)",
        ),
        DeclareLaunchArgument(
            'go1_safety_params_file',
            default_value=str(config / GO1_SAFETY_PARAMS),
            description="with base:=go1, safety_node's file after the presets: its input "
            "from twist_mux and the hard speed cap (a first walk's 0.2 m/s)",
        ),
    ]


def base_nodes(context: LaunchContext, config: Path) -> list:
    """The base's driver and twist_mux in `namespace`, or nothing; for an OpaqueFunction.
    Refuses, before any node starts, when a package the `base` argument asks for is not
    installed. Either one's exit ends the launch."""
    arguments = {name: LaunchConfiguration(name).perform(context) for name in BASE_ARGUMENTS}
    driver, mux = base_driver(arguments), base_mux(arguments, config)
    if driver is None or mux is None:
        return []
    nodes = []
    for part in (driver, mux):
        require_installed(part)
        nodes.append(
            Node(
                package=part.package,
                executable=part.executable,
                name=part.name,
                parameters=[str(part.parameter_file), part.overrides],
                remappings=list(part.remappings),
                output='screen',
                emulate_tty=True,
                additional_env=dds_environment(arguments),
                on_exit=Shutdown(reason=f'{part.name} {BASE_EXIT}'),
            )
        )
    return [GroupAction([PushRosNamespace(arguments['namespace']), *nodes])]


def stack_nodes(context: LaunchContext, config: Path, rviz_config: Path) -> list:
    """The stack's nodes (in `namespace`) and RViz, with `rviz_config` rewritten for the
    launch's presets (rviz_layout); for an OpaqueFunction."""
    arguments = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    arguments |= {
        name: LaunchConfiguration(name, default=default).perform(context)
        for name, default in BASE_DEFAULTS.items()
    }
    use_sim_time = sim_time(arguments)
    files = [str(path) for path in parameter_files(config, arguments)]
    overrides = node_overrides(arguments, use_sim_time)
    stop_timeout_s = LaunchConfiguration('stop_timeout_s').perform(context)
    dds = dds_environment(arguments)
    nodes = []
    for name in NODES:
        kind = LifecycleNode if name in MANAGED else Node
        node = kind(
            package='waymark_ros',
            executable=name,
            name=name,
            namespace='',  # the group's (PushRosNamespace); LifecycleNode asks for one
            parameters=[*files, overrides[name]],
            output='screen',
            emulate_tty=True,
            # performed now: at shutdown, a scoped include's arguments are gone
            sigterm_timeout=stop_timeout_s,
            additional_env=dds,
            on_exit=Shutdown(reason=REQUIRED[name]) if name in REQUIRED else None,
        )
        nodes.append(node)
        if name in MANAGED:
            nodes += managed_bring_up(node, name)
    if LaunchConfiguration('rviz').perform(context) == 'true':
        rviz_config = write_launch_layout(config, arguments, rviz_config)
    rviz = Node(
        package='rviz2',
        executable='rviz2',
        arguments=['-d', str(rviz_config)],
        parameters=[{'use_sim_time': use_sim_time}],
        additional_env=dds,
        condition=IfCondition(LaunchConfiguration('rviz')),
    )
    return [GroupAction([PushRosNamespace(arguments['namespace']), *nodes]), rviz]


# Transitions that mean a managed node did not come up, as rcl_lifecycle labels their
# states: a configure or activate whose callback returned FAILURE, or one that raised.
BRING_UP_FAILURES = (
    ('configuring', 'unconfigured', 'could not be configured'),
    ('activating', 'inactive', 'could not be activated'),
    (None, 'errorprocessing', 'raised in a transition'),
)


_TRANSITIONS = {
    'configure': Transition.TRANSITION_CONFIGURE,
    'activate': Transition.TRANSITION_ACTIVATE,
}


def managed_bring_up(node: LifecycleNode, name: str) -> list:
    """The actions that bring the lifecycle node `node` (named `name`) to active; they go
    after it. Configure at once, activate once configured. Until it is active, a failed or
    raising transition, or its exit, ends the launch with the reason (the node's own log
    says why); once active these guards go, and deactivating or cleaning it up by hand
    (`ros2 lifecycle set`) ends nothing."""

    def change(transition_id: int) -> EmitEvent:
        return EmitEvent(
            event=ChangeState(
                lifecycle_node_matcher=matches_action(node), transition_id=transition_id
            )
        )

    def ending(reason: str) -> list:
        return [LogInfo(msg=reason), Shutdown(reason=reason)]

    guards = [
        OnStateTransition(
            target_lifecycle_node=node,
            start_state=start,
            goal_state=goal,
            entities=ending(f'{name} {failure}: the launch ends; its log says why'),
        )
        for start, goal, failure in BRING_UP_FAILURES
    ]
    guards.append(
        OnProcessExit(target_action=node, on_exit=ending(f'{name} exited before it was active'))
    )

    def drop_guards(context: LaunchContext) -> None:
        for guard in guards:
            context.unregister_event_handler(guard)

    # When the process started, and when the node entered each state of its bring-up.
    entered: dict[str, float] = {}

    def started(_context: LaunchContext) -> None:
        entered.setdefault('started', time.monotonic())

    def record(state: str) -> OnStateTransition:
        def note(_context: LaunchContext) -> None:
            entered.setdefault(state, time.monotonic())

        return OnStateTransition(
            target_lifecycle_node=node, goal_state=state, entities=[OpaqueFunction(function=note)]
        )

    def check(_context: LaunchContext, resends: int = 0) -> list:
        """Ask again for a transition the node has not begun in time, and look again."""
        now = time.monotonic()
        if bring_up_over(entered, now, resends):
            return []
        again = []
        transition = transition_to_resend(entered, now, resends)
        if transition is not None:
            message = f'{name}: no {transition} begun in time; asking again'
            again = [LogInfo(msg=message), change(_TRANSITIONS[transition])]
            resends += 1
        follow = OpaqueFunction(function=check, kwargs={'resends': resends})
        return [*again, TimerAction(period=RESEND_CHECK_S, actions=[follow])]

    return [
        *(RegisterEventHandler(guard) for guard in guards),
        RegisterEventHandler(
            OnProcessStart(target_action=node, on_start=[OpaqueFunction(function=started)])
        ),
        *(
            RegisterEventHandler(record(state))
            for state in ('configuring', 'inactive', 'activating', 'active')
        ),
        TimerAction(period=RESEND_CHECK_S, actions=[OpaqueFunction(function=check)]),
        RegisterEventHandler(
            OnStateTransition(
                target_lifecycle_node=node,
                start_state='configuring',
                goal_state='inactive',
                entities=[change(Transition.TRANSITION_ACTIVATE)],
                handle_once=True,
            )
        ),
        RegisterEventHandler(
            OnStateTransition(
                target_lifecycle_node=node,
                start_state='activating',
                goal_state='active',
                entities=[OpaqueFunction(function=drop_guards)],
                handle_once=True,
            )
        ),
        change(Transition.TRANSITION_CONFIGURE),
    ]
