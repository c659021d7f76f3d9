"""One home for wrapping a gRPC method's behaviour, shared by every server interceptor
(authorisation, error mapping, RPC metrics): the four call shapes are told apart here, once."""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable
from typing import Any, Final

import grpc
import grpc.aio

__all__ = ["TOOLING_METHOD_PREFIXES", "BehaviorWrapper", "WrappingInterceptor", "rewrap"]

TOOLING_METHOD_PREFIXES: Final = ("/grpc.health.v1.Health/", "/grpc.reflection.")
"""Health probes and reflection (every version): tooling, left out of traces and metrics and never shed."""

BehaviorWrapper = Callable[[Callable[..., Any]], Callable[..., Any]]
"""Takes a handler's behaviour ``(request_or_iterator, context)`` and returns the wrapped one."""


def rewrap(
    handler: grpc.RpcMethodHandler,
    *,
    unary: BehaviorWrapper,
    streaming: BehaviorWrapper,
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """A copy of ``handler`` whose behaviour is wrapped by ``unary`` where the call answers once and by
    ``streaming`` where it answers with a stream; ``request_deserializer`` replaces the handler's when given."""
    common = {
        "request_deserializer": request_deserializer or handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(streaming(handler.stream_stream), **common)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(unary(handler.stream_unary), **common)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(streaming(handler.unary_stream), **common)
    return grpc.unary_unary_rpc_method_handler(unary(handler.unary_unary), **common)


class WrappingInterceptor(grpc.aio.ServerInterceptor, abc.ABC):
    """A server interceptor that wraps the handler of every known method; an unknown method (no
    handler) passes through to gRPC's UNIMPLEMENTED."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        return self.wrap(handler, str(handler_call_details.method))

    @abc.abstractmethod
    def wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        """``handler`` of ``method`` (``/package.Service/Method``) as this interceptor runs it."""
