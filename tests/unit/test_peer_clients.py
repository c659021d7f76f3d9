"""The typed peer clients and the one reading of a peer's status (novaberg_core.peers, issue 15).

A fake stub stands in for the peer: what is under test is how a client calls it (deadline,
wait-for-ready) and what a refusal becomes, not the transport.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any

import grpc
import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core import peers as peers_module
from novaberg_core.channels import Peers
from novaberg_core.errors import NotFound, NovabergError, Unavailable
from novaberg_core.peers import (
    PEER_FAILURES,
    KzgPeer,
    LogPeer,
    LzgPeer,
    describe,
    is_resend_safe,
    peer_is_down,
    peer_status,
)


def _status(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


class FakeStub:
    """Answers every RPC with ``answer`` (or raises ``refusal``) and records how it was called."""

    def __init__(self, answer: Any = None, refusal: BaseException | None = None) -> None:
        self.answer = answer
        self.refusal = refusal
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def rpc(request: Any, **options: Any) -> Awaitable[Any]:
            self.calls.append((method, request, options))

            async def reply() -> Any:
                if self.refusal is not None:
                    raise self.refusal
                return self.answer

            return reply()

        return rpc


async def test_a_call_carries_the_clients_deadline_unless_given_and_waits_for_ready() -> None:
    stub = FakeStub(answer=kzg_pb2.GetEntryResponse())
    kzg = KzgPeer(stub, 2.5)
    request = kzg_pb2.GetEntryRequest(kzg_key="k")
    assert await kzg.get_entry(request) == kzg_pb2.GetEntryResponse()
    await kzg.append_session_turns(kzg_pb2.AppendSessionTurnsRequest(), 9.0)
    await kzg.get_model()
    assert [(m, o) for m, _, o in stub.calls] == [
        ("GetEntry", {"timeout": 2.5, "wait_for_ready": True}),
        ("AppendSessionTurns", {"timeout": 9.0, "wait_for_ready": True}),
        ("GetModel", {"timeout": 2.5, "wait_for_ready": True}),
    ]
    assert stub.calls[0][1] is request


async def test_without_wait_for_ready_the_call_takes_grpcs_default() -> None:
    """Pixie's calls: an unreachable peer fails at once (an outage), it is not waited for."""
    stub = FakeStub(answer=lzg_pb2.PromoteResponse())
    await LzgPeer(stub, 30.0, wait_for_ready=None).promote(lzg_pb2.PromoteRequest())
    await LogPeer(stub, 30.0, wait_for_ready=None).purge(log_pb2.PurgeRequest())
    assert [(m, o) for m, _, o in stub.calls] == [
        ("Promote", {"timeout": 30.0, "wait_for_ready": None}),
        ("Purge", {"timeout": 30.0, "wait_for_ready": None}),
    ]


async def test_a_refusal_becomes_the_domain_error_naming_peer_and_method() -> None:
    refusal = _status(grpc.StatusCode.NOT_FOUND, "no such entry")
    with pytest.raises(NotFound, match=r"^KZG GetEntry: no such entry$") as caught:
        await KzgPeer(FakeStub(refusal=refusal), 1.0).get_entry(kzg_pb2.GetEntryRequest())
    assert peer_status(caught.value) is refusal
    assert describe(caught.value) == "NOT_FOUND: no such entry"
    assert isinstance(caught.value, PEER_FAILURES)
    assert not peer_is_down(caught.value)


async def test_a_bug_of_ours_surfaces_as_the_peers_status() -> None:
    refusal = _status(grpc.StatusCode.INTERNAL, "boom")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await LzgPeer(FakeStub(refusal=refusal), 1.0).erase(lzg_pb2.EraseRequest())
    assert caught.value is refusal
    assert isinstance(caught.value, PEER_FAILURES)
    assert describe(caught.value) == "INTERNAL: boom"


@pytest.mark.parametrize(
    ("code", "down"),
    [
        (grpc.StatusCode.UNAVAILABLE, True),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, False),  # mapped to Unavailable, but the peer answered
        (grpc.StatusCode.DEADLINE_EXCEEDED, False),
        (grpc.StatusCode.INTERNAL, False),
    ],
)
async def test_only_an_unreachable_peer_is_down(code: grpc.StatusCode, down: bool) -> None:
    with pytest.raises(PEER_FAILURES) as caught:
        await KzgPeer(FakeStub(refusal=_status(code, "x")), 1.0).delete_entry(kzg_pb2.DeleteEntryRequest())
    assert peer_is_down(caught.value) is down


def test_an_error_that_is_no_peers_reads_as_itself() -> None:
    assert peer_status(Unavailable("PostgreSQL is not reachable")) is None
    assert not peer_is_down(Unavailable("PostgreSQL is not reachable"))
    assert not peer_is_down(None)
    assert describe(Unavailable("the pair's promotion lock stayed held")) == "the pair's promotion lock stayed held"
    assert describe(RuntimeError()) == "RuntimeError"
    assert issubclass(Unavailable, NovabergError)


async def test_peers_open_a_log_channel_only_for_a_log_address() -> None:
    without = Peers.connect("127.0.0.1:1", "127.0.0.1:2")
    with_log = Peers.connect("127.0.0.1:1", "127.0.0.1:2", log_addr="127.0.0.1:3")
    try:
        assert without.log is None and len(without.channels) == 2
        assert with_log.log is not None and len(with_log.channels) == 3
    finally:
        await without.close()
        await with_log.close()


# --------------------------------------------------------------------------- resend-safe writes sent again


class FlakyStub:
    """Refuses the first ``refusals`` calls with their statuses, then answers ``answer``; records each
    call's deadline."""

    def __init__(self, answer: Any, *refusals: grpc.StatusCode) -> None:
        self.answer = answer
        self.refusals = list(refusals)
        self.timeouts: list[float] = []

    def __getattr__(self, method: str) -> Any:
        def rpc(request: Any, *, timeout: float, wait_for_ready: bool | None) -> Awaitable[Any]:
            self.timeouts.append(timeout)

            async def reply() -> Any:
                if self.refusals:
                    raise _status(self.refusals.pop(0), f"{method} refused")
                return self.answer

            return reply()

        return rpc


_SAFE_APPEND = kzg_pb2.AppendSessionTurnRequest(resend_safe=True)
_UNAVAILABLE, _ABORTED = grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED


def test_which_requests_a_second_sending_leaves_unchanged() -> None:
    entry = kzg_pb2.StoreEntryRequest(entry_id="user-1", resend_safe=True)
    assert is_resend_safe(entry) and is_resend_safe(_SAFE_APPEND)
    assert is_resend_safe(kzg_pb2.StoreEntriesRequest(entries=[entry, entry]))
    assert is_resend_safe(kzg_pb2.AppendSessionTurnsRequest(appends=[_SAFE_APPEND]))
    assert is_resend_safe(lzg_pb2.ReinforceUsedRequest(turn=common_pb2.TurnContext(turn_id="t-1")))
    assert not is_resend_safe(kzg_pb2.StoreEntryRequest(entry_id="user-1"))
    assert not is_resend_safe(kzg_pb2.StoreEntriesRequest(entries=[entry, kzg_pb2.StoreEntryRequest()]))
    assert not is_resend_safe(kzg_pb2.StoreEntriesRequest())
    assert not is_resend_safe(kzg_pb2.AppendSessionTurnsRequest(appends=[kzg_pb2.AppendSessionTurnRequest()]))
    assert not is_resend_safe(lzg_pb2.ReinforceUsedRequest())  # no turn: the LZG cannot tell a resend
    assert not is_resend_safe(log_pb2.PurgeRequest()) and not is_resend_safe(kzg_pb2.GetEntryRequest())


async def test_a_resend_safe_write_is_sent_again_after_unavailable_and_aborted_within_one_deadline() -> None:
    stub = FlakyStub(kzg_pb2.AppendSessionTurnResponse(turn_count=3), _UNAVAILABLE, _ABORTED)
    kzg = KzgPeer(stub, 4.0)
    assert (await kzg.append_session_turn(_SAFE_APPEND)).turn_count == 3
    assert len(stub.timeouts) == 3
    assert 4.0 >= stub.timeouts[0] > stub.timeouts[1] > stub.timeouts[2] > 4.0 - 0.05 - 0.15 - 0.1


@pytest.mark.parametrize(
    "request_",
    [kzg_pb2.AppendSessionTurnRequest(), lzg_pb2.ReinforceUsedRequest(), kzg_pb2.StoreEntryRequest(entry_id="u")],
)
async def test_a_write_that_is_not_resend_safe_is_sent_once(request_: Any) -> None:
    stub = FlakyStub(None, _UNAVAILABLE)
    with pytest.raises(Unavailable):
        await KzgPeer(stub, 4.0).call("AnyWrite", request_)
    assert len(stub.timeouts) == 1


async def test_a_refusal_of_the_request_is_not_sent_again() -> None:
    stub = FlakyStub(None, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.DEADLINE_EXCEEDED)
    kzg = KzgPeer(stub, 4.0)
    with pytest.raises(NovabergError, match="refused"):
        await kzg.append_session_turn(_SAFE_APPEND)
    with pytest.raises(NovabergError, match="refused"):
        await kzg.append_session_turn(_SAFE_APPEND)
    assert len(stub.timeouts) == 2


async def test_a_write_is_sent_four_times_at_most_and_the_last_status_is_raised() -> None:
    stub = FlakyStub(None, *([_UNAVAILABLE] * 5))
    with pytest.raises(Unavailable) as down:
        await KzgPeer(stub, 4.0).append_session_turn(_SAFE_APPEND)
    assert len(stub.timeouts) == 4 and peer_is_down(down.value)


async def test_no_resend_past_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pause before a resend (50 ms, drawn as its whole length here) would end past the 1 ms deadline.
    (A random share of it shorter than the time left would rightly be sent again: ~2 % of unpinned runs.)"""
    monkeypatch.setattr(peers_module.random, "uniform", lambda low, high: high)
    stub = FlakyStub(None, *([_UNAVAILABLE] * 5))
    with pytest.raises(Unavailable):
        await KzgPeer(stub, 0.001).append_session_turn(_SAFE_APPEND)
    assert len(stub.timeouts) == 1


async def test_while_most_attempts_fail_the_client_stops_sending_again() -> None:
    """RETRY_THROTTLING: ten tokens, a failed attempt takes one, a success gives a tenth back; an
    attempt is sent again only while more than five are left after its failure."""
    stub = FlakyStub(kzg_pb2.AppendSessionTurnResponse(), *([_UNAVAILABLE] * 5))
    kzg = KzgPeer(stub, 4.0)

    async def attempts() -> int:
        stub.timeouts.clear()
        with contextlib.suppress(Unavailable):
            await kzg.append_session_turn(_SAFE_APPEND)
        return len(stub.timeouts)

    assert await attempts() == 4  # 10 → 6 tokens
    assert await attempts() == 1  # 6 → 5: no resend
    for _ in range(10):
        assert await attempts() == 1  # answered: 5 → 6
    stub.refusals[:] = [_UNAVAILABLE]
    assert await attempts() == 1  # 6 → 5: still none
    for _ in range(11):
        await attempts()  # 5 → 6.1
    stub.refusals[:] = [_UNAVAILABLE]
    assert await attempts() == 2  # 6.1 → 5.1: sent again, and answered


async def test_a_resend_safe_write_is_under_way_before_it_is_awaited() -> None:
    """As every call: the first sending starts when the call is made, so a caller that awaits it later
    (beside other work) loses no time to the client's retry loop."""
    stub = FlakyStub(kzg_pb2.AppendSessionTurnResponse(turn_count=1))
    pending = KzgPeer(stub, 4.0).append_session_turn(_SAFE_APPEND)
    assert len(stub.timeouts) == 1
    assert (await pending).turn_count == 1 and len(stub.timeouts) == 1
