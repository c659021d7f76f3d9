"""Load shedding: beyond its limit of concurrent calls a server answers UNAVAILABLE at once.

A server that takes every call serves none in time once more arrive than it can handle: each call
waits behind all the others and the callers' deadlines run out while the work goes on. With a limit
the calls within it run at the server's pace and the others are refused before any work, so the
callers retry later or elsewhere (docs/decisions.md, "Beyond its limit a server refuses at once").

The refusal is UNAVAILABLE, the status every client here already reads as "not now": the peers send
idempotent calls again with backoff, Pixie counts an outage rather than a poison job, the log writer
keeps its records. (gRPC's own ``maximum_concurrent_rpcs`` answers RESOURCE_EXHAUSTED, which is also
what a message over the size limit gets, and a log writer must drop a record that is too large.)
Health probes and reflection are never refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from novaberg_core.method_handlers import TOOLING_METHOD_PREFIXES, WrappingInterceptor, rewrap
from novaberg_core.metrics import SHED_CALLS

__all__ = ["ConcurrencyLimitInterceptor"]


class ConcurrencyLimitInterceptor(WrappingInterceptor):
    """Admits at most ``limit`` calls at a time (all four shapes; a stream counts while it is open)."""

    def __init__(self, limit: int, service_name: str) -> None:
        if limit < 1:
            raise ValueError(f"the concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self.in_flight = 0
        self._message = f"{service_name} is at its limit ({limit} calls at once); retry with backoff"

    async def _refuse(self, method: str, context: grpc.aio.ServicerContext) -> None:
        SHED_CALLS.add(1, {"rpc.service": method.lstrip("/").partition("/")[0]})
        await context.abort(grpc.StatusCode.UNAVAILABLE, self._message)

    def wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        if method.startswith(TOOLING_METHOD_PREFIXES):
            return handler

        def unary(behavior: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
            async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if self.in_flight >= self.limit:
                    await self._refuse(method, context)
                self.in_flight += 1
                try:
                    return await behavior(request, context)
                finally:
                    self.in_flight -= 1

            return call

        def streaming(behavior: Callable[..., Any]) -> Callable[..., AsyncIterator[Any]]:
            async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                if self.in_flight >= self.limit:
                    await self._refuse(method, context)
                self.in_flight += 1
                try:
                    async for response in behavior(request, context):
                        yield response
                finally:
                    self.in_flight -= 1

            return call

        return rewrap(handler, unary=unary, streaming=streaming)
