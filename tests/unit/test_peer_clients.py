"""The typed peer clients and the one reading of a peer's status (novaberg_core.peers, issue 15).

A fake stub stands in for the peer: what is under test is how a client calls it (deadline,
wait-for-ready) and what a refusal becomes, not the transport.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import grpc
import grpc.aio
import pytest

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.channels import Peers
from novaberg_core.errors import NotFound, NovabergError, Unavailable
from novaberg_core.peers import (
    PEER_FAILURES,
    KzgPeer,
    LogPeer,
    LzgPeer,
    describe,
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
