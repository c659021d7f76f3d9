"""gRPC server bootstrap shared by all five services (STYLE rules 3 and 5).

One place wires every server the same way: ``grpc.aio``, OpenTelemetry server spans (health and
reflection calls left out), RPC duration metrics (:mod:`novaberg_core.metrics`), domain errors →
gRPC status (the interceptors: :mod:`novaberg_core.server_interceptors`), health and reflection,
and the shutdown order SIGTERM → health NOT_SERVING → ``server.stop(grace)`` (drains in-flight calls) → the
service's own shutdown steps (flush buffers, close pools) → flush spans.

A service's entry point, sketched::

    async def main() -> None:
        cfg = KzgConfig.from_env()
        store = await KzgStore.open(cfg)
        await run_server(
            cfg.common,
            lambda server: kzg_pb2_grpc.add_KzgServiceServicer_to_server(KzgServicer(store), server),
            [kzg_pb2.DESCRIPTOR.services_by_name["KzgService"].full_name],
            on_shutdown=[store.close],
        )

    if __name__ == "__main__":
        run_service(main)
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict, Unpack

import grpc
import grpc.aio
import uvloop
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor

from novaberg_core.authz import server_security
from novaberg_core.config import CommonConfig
from novaberg_core.env import ConfigError, env_choice
from novaberg_core.errors import NovabergError, Unavailable
from novaberg_core.lifecycle import die_with_parent
from novaberg_core.load_shedding import ConcurrencyLimitInterceptor
from novaberg_core.metrics import flush_metrics, setup_metrics
from novaberg_core.peers import CHANNEL_OPTIONS
from novaberg_core.rpc_metrics import RpcMetricsInterceptor
from novaberg_core.server_interceptors import UNTRACED_CALL, ErrorMappingInterceptor, traced
from novaberg_core.telemetry import (
    configure_logging,
    flush_telemetry,
    setup_telemetry,
    tracer_provider,
)

__all__ = [
    "CLIENT_CHANNEL_OPTIONS",
    "EVENT_LOOPS",
    "KEEPALIVE_TIMEOUT_S",
    "KEEPALIVE_TIME_S",
    "UNTRACED_CALL",
    "ErrorMappingInterceptor",
    "RunningServer",
    "ServerOptions",
    "client_channel_arguments",
    "create_server",
    "insecure_channel",
    "run_server",
    "run_service",
    "serve",
    "server_options",
    "wait_for_serving",
]

_LOG = logging.getLogger(__name__)

ShutdownStep = Callable[[], Awaitable[None]]

_TELEMETRY_FLUSH_TIMEOUT_S = 3.0

_CONNECTION_AGE_GRACE_S = 30.0
"""After a connection's maximum age, calls in flight on it get this long (longer than any peer deadline)."""

KEEPALIVE_TIME_S: Final = 20.0
"""A client pings its peer after this long without a sign of it, calls or none (gRPC keepalive)."""
KEEPALIVE_TIMEOUT_S: Final = 10.0
"""…and drops the connection when the ping is not answered in this long: a peer whose node died (no
FIN, no RST: the packets vanish) is found within half a minute, not after TCP's ~15 minutes of
retransmissions during which every call balanced to it waits for its deadline."""

CLIENT_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    # A target that resolves to several addresses (a headless Service: dns:///<svc>-headless…) is
    # spread call by call over all of them, not pinned to the first.
    ("grpc.lb_policy_name", "round_robin"),
    ("grpc.keepalive_time_ms", int(KEEPALIVE_TIME_S * 1000)),
    ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT_S * 1000)),
    # What gRPC (1.85) waits for any ping's answer before it drops the connection: a minute unless set.
    ("grpc.http2.ping_timeout_ms", int(KEEPALIVE_TIMEOUT_S * 1000)),
    ("grpc.keepalive_permit_without_calls", 1),  # an idle connection is checked too, not only at the next call
    ("grpc.http2.max_pings_without_data", 0),  # keep pinging while no call sends data
)


@dataclass(eq=False)
class RunningServer:
    """A started server: the ``grpc.aio`` server, its bound port, its health servicer."""

    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    service_name: str
    service_names: tuple[str, ...]
    host: str
    on_shutdown: tuple[ShutdownStep, ...] = ()
    health_port: int | None = None
    """Port of the plaintext health-only listener (``<prefix>HEALTH_PORT``), None when off."""
    metrics_port: int | None = None
    """The bound port of this process's Prometheus endpoint, when one was configured."""
    _stop_task: asyncio.Future[None] | None = field(default=None, init=False, repr=False)

    @property
    def target(self) -> str:
        """An address a client on this host can dial, e.g. ``localhost:50051``."""
        if self.host in ("[::]", "::", "0.0.0.0", ""):
            return f"localhost:{self.port}"
        return f"{self.host}:{self.port}"

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` has begun."""
        return self._stop_task is not None

    async def stop(self, grace: float | None) -> None:
        """Health NOT_SERVING → drain for up to ``grace`` s → shutdown steps in order → flush spans.

        Idempotent: a second call waits for the first. ``grace=None`` cancels in-flight calls at once.
        Failing shutdown steps are logged, not raised, so later steps still run.
        """
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self._stop(grace))
        await asyncio.shield(self._stop_task)

    async def _stop(self, grace: float | None) -> None:
        _LOG.info("%s: stopping (grace %s s)", self.service_name, grace)
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        for step in self.on_shutdown:
            try:
                await step()
            except Exception:
                _LOG.exception("%s: shutdown step %s failed", self.service_name, _step_name(step))
        try:
            await asyncio.to_thread(flush_telemetry, _TELEMETRY_FLUSH_TIMEOUT_S)
            await asyncio.to_thread(flush_metrics, _TELEMETRY_FLUSH_TIMEOUT_S)
        except Exception:
            _LOG.exception("%s: flushing spans and metrics failed", self.service_name)
        _LOG.info("%s: stopped", self.service_name)


def _step_name(step: ShutdownStep) -> str:
    return getattr(step, "__qualname__", None) or repr(step)


def _bind(
    server: grpc.aio.Server,
    cfg: CommonConfig,
    *,
    port: int | None = None,
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[str, int]:
    """Bind ``host:port`` (``cfg.port`` unless given), with TLS when ``credentials`` are given;
    all-interfaces IPv6 falls back to IPv4 on hosts without IPv6."""
    wanted = cfg.port if port is None else port
    hosts = [cfg.host, "0.0.0.0"] if cfg.host in ("[::]", "::") else [cfg.host]
    for host in hosts:
        address = f"{host}:{wanted}"
        try:
            if credentials is None:
                bound = server.add_insecure_port(address)
            else:
                bound = server.add_secure_port(address, credentials)
        except RuntimeError:
            bound = 0
        if bound:
            return host, int(bound)
    raise OSError(
        f"{cfg.service_name}: cannot listen on {cfg.host}:{wanted} "
        "(port in use, or not an address of this host)"
    )


async def _health_listener(
    cfg: CommonConfig, health_servicer: health.aio.HealthServicer
) -> tuple[grpc.aio.Server, int] | None:
    """The plaintext listener serving only grpc.health.v1 on ``cfg.health_port`` (kubelet's gRPC
    probes speak no TLS); the same health servicer, so it turns NOT_SERVING with the main one."""
    if cfg.health_port is None:
        return None
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    _, port = _bind(server, cfg, port=cfg.health_port)
    await server.start()
    _LOG.info("%s: plaintext health-only listener on port %d", cfg.service_name, port)
    return server, port


def server_options(cfg: CommonConfig) -> list[tuple[str, Any]]:
    """Channel arguments of every server: no shared port, keepalive, connections aged out when configured."""
    options: list[tuple[str, Any]] = [
        ("grpc.so_reuseport", 0),  # a second process on the same port must fail, not silently share it
        # The peers' keepalive pings (CLIENT_CHANNEL_OPTIONS) are welcome, calls or none: gRPC's default
        # (one ping in five minutes without data) would answer them with GOAWAY "too many pings".
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", int(KEEPALIVE_TIME_S * 1000 / 2)),
        # The server checks its clients alike, so a dead caller's open streams end.
        ("grpc.keepalive_time_ms", int(KEEPALIVE_TIME_S * 3 * 1000)),
        ("grpc.keepalive_timeout_ms", int(KEEPALIVE_TIMEOUT_S * 1000)),
        ("grpc.http2.ping_timeout_ms", int(KEEPALIVE_TIMEOUT_S * 1000)),
    ]
    if cfg.max_connection_age_s > 0:
        # grpc adds ±10 % jitter, so the replicas' clients do not all reconnect at once.
        options.append(("grpc.max_connection_age_ms", int(cfg.max_connection_age_s * 1000)))
        options.append(("grpc.max_connection_age_grace_ms", int(_CONNECTION_AGE_GRACE_S * 1000)))
    return options


class ServerOptions(TypedDict, total=False):
    """What a service adds to the bootstrap's wiring (keywords of :func:`create_server`)."""

    on_shutdown: Sequence[ShutdownStep]
    """Run in order after the server stopped (flush buffers, close pools); a failing one skips none."""
    extra_interceptors: Sequence[grpc.aio.ServerInterceptor]
    """Run inside the error mapping, so their exceptions are mapped too."""


async def create_server(
    cfg: CommonConfig,
    register: Callable[[grpc.aio.Server], None],
    service_names: Sequence[str],
    **options: Unpack[ServerOptions],
) -> RunningServer:
    """Build, bind and start a server; its health reports SERVING for ``""`` and ``service_names``.

    ``register`` adds the service's servicers (``add_XServicer_to_server``); ``service_names``
    are their full proto names (``novaberg.kzg.v1.KzgService``) for health and reflection;
    ``options``: :class:`ServerOptions`. Under mTLS (``cfg.tls``) the authorisation check runs
    before the request contract and the handler (novaberg_core.authz); ``cfg.health_port`` adds a
    plaintext health-only listener.
    """
    provider = setup_telemetry(cfg.service_name, cfg.otel_exporter)
    metrics_port = setup_metrics(cfg.service_name, cfg.metrics_exporter, port=cfg.metrics_port, host=cfg.host)
    security = server_security(cfg.service_name, cfg.tls)
    interceptors: list[grpc.aio.ServerInterceptor] = [
        aio_server_interceptor(tracer_provider=provider, filter_=traced),
        # outside the authorisation and the error mapping: it sees the status a call ended with,
        # refusals (UNAUTHENTICATED, PERMISSION_DENIED) included
        RpcMetricsInterceptor(),
        # inside the metrics, so a refused call counts with its status; before any other work
        *([ConcurrencyLimitInterceptor(cfg.max_concurrent_rpcs, cfg.service_name)] if cfg.max_concurrent_rpcs else []),
        *security.interceptors,
        ErrorMappingInterceptor(),
        *options.get("extra_interceptors", ()),
    ]
    server = grpc.aio.server(interceptors=interceptors, options=server_options(cfg))
    register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = tuple(service_names)
    reflection.enable_server_reflection((*names, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    host, port = _bind(server, cfg, credentials=security.credentials)
    await server.start()
    steps = tuple(options.get("on_shutdown", ()))
    try:
        listener = await _health_listener(cfg, health_servicer)
    except BaseException:
        await server.stop(None)
        raise
    if listener is not None:
        health_server = listener[0]

        async def stop_health_listener() -> None:
            await health_server.stop(None)

        steps = (*steps, stop_health_listener)
    for name in ("", *names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    _LOG.debug("%s: started on %s:%d", cfg.service_name, host, port)
    return RunningServer(
        server=server,
        port=port,
        health=health_servicer,
        service_name=cfg.service_name,
        service_names=names,
        host=host,
        on_shutdown=steps,
        health_port=None if listener is None else listener[1],
        metrics_port=metrics_port,
    )


async def serve(running: RunningServer, grace: float) -> None:
    """Run until SIGTERM/SIGINT (→ ``running.stop(grace)``) or until the server stops otherwise.

    A second signal during the drain cancels the remaining calls at once. Returns after the
    shutdown steps ran.
    """
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Future[None]] = set()

    def on_signal(signum: signal.Signals) -> None:
        if not running.stopping:
            _LOG.info("%s: %s received", running.service_name, signum.name)
            task = asyncio.ensure_future(running.stop(grace))
        else:
            _LOG.warning("%s: %s again, cancelling in-flight calls", running.service_name, signum.name)
            task = asyncio.ensure_future(running.server.stop(None))
        pending.add(task)
        task.add_done_callback(pending.discard)

    installed: list[signal.Signals] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread / no signal support: rely on stop() being called
        installed.append(signum)
    # Announced only now, so a supervisor that signals right after this line gets a graceful stop.
    _LOG.info(
        "%s: serving %s on %s:%d",
        running.service_name,
        ", ".join(running.service_names) or "(no services)",
        running.host,
        running.port,
    )
    try:
        await running.server.wait_for_termination()
        await running.stop(grace)  # runs the shutdown steps if the server stopped some other way
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def run_server(
    cfg: CommonConfig,
    register: Callable[[grpc.aio.Server], None],
    service_names: Sequence[str],
    **options: Unpack[ServerOptions],
) -> None:
    """:func:`create_server` then :func:`serve` with ``cfg.grace_seconds``, at ``cfg.log_level``."""
    configure_logging(cfg.log_level)
    running = await create_server(cfg, register, service_names, **options)
    await serve(running, cfg.grace_seconds)


EVENT_LOOPS = ("uvloop", "asyncio")
"""Accepted values of ``NOVABERG_EVENT_LOOP``."""


def run_service(main: Callable[[], Awaitable[None]], *, log_level: str = "INFO") -> None:
    """Entry point for ``python -m services.<svc>``: logging, then ``main()`` on the event loop.

    The loop is uvloop unless ``NOVABERG_EVENT_LOOP=asyncio``: grpc.aio, asyncpg and redis-py
    hand every call's completion through the loop, and uvloop's loop costs less per hand-off
    (turn benchmark: memory time p50 −0.6 to −1.5 ms per turn, ~0.6 ms less CPU per service and
    turn; docs/decisions.md). A :class:`ConfigError` ends the process with exit code 2 and
    the message alone (it names the variable); a domain error that ends ``main`` (a store that
    refuses to open: another model's vectors, a changed migration, no answer) exits 1 with its
    message alone, which says what to change; Ctrl-C before the server is up exits 130 without
    a traceback.
    """
    configure_logging(log_level)
    die_with_parent()  # a launched service stops with its launcher (novaberg_core.lifecycle)

    async def runner() -> None:
        await main()

    try:
        if env_choice("NOVABERG_EVENT_LOOP", EVENT_LOOPS, "uvloop") == "uvloop":
            uvloop.run(runner())
        else:
            asyncio.run(runner())
    except ConfigError as error:
        _LOG.error("configuration error: %s", error)
        sys.exit(2)
    except NovabergError as error:
        _LOG.error("cannot start: %s", error)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


def insecure_channel(target: str, *, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A client channel to a peer: its calls carry the trace context (client spans, health excluded),
    are balanced round-robin over every address ``target`` resolves to (a headless Service), and
    idempotent calls are retried on UNAVAILABLE and ABORTED (``novaberg_core.peers``); ``options`` add to or
    override the defaults.
    """
    return grpc.aio.insecure_channel(target, **client_channel_arguments(options))


def client_channel_arguments(options: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
    """``options`` and ``interceptors`` of every client channel to a peer, plaintext or TLS: trace
    context (health excluded), round-robin balancing and the peers' retry policy, with ``options``
    added or overriding."""
    merged = dict(CLIENT_CHANNEL_OPTIONS) | dict(CHANNEL_OPTIONS) | dict(options)
    return {
        "options": list(merged.items()),
        "interceptors": aio_client_interceptors(tracer_provider=tracer_provider(), filter_=traced),
    }


async def wait_for_serving(
    target: str,
    service: str = "",
    timeout: float = 10.0,  # noqa: ASYNC109
    *,
    credentials: grpc.ChannelCredentials | None = None,
) -> None:
    """Poll ``target``'s health Check until ``service`` is SERVING; :class:`Unavailable` after ``timeout`` s.

    ``credentials`` (novaberg_core.tls.channel_credentials) for a server under mTLS.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = "no answer"
    channel_cm = (
        grpc.aio.insecure_channel(target) if credentials is None else grpc.aio.secure_channel(target, credentials)
    )
    async with channel_cm as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest(service=service)
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise Unavailable(
                    f"{target} did not report SERVING for service {service!r} within {timeout} s ({last})"
                )
            try:
                response = await stub.Check(request, timeout=min(remaining, 1.0))
            except grpc.aio.AioRpcError as error:
                last = f"{error.code().name}: {error.details()}"
            else:
                if response.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
            await asyncio.sleep(min(0.05, max(deadline - loop.time(), 0)))
