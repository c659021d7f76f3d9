"""How one service calls another: the retry policy of idempotent calls and one mapping of a peer's
status to a domain error (STYLE rules 5 and 9).

Retries are gRPC's own (``grpc.service_config`` with a ``retryPolicy`` per method): on
UNAVAILABLE only, with exponential backoff and jitter, never past the call's deadline, and only
for the methods listed in :data:`IDEMPOTENT_METHODS` — a second attempt of those changes nothing
the first did not (reads; promotion is idempotent on ``kzg_quell_key``; a delete or an ack of what
is gone is a no-op). Writes that would be doubled (a session append, a KZG store, usage
reinforcement, a log batch) are never retried here; their callers decide.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

import grpc
import grpc.aio

from novaberg_core.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    NovabergError,
    Unavailable,
)

__all__ = [
    "CHANNEL_OPTIONS",
    "IDEMPOTENT_METHODS",
    "RETRY_POLICY",
    "call_peer",
    "peer_error",
    "service_config",
]

_T = TypeVar("_T")

IDEMPOTENT_METHODS: Mapping[str, tuple[str, ...]] = {
    "novaberg.kzg.v1.KzgService": (
        "GetSession", "Retrieve", "GetEntry", "DeleteEntry", "MarkHashDirty", "ReadPromotionJobs",
        "AckPromotionJobs", "InspectPromotionQueue", "GetModel",
        # a person's rights: deleting what is gone, or writing the same content again, is a no-op
        "Erase", "ExportPair", "ForgetEntries", "CorrectEntry",
    ),
    "novaberg.lzg.v1.LzgService": (
        "Promote", "SpreadingRead", "RenderMemoryBlock", "RunDecay", "GetNode", "ListNodes", "ListEdges",
        "GetPairStats", "ResolveEntities", "ListEntities", "ListTimelines", "GetModel", "CheckNodes",
        "Erase", "ExportPair", "ForgetNodes", "CorrectNode",
    ),
    "novaberg.log.v1.LogService": ("Query", "Purge", "LastAnswers", "ClusterCounts", "TokenUsage", "Erase"),
    "novaberg.pixie.v1.PixieService": (
        "ListTasks", "PauseTask", "ResumeTask", "ListRuns", "ListParkedJobs", "ListErasures", "ExportPair",
    ),
}  # fmt: skip
"""Methods a caller may send again after UNAVAILABLE without changing the outcome."""

RETRY_POLICY: Mapping[str, Any] = {
    "maxAttempts": 4,
    "initialBackoff": "0.05s",
    "maxBackoff": "1s",
    "backoffMultiplier": 3,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
"""gRPC retry policy: up to 3 retries, each after a random share (jitter) of 0.05 s, 0.15 s, 0.45 s."""


def service_config() -> str:
    """The channel's service config: retries for idempotent calls (balancing: ``grpc.lb_policy_name``)."""
    names = [{"service": service, "method": method} for service, methods in IDEMPOTENT_METHODS.items()
             for method in methods]  # fmt: skip
    return json.dumps(
        {
            "methodConfig": [{"name": names, "retryPolicy": dict(RETRY_POLICY)}],
        }
    )


CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.enable_retries", 1),
    ("grpc.service_config", service_config()),
)
"""Options of every channel to a peer (``novaberg_core.server.insecure_channel`` applies them)."""

_PEER_ERRORS: Mapping[grpc.StatusCode, type[NovabergError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.RESOURCE_EXHAUSTED: Unavailable,
}


def peer_error(peer: str, method: str, error: grpc.aio.AioRpcError) -> NovabergError | None:
    """The domain error a peer's status becomes (naming peer and method), or None for a bug of ours.

    A peer's INVALID_ARGUMENT stays the caller's fault (the peer knew something we could not check);
    INTERNAL, UNKNOWN and the like mean a bug and are left to surface as INTERNAL.
    """
    kind = _PEER_ERRORS.get(error.code())
    if kind is None:
        return None
    return kind(f"{peer} {method}: {error.details()}")


async def call_peer(peer: str, method: str, call: Awaitable[_T]) -> _T:
    """Await a peer's call; its status becomes the matching domain error (:func:`peer_error`)."""
    try:
        return await call
    except grpc.aio.AioRpcError as error:
        mapped = peer_error(peer, method, error)
        if mapped is None:
            raise
        raise mapped from error
