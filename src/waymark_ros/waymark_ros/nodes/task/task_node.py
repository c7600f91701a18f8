# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node: runs the robot's tasks (waymark.tasks) and keeps their ledger.

A `run_task` goal (RunTask: text, photo or named place) is one task of the TaskRunner:
recall over reasoner_node's Ask, drives and stop turns over navigator_node's GoTo, views
from the camera, a judge (`ocr` here, `vlm` on the robot), and a record in the ledger
whatever happens. One task runs at a time: a goal that arrives meanwhile, or one that
does not check out, is answered STATUS_REFUSED with the reason and nothing is recorded.
`mark` names the place at the current pose with its recent camera views (the latest per
heading bucket among frames taken nearby); `list_tasks` and `get_task` read the ledger;
`consolidate` rewrites the house notes (mechanically without a consolidation model). At
start a task cut short by a crash is recorded as interrupted.

Tasks run in a reentrant callback group and their action clients in another, so the
answers a task waits for are taken while it waits; services never wait behind a task.
"""

from __future__ import annotations

import hashlib
import threading
import time
import traceback
from dataclasses import replace

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from waymark.agent.llm import ChatClient
from waymark.memory.views.ocr import TextReader
from waymark.memory.views.photo_match import PhotoMatcher
from waymark.parameters.tasks import TaskNodeParameters
from waymark.tasks.attempts import RunGoal
from waymark.tasks.consolidation import consolidate
from waymark.tasks.goal_photo import check_goal_photo
from waymark.tasks.house_notes import NOTE_NAMES, HouseNotesReader, HouseNotesStore
from waymark.tasks.judge import Judge, OcrJudge, VlmJudge
from waymark.tasks.ledger import TaskLedger, UnknownTaskError
from waymark.tasks.outcomes import Budget, Spent, TerminationReason
from waymark.tasks.photo_judge import PhotoFirstJudge, PhotoJudge
from waymark.tasks.places import PlaceBook, PlacePose, PlaceView
from waymark.tasks.records import GoalModality, RecordFormatError, TaskGoal
from waymark.tasks.runner import BudgetLeft, Feedback, TaskRunner
from waymark.tasks.stop_views import StopView
from waymark_interfaces.action import RunTask
from waymark_interfaces.srv import Consolidate, GetTask, ListTasks, Mark
from waymark_ros.nodes.task.action_call import ActionWaits
from waymark_ros.nodes.task.body import RosBody
from waymark_ros.nodes.task.drive import GoToDrive
from waymark_ros.nodes.task.explore import FrontierExplore
from waymark_ros.nodes.task.memory_relocation import memory_relocator
from waymark_ros.nodes.task.place_memory import PlaceMemory
from waymark_ros.nodes.task.pose_track import PoseTrack
from waymark_ros.nodes.task.recall import AskRecall
from waymark_ros.nodes.task.task_msgs import (
    get_task_missing,
    get_task_response,
    list_tasks_failed,
    list_tasks_response,
    refused_result,
    run_task_feedback,
    run_task_result,
    task_request,
)
from waymark_ros.nodes.task.task_reflection import TaskReflection
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import pose_stamped
from waymark_ros.ros.lesson_calibration import LessonCalibrator
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.pose_input import subscribe_pose
from waymark_ros.ros.spin import run_node

# A running task, services and inputs each need a thread; two spare for the action
# clients' answers the task waits on and a refused second goal.
EXECUTOR_THREADS = 6
MAX_LIST_LIMIT = 1000


class TaskNode(Node):
    def __init__(self, **kwargs) -> None:
        """`kwargs` go to rclpy's Node (a context, parameter overrides)."""
        super().__init__('task_node', **kwargs)
        params = declare_settings(self, TaskNodeParameters)
        self._params = params
        self.executor_threads = EXECUTOR_THREADS
        root = params.root
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._ledger = TaskLedger(root / 'ledger')
        report = self._ledger.recover_interrupted()
        self._places = PlaceBook(root / 'places.json')
        self._notes = HouseNotesStore(root / 'notes')

        actions = params.actions
        waits = ActionWaits(
            actions.server_wait_s,
            actions.accept_wait_s,
            actions.cancel_wait_s,
            actions.resend_after_s,
        )
        clients = ReentrantCallbackGroup()
        inputs = params.inputs
        self._track = PoseTrack(params.map_frame, inputs.pose_timeout_s, params.coverage.params())
        drive = GoToDrive(
            self, params.actions.go_to, waits, self._track.odometer, params.map_frame, clients
        )
        self._body = RosBody(self._track, drive, inputs.frame_period_s, inputs.frame_ring_length)
        recall = AskRecall(
            self, params.actions.ask, waits, params.map_frame, params.max_text_chars, clients
        )
        self._place_memory = PlaceMemory(
            self, params.actions.store_place, params.actions.server_wait_s, clients
        )
        sensors = MutuallyExclusiveCallbackGroup()
        subscribe_pose(
            self,
            inputs.pose_type,
            inputs.odom_topic,
            self._track.on_pose,
            qos.state_input(reliable=False, depth=5),
            callback_group=sensors,
        )
        self.create_subscription(
            CompressedImage,
            inputs.image_topic,
            self._body.on_image,
            qos.sensor_input(reliable=False, depth=2),
            callback_group=sensors,
        )
        if inputs.map_epoch_topic:
            self.create_subscription(
                String,
                inputs.map_epoch_topic,
                self._track.on_epoch,
                qos.latched(),
                callback_group=sensors,
            )
        actions, wait_s = params.actions, params.actions.server_wait_s
        hooks = []  # a closed task is counted for its lessons, then reflected on
        if actions.calibrate_lessons:
            hooks.append(LessonCalibrator(self, actions.calibrate_lessons, wait_s).on_task_closed)
        if actions.reflect_lessons:
            hooks.append(TaskReflection(self, actions.reflect_lessons, wait_s).on_task_closed)
        self._runner = TaskRunner(
            self._ledger,
            recall,
            drive,
            self._body,
            self._judge(params),
            places=self._places,
            notes=HouseNotesReader(root / 'notes'),
            params=params.runner_params(),
            run_id=params.run_id,
            on_closed=lambda record: _each(hooks, record),
            relocator=memory_relocator(self, params.relocation),
            explorer=FrontierExplore(self, actions.explore, waits, self._track.odometer, clients)
            if actions.explore
            else None,
        )
        self._busy = threading.Lock()
        self._default_budget = params.budget.budget()

        services = MutuallyExclusiveCallbackGroup()
        requests = qos.requests(10)
        self._server = ActionServer(
            self,
            RunTask,
            'run_task',
            execute_callback=self._on_run_task,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
            goal_service_qos_profile=requests,
            result_service_qos_profile=requests,
            cancel_service_qos_profile=requests,
        )
        for kind, name, handler in (
            (Mark, 'mark', self._on_mark),
            (ListTasks, 'list_tasks', self._on_list),
            (GetTask, 'get_task', self._on_get),
        ):
            self.create_service(kind, name, handler, qos_profile=requests, callback_group=services)
        # A consolidation with a model takes minutes; reads and marks never wait for it.
        self.create_service(
            Consolidate,
            'consolidate',
            self._on_consolidate,
            qos_profile=requests,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.get_logger().info(
            f'tasks in {root}; judge {params.judge.backend}; '
            f'{len(report.stopped)} interrupted task(s) recorded at start; '
            f'{len(self._places)} named places'
        )

    @staticmethod
    def _judge(params: TaskNodeParameters) -> Judge:
        vlm = params.judge_llm()
        if vlm is not None:
            return VlmJudge(ChatClient(vlm.llm), vlm)
        ocr = OcrJudge(TextReader(params.judge.ocr_min_confidence), params.ocr_config())
        return PhotoFirstJudge(PhotoJudge(PhotoMatcher(params.photo_match())), ocr)

    # -- tasks ---------------------------------------------------------------------------

    def _on_run_task(self, handle: ServerGoalHandle) -> RunTask.Result:
        if not self._busy.acquire(blocking=False):
            handle.abort()
            return refused_result('another task is running; send the goal when it has ended')
        try:
            return self._run(handle)
        except Exception as error:  # a bug must cost one goal an explicit answer, not the node
            self.get_logger().error(f'run_task: {traceback.format_exc()}')
            handle.abort()
            return refused_result(f'internal error: {type(error).__name__}: {error}')
        finally:
            self._busy.release()

    def _run(self, handle: ServerGoalHandle) -> RunTask.Result:
        params = self._params
        try:
            request = task_request(
                handle.request, self._default_budget, params.max_text_chars, params.max_photo_bytes
            )
            if request.photo:  # before anything is stored: a photo that is no goal is refused
                check_goal_photo(request.photo, self._runner.params.image_limits)
            goal = self._run_goal(request.modality, request.text, request.place_name, request.photo)
        except (ValueError, OSError) as error:
            handle.abort()
            return refused_result(f'goal refused: {error}')
        cancel = threading.Event()
        budget: Budget = request.budget
        task_id = ['']

        def on_feedback(feedback: Feedback) -> None:
            if not task_id[0]:  # one task at a time: the ledger's open task is this one
                task_id[0] = next((task.task_id for task in self._ledger.open_tasks()), '')
            left = feedback.left
            spent = _spent(budget, left, feedback.attempt)
            handle.publish_feedback(
                run_task_feedback(task_id[0], feedback.phase, budget, spent, feedback.message)
            )

        stop_watching = threading.Event()
        watcher = threading.Thread(
            target=_watch_cancel, args=(handle, cancel, stop_watching), daemon=True
        )
        watcher.start()
        self._body.begin_task()
        try:
            record = self._runner.run(goal, budget, on_feedback, cancel)
        finally:
            stop_watching.set()
            watcher.join(timeout=1.0)
        result = run_task_result(record, record.handover)
        if record.termination is TerminationReason.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.succeed()
        self.get_logger().info(f'task {record.task_id}: {record.status} ({record.termination})')
        return result

    def _run_goal(self, modality: GoalModality, text: str, place: str, photo: bytes) -> RunGoal:
        if modality is GoalModality.PLACE:
            return RunGoal(TaskGoal(modality, place))
        if modality is GoalModality.PHOTO:
            digest = hashlib.sha256(photo).hexdigest()[:24]
            ref = f'photos/{digest}.jpg'
            path = self._root / ref
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(photo)
            return RunGoal(TaskGoal(modality, text, photo_ref=ref), photo)
        return RunGoal(TaskGoal(modality, text))

    # -- services ------------------------------------------------------------------------

    def _on_mark(self, request: Mark.Request, response: Mark.Response) -> Mark.Response:
        try:
            epoch = self._track.map_epoch()
            if epoch is None:
                topic = self._params.inputs.map_epoch_topic or '(no map_epoch_topic)'
                why = self._track.epoch_error or f'no map epoch yet on {topic}'
                raise ValueError(f'{why}: a place is kept with the map epoch it was marked in')
            pose = self._track.current()
            x, y, _ = pose.position
            where = PlacePose(x, y, pose.yaw)
            stamp = time.time_ns()
            kept = self._body.place_views(self._params.mark.radius_m, self._params.mark.max_age_s)
            views = [self._keep_view(frame, where) for frame in kept]
            replaced = request.name in self._places
            place = self._places.mark(
                request.name, where, views, floor=0, epoch=epoch, stamp_ns=stamp
            )
        except Exception as error:  # a bad name, no pose, a full book: said, nothing lost
            response.success = False
            response.message = f'{type(error).__name__}: {error}'
            return response
        stored = self._place_memory.store(
            place.name, pose, self._params.map_frame, epoch[1], stamp, kept
        )
        response.success = True
        response.message = f'marked {place.name!r}' + (
            f'; not in memory yet ({stored})' if stored else '; stored in memory'
        )
        response.pose = pose_stamped(pose, self._params.map_frame, stamp)
        response.map_epoch = epoch[1]
        response.views = len(place.views)
        response.replaced = replaced
        return response

    def _keep_view(self, frame: StopView, where: PlacePose) -> PlaceView:
        """The frame's image stored under the task folder, as a view of the place."""
        ref = f'place_views/{hashlib.sha256(frame.image).hexdigest()[:24]}.jpg'
        (self._root / 'place_views').mkdir(exist_ok=True)
        (self._root / ref).write_bytes(frame.image)
        if frame.pose is not None:
            x, y, _ = frame.pose.position
            where = PlacePose(x, y, frame.pose.yaw)
        return PlaceView(ref, frame.heading, where, frame.stamp_ns)

    def _on_list(self, request: ListTasks.Request, response: ListTasks.Response):
        limit = min(int(request.limit) or MAX_LIST_LIMIT, MAX_LIST_LIMIT)
        try:
            page = self._ledger.reader().records(limit + 1)
        except (OSError, ValueError) as error:
            return list_tasks_failed(f'the ledger cannot be read: {error}')
        truncated = len(page.records) > limit
        page = replace(page, records=page.records[:limit])  # newest first
        return list_tasks_response(page, truncated)

    def _on_get(self, request: GetTask.Request, response: GetTask.Response):
        try:
            return get_task_response(self._ledger.reader().record(request.task_id))
        except (UnknownTaskError, RecordFormatError, OSError, ValueError) as error:
            return get_task_missing(f'{request.task_id!r}: {error}')

    def _on_consolidate(self, request: Consolidate.Request, response: Consolidate.Response):
        llm = self._params.consolidation_llm()
        try:
            result = consolidate(
                self._ledger.reader(),
                self._notes.read(),
                ChatClient(llm) if llm else None,
                self._params.consolidation_config(),
                deadline=time.monotonic() + self._params.consolidation.deadline_s,
            )
            report = self._notes.write(result.notes, result.origin)
        except (OSError, ValueError) as error:
            response.success = False
            response.message = f'{type(error).__name__}: {error}'
            response.method = ''
            return response
        response.success = True
        response.message = f'notes version {report.version} from {result.records} records' + (
            f'; the model was not used: {result.fallback_reason}' if result.fallback_reason else ''
        )
        response.notes_written = list(NOTE_NAMES)  # a version holds all four
        response.method = (
            Consolidate.Response.METHOD_MODEL
            if llm and not result.fallback_reason
            else Consolidate.Response.METHOD_MECHANICAL
        )
        return response


def _watch_cancel(handle: ServerGoalHandle, cancel: threading.Event, stop: threading.Event) -> None:
    """A cancel request reaches the runner even while it waits inside a drive."""
    while not stop.wait(0.05):
        if handle.is_cancel_requested:
            cancel.set()
            return


def _spent(budget: Budget, left: BudgetLeft, attempts: int) -> Spent:
    """What a task has spent, from what its feedback says is left."""
    return Spent(
        time_s=budget.time_s - left.time_s,
        distance_m=budget.distance_m - left.distance_m,
        agent_steps=budget.agent_steps - left.agent_steps,
        attempts=attempts,
    )


def _each(hooks: list, record) -> None:
    for hook in hooks:
        hook(record)


def main(args=None) -> None:
    run_node(TaskNode, 'task_node', args, threads=lambda node: node.executor_threads)


if __name__ == '__main__':
    main()
