"""PixieService over gRPC: proto ↔ domain translation only (SPEC §9)."""

from __future__ import annotations

import grpc.aio

from novaberg.common.v1 import common_pb2
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.maintenance import scope_pairs
from novaberg_core.messages import to_message
from novaberg_core.timeutil import from_timestamp
from services.pixie.paging import page_limit
from services.pixie.rights_servicer import PixieRightsServicer
from services.pixie.scheduler import Scheduler, TaskView
from services.pixie.store import ParkedJobRecord, RunRecord

DEFAULT_RUNS_LIMIT = 20
DEFAULT_PARKED_LIMIT = 50


def run_to_proto(run: RunRecord) -> pixie_pb2.Run:
    return to_message(
        pixie_pb2.Run,
        run,
        run_day=run.run_day.isoformat() if run.run_day else "",
        pairs=[common_pb2.Pair(user_id=user, character_id=character) for user, character in run.pairs],
    )


def task_to_proto(view: TaskView) -> pixie_pb2.Task:
    message = pixie_pb2.Task(
        name=view.spec.name, schedule=view.spec.schedule, priority=view.spec.priority, paused=view.paused
    )
    if view.last_run is not None:
        message.last_run.CopyFrom(run_to_proto(view.last_run))
    return message


def parked_to_proto(job: ParkedJobRecord) -> pixie_pb2.ParkedJob:
    return to_message(pixie_pb2.ParkedJob, job)


class PixieServicer(PixieRightsServicer, pixie_pb2_grpc.PixieServiceServicer):
    """Thin translation onto :class:`Scheduler` (a person's rights: :class:`PixieRightsServicer`);
    errors are mapped by the server bootstrap."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    async def ListTasks(
        self, request: pixie_pb2.ListTasksRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ListTasksResponse:
        views = await self.scheduler.list_tasks()
        return pixie_pb2.ListTasksResponse(tasks=[task_to_proto(v) for v in views])

    async def TriggerTask(
        self, request: pixie_pb2.TriggerTaskRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.TriggerTaskResponse:
        as_of = from_timestamp(request.as_of) if request.HasField("as_of") else None
        run = await self.scheduler.trigger(
            request.task, as_of=as_of, force=request.force, pairs=scope_pairs(request.pairs)
        )
        return pixie_pb2.TriggerTaskResponse(run=run_to_proto(run))

    async def PauseTask(self, request: pixie_pb2.PauseTaskRequest, context: grpc.aio.ServicerContext) -> pixie_pb2.Task:
        return task_to_proto(await self.scheduler.set_paused(request.task, True))

    async def ResumeTask(
        self, request: pixie_pb2.ResumeTaskRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.Task:
        return task_to_proto(await self.scheduler.set_paused(request.task, False))

    async def ListRuns(
        self, request: pixie_pb2.ListRunsRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ListRunsResponse:
        limit = page_limit(request.limit, DEFAULT_RUNS_LIMIT)
        runs = await self.scheduler.list_runs(request.task, limit)
        return pixie_pb2.ListRunsResponse(runs=[run_to_proto(r) for r in runs])

    async def ListParkedJobs(
        self, request: pixie_pb2.ListParkedJobsRequest, context: grpc.aio.ServicerContext
    ) -> pixie_pb2.ListParkedJobsResponse:
        limit = page_limit(request.limit, DEFAULT_PARKED_LIMIT)
        jobs = await self.scheduler.store.list_parked(limit)
        return pixie_pb2.ListParkedJobsResponse(jobs=[parked_to_proto(j) for j in jobs])

