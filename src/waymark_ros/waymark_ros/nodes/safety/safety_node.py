# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""safety_node: the last word between waymark's navigator and the base.

It reads the navigator's velocity command (`input_topic`, `cmd_vel_nav`; on the Go1
twist_mux's output, which carries teleop's too) and publishes what the base may do
(`output_topic`, `cmd_vel`, the driver's) at `rate_hz`
(waymark.safety.gate says how each output is decided):

- speeds and accelerations within `limits.*`; non-finite commands become zero;
- a watchdog: zero twists when no command came for `command_timeout_s`, repeated for
  `stop_repeat_s`, so the base stops when the navigator dies or hangs;
- an e-stop: true on `e_stop_topic` (std_msgs/Bool, latched) halts at once and holds until
  false arrives; commands from before the release are not resumed;
- a local stop: with `local_stop.cloud_topic`, a live point cloud in the body frame is
  watched, and points in the box ahead (heights above the floor) zero forward motion
  until it clears; a cloud that stops coming does the same (fail safe). A cloud in a
  sensor's frame (`local_stop.cloud_frame_id`, a depth camera's optical frame) is moved
  into the body frame by its static transform from TF (ros.static_frame); clouds in any
  other frame are refused, and count as missing.

Its state is latched on `safety/state` (JSON: e_stop, reasons, local_stop), on every change
and at least every `state_period_s`: navigator_node drives only while it comes. Its health
is on `/diagnostics`. On shutdown it sends a last zero twist and waits (briefly) until the
base has it. When safety_node itself dies, navigator_node stops driving, the robot launch
shuts down (the Go1 driver lies the robot down as it exits), and the driver patched by
docker/patches zeroes its command after 0.4 s of silence.
"""

from __future__ import annotations

import json
import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Twist
from rclpy.duration import Duration
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Bool, String

from waymark.parameters.safety import SafetyParameters
from waymark.safety.gate import E_STOP, NO_CLOUD, OBSTACLE, SafetyGate
from waymark_ros.nodes.safety.static_frame import StaticFrame
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S
from waymark_ros.ros.navigation_msgs import points_from_cloud, twist_msg
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

STATE_TOPIC = 'safety/state'
_LAST_STOP_WAIT_S = 0.5  # on shutdown: how long the last zero twist may wait for the base


class SafetyNode(Node):
    def __init__(self) -> None:
        super().__init__('safety_node')
        params = declare_settings(self, SafetyParameters, on_change=self._on_parameters)
        self._params = params
        stop = params.local_stop
        self._footprint = stop.footprint()
        self._gate = SafetyGate(params.gate_config(), self._now_s())
        self._cloud_errors = 0
        self._sensor_frame = (
            StaticFrame(self, stop.frame_id, stop.cloud_frame_id, stop.tf_timeout_s)
            if stop.cloud_frame_id and stop.cloud_frame_id != stop.frame_id
            else None
        )
        self._state: dict | None = None
        self._state_sent_s = -math.inf
        self._output = self.create_publisher(Twist, params.output_topic, qos.commands())
        self._state_publisher = self.create_publisher(String, STATE_TOPIC, qos.latched())
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.create_subscription(Twist, params.input_topic, self._on_command, qos.commands())
        self.create_subscription(Bool, params.e_stop_topic, self._on_e_stop, qos.latched())
        if stop.cloud_topic:
            self.create_subscription(
                PointCloud2, stop.cloud_topic, self._on_cloud, qos.state_input(stop.reliable, 1)
            )
        else:
            self.get_logger().warning('no local_stop.cloud_topic: no stop for obstacles ahead')
        self.create_timer(1.0 / params.rate_hz, self._step)
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics)
        self._step()
        self.get_logger().info(
            f'{params.input_topic} -> {params.output_topic}: at most '
            f'{params.limits.max_linear:g} m/s and {params.limits.max_angular:g} rad/s, '
            f'stop after {params.command_timeout_s:g} s without commands'
            + (f', local stop from {stop.cloud_topic}' if stop.cloud_topic else '')
        )

    def _on_parameters(self, params: SafetyParameters) -> None:
        """Live parameters: limits and timeouts apply from the next step."""
        self._params = params
        self._gate.use(params.gate_config())

    # -- inputs --------------------------------------------------------------------------

    def _on_command(self, msg: Twist) -> None:
        if not self._gate.command(msg.linear.x, msg.angular.z, self._now_s()):
            if self._gate.e_stop:
                return
            self.get_logger().warning(
                f'non-finite command taken as zero: linear {msg.linear.x}, angular {msg.angular.z}',
                throttle_duration_sec=5.0,
            )

    def _on_e_stop(self, msg: Bool) -> None:
        engaged = bool(msg.data)
        if engaged and not self._gate.e_stop:
            self.get_logger().warning('e-stop engaged: motion halted')
        elif self._gate.e_stop and not engaged:
            self.get_logger().info('e-stop released')
        self._gate.set_e_stop(engaged)
        self._step()  # at once, not at the next tick

    def _on_cloud(self, msg: PointCloud2) -> None:
        frame, sensor = self._params.local_stop.frame_id, self._sensor_frame
        try:
            if sensor is not None and msg.header.frame_id == sensor.source:
                points = sensor.apply(points_from_cloud(msg))
            elif frame and msg.header.frame_id != frame:
                raise ValueError(f'cloud in frame {msg.header.frame_id!r}, not {frame!r}')
            else:
                points = points_from_cloud(msg)
            inside = self._footprint.count_inside(points)
        except ValueError as error:  # no update: the cloud goes stale and stops forward motion
            self._cloud_errors += 1
            self.get_logger().error(f'cloud refused: {error}', throttle_duration_sec=5.0)
            return
        self._gate.cloud(inside, self._now_s())

    # -- output --------------------------------------------------------------------------

    def _step(self) -> None:
        now_s = self._now_s()
        decision = self._gate.step(now_s)
        if decision.publish:
            self._output.publish(twist_msg(*decision.velocity))
        state = {
            'e_stop': self._gate.e_stop,
            'reasons': list(decision.reasons),
            'local_stop': bool(self._params.local_stop.cloud_topic),
        }
        changed = state != self._state
        if changed or now_s - self._state_sent_s >= self._params.state_period_s:
            self._state, self._state_sent_s = state, now_s
            self._state_publisher.publish(String(data=json.dumps(state, sort_keys=True)))
        if changed:
            blocked = [r for r in decision.reasons if r in (OBSTACLE, NO_CLOUD)]
            if blocked:
                where = self._params.local_stop.cloud_topic
                self.get_logger().warning(
                    f'forward motion blocked: {blocked[0]} ({where})', throttle_duration_sec=2.0
                )

    def _publish_diagnostics(self) -> None:
        level, message = self._health()
        values = dict(
            self._gate.counts,
            cloud_errors=self._cloud_errors,
            inside_points=self._gate.inside_points,
            reasons=', '.join((self._state or {}).get('reasons', [])),
        )
        status = DiagnosticStatus(
            level=level,
            name=f'{self.get_name()}: command gate',
            message=message,
            hardware_id=self._params.output_topic,
            values=[KeyValue(key=key, value=str(value)) for key, value in sorted(values.items())],
        )
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(array)

    def _health(self) -> tuple[bytes, str]:
        """ERROR without a fresh cloud (the local stop is blind); WARN while e-stopped, for
        an obstacle ahead or without a local stop; OK otherwise."""
        reasons = (self._state or {}).get('reasons', [])
        stop = self._params.local_stop
        if NO_CLOUD in reasons:
            return DiagnosticStatus.ERROR, (
                f'no fresh cloud on {stop.cloud_topic} (older than {stop.cloud_timeout_s:g} s '
                'or none yet): forward motion stopped'
            )
        if E_STOP in reasons:
            return DiagnosticStatus.WARN, E_STOP
        if OBSTACLE in reasons:
            return DiagnosticStatus.WARN, f'{OBSTACLE}: forward motion stopped'
        if not stop.cloud_topic:
            return DiagnosticStatus.WARN, 'local stop off (no local_stop.cloud_topic)'
        return DiagnosticStatus.OK, ', '.join(reasons) or 'passing commands'

    def destroy_node(self) -> None:
        """A last zero twist, acknowledged by the base if it is there, before going."""
        try:
            output = self._output
            output.publish(twist_msg(0.0, 0.0))
            output.wait_for_all_acked(Duration(seconds=_LAST_STOP_WAIT_S))
        except Exception as error:  # shutting down anyway: say so, do not hide the rest
            self.get_logger().error(f'last stop not sent: {error!r}')
        super().destroy_node()

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds / NS_PER_S


def main(args=None) -> None:
    run_node(SafetyNode, 'safety_node', args, last_words=True)


if __name__ == '__main__':
    main()
