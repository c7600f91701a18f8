# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""sim_base_node: a simulated robot base for demos and tests, like turtlesim. Not a driver.

A kinematic unicycle: it drives the latest `cmd_vel` (forward speed and yaw rate; the rest of
the Twist is ignored) exactly along arcs and publishes its pose as nav_msgs/Odometry in the
map frame, where navigator_node reads it. It has no dynamics, slip, noise or sensors; it
stands in for the legged base so that the stack runs closed-loop without one. Never start it
next to a real robot: it talks on the same topics as the robot's driver.

Like a real base it clamps commands to its limits (`max_linear`, `max_angular`). What stops
it when commands stop coming is `driver_model`:

- `sim` (the default): `command_timeout_s` after the last command, always.
- `unitree_ros`: what the Go1's driver (snt-arg/unitree_ros at the commit pinned in
  docker/Dockerfile.go1) does. `cmd_vel_callback_` in src/unitree_ros.cpp hands each Twist to
  the SDK and stamps it; the SDK's receive thread (`recv_high_state_` in
  src/unitree_driver.cpp) sends that last high-level command to the robot every 20 ms for as
  long as the process lives. The only zero on silence is `cmd_vel_reset_callback_`, a 1 ms
  wall timer that zeroes when it runs 400-402 ms after the last message: a busy executor can
  miss that window, and then the last command persists. Here the check runs every
  `reset_check_period_s` with the same window (`command_timeout_s` to 2 ms later), and
  `miss_reset_window` makes it miss, deterministically.
- `unitree_ros_patched`: that driver with docker/patches/unitree_ros-cmd-vel-timeout.patch,
  which zeroes at the first check at or after `command_timeout_s`.

Both unitree_ros models stop on shutdown, as the driver's destructor (`~UnitreeDriver` →
`stop()` → `stand_down()`, which first sends a zero velocity) lies the robot down: the
node's last odometry message then shows it standing. A kill -9 sends nothing.

Non-finite commands are ignored (they neither move it nor keep it moving). A command
takes effect when it is received: the robot is first advanced to that moment under the one
before, so its path does not depend on when the timer fires.

With `collision_map`, the occupied cells of the OccupancyGrid on `map_topic` stop the robot's
centre at their boundary (unknown cells and space off the map do not). Each time it runs into
one counts a collision on `sim_base/stats` (latched JSON, with the distance travelled and the
pose). `sim_base/reset` (std_srvs/Trigger) puts it back at `initial_pose` and clears the stats,
and answers whether it did.

With `publish_tf` it also broadcasts frame_id -> child_frame_id on /tf with each odometry
message, as a localisation does, for nodes that read the pose from TF. That needs
tf2_msgs (a ROS 2 install has it); without it the node says so once and publishes odometry
only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import TransformStamped, Twist
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import Trigger

from waymark.geometry import quaternion_from_yaw
from waymark.navigation.grid import GridGeometry
from waymark.parameters.sim_base import SIM, UNITREE_ROS, SimBaseParameters
from waymark.sim.driver import UNITREE_RESET_WINDOW_NS, zeroes_on_check
from waymark.sim.kinematics import Motion, Pose2D, drive, integrate_arc
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, ns_to_stamp
from waymark_ros.ros.navigation_msgs import occupancy_map_from_msg
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

# Reliable KEEP_LAST, for odometry and commands: reliable and best-effort pose subscribers
# (navigator_node's reliable_input either way) both match and a slow one never holds the
# base up; controllers and teleop tools publish commands so (the rclpy default), and the
# final stop command is not lost.
_RELIABLE_LATEST = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
_STATS_PERIOD_S = 0.5
_MAX_STEP_PERIODS = 5  # a stalled process (debugger, loaded machine) must not teleport it
_SAMPLES_PER_CELL = 4  # collision samples along the path, per map cell
_LAST_ODOMETRY_WAIT_S = 0.5  # on shutdown, for the odometry that shows the base at rest
_HELD = 2**62  # ns: a command kept until another one comes


@dataclass(frozen=True)
class _Obstacles:
    geometry: GridGeometry
    occupied: np.ndarray  # bool (height, width)

    def is_free(self, x: float, y: float) -> bool:
        row, col = self.geometry.world_to_cell(x, y)
        return not (self.geometry.contains_cell(row, col) and bool(self.occupied[row, col]))


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


class SimBaseNode(Node):
    def __init__(self) -> None:
        super().__init__('sim_base_node')
        params = declare_settings(self, SimBaseParameters, on_change=self._on_parameters)
        x, y, yaw = params.initial_pose
        self._initial: Pose2D = (x, y, math.remainder(yaw, math.tau))
        self._frame, self._child_frame = params.frame_id, params.child_frame_id
        self._on_parameters(params)
        rate, map_topic = params.rate_hz, params.map_topic
        self._max_step_ns = round(_MAX_STEP_PERIODS * NS_PER_S / rate)
        self._model = params.driver_model
        self._miss_reset_window = params.miss_reset_window
        self._obstacles: _Obstacles | None = None
        self._odometry = self.create_publisher(Odometry, params.odom_topic, _RELIABLE_LATEST)
        self._stats = self.create_publisher(String, 'sim_base/stats', qos.latched())
        self._tf = self._tf_publisher() if params.publish_tf else None
        self._restart()
        self.create_subscription(Twist, params.cmd_vel_topic, self._on_command, _RELIABLE_LATEST)
        if params.collision_map:
            self.create_subscription(OccupancyGrid, map_topic, self._on_map, qos.latched())
        self.create_service(Trigger, 'sim_base/reset', self._on_reset)
        self.create_timer(1.0 / rate, self._tick)
        if self._model != SIM:
            self.create_timer(params.reset_check_period_s, self._reset_check)
        self.create_timer(_STATS_PERIOD_S, self._publish_stats)
        self.get_logger().info(
            f'simulated base at ({x:.2f}, {y:.2f}, {yaw:.2f}) in {self._frame!r}, '
            f'driver model {self._model}'
            + (f', obstacles from {map_topic}' if params.collision_map else '')
        )

    def _on_parameters(self, params: SimBaseParameters) -> None:
        """Live parameters: they apply from the next update on."""
        self._max_linear, self._max_angular = params.max_linear, params.max_angular
        self._timeout_ns = round(params.command_timeout_s * NS_PER_S)
        self._publish_idle = params.publish_while_idle

    def _restart(self) -> None:
        """Stand still at the initial pose with clear stats, and say so."""
        self._pose = self._initial
        self._command = (0.0, 0.0)
        self._command_until_ns = 0
        self._command_ns: int | None = None  # the last command's arrival; None once zeroed
        self._velocity = (0.0, 0.0)  # executed in the last update, for the odometry twist
        self._last_ns = self._now_ns()
        self._distance_m = 0.0
        self._collisions = 0
        self._in_contact = False
        self._ignored = 0
        self._publish_odometry()
        self._publish_stats()

    def _tf_publisher(self):
        """(the /tf publisher, TFMessage), or None without tf2_msgs."""
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            self.get_logger().warning(
                'publish_tf: tf2_msgs is not installed (it comes with ROS 2), so no TF is '
                'published, odometry only (publish_tf:=false silences this)'
            )
            return None
        return self.create_publisher(TFMessage, '/tf', qos.tf()), TFMessage

    # -- inputs --------------------------------------------------------------------------

    def _on_command(self, msg: Twist) -> None:
        v, w = msg.linear.x, msg.angular.z
        if not (math.isfinite(v) and math.isfinite(w)):
            self._ignored += 1
            self.get_logger().warning(
                f'non-finite command ignored: linear {v}, angular {w}', throttle_duration_sec=5.0
            )
            return
        now = self._now_ns()
        self._advance(now)
        self._command = (v, w)
        self._command_until_ns = now + self._timeout_ns if self._model == SIM else _HELD
        self._command_ns = now

    def _reset_check(self) -> None:
        """The unitree_ros models' zeroing check (see the module docstring)."""
        if self._command_ns is None:
            return
        now = self._now_ns()
        silent_ns = now - self._command_ns
        if self._model == UNITREE_ROS and self._miss_reset_window:
            return  # the window passes unseen: the last command stays
        window_ns = UNITREE_RESET_WINDOW_NS if self._model == UNITREE_ROS else None
        if zeroes_on_check(silent_ns, self._timeout_ns, window_ns):
            self._stop(now)

    def _stop(self, now_ns: int) -> None:
        """Zero the command from now_ns on, as the driver's walk_w_vel(0, 0, 0)."""
        self._advance(now_ns)
        self._command = (0.0, 0.0)
        self._command_ns = None

    def _on_map(self, msg: OccupancyGrid) -> None:
        try:
            occupancy = occupancy_map_from_msg(msg)
        except ValueError as error:
            self.get_logger().error(f'map refused: {error}')
            return
        if occupancy.frame_id != self._frame:
            self.get_logger().error(
                f'map in frame {occupancy.frame_id!r}, not {self._frame!r}: ignored'
            )
            return
        self._obstacles = _Obstacles(occupancy.geometry, occupancy.occupied_mask())
        g = occupancy.geometry
        self.get_logger().info(
            f'map: {g.width}x{g.height} cells of {g.resolution:g} m, '
            f'{int(self._obstacles.occupied.sum())} occupied'
        )
        self._publish_stats()

    def _on_reset(self, _request: Trigger.Request, _response: Trigger.Response) -> Trigger.Response:
        try:
            self._restart()
        except Exception as error:  # the caller hears why, the node keeps running
            self.get_logger().error(f'reset failed: {error!r}')
            return Trigger.Response(success=False, message=f'reset failed: {error!r}')
        self.get_logger().info('reset to the initial pose')
        return Trigger.Response(success=True, message='reset to the initial pose')

    # -- simulation ----------------------------------------------------------------------

    def _tick(self) -> None:
        was_moving = self._velocity != (0.0, 0.0)
        self._advance(self._now_ns())
        if self._publish_idle or was_moving or self._velocity != (0.0, 0.0):
            self._publish_odometry()  # while moving, and once more when it has stopped

    def _advance(self, now_ns: int) -> None:
        """Move the robot under the current command from the last update until now_ns."""
        start_ns, self._last_ns = self._last_ns, now_ns
        elapsed_ns = now_ns - start_ns
        if elapsed_ns > self._max_step_ns:
            self.get_logger().warning(
                f'{elapsed_ns / NS_PER_S:.2f} s between updates; simulated '
                f'{self._max_step_ns / NS_PER_S:.2f} s',
                throttle_duration_sec=5.0,
            )
            elapsed_ns = self._max_step_ns
        driven_ns = min(elapsed_ns, self._command_until_ns - start_ns)
        # Clamped here, so that a limit changed while driving applies at once.
        v, w = (
            _clamp(self._command[0], self._max_linear),
            _clamp(self._command[1], self._max_angular),
        )
        if driven_ns <= 0 or (v == 0.0 and w == 0.0):
            self._velocity = (0.0, 0.0)
            return
        dt = driven_ns / NS_PER_S
        if self._obstacles is None:
            motion = Motion(integrate_arc(*self._pose, v, w, dt), dt, blocked=False)
        else:
            step_m = self._obstacles.geometry.resolution / _SAMPLES_PER_CELL
            motion = drive(self._pose, v, w, dt, self._obstacles.is_free, step_m)
        self._pose = motion.pose
        self._distance_m += abs(v) * motion.duration_s
        running = driven_ns == elapsed_ns and not motion.blocked
        self._velocity = (v, w) if running else (0.0, 0.0)
        if motion.blocked and not self._in_contact:
            self._collisions += 1
            self.get_logger().warning(
                f'collision at ({self._pose[0]:.2f}, {self._pose[1]:.2f}): stopped at the obstacle'
            )
            self._publish_stats()
        self._in_contact = motion.blocked

    # -- output --------------------------------------------------------------------------

    def _publish_odometry(self) -> None:
        x, y, yaw = self._pose
        msg = Odometry()
        msg.header.frame_id = self._frame
        msg.header.stamp = ns_to_stamp(self._last_ns)
        msg.child_frame_id = self._child_frame
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
        o = msg.pose.pose.orientation
        o.x, o.y, o.z, o.w = quaternion_from_yaw(yaw)
        msg.twist.twist.linear.x, msg.twist.twist.angular.z = self._velocity
        self._odometry.publish(msg)
        if self._tf is not None:
            publisher, message = self._tf
            transform = TransformStamped(header=msg.header, child_frame_id=self._child_frame)
            transform.transform.translation.x, transform.transform.translation.y = x, y
            transform.transform.rotation = msg.pose.pose.orientation
            publisher.publish(message(transforms=[transform]))

    def _publish_stats(self) -> None:
        x, y, yaw = self._pose
        stats = dict(
            x=x,
            y=y,
            yaw=yaw,
            distance_m=self._distance_m,
            collisions=self._collisions,
            in_contact=self._in_contact,
            ignored_commands=self._ignored,
            map_loaded=self._obstacles is not None,
        )
        self._stats.publish(String(data=json.dumps(stats, sort_keys=True)))

    def _now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def destroy_node(self) -> None:
        """The unitree_ros models lie down on the way out: a last odometry at rest."""
        if self._model != SIM:
            try:
                self._stop(self._now_ns())
                self._velocity = (0.0, 0.0)
                self._publish_odometry()
                self._odometry.wait_for_all_acked(Duration(seconds=_LAST_ODOMETRY_WAIT_S))
                self.get_logger().info('lying down: velocity zeroed on shutdown')
            except Exception as error:  # shutting down anyway: say so, do not hide the rest
                self.get_logger().error(f'last stop not sent: {error!r}')
        super().destroy_node()


def main(args=None) -> None:
    run_node(SimBaseNode, 'sim_base_node', args, last_words=True)


if __name__ == '__main__':
    main()
