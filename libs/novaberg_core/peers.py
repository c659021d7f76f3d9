"""How one service calls another: typed clients of the peers (:class:`KzgPeer`, :class:`LzgPeer`,
:class:`LogPeer`) with deadline and wait-for-ready, the retry policy of idempotent calls, and one
mapping of a peer's status to a domain error (STYLE rules 5 and 9).

Every call a client makes goes through :func:`call_peer`: a refusal becomes the domain error
naming the peer and the method (:func:`peer_error`); a status the mapping leaves alone (a bug:
INTERNAL, UNKNOWN…) surfaces as it came. What the peer answered stays readable behind either
(:func:`peer_status`), so "is the peer down" (:func:`peer_is_down`) and how a refusal reads in a
record (:func:`describe`) are decided here and nowhere else.

Retries are gRPC's own (``grpc.service_config`` with a ``retryPolicy`` per method): on
UNAVAILABLE and ABORTED (a transaction PostgreSQL rolled back in a conflict, nothing of it
written, ``novaberg_core.store_errors``) only, with exponential backoff and jitter, never past the
call's deadline, and only for the methods listed in :data:`IDEMPOTENT_METHODS` — a second
attempt of those changes nothing the first did not (reads; promotion is idempotent on
``kzg_quell_key``; a delete or an ack of what is gone is a no-op). A write is retried only when
its request says that a second sending changes nothing (:func:`is_resend_safe`: a turn's session
append or KZG entry sent ``resend_safe``, a usage reinforcement naming its turn): the channel
cannot tell such a request from another of the same method, so :class:`PeerClient` sends it again
itself, by the same policy and with a throttle of its own (:class:`RetryBudget`). Other writes (a
log batch, a write without the flag) are never retried here; their callers decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
import time
from collections.abc import Awaitable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Protocol, TypeVar, overload

import grpc
import grpc.aio

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.errors import (
    Aborted,
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
    "PEER_FAILURES",
    "PEER_OUTAGES",
    "RETRY_POLICY",
    "RETRY_THROTTLING",
    "KzgPeer",
    "LogPeer",
    "LzgPeer",
    "PeerClient",
    "Resendings",
    "RetryBudget",
    "Rpc",
    "call_peer",
    "count_resendings",
    "describe",
    "is_resend_safe",
    "peer_error",
    "peer_is_down",
    "peer_status",
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
"""Methods a caller may send again after UNAVAILABLE or ABORTED without changing the outcome."""

RETRY_POLICY: Mapping[str, Any] = {
    "maxAttempts": 4,
    "initialBackoff": "0.05s",
    "maxBackoff": "1s",
    "backoffMultiplier": 3,
    "retryableStatusCodes": ["UNAVAILABLE", "ABORTED"],
}
"""gRPC retry policy: up to 3 retries, each after a random share (jitter) of 0.05 s, 0.15 s, 0.45 s."""

RETRY_THROTTLING: Mapping[str, float] = {"maxTokens": 10, "tokenRatio": 0.1}
"""Per channel: a failed attempt costs a token, a success gives back a tenth, and no call is sent again
while half or fewer are left — so while most calls fail (a peer refusing at its concurrency limit,
novaberg_core.load_shedding) the channel stops multiplying them by four."""


def is_resend_safe(request: object) -> bool:
    """Whether sending ``request`` again changes nothing its first sending did (docs/decisions.md "A
    resent turn is written once"): a KZG write of a turn sent ``resend_safe`` (a batch: every item),
    or a usage reinforcement naming its turn (the LZG applies it once per turn_id)."""
    if isinstance(request, kzg_pb2.StoreEntriesRequest):
        return bool(request.entries) and all(entry.resend_safe for entry in request.entries)
    if isinstance(request, kzg_pb2.AppendSessionTurnsRequest):
        return bool(request.appends) and all(append.resend_safe for append in request.appends)
    if isinstance(request, kzg_pb2.StoreEntryRequest | kzg_pb2.AppendSessionTurnRequest):
        return request.resend_safe
    if isinstance(request, lzg_pb2.ReinforceUsedRequest):
        return bool(request.turn.turn_id)
    return False


class RetryBudget:
    """:data:`RETRY_THROTTLING` for the retries :class:`PeerClient` makes itself: a failed attempt
    costs a token, a success gives back a tenth, and nothing is sent again while half or fewer are left."""

    def __init__(self) -> None:
        self.tokens = RETRY_THROTTLING["maxTokens"]

    def failed(self) -> bool:
        """Count a failed attempt; whether another may be sent."""
        self.tokens = max(0.0, self.tokens - 1)
        return self.tokens > RETRY_THROTTLING["maxTokens"] / 2

    def succeeded(self) -> None:
        self.tokens = min(RETRY_THROTTLING["maxTokens"], self.tokens + RETRY_THROTTLING["tokenRatio"])


@dataclass
class Resendings:
    """How many attempts :class:`PeerClient` sent again while :func:`count_resendings` was in force."""

    count: int = 0


_RESENDINGS: ContextVar[Resendings | None] = ContextVar("novaberg_resendings", default=None)


@contextlib.contextmanager
def count_resendings() -> Iterator[Resendings]:
    """Count the resend-safe writes sent again in this block and the tasks it starts: after a second
    sending, a write found standing (REPEATED, ``wiederholt``) may be the block's own first sending."""
    resendings = Resendings()
    token = _RESENDINGS.set(resendings)
    try:
        yield resendings
    finally:
        _RESENDINGS.reset(token)


_RETRYABLE: Final = frozenset(grpc.StatusCode[name] for name in RETRY_POLICY["retryableStatusCodes"])


def _pauses(policy: Mapping[str, Any]) -> tuple[float, ...]:
    """The longest pause before each retry of ``policy`` (gRPC waits a random share of it)."""
    initial, longest = float(policy["initialBackoff"].rstrip("s")), float(policy["maxBackoff"].rstrip("s"))
    factor = float(policy["backoffMultiplier"])
    return tuple(min(initial * factor**n, longest) for n in range(int(policy["maxAttempts"]) - 1))


_PAUSES: Final = _pauses(RETRY_POLICY)


def service_config() -> str:
    """The channel's service config: retries for idempotent calls (balancing: ``grpc.lb_policy_name``)."""
    names = [{"service": service, "method": method} for service, methods in IDEMPOTENT_METHODS.items()
             for method in methods]  # fmt: skip
    return json.dumps(
        {
            "methodConfig": [{"name": names, "retryPolicy": dict(RETRY_POLICY)}],
            "retryThrottling": dict(RETRY_THROTTLING),
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
    grpc.StatusCode.ABORTED: Aborted,
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


PEER_FAILURES: Final = (NovabergError, grpc.aio.AioRpcError)
"""What a call through :func:`call_peer` raises when the peer refuses: the mapped domain error, or
the status the mapping leaves alone."""

PEER_OUTAGES: Final = (Unavailable, DeadlineExceeded, Aborted)
"""What :func:`call_peer` raises when the peer could not answer now (unreachable, at its limit, too
late, a store conflict) — not for a fault of the request or a bug: the call may succeed later."""


def peer_status(error: BaseException | None) -> grpc.aio.AioRpcError | None:
    """The peer's own status behind ``error`` (as raised, or the one :func:`call_peer` mapped), else None."""
    if isinstance(error, grpc.aio.AioRpcError):
        return error
    if isinstance(error, NovabergError) and isinstance(error.__cause__, grpc.aio.AioRpcError):
        return error.__cause__
    return None


def peer_is_down(error: BaseException | None) -> bool:
    """Whether ``error`` says the peer is unreachable (UNAVAILABLE): an outage, not the request's fault."""
    status = peer_status(error)
    return status is not None and status.code() == grpc.StatusCode.UNAVAILABLE


def describe(error: BaseException) -> str:
    """An error as a record reports it: a peer's status code and details, else the error's text."""
    status = peer_status(error)
    if status is not None:
        return f"{status.code().name}: {status.details()}"
    return str(error) or type(error).__name__


_GET_MODEL = common_pb2.GetModelRequest()
_Req = TypeVar("_Req", contravariant=True)
_Resp = TypeVar("_Resp", covariant=True)


class BoundRpc(Protocol[_Req, _Resp]):
    """One RPC of a client: ``request`` with the client's deadline, or ``timeout_s`` when given."""

    def __call__(self, request: _Req, timeout_s: float | None = None) -> Awaitable[_Resp]: ...


class Rpc(Generic[_Req, _Resp]):
    """A typed client's RPC, declared once as data (``get_entry = Rpc[Request, Response]("GetEntry")``);
    on a client it is the call through :meth:`PeerClient.call`."""

    def __init__(self, method: str) -> None:
        self.method = method

    @overload
    def __get__(self, client: None, owner: type) -> Rpc[_Req, _Resp]: ...

    @overload
    def __get__(self, client: PeerClient, owner: type) -> BoundRpc[_Req, _Resp]: ...

    def __get__(self, client: PeerClient | None, owner: type) -> Rpc[_Req, _Resp] | BoundRpc[_Req, _Resp]:
        if client is None:
            return self
        return functools.partial(client.call, self.method)


class PeerClient:
    """A peer's stub and the deadline of its calls; each call goes through :func:`call_peer`.

    ``wait_for_ready`` makes a call wait (within its deadline) for a peer that is not reachable yet;
    None (gRPC's default) lets an unreachable peer fail the call at once with UNAVAILABLE. An RPC
    hands back the call itself (no coroutine of its own), so the client costs its caller nothing.
    """

    peer: ClassVar[str]
    """The peer's name in the domain errors (``KZG``, ``LZG``, ``log``)."""

    def __init__(self, stub: Any, timeout_s: float, *, wait_for_ready: bool | None = True) -> None:
        self.stub = stub
        self.timeout_s = timeout_s
        self.wait_for_ready = wait_for_ready
        self.retry_budget = RetryBudget()

    def call(self, method: str, request: Any, timeout_s: float | None = None) -> Awaitable[Any]:
        """``method(request)`` with ``timeout_s`` (the client's deadline unless given); a resend-safe
        request is sent again after UNAVAILABLE or ABORTED (:meth:`resent`)."""
        rpc = getattr(self.stub, method)
        deadline = self.timeout_s if timeout_s is None else timeout_s
        sent = rpc(request, timeout=deadline, wait_for_ready=self.wait_for_ready)  # under way before it is awaited
        if is_resend_safe(request):
            return call_peer(self.peer, method, self.resent(sent, rpc, request, time.monotonic() + deadline))
        return call_peer(self.peer, method, sent)

    async def resent(self, sent: Awaitable[Any], rpc: Any, request: Any, give_up_at: float) -> Any:
        """The answer to ``sent`` (``rpc(request)``'s first sending), sent again as gRPC retries an
        idempotent method (:data:`RETRY_POLICY`): after UNAVAILABLE or ABORTED, after a random share of
        the policy's pause, while the throttle allows and all before ``give_up_at`` (the first
        sending's deadline, ``time.monotonic()``); the last status is raised."""
        pauses = iter(_PAUSES)
        while True:
            try:
                answer = await sent
            except grpc.aio.AioRpcError as error:
                if error.code() not in _RETRYABLE:
                    raise
                allowed, longest = self.retry_budget.failed(), next(pauses, None)
                if longest is None or not allowed:
                    raise
                pause = random.uniform(0.0, longest)
                if time.monotonic() + pause >= give_up_at:
                    raise
                await asyncio.sleep(pause)
                if (resendings := _RESENDINGS.get()) is not None:
                    resendings.count += 1
                sent = rpc(request, timeout=give_up_at - time.monotonic(), wait_for_ready=self.wait_for_ready)
            else:
                self.retry_budget.succeeded()
                return answer

    def get_model(self) -> Awaitable[common_pb2.ModelInfo]:
        """The embedding model the peer's store was filled with (SPEC §2)."""
        return self.call("GetModel", _GET_MODEL)


class KzgPeer(PeerClient):
    """The KZG service's calls its peers make (SPEC §3, §4, §5.3, §7)."""

    peer = "KZG"
    append_session_turn = Rpc[kzg_pb2.AppendSessionTurnRequest, kzg_pb2.AppendSessionTurnResponse]("AppendSessionTurn")
    append_session_turns = Rpc[kzg_pb2.AppendSessionTurnsRequest, kzg_pb2.AppendSessionTurnsResponse]("AppendSessionTurns")
    store_entry = Rpc[kzg_pb2.StoreEntryRequest, kzg_pb2.StoreEntryResponse]("StoreEntry")
    store_entries = Rpc[kzg_pb2.StoreEntriesRequest, kzg_pb2.StoreEntriesResponse]("StoreEntries")
    retrieve = Rpc[kzg_pb2.RetrieveRequest, kzg_pb2.RetrieveResponse]("Retrieve")
    get_session = Rpc[kzg_pb2.GetSessionRequest, kzg_pb2.GetSessionResponse]("GetSession")
    get_entry = Rpc[kzg_pb2.GetEntryRequest, kzg_pb2.GetEntryResponse]("GetEntry")
    mark_hash_dirty = Rpc[kzg_pb2.MarkHashDirtyRequest, kzg_pb2.MarkHashDirtyResponse]("MarkHashDirty")
    delete_entry = Rpc[kzg_pb2.DeleteEntryRequest, kzg_pb2.DeleteEntryResponse]("DeleteEntry")
    ack_promotion_jobs = Rpc[kzg_pb2.AckPromotionJobsRequest, kzg_pb2.AckPromotionJobsResponse]("AckPromotionJobs")
    erase = Rpc[kzg_pb2.EraseRequest, kzg_pb2.EraseResponse]("Erase")


class LzgPeer(PeerClient):
    """The LZG service's calls its peers make (SPEC §5.3, §5.6, §5.8, §7, §10)."""

    peer = "LZG"
    list_entities = Rpc[lzg_pb2.ListEntitiesRequest, lzg_pb2.ListEntitiesResponse]("ListEntities")
    list_timelines = Rpc[lzg_pb2.ListTimelinesRequest, lzg_pb2.ListTimelinesResponse]("ListTimelines")
    check_nodes = Rpc[lzg_pb2.CheckNodesRequest, lzg_pb2.CheckNodesResponse]("CheckNodes")
    spreading_read = Rpc[lzg_pb2.SpreadingReadRequest, lzg_pb2.SpreadingReadResponse]("SpreadingRead")
    reinforce_used = Rpc[lzg_pb2.ReinforceUsedRequest, lzg_pb2.ReinforceUsedResponse]("ReinforceUsed")
    promote = Rpc[lzg_pb2.PromoteRequest, lzg_pb2.PromoteResponse]("Promote")
    run_decay = Rpc[lzg_pb2.RunDecayRequest, lzg_pb2.RunDecayResponse]("RunDecay")
    erase = Rpc[lzg_pb2.EraseRequest, lzg_pb2.EraseResponse]("Erase")


class LogPeer(PeerClient):
    """The log service's calls its peers make (SPEC §10.4; erasure)."""

    peer = "log"
    purge = Rpc[log_pb2.PurgeRequest, log_pb2.PurgeResponse]("Purge")
    erase = Rpc[log_pb2.EraseRequest, log_pb2.EraseResponse]("Erase")
