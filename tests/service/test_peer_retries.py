"""The peers' retry policy on a real channel (novaberg_core.peers): idempotent calls are sent again
after UNAVAILABLE or ABORTED (a transaction PostgreSQL rolled back in a conflict), others never, and
no call is sent again while most calls of the channel fail."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest

from novaberg_core.peers import IDEMPOTENT_METHODS
from novaberg_core.server import insecure_channel

SERVICE = "novaberg.lzg.v1.LzgService"
IDEMPOTENT = "GetModel"
NOT_IDEMPOTENT = "ReinforceUsed"  # a second usage reinforcement would double the boost


class Flaky:
    """Answers each method with ``failures`` refusals of ``code`` first, then b"ok"; counts the attempts."""

    def __init__(self) -> None:
        self.code = grpc.StatusCode.UNAVAILABLE
        self.failures = 0
        self.attempts: dict[str, int] = {}

    def handler(self, method: str) -> grpc.RpcMethodHandler:
        async def answer(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.attempts[method] = self.attempts.get(method, 0) + 1
            if self.attempts[method] <= self.failures:
                await context.abort(self.code, f"attempt {self.attempts[method]} refused")
            return b"ok"

        return grpc.unary_unary_rpc_method_handler(answer)


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[Flaky, grpc.aio.Channel]]:
    service = Flaky()
    server = grpc.aio.server()
    handlers = {m: service.handler(m) for m in (IDEMPOTENT, NOT_IDEMPOTENT)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = insecure_channel(f"127.0.0.1:{port}")
    try:
        yield service, channel
    finally:
        await channel.close()
        await server.stop(None)


def test_the_methods_under_test_are_what_they_stand_for() -> None:
    assert IDEMPOTENT in IDEMPOTENT_METHODS[SERVICE] and NOT_IDEMPOTENT not in IDEMPOTENT_METHODS[SERVICE]


CODES = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED]


@pytest.mark.parametrize("code", CODES, ids=lambda c: c.name)
@pytest.mark.parametrize(
    ("method", "failures", "attempts", "answered"),
    [(IDEMPOTENT, 2, 3, True), (NOT_IDEMPOTENT, 1, 1, False), (IDEMPOTENT, 10, 4, False)],
    ids=["idempotent: sent again", "not idempotent: sent once", "four attempts at most"],
)
async def test_which_calls_are_sent_again(
    flaky: tuple[Flaky, grpc.aio.Channel], code: grpc.StatusCode, method: str, failures: int, attempts: int,
    answered: bool,
) -> None:
    service, channel = flaky
    service.code, service.failures = code, failures
    call = channel.unary_unary(f"/{SERVICE}/{method}")(b"", timeout=10)
    if answered:
        assert await call == b"ok"
    else:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
        assert refused.value.code() == code
    assert service.attempts[method] == attempts


async def test_while_most_calls_fail_none_is_sent_again_until_calls_succeed_again(
    flaky: tuple[Flaky, grpc.aio.Channel],
) -> None:
    """A peer refusing most calls (at its concurrency limit, novaberg_core.load_shedding) is not sent
    four times as many (novaberg_core.peers.RETRY_THROTTLING)."""
    service, channel = flaky
    call = channel.unary_unary(f"/{SERVICE}/{IDEMPOTENT}")

    async def refused_calls(count: int) -> int:
        """``count`` calls the peer refuses; the attempts they took."""
        before = service.attempts.get(IDEMPOTENT, 0)
        service.failures = before + 1_000
        for _ in range(count):
            with pytest.raises(grpc.aio.AioRpcError):
                await call(b"", timeout=10)
        return service.attempts[IDEMPOTENT] - before

    assert await refused_calls(1) == 4  # the first failures are sent again
    assert await refused_calls(9) == 9  # then the channel's tokens are spent: each call once
    service.failures = 0
    for _ in range(100):  # calls succeed again: the tokens come back
        assert await call(b"", timeout=10) == b"ok"
    assert await refused_calls(1) == 4
