"""The RPC interceptor of every server's metrics (wired by :mod:`novaberg_core.server`): each call's
``rpc.server.duration`` with its final status, and the calls in flight (instruments in
:mod:`novaberg_core.metrics`)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio

from novaberg_core.method_handlers import TOOLING_METHOD_PREFIXES, WrappingInterceptor, rewrap
from novaberg_core.metrics import IN_FLIGHT, RPC_DURATION

__all__ = ["RpcMetricsInterceptor"]

class RpcMetricsInterceptor(WrappingInterceptor):
    """Records ``rpc.server.duration`` of every call (all four shapes) with its final status code.

    It sits outside the error mapping, so a mapped domain error counts with its status
    (INVALID_ARGUMENT, UNAVAILABLE …), not as an exception.
    """

    def __init__(self) -> None:
        self._attributes: dict[tuple[str, int], dict[str, Any]] = {}
        self._services: dict[str, dict[str, Any]] = {}

    def _enter(self, method: str) -> float:
        service = self._services.get(method)
        if service is None:
            service = {"rpc.service": method.lstrip("/").partition("/")[0]}
            self._services[method] = service
        IN_FLIGHT.add(1, service)
        return time.perf_counter()

    def _record(self, method: str, started: float, context: grpc.aio.ServicerContext) -> None:
        IN_FLIGHT.add(-1, self._services[method])
        code = context.code() if hasattr(context, "code") else None
        value = code.value[0] if isinstance(code, grpc.StatusCode) else 0
        key = (method, value)
        attributes = self._attributes.get(key)
        if attributes is None:
            service, _, name = method.lstrip("/").partition("/")
            attributes = {
                "rpc.system": "grpc",
                "rpc.service": service,
                "rpc.method": name,
                "rpc.grpc.status_code": value,
            }
            self._attributes[key] = attributes
        RPC_DURATION.record((time.perf_counter() - started) * 1000.0, attributes)

    def wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        if method.startswith(TOOLING_METHOD_PREFIXES):  # left out, as in tracing
            return handler
        enter, record = self._enter, self._record

        def unary(behavior: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
            async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
                started = enter(method)
                try:
                    return await behavior(request, context)
                finally:
                    record(method, started, context)

            return call

        def streaming(behavior: Callable[..., Any]) -> Callable[..., AsyncIterator[Any]]:
            async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                started = enter(method)
                try:
                    async for response in behavior(request, context):
                        yield response
                finally:
                    record(method, started, context)

            return call

        return rewrap(handler, unary=unary, streaming=streaming)
