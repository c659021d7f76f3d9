"""OpenTelemetry metrics of every service, set up once per process (STYLE rules 3 and 9).

One SDK :class:`MeterProvider` per process (like the tracer provider in :mod:`novaberg_core.telemetry`):
its readers are a Prometheus reader on a private registry — served over HTTP on
``NOVABERG_<SVC>_METRICS_PORT`` (else ``NOVABERG_METRICS_PORT``; 0 or unset = no endpoint) — and the
push exporters of ``OTEL_METRICS_EXPORTER`` built by the SDK (``otlp`` over gRPC or HTTP by
``OTEL_EXPORTER_OTLP_PROTOCOL``, ``console``; interval ``OTEL_METRIC_EXPORT_INTERVAL``).

Every instrument is declared here, so the names the dashboard queries live in one place
(:data:`METRIC_NAMES`; ``deploy/grafana/novaberg.json`` is checked against it):

- ``rpc.server.duration`` (ms) per ``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code`` — every RPC
  of every service, recorded in the one server bootstrap
  (:class:`~novaberg_core.rpc_metrics.RpcMetricsInterceptor`);
- ``novaberg.grpc.server.in_flight_calls`` per ``rpc.service`` and ``novaberg.pipeline.turns_in_flight`` —
  calls being handled now (the Helm chart's custom-metric HPA targets);
- ``novaberg.grpc.server.shed_calls`` per ``rpc.service`` — calls refused at the concurrency limit
  (:mod:`novaberg_core.load_shedding`);
- ``novaberg.store.unavailable`` — calls answered UNAVAILABLE because Redis or PostgreSQL was out (or full,
  or read-only during a failover);
- ``novaberg.pipeline_log.buffered`` / ``.capacity`` / ``.dropped`` — each writer's buffer;
- ``novaberg.dossier.memories`` / ``.anchors`` / ``.missing_parts`` — what a BuildDossier returned (pipeline);
- ``novaberg.promotion.queue.length`` / ``.pending`` / ``.lag``, ``novaberg.kzg.entries`` (kzg),
  ``novaberg.lzg.nodes`` / ``.edges`` (lzg), ``novaberg.pixie.parked_jobs`` (pixie) — read from the
  stores by :class:`StoreSampler`, at most once per interval and only when someone looks;
- ``novaberg.lzg.decay.nodes``, ``novaberg.log.retention.rows``, ``novaberg.pixie.runs``,
  ``novaberg.pixie.promotion.jobs`` — what maintenance did.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

from opentelemetry import metrics as otel_metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader, PeriodicExportingMetricReader
from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from novaberg_core.store_errors import is_postgres_outage, is_redis_outage
from novaberg_core.telemetry import flush_provider

__all__ = [
    "METRIC_NAMES",
    "StoreSampler",
    "count_store_outage",
    "flush_metrics",
    "meter",
    "meter_provider",
    "prometheus_endpoint",
    "record_decay",
    "record_dossier",
    "record_promotion",
    "record_retention",
    "record_run",
    "register_pipeline_log",
    "setup_metrics",
    "turn_in_flight",
]

_LOG = logging.getLogger(__name__)
_lock = threading.Lock()
_provider: MeterProvider | None = None
_registry: CollectorRegistry | None = None
_endpoints: dict[int, int] = {}
"""Requested port → bound port of the Prometheus endpoints this process serves."""
_pushing: list[MetricReader] = []
"""The provider's push readers (``OTEL_METRICS_EXPORTER``), the ones :func:`flush_metrics` flushes."""

_RPC_BUCKETS_MS: Final = (0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000)
_COUNT_BUCKETS: Final = (0, 1, 2, 3, 5, 10, 20, 50, 100)


def meter(name: str) -> otel_metrics.Meter:
    """A meter for module ``name``; safe at import time (the API's proxy binds to the provider once set)."""
    return otel_metrics.get_meter(name)


_METER = meter("novaberg")

# ----------------------------------------------------------------------------- instruments

_declared: set[str] = set()
"""Names of the instruments declared below; :data:`METRIC_NAMES` is built from it."""


def _histogram(name: str, unit: str, description: str, buckets: Sequence[float]) -> otel_metrics.Histogram:
    _declared.add(name)
    return _METER.create_histogram(
        name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
    )


def _counter(name: str, unit: str, description: str) -> otel_metrics.Counter:
    _declared.add(name)
    return _METER.create_counter(name, unit=unit, description=description)


_Callback = Callable[[CallbackOptions], Iterable[Observation]]


def _observed(name: str, unit: str, description: str, callback: _Callback, *, counter: bool = False) -> None:
    """An observable gauge (or, with ``counter``, an observable counter) read by ``callback``."""
    _declared.add(name)
    create = _METER.create_observable_counter if counter else _METER.create_observable_gauge
    create(name, callbacks=[callback], unit=unit, description=description)


RPC_DURATION: Final = _histogram(
    "rpc.server.duration", "ms", "Duration of an RPC on the server, by method and status", _RPC_BUCKETS_MS
)


class LiveCount:
    """A count per attribute set, kept in the process and read by an observable up-down counter when
    metrics are collected: a call's +1 and −1 are two dict updates, not two trips through the SDK's
    measurement path (aggregation lookup, lock, exemplar filter) on every RPC of every service.
    Exported like an up-down counter (a Prometheus gauge of the same name)."""

    def __init__(self, name: str, unit: str, description: str, *, meter: otel_metrics.Meter | None = None) -> None:
        _declared.add(name)
        self._counts: dict[tuple[tuple[str, Any], ...], int] = {}
        (meter or _METER).create_observable_up_down_counter(
            name, callbacks=[self._observe], unit=unit, description=description
        )

    def add(self, amount: int, attributes: Mapping[str, Any] | None = None) -> None:
        key = tuple(attributes.items()) if attributes else ()
        self._counts[key] = self._counts.get(key, 0) + amount

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(key)) for key, value in list(self._counts.items())]


IN_FLIGHT: Final = LiveCount(
    "novaberg.grpc.server.in_flight_calls",
    "{call}",
    "Calls a server is handling now, by service (the chart's custom-metric HPA target)",
)
TURNS_IN_FLIGHT: Final = LiveCount(
    "novaberg.pipeline.turns_in_flight",
    "{call}",
    "ObserveTurn, BuildDossier and Dispatch calls the pipeline is handling now",
)
SHED_CALLS: Final = _counter(
    "novaberg.grpc.server.shed_calls",
    "{call}",
    "Calls answered UNAVAILABLE at once because the server was at its limit of concurrent calls, by service",
)
STORE_UNAVAILABLE: Final = _counter(
    "novaberg.store.unavailable",
    "{call}",
    "Calls answered UNAVAILABLE because a store (redis, postgresql) could not be reached or take the work",
)
DOSSIER_MEMORIES: Final = _histogram(
    "novaberg.dossier.memories",
    "{memory}",
    "Memories in a BuildDossier answer, by source (kzg hits, lzg memories, recall items)",
    _COUNT_BUCKETS,
)
DOSSIER_ANCHORS: Final = _histogram(
    "novaberg.dossier.anchors", "{anchor}", "Anchors of a BuildDossier's spreading read", _COUNT_BUCKETS
)
DOSSIER_MISSING: Final = _counter(
    "novaberg.dossier.missing_parts", "{part}", "Parts a BuildDossier went without (a layer out or too late), by peer"
)
DECAY_NODES: Final = _counter(
    "novaberg.lzg.decay.nodes",
    "{node}",
    "Nodes decayed or deactivated by RunDecay (SPEC §5.7), by scope (all pairs or pairs)",
)
RETENTION_ROWS: Final = _counter(
    "novaberg.log.retention.rows",
    "{row}",
    "Pipeline-log rows deleted by Purge, and turn_roh rows past the horizon kept (SPEC §8)",
)
PIXIE_RUNS: Final = _counter("novaberg.pixie.runs", "{run}", "Finished Pixie runs by task and outcome (SPEC §9)")
PIXIE_JOBS: Final = _counter(
    "novaberg.pixie.promotion.jobs",
    "{job}",
    "Promotion jobs by what became of them (promoted_new, duplicates, parked, deferred_locked)",
)


# ----------------------------------------------------------------------------- store samplers


class StoreSampler:
    """Values a coroutine reads from a store (XLEN, a count), for observable gauges: read at most once
    per ``min_interval_s`` and only when a reader collects, so an unscraped service costs nothing.

    Collection runs on the reader's thread (the Prometheus HTTP server, the periodic exporter);
    the read runs on the service's event loop, and the collecting thread waits for it up to
    ``wait_s``. On the loop's own thread it never waits: the last values stand.
    """

    def __init__(
        self,
        read: Callable[[], Awaitable[Mapping[str, float]]],
        *,
        min_interval_s: float = 10.0,
        wait_s: float = 2.0,
    ) -> None:
        self._read = read
        self._loop = asyncio.get_running_loop()
        self.min_interval_s = min_interval_s
        self.wait_s = wait_s
        self._values: dict[str, float] = {}
        self._read_at = -math.inf
        self._pending: concurrent.futures.Future[None] | None = None
        self._guard = threading.Lock()
        _samplers.add(self)

    async def _refresh(self) -> None:
        try:
            values = await self._read()
        except Exception as error:  # a store outage must not break the scrape
            _LOG.debug("metrics: sampling failed: %s", error)
        else:
            self._values = {key: float(value) for key, value in values.items()}

    def values(self) -> Mapping[str, float]:
        """The latest values, refreshed first when older than the interval."""
        # A loop that no longer runs (its service stopping, a finished test's) would never answer: the
        # last values stand, and the scrape does not wait wait_s for each such sampler.
        running = self._loop.is_running()
        with self._guard:
            stale = time.monotonic() - self._read_at >= self.min_interval_s
            if stale and running and (self._pending is None or self._pending.done()):
                self._read_at = time.monotonic()
                try:
                    self._pending = asyncio.run_coroutine_threadsafe(self._refresh(), self._loop)
                except RuntimeError:  # the loop has stopped
                    self._pending = None
            pending = self._pending
        if running and pending is not None and not pending.done() and not _on_loop_thread(self._loop):
            try:
                pending.result(timeout=self.wait_s)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError):
                pass
        return self._values

    def close(self) -> None:
        """No more observations from this sampler (its service stops)."""
        _samplers.discard(self)


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


_samplers: weakref.WeakSet[StoreSampler] = weakref.WeakSet()


def _sampled(key: str) -> _Callback:
    def observe(options: CallbackOptions) -> Iterable[Observation]:
        for sampler in list(_samplers):
            value = sampler.values().get(key)
            if value is not None:
                yield Observation(value)

    return observe


_SAMPLED_GAUGES: Final = {
    "novaberg.promotion.queue.length": ("{job}", "Promotion jobs in the KZG queue (read and unread; XLEN)"),
    "novaberg.promotion.queue.pending": ("{job}", "Promotion jobs delivered to a worker and not yet acked"),
    "novaberg.promotion.queue.lag": (
        "s",
        "Age of the oldest promotion job still in the queue (0 when empty)",
    ),
    "novaberg.kzg.entries": ("{entry}", "KZG entries in the search index, all pairs"),
    "novaberg.lzg.nodes": ("{node}", "LZG nodes, all pairs (PostgreSQL's live-row estimate)"),
    "novaberg.lzg.edges": ("{edge}", "LZG edges, all pairs (PostgreSQL's live-row estimate)"),
    "novaberg.pixie.parked_jobs": ("{job}", "Promotion jobs parked after too many failures"),
}
for _name, (_unit, _description) in _SAMPLED_GAUGES.items():
    _observed(_name, _unit, _description, _sampled(_name))


# ----------------------------------------------------------------------------- pipeline-log buffers


class _Buffered(Protocol):
    max_buffer: int
    dropped: int

    @property
    def buffered(self) -> int: ...


_pipeline_logs: weakref.WeakSet[Any] = weakref.WeakSet()


def register_pipeline_log(writer: _Buffered) -> None:
    """Observe a pipeline-log writer's buffer (fill, capacity, drops) while it lives."""
    _pipeline_logs.add(writer)


def _writers_sum(attribute: str) -> _Callback:
    """Callback: ``attribute`` summed over the living pipeline-log writers (nothing while there are none)."""

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        writers = list(_pipeline_logs)
        if writers:
            yield Observation(sum(getattr(w, attribute) for w in writers))

    return observe


_observed(
    "novaberg.pipeline_log.buffered",
    "{record}",
    "Pipeline-log records waiting in this process's buffer (SPEC §8: writers never block)",
    _writers_sum("buffered"),
)
_observed(
    "novaberg.pipeline_log.capacity",
    "{record}",
    "Records the buffer holds before the oldest forensic ones are dropped",
    _writers_sum("max_buffer"),
)
_observed(
    "novaberg.pipeline_log.dropped",
    "{record}",
    "Forensic records dropped because the buffer was full (never turn_roh)",
    _writers_sum("dropped"),
    counter=True,
)

METRIC_NAMES: Final = frozenset(_declared)
"""Every instrument the services export (OpenTelemetry names; Prometheus adds unit suffixes)."""


# ----------------------------------------------------------------------------- recording helpers


def count_store_outage(error: BaseException, method: str) -> None:
    """Count a call that failed because Redis or PostgreSQL was out (:mod:`novaberg_core.store_errors`)."""
    for candidate in (error, error.__cause__, error.__context__):
        if candidate is None:
            continue
        store = (
            "redis" if is_redis_outage(candidate) else "postgresql" if is_postgres_outage(candidate) else None
        )
        if store is not None:
            STORE_UNAVAILABLE.add(1, {"store": store, "rpc.method": _method_name(method)})
            return


@contextlib.contextmanager
def turn_in_flight() -> Iterator[None]:
    """Counts a pipeline turn call while it runs (``novaberg.pipeline.turns_in_flight``)."""
    TURNS_IN_FLIGHT.add(1)
    try:
        yield
    finally:
        TURNS_IN_FLIGHT.add(-1)


def record_dossier(
    *, kzg_hits: int, lzg_memories: int, recall_items: int, anchors: int, missing: Sequence[str] = ()
) -> None:
    """One BuildDossier's size and the parts it went without, each named ``"<peer> <method>: …"`` (pipeline)."""
    for part in missing:
        DOSSIER_MISSING.add(1, {"peer": part.split(" ", 1)[0]})
    DOSSIER_MEMORIES.record(kzg_hits, {"source": "kzg"})
    DOSSIER_MEMORIES.record(lzg_memories, {"source": "lzg"})
    DOSSIER_MEMORIES.record(recall_items, {"source": "recall"})
    DOSSIER_ANCHORS.record(anchors)


def _scope(scoped: bool) -> str:
    return "pairs" if scoped else "all"


def record_decay(decayed: int, deactivated: int, *, scoped: bool) -> None:
    """One RunDecay (lzg)."""
    DECAY_NODES.add(decayed, {"outcome": "decayed", "scope": _scope(scoped)})
    DECAY_NODES.add(deactivated, {"outcome": "deactivated", "scope": _scope(scoped)})


def record_retention(deleted: int, kept_turn_roh: int, *, scoped: bool) -> None:
    """One Purge (log)."""
    RETENTION_ROWS.add(deleted, {"outcome": "deleted", "scope": _scope(scoped)})
    RETENTION_ROWS.add(kept_turn_roh, {"outcome": "kept_turn_roh", "scope": _scope(scoped)})


def record_run(task: str, outcome: str) -> None:
    """A finished Pixie run."""
    PIXIE_RUNS.add(1, {"task": task, "outcome": outcome})


def record_promotion(counts: Mapping[str, int]) -> None:
    """What became of a promotion batch's jobs (the run's counts other than ``jobs``/``acked``)."""
    for outcome, value in counts.items():
        if value and outcome not in ("jobs", "acked"):
            PIXIE_JOBS.add(value, {"outcome": outcome})


def _method_name(method: str) -> str:
    return method.rsplit("/", 1)[-1]


# ----------------------------------------------------------------------------- provider and endpoint


def _push_readers(exporters: str) -> list[MetricReader]:
    """Readers for ``OTEL_METRICS_EXPORTER``'s names, built by the SDK (``prometheus`` is the endpoint)."""
    from novaberg_core.telemetry import exporter_classes

    readers: list[MetricReader] = []
    for name, cls in exporter_classes(exporters, "metrics"):
        if name == "prometheus":
            continue  # served by our own endpoint (NOVABERG_METRICS_PORT), not a second server
        if issubclass(cls, MetricReader):
            readers.append(cls())
        elif issubclass(cls, MetricExporter):
            readers.append(PeriodicExportingMetricReader(cls()))
    return readers


def _ensure_provider(service_name: str, exporters: str) -> MeterProvider:
    global _provider, _registry
    from novaberg_core.telemetry import service_resource

    resource = service_resource(service_name)
    with _lock:
        if _provider is None:
            _registry = CollectorRegistry(auto_describe=True)
            ProcessCollector(registry=_registry)  # process_cpu_seconds_total, process_resident_memory_bytes
            _pushing[:] = _push_readers(exporters)
            readers = [PrometheusMetricReader(registry=_registry), *_pushing]
            _provider = MeterProvider(resource=resource, metric_readers=readers)
            otel_metrics.set_meter_provider(_provider)
        return _provider


def _listen_host(host: str) -> str:
    host = host.strip("[]")
    return "::" if host in ("", "::") else host


def prometheus_endpoint(host: str, port: int) -> int:
    """Serve the process's metrics in Prometheus text format on ``host:port`` (once per port); returns
    the bound port. ``[::]`` listens on all interfaces (IPv4 only where IPv6 is off)."""
    if _registry is None:
        raise RuntimeError("setup_metrics() first")
    with _lock:
        if port in _endpoints:
            return _endpoints[port]
        try:
            server, _ = start_http_server(port, addr=_listen_host(host), registry=_registry)
        except OSError:
            if _listen_host(host) != "::":
                raise
            server, _ = start_http_server(port, addr="0.0.0.0", registry=_registry)
        bound = int(server.server_port)
        _endpoints[port] = bound
        return bound


def setup_metrics(
    service_name: str, exporters: str = "none", *, port: int = 0, host: str = "[::]"
) -> int | None:
    """Create (once) the process's meter provider; serve the Prometheus endpoint when ``port`` > 0.

    Returns the endpoint's bound port, or None without one. ``exporters`` (``OTEL_METRICS_EXPORTER``)
    is applied by the first call in a process.
    """
    _ensure_provider(service_name, exporters)
    if port > 0:
        bound = prometheus_endpoint(host, port)
        _LOG.info("%s: metrics on http://%s:%d/metrics", service_name, _listen_host(host), bound)
        return bound
    return None


def meter_provider() -> MeterProvider | None:
    """The provider created here, or None before :func:`setup_metrics`."""
    return _provider


def flush_metrics(timeout_s: float = 5.0) -> bool:
    """Push buffered metrics now (blocking; from async code via ``asyncio.to_thread``), by the push readers only:
    the Prometheus reader keeps a collection outside a scrape for the next one, which lists each series again."""
    return all([flush_provider(reader, timeout_s) for reader in _pushing])
