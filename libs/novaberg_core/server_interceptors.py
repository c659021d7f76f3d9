"""The interceptors every server runs (:mod:`novaberg_core.server` wires them): the span filter
(:func:`traced`, :data:`UNTRACED_CALL`) and the error mapping (:class:`ErrorMappingInterceptor`:
the shared request contract, domain errors and store outages → gRPC status, STYLE rule 5)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn

import grpc
import grpc.aio
from google.protobuf.message import Message
from opentelemetry import trace

from novaberg_core.contract import UNDECODABLE, check_request, safe_deserializer
from novaberg_core.errors import NovabergError, Unavailable, status_code_for
from novaberg_core.method_handlers import TOOLING_METHOD_PREFIXES, WrappingInterceptor, rewrap
from novaberg_core.metrics import count_store_outage
from novaberg_core.store_errors import store_error
from novaberg_core.telemetry import current_trace_id_hex, set_turn_attributes

__all__ = ["UNTRACED_CALL", "ErrorMappingInterceptor", "traced"]

_LOG = logging.getLogger("novaberg_core.server")  # the bootstrap's logger, as before the split

# Downstream failures a caller can retry keep their code; anything else from a downstream call is
# our own bug (we sent a bad request) and becomes INTERNAL like any unexpected exception.
_PASS_THROUGH_CODES = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}
)

UNTRACED_CALL: tuple[str, str] = ("novaberg-trace", "off")
"""Call metadata that keeps a call out of the traces on both sides (client and server span): a
background poll (Pixie's wait for promotion jobs) that would otherwise be a root span a second."""


def _untraced_by_metadata(metadata: Any) -> bool:
    if not metadata:
        return False
    for item in metadata:
        key, value = (item.key, item.value) if hasattr(item, "key") else item
        if key == UNTRACED_CALL[0] and value == UNTRACED_CALL[1]:
            return True
    return False


def traced(details: Any) -> bool:
    """Span filter (True = trace the call): health probes and reflection are tooling noise, and a
    call carrying :data:`UNTRACED_CALL` asked not to be traced.

    The same rule as OpenTelemetry's ``negate(any_of(health_check(), service_name(reflection)))``,
    as one prefix test: those filters run an ``isinstance`` against a typing Protocol on every
    call of every service (measured ~2 % of the pipeline's CPU).
    """
    method = details.method
    if isinstance(method, bytes):  # grpc.aio client call details carry bytes (grpc/grpc#31092)
        method = method.decode()
    if method.startswith(TOOLING_METHOD_PREFIXES):
        return False
    # Server side: HandlerCallDetails.invocation_metadata; client side: ClientCallDetails.metadata.
    metadata = getattr(details, "invocation_metadata", None) or getattr(details, "metadata", None)
    return not _untraced_by_metadata(metadata)


async def _abort_for(error: Exception, context: grpc.aio.ServicerContext, method: str) -> NoReturn:
    """End the call with the status for ``error`` (STYLE rule 5); never returns."""
    if isinstance(error, grpc.aio.AbortError):
        raise error  # the handler already aborted with its own status
    mapped = store_error(error)
    if isinstance(mapped, Unavailable):
        count_store_outage(error, method)
    error = mapped or error
    if isinstance(error, NovabergError):
        code = status_code_for(error)
        message = str(error) or type(error).__name__
        _LOG.info("%s -> %s: %s", method, code.name, message)
    elif isinstance(error, grpc.aio.AioRpcError) and error.code() in _PASS_THROUGH_CODES:
        code = error.code()
        message = f"a dependency failed ({code.name}): {error.details()}"
        _LOG.warning("%s -> %s: %s", method, code.name, message)
    else:
        code = grpc.StatusCode.INTERNAL
        trace_id = current_trace_id_hex()
        message = "internal error" + (f" (trace {trace_id})" if trace_id else "")
        _LOG.error("unexpected error in %s", method, exc_info=error)
        # The tracing interceptor outside only sees the abort; keep the real cause on the span.
        trace.get_current_span().record_exception(error)
    await context.abort(code, message)
    raise AssertionError("context.abort returned")  # pragma: no cover - abort always raises


def _request_turn_and_pair(request: Any) -> tuple[str | None, str | None, str | None]:
    """``turn_id``, ``user_id``, ``character_id`` of a request that carries them (SPEC §7).

    The contracts name them uniformly: a ``pair`` (common.v1.Pair), a ``turn`` (TurnContext) or a
    plain ``turn_id``; a promotion carries its pair inside ``entry``.
    """
    def has(message: Any, name: str) -> bool:
        try:
            return bool(message.HasField(name))
        except (ValueError, AttributeError):
            return False

    pair = None
    if has(request, "pair"):
        pair = request.pair
    elif has(request, "entry") and has(request.entry, "pair"):
        pair = request.entry.pair
    turn_id = None
    if has(request, "turn"):
        turn_id = request.turn.turn_id
    elif isinstance(getattr(request, "turn_id", None), str):
        turn_id = request.turn_id
    return turn_id, getattr(pair, "user_id", None), getattr(pair, "character_id", None)


def _annotate_span(request: Any) -> None:
    """Tags the server span with the request's turn and pair, for every service alike."""
    span = trace.get_current_span()
    if span.is_recording():
        set_turn_attributes(span, *_request_turn_and_pair(request))


def _checked(request: Any) -> Any:
    """The request after the shared contract (novaberg_core.contract); refusals raise InvalidArgument."""
    if isinstance(request, UNDECODABLE):
        raise request.refuse()
    if isinstance(request, Message):
        check_request(request)
    return request


async def _checked_stream(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A request stream whose every message passes :func:`_checked` before the handler sees it."""
    async for request in requests:
        yield _checked(request)


def _prepare(request_or_iterator: Any) -> Any:
    """Check a unary request (and tag the span with its turn and pair), or wrap a request stream."""
    if hasattr(request_or_iterator, "__aiter__"):
        return _checked_stream(request_or_iterator)
    request = _checked(request_or_iterator)
    if isinstance(request, Message):
        _annotate_span(request)
    return request


def _wrap_unary_response(behavior: Callable[..., Any], method: str) -> Callable[..., Awaitable[Any]]:
    async def call(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            result = behavior(_prepare(request_or_iterator), context)
            if inspect.isawaitable(result):
                result = await result
            return result
        except Exception as error:
            await _abort_for(error, context, method)

    return call


def _wrap_stream_response(behavior: Callable[..., Any], method: str) -> Callable[..., AsyncIterator[Any]]:
    async def call(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            result = behavior(_prepare(request_or_iterator), context)
            if hasattr(result, "__aiter__"):  # async generator handler
                async for response in result:
                    yield response
            elif inspect.isawaitable(result):  # coroutine handler writing with context.write()
                await result
            elif result is not None:  # plain iterable
                for response in result:
                    yield response
        except Exception as error:
            await _abort_for(error, context, method)

    return call


class ErrorMappingInterceptor(WrappingInterceptor):
    """Checks every request against the shared contract, then maps exceptions escaping a handler to
    a status (STYLE rule 5), for all four call shapes.

    A request that does not parse (invalid UTF-8 included) or breaks the contract of
    :mod:`novaberg_core.contract` is INVALID_ARGUMENT before the handler runs. A
    :class:`NovabergError` aborts with its ``status_code`` and message; a store that cannot be
    reached is UNAVAILABLE naming the store (:mod:`novaberg_core.store_errors`); a downstream
    ``UNAVAILABLE``/``DEADLINE_EXCEEDED`` keeps its code; anything else is logged with its
    traceback and answered ``INTERNAL`` with only a trace id, never the exception text.
    Handlers must be ``async`` (coroutines or async generators), as everywhere in ``grpc.aio``.
    """

    def wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        return rewrap(
            handler,
            unary=lambda behavior: _wrap_unary_response(behavior, method),
            streaming=lambda behavior: _wrap_stream_response(behavior, method),
            request_deserializer=safe_deserializer(handler.request_deserializer)
            if handler.request_deserializer
            else None,
        )
