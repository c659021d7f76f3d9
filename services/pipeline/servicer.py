"""gRPC edge of the pipeline service: proto in, proto out (STYLE rule 2); errors map in the bootstrap."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

import grpc

from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.metrics import record_dossier, turn_in_flight
from services.pipeline.deadline import RESPOND_BY
from services.pipeline.turns import Timing, TurnPipeline

__all__ = ["MEMORY_MS_KEY", "MODEL_MS_KEY", "PipelineServicer"]

MODEL_MS_KEY = "novaberg-model-ms"
"""Trailing metadata: milliseconds the call spent in this service's embedding model."""
MEMORY_MS_KEY = "novaberg-memory-ms"
"""Trailing metadata: milliseconds the call spent on everything else."""

_R = TypeVar("_R")


async def _timed(context: grpc.aio.ServicerContext, step: Awaitable[tuple[_R, Timing]]) -> _R:
    """Run one step of a turn, counted as a turn in flight, knowing the caller's deadline
    (:mod:`services.pipeline.deadline`); its time split goes into the trailing metadata."""
    remaining = context.time_remaining()
    RESPOND_BY.set(None if remaining is None else time.monotonic() + remaining)
    with turn_in_flight():
        response, timing = await step
    context.set_trailing_metadata(
        ((MODEL_MS_KEY, f"{timing.model_ms:.3f}"), (MEMORY_MS_KEY, f"{timing.memory_ms():.3f}"))
    )
    return response


class PipelineServicer(pipeline_pb2_grpc.PipelineServiceServicer):
    """ObserveTurn (one turn or a batch), BuildDossier, Dispatch (SPEC §7)."""

    def __init__(self, pipeline: TurnPipeline) -> None:
        self.pipeline = pipeline

    async def ObserveTurn(
        self, request: pipeline_pb2.ObserveTurnRequest, context: grpc.aio.ServicerContext
    ) -> pipeline_pb2.ObserveTurnResponse:
        return await _timed(context, self.pipeline.observe(request))

    async def ObserveTurns(
        self, request: pipeline_pb2.ObserveTurnsRequest, context: grpc.aio.ServicerContext
    ) -> pipeline_pb2.ObserveTurnsResponse:
        return await _timed(context, self.pipeline.observe_batch(request))

    async def BuildDossier(
        self, request: pipeline_pb2.BuildDossierRequest, context: grpc.aio.ServicerContext
    ) -> pipeline_pb2.BuildDossierResponse:
        response = await _timed(context, self.pipeline.build_dossier(request))
        record_dossier(
            kzg_hits=len(response.kzg_hits), lzg_memories=len(response.lzg_resonanz.erinnerungen),
            recall_items=len(response.recall), anchors=response.lzg_resonanz.anker_anzahl, missing=response.fehler,
        )  # fmt: skip
        return response

    async def Dispatch(
        self, request: pipeline_pb2.DispatchRequest, context: grpc.aio.ServicerContext
    ) -> pipeline_pb2.DispatchResponse:
        return await _timed(context, self.pipeline.dispatch(request))
