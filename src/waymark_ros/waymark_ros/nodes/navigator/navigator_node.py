# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node: drives the robot to GoTo targets, and only where the map allows.

The map comes from an OccupancyGrid topic or from the SLAM point-cloud map projected to 2D
within a band of heights above the floor (waymark_ros.nodes.navigator.floor places the floor).
It is inflated by the robot's radius. Every target is checked against it before anything
moves, whichever backend drives: a target outside the map, non-finite,
beyond `max_abs_coordinate_m`, with an orientation that is not a unit quaternion within
`quaternion_norm_tolerance`, in another frame, or with no reachable free cell within
`snap_radius_m` is refused with the reason; one inside a wall's inflation or in unknown
space is moved to the nearest reachable cell. A target remembered in another map epoch
than the current one (capture_node's, on `map_epoch_topic`) ends OUTCOME_STALE_EPOCH.

Backends (`backend`, one module each in this room): `internal` plans with
A* and follows the path on `cmd_vel`; `goal_topic` publishes the checked target on
`goal_pose` for a planner listening there; `nav2` sends it to Nav2's NavigateToPose.

The `explore` action drives, with the same backend, to frontier after frontier (see
waymark_ros.nodes.navigator.explore). One goal runs at a time, GoTo or Explore: a new one
preempts the one before, which ends FAILED, as in Nav2. The pose topic must be in the map
frame (a LIO SLAM odometry is).

An e-stop (std_msgs/Bool on `e_stop_topic`, latched, heard in every state) refuses new
goals with E_STOP while true and aborts the one being driven, which stops the robot, until
false arrives. Goals are refused, and the one running is canceled, the same way while
safety_node's state has not come for `safety_state_timeout_s` (navigation.safety_watch).
The internal backend sends a zero twist whenever a goal ends, however it
ends, and on deactivation and shutdown (Ctrl-C included).

A lifecycle node: configuring subscribes the inputs and builds the backend, activating
lets goals drive, deactivating cancels the goal being driven and stops the robot, cleaning
up releases the backend. The actions answer in every state, so a goal sent while the node
is not active is refused with that reason. With `autostart` (the default) it configures and
activates itself at start; the launch files set it false and request both transitions.
"""

from __future__ import annotations

import math
import threading
import time

from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from std_msgs.msg import Bool

from waymark.navigation.epochs import MapEpoch, stale_reason
from waymark.navigation.goals import check_goal, goal_orientation
from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import Explore, GoTo
from waymark_ros.nodes.navigator.backend import (
    Backend,
    CheckedGoal,
    MapState,
    Outcome,
    RefusedError,
    RobotPose,
    StaleEpochError,
)
from waymark_ros.nodes.navigator.display import Display
from waymark_ros.nodes.navigator.explore import ExploreRunner
from waymark_ros.nodes.navigator.floor import map_origin_height
from waymark_ros.nodes.navigator.inputs import Inputs
from waymark_ros.nodes.navigator.registry import BACKENDS
from waymark_ros.nodes.navigator.safety_watch import SafetyWatch
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S
from waymark_ros.ros.navigation_client import OUTCOMES
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

NOT_ACTIVE = 'navigator_node is not active'
E_STOP = 'e-stop engaged'
# Past a Nav2 cancel's own wait: how long deactivation waits for the goal to end.
_END_WAIT_S = 2.0


class NavigatorNode(LifecycleNode):
    def __init__(self) -> None:
        super().__init__('navigator_node')
        self._settings = settings = declare_settings(
            self, NavigatorParameters, on_change=self._on_settings
        )
        self._map_frame = settings.map_frame
        self._lock = threading.Lock()
        self._inputs: Inputs | None = None
        self._active: object | None = None  # the goal handle now driving
        self._driving = False  # the node is active: goals may drive
        self._e_stop = False
        self._backend: Backend | None = None
        self._explorer: ExploreRunner | None = None
        self._failure = ''  # why the last configure failed
        display = Display(self, settings.map_frame, settings.robot_radius_m)
        self.show, self.show_frontiers = display.show, display.show_frontiers
        self._go_to_server = self._serve(GoTo, 'go_to', self._execute)
        self._explore_server = self._serve(Explore, 'explore', self._explore)
        self.create_subscription(Bool, settings.e_stop_topic, self._on_e_stop, qos.latched())
        self._safety = SafetyWatch(self, settings)
        if settings.autostart:
            if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                raise RuntimeError(self._failure or 'configure failed')
            if self.trigger_activate() != TransitionCallbackReturn.SUCCESS:
                raise RuntimeError('activate failed')

    def _on_settings(self, settings: NavigatorParameters) -> None:
        """Live settings: goal checks use them at once, drives from the next goal on."""
        self._settings = settings
        self._safety.use(settings)
        if self._inputs is not None:
            self._inputs.use(settings)
        if self._backend is not None:
            self._backend.use(settings)
        if self._explorer is not None:
            self._explorer.use(settings)

    def _on_e_stop(self, msg: Bool) -> None:
        """Engaged: the goal being driven sees it at its next step and aborts."""
        engaged = bool(msg.data)
        if engaged != self._e_stop:
            if engaged:
                self.get_logger().warning('e-stop engaged: goals are refused')
            else:
                self.get_logger().info('e-stop released: goals are driven again')
        with self._lock:
            self._e_stop = engaged

    # -- lifecycle -----------------------------------------------------------------------

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._inputs = Inputs(self, self._settings, map_origin_height(self, self._settings))
            self._backend = BACKENDS[self._settings.backend](self, self, self._settings)
        except Exception as error:  # the node stays unconfigured, and says why
            self._close_inputs()
            self._failure = ' '.join(str(error).split()) or type(error).__name__
            self.get_logger().error(f'configure failed: {self._failure}')
            return TransitionCallbackReturn.FAILURE
        self._explorer = ExploreRunner(self, self._settings, self.get_logger())
        self.get_logger().info(f'configured: backend {self._settings.backend}')
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._driving = True
        self.get_logger().info('active: goals are driven')
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._halt()
        self.get_logger().info('inactive: goals are refused')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self._active is not None:
            self.get_logger().error('cleanup refused: a goal is still ending')
            return TransitionCallbackReturn.FAILURE
        self._release_backend()
        self.get_logger().info('cleaned up')
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._halt()
        self._release_backend()
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """On the way out (Ctrl-C), end the goal being driven and stop the robot first."""
        try:
            self._halt()
            self._release_backend()
        except Exception as error:  # going anyway; the base's own timeout stops it
            self.get_logger().error(f'stopping on shutdown failed: {error!r}')
        super().destroy_node()

    def _halt(self) -> None:
        """Refuse new goals, end the one being driven (canceled) and stop the robot."""
        with self._lock:
            self._driving = False
        deadline = time.monotonic() + self._settings.nav2.server_wait_s + _END_WAIT_S
        while self._active is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        if self._active is not None:
            self.get_logger().warning('the goal being driven has not ended yet')
        if self._backend is not None:
            self._backend.stop()

    def _release_backend(self) -> None:
        if self._backend is not None:
            self._backend.release()
        self._backend, self._explorer = None, None
        self._close_inputs()

    def _close_inputs(self) -> None:
        if self._inputs is not None:
            self._inputs.close()
        self._inputs = None

    def _serve(self, action_type, name: str, execute) -> ActionServer:
        """Every goal is accepted (a newer one preempts, an inactive node refuses it with
        the reason) and every cancel granted."""
        return ActionServer(
            self,
            action_type,
            name,
            execute_callback=execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )

    # -- actions -------------------------------------------------------------------------

    def _execute(self, handle) -> GoTo.Result:
        """Every path ends in an explicit outcome: an exception is a failure with its reason,
        never the default result (which reads as OUTCOME_REACHED)."""
        if refusal := self._take(handle):  # any goal still running sees this and stops
            outcome, message = GoTo.Result.OUTCOME_REFUSED, refusal
        else:
            try:
                outcome, message = self.run_goal(handle, heading=True)
            except Exception as error:  # any failure is the goal's outcome
                outcome, message = GoTo.Result.OUTCOME_FAILED, f'navigator error: {error!r}'
            finally:
                self._release(handle)
        if outcome == GoTo.Result.OUTCOME_REACHED:
            handle.succeed()
            self.get_logger().info(f'goal ended: {message}')
        else:
            # A goal the node canceled itself (deactivated) was not asked to: it aborts.
            if outcome == GoTo.Result.OUTCOME_CANCELED and handle.is_cancel_requested:
                handle.canceled()
            else:
                handle.abort()
            self.get_logger().warning(f'goal ended ({OUTCOMES[outcome]}): {message}')
        robot, _ = self.latest()
        final = robot.to_msg(self._map_frame) if robot is not None else PoseStamped()
        return GoTo.Result(outcome=outcome, message=message, final_pose=final)

    def _explore(self, handle) -> Explore.Result:
        started = time.monotonic()
        result = Explore.Result()
        if refusal := self._take(handle):  # preempts any GoTo goal or exploration running
            outcome, message = Explore.Result.OUTCOME_FAILED, refusal
        else:
            try:
                outcome, message = self._explorer.run(handle, result, Explore.Feedback(), started)
            except Exception as error:  # any failure is its outcome
                outcome, message = Explore.Result.OUTCOME_FAILED, f'navigator error: {error!r}'
            finally:
                self._release(handle)
                self.show_frontiers((), None)
        if outcome == Explore.Result.OUTCOME_CANCELED and handle.is_cancel_requested:
            handle.canceled()
        elif outcome in (Explore.Result.OUTCOME_FAILED, Explore.Result.OUTCOME_CANCELED):
            handle.abort()
        else:
            handle.succeed()
        self.get_logger().info(f'exploration ended: {message}')
        result.outcome, result.message = outcome, message
        result.elapsed_s = time.monotonic() - started
        return result

    def _take(self, handle) -> str:
        """Give the drive to `handle` and answer ''; else why not (the node is not active,
        the e-stop is engaged, or safety_node is silent)."""
        self._safety.wait_fresh(self._settings.input_wait_s)
        with self._lock:
            if refusal := self.halted():
                return refusal
            self._active = handle
            return ''

    def _release(self, handle) -> None:
        """Stop the backend, and free the drive unless a newer goal has taken it already."""
        if (backend := self._backend) is not None:
            backend.stop()
        with self._lock:
            if self._active is handle:
                self._active = None

    # -- what backends and exploration ask of the node -------------------------------------

    def run_goal(self, handle, heading: bool) -> Outcome:
        """Check a GoTo goal (or an exploration leg) and take it to its end with the
        backend; a goal that fails a check is refused, or stale, with the reason."""
        try:
            self._check_epoch(handle.request)
            return self._backend.drive(handle, self.check(handle.request.target, heading))
        except StaleEpochError as why:
            return GoTo.Result.OUTCOME_STALE_EPOCH, str(why)
        except RefusedError as why:
            return GoTo.Result.OUTCOME_REFUSED, str(why)

    def check(self, target: PoseStamped, heading: bool) -> CheckedGoal:
        """The target checked on the newest map, from the robot's pose; else RefusedError."""
        settings = self._settings
        p, q = target.pose.position, target.pose.orientation
        if not all(math.isfinite(v) for v in (p.x, p.y, p.z)):
            raise RefusedError(f'non-finite goal position ({p.x}, {p.y}, {p.z})')
        try:
            orientation = goal_orientation((q.x, q.y, q.z, q.w), settings.quaternion_norm_tolerance)
        except ValueError as error:
            raise RefusedError(str(error)) from None
        state, robot = self.inputs()
        check = check_goal(
            state.grid,
            p.x,
            p.y,
            target.header.frame_id,
            robot.x,
            robot.y,
            settings.snap_radius_m,
            settings.start_snap_radius_m,
            settings.max_abs_coordinate_m,
        )
        if not check.accepted:
            raise RefusedError(check.message)
        return CheckedGoal(target, state, check, orientation, heading)

    def _check_epoch(self, request: GoTo.Goal) -> None:
        """A remembered target must be from the current map epoch, waiting input_wait_s for
        the first report of it; else StaleEpochError (or RefusedError when none came)."""
        if not request.evidence_session:
            return
        current = self._wait_for(self._current_epoch)
        if current is None:
            raise RefusedError(
                f'target is from session {request.evidence_session} map epoch '
                f'{request.evidence_map_epoch}, and no current map epoch has come on '
                f'{self._settings.map_epoch_topic}'
            )
        if stale := self.stale(request):
            raise StaleEpochError(stale)

    def halted(self) -> str:
        if not self._driving:
            return NOT_ACTIVE
        return E_STOP if self._e_stop else self._safety.silence()

    def stale(self, request: GoTo.Goal) -> str:
        if not request.evidence_session:
            return ''
        return stale_reason(
            (request.evidence_session, request.evidence_map_epoch), self._current_epoch()
        )

    def inputs(self) -> tuple[MapState, RobotPose]:
        """The newest map and pose, waiting input_wait_s for the first; else RefusedError."""
        # A goal sent as the system starts may come before the map does.
        self._wait_for(lambda: None not in self.latest())
        robot, state = self.latest()
        if state is None:
            raise RefusedError(f'no map received yet on {self._settings.map_input_topic}')
        if robot is None:
            raise RefusedError('no robot pose received yet')
        return state, robot

    def latest(self) -> tuple[RobotPose | None, MapState | None]:
        inputs = self._inputs
        return inputs.latest() if inputs is not None else (None, None)

    def _current_epoch(self) -> MapEpoch | None:
        inputs = self._inputs
        return inputs.epoch() if inputs is not None else None

    def preempted(self, handle) -> bool:
        with self._lock:
            return self._active is not handle

    def hand_over(self, holder, successor) -> bool:
        with self._lock:
            if self._active is not holder:
                return False
            self._active = successor
            return True

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds / NS_PER_S

    def _wait_for(self, ready):
        """`ready()` once truthy, or when input_wait_s has passed or the node is
        deactivated."""
        deadline = time.monotonic() + self._settings.input_wait_s
        while True:
            value = ready()
            if value or self.halted() or time.monotonic() >= deadline:
                return value
            time.sleep(0.05)


def main(args=None) -> None:
    run_node(NavigatorNode, 'navigator_node', args, threads=4, last_words=True)


if __name__ == '__main__':
    main()
