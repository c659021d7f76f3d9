"""What the dashboard's and the alerts' PromQL reads, and what the services export to read.

Expressions are parsed by ``promql-parser`` (the Rust parser Prometheus-compatible databases use), so a
syntax error fails the test that reads them. The exported names and labels come from a real scrape of
this process's Prometheus endpoint after every instrument recorded once, so they are the exporter's own
(unit suffixes, ``_total``, ``_bucket``, dots turned into underscores).
"""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections import defaultdict

import promql_parser
import redis.exceptions

from novaberg_core import metrics
from novaberg_dev.embedded.state import free_port

__all__ = ["SCRAPE_LABELS", "exported_series", "parse", "selectors"]

SCRAPE_LABELS = frozenset({"namespace", "job", "pod", "instance", "service"})
"""Labels Prometheus adds to every series of a Kubernetes target (a ServiceMonitor's)."""

_GRAFANA_RANGES = re.compile(r"\$__(rate_interval|range|interval)")


def parse(expr: str) -> promql_parser.Expr:
    """The expression's syntax tree; Grafana's range variables read as ``5m``. A syntax error raises ValueError."""
    return promql_parser.parse(_GRAFANA_RANGES.sub("5m", expr))


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """Each series selector of ``expr``: the metric name and the labels it matches, groups or joins on."""
    found: list[tuple[str, set[str]]] = []
    grouped: set[str] = set()

    def visit(node: promql_parser.Expr) -> bool:
        if isinstance(node, promql_parser.VectorSelector):
            found.append((node.name or "", {m.name for m in node.matchers.matchers} - {"__name__"}))
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            grouped.update(node.modifier.labels)
        return True

    promql_parser.walk(parse(expr), visit)
    return [(name, labels | (grouped - {"le"})) for name, labels in found]


async def _scrape() -> str:
    port = metrics.setup_metrics("promql-test", port=free_port(), host="127.0.0.1")
    assert port is not None
    metrics.RPC_DURATION.record(
        1.0,
        {
            "rpc.system": "grpc",
            "rpc.service": "novaberg.pipeline.v1.PipelineService",
            "rpc.method": "ObserveTurn",
            "rpc.grpc.status_code": 0,
        },
    )
    metrics.count_store_outage(
        redis.exceptions.ConnectionError("down"), "/novaberg.kzg.v1.KzgService/StoreEntry"
    )
    metrics.record_dossier(kzg_hits=1, lzg_memories=2, recall_items=3, anchors=1, missing=["LZG SpreadingRead: down"])
    metrics.record_decay(2, 1, scoped=False)
    metrics.record_retention(5, 1, scoped=False)
    metrics.record_run("synapsen_decay", "ok")
    metrics.record_promotion({"promoted_new": 1, "parked": 1})
    metrics.IN_FLIGHT.add(0, {"rpc.service": "novaberg.pipeline.v1.PipelineService"})
    metrics.SHED_CALLS.add(1, {"rpc.service": "novaberg.kzg.v1.KzgService"})
    with metrics.turn_in_flight():
        pass

    class Writer:
        max_buffer, dropped, buffered = 100, 1, 3

    writer = Writer()
    metrics.register_pipeline_log(writer)

    async def read() -> dict[str, float]:
        return dict.fromkeys(metrics.METRIC_NAMES, 1.0)

    sampler = metrics.StoreSampler(read, min_interval_s=0.0)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        return await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
    finally:
        sampler.close()


def exported_series() -> dict[str, set[str]]:
    """Every sample name the endpoint serves, with the label names it carries."""
    series: dict[str, set[str]] = defaultdict(set)
    for line in asyncio.run(_scrape()).splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?", line)
        if match is None:
            continue
        series[match.group(1)].update(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', match.group(3) or ""))
    return dict(series)
