"""The time a call has left, for the peers it can do without (docs/decisions.md "A turn goes on
without a peer that does not answer").

A memory layer in the dossier, and the LZG's registry when a turn is observed, may each take
:data:`SHARE_OF_TIME_LEFT` of the time the caller's deadline leaves: a peer that is out, or silent
that long, is left out and named, and the call answers in time with what the others gave. The
servicer sets the deadline of the call it handles (:data:`RESPOND_BY`); a call without a deadline
gives each peer its own timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

import grpc.aio

from novaberg_core.errors import Aborted, DeadlineExceeded
from novaberg_core.peers import PEER_OUTAGES, peer_error

__all__ = [
    "DOING_WITHOUT",
    "RESPOND_BY",
    "SHARE_OF_TIME_LEFT",
    "SILENT_AFTER_S",
    "PeerSilence",
    "answer_or_none",
    "time_for_a_peer",
    "within_time_left",
]

SHARE_OF_TIME_LEFT = 0.75
"""What a peer the call can do without may take of the time left; the rest builds the answer."""

SILENT_AFTER_S = 1.0
"""A peer that kept a call waiting this long without an answer is left out for a pause; a call whose
own deadline allowed it less time says nothing of the peer."""

RESPOND_BY: ContextVar[float | None] = ContextVar("novaberg_pipeline_respond_by", default=None)
"""The caller's deadline (``time.monotonic()``) of the call this task handles; None without one."""

DOING_WITHOUT: ContextVar[list[str] | None] = ContextVar("novaberg_pipeline_doing_without", default=None)
"""Set by a call that can do without the LZG's registry (one observed turn, the answer in Dispatch):
the registry then leaves a name or date unresolved when the LZG gives no answer, and names the
failure here. Unset (a batch): the registry's failure fails the call."""

_T = TypeVar("_T")


def time_for_a_peer() -> float | None:
    """How long a peer the call can do without may still take (None: no deadline, the peer's own timeout)."""
    respond_by = RESPOND_BY.get()
    if respond_by is None:
        return None
    return max(respond_by - time.monotonic(), 0.0) * SHARE_OF_TIME_LEFT


def _name(missing: list[str], failure: str) -> None:
    """``failure`` named once (two lookups of one turn may fail alike at once)."""
    if failure not in missing:
        missing.append(failure)


class PeerSilence:
    """Peers that just gave no answer, left out for ``pause_s`` before they are asked again.

    A peer that is down makes each call wait for it (the channels wait for a peer to come back,
    within the call's time): without this, every turn during an outage would spend its peer's whole
    share of the time waiting. One per pipeline process (its context)."""

    def __init__(self, pause_s: float = 5.0) -> None:
        self.pause_s = pause_s
        self._until: dict[str, tuple[float, str]] = {}

    def left_out(self, peer: str) -> str | None:
        """Why ``peer`` is left out now (its last failure), or None when it is to be asked."""
        until, why = self._until.get(peer, (0.0, ""))
        return why if time.monotonic() < until else None

    def failed(self, peer: str, why: str) -> None:
        self._until[peer] = (time.monotonic() + self.pause_s, why)

    def answered(self, peer: str) -> None:
        self._until.pop(peer, None)


async def answer_or_none(
    peer: str, method: str, call: Callable[[], Awaitable[_T]], missing: list[str], silence: PeerSilence | None = None
) -> _T | None:
    """``call()``'s answer; None when ``peer`` is out (:data:`~novaberg_core.peers.PEER_OUTAGES`), silent
    past :func:`time_for_a_peer`, or left out by ``silence`` after such a failure, named in ``missing``
    ("LZG SpreadingRead: …").

    A fault of the request (INVALID_ARGUMENT, a model mismatch) or a bug still fails the call."""
    why = silence.left_out(peer) if silence is not None else None
    if why is not None:  # not even sent
        _name(missing, f"{peer} {method}: left out for a few seconds after: {why}")
        return None
    budget_s = time_for_a_peer()
    failure: str
    silent = True  # the peer is down, or kept the call waiting a long while: leave it out for a pause
    try:
        async with asyncio.timeout(budget_s):
            answer = await call()
    except TimeoutError:
        failure = f"{peer} {method}: no answer within {budget_s or 0:.3f} s (three quarters of the call's time left)"
        silent = (budget_s or 0.0) >= SILENT_AFTER_S  # a tight deadline says nothing of the peer
    except (*PEER_OUTAGES, grpc.aio.AioRpcError) as error:
        # A typed peer's call raises the domain error already; a bare stub's status is mapped here.
        outage = error if isinstance(error, PEER_OUTAGES) else peer_error(peer, method, error)
        if outage is None:
            raise
        if not isinstance(outage, PEER_OUTAGES):
            raise outage from error
        failure = str(outage)  # names the peer and the method (novaberg_core.peers.call_peer)
        silent = not isinstance(outage, Aborted)  # a store conflict: the next call may well succeed
    else:
        if silence is not None:
            silence.answered(peer)
        return answer
    _name(missing, failure)
    if silence is not None and silent:
        silence.failed(peer, failure)
    return None


async def within_time_left(what: str, call: Awaitable[_T]) -> _T:
    """``call``, given at most :func:`time_for_a_peer`; :class:`DeadlineExceeded` naming ``what`` after
    that (a part of a call that answers with the parts that succeeded, as Dispatch does)."""
    budget_s = time_for_a_peer()
    try:
        async with asyncio.timeout(budget_s):
            return await call
    except TimeoutError:
        raise DeadlineExceeded(
            f"{what}: no answer within {budget_s or 0:.3f} s (three quarters of the call's time left)"
        ) from None
