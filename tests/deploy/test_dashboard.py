"""The Grafana dashboard ``deploy/grafana/novaberg-memory-core.json`` parses, covers turn latency,
memory growth and Pixie health, and queries only metrics the services export — checked against a
real scrape of this process's Prometheus endpoint after every instrument recorded once, so the
names are the exporter's own (unit suffixes, ``_total``, ``_bucket``)."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions

from novaberg_core import metrics
from novaberg_dev.embedded.state import free_port

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "novaberg-memory-core.json"
_PROMQL_WORDS = frozenset(
    {
        "sum",
        "max",
        "min",
        "avg",
        "count",
        "rate",
        "irate",
        "increase",
        "delta",
        "histogram_quantile",
        "topk",
        "bottomk",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "le",
    }
)


def _panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items:
        yield item
        yield from _panels(item.get("panels", []))


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in _panels(dashboard["panels"]) for t in p.get("targets", []) if t.get("expr")]


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (label matchers, ranges and groupings removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        token, rest = match.group(0), text[match.end() :].lstrip()
        if rest.startswith("(") or token in _PROMQL_WORDS:
            continue
        names.add(token)
    return names


async def _scrape_everything() -> set[str]:
    """Sample names of this process's endpoint with every instrument recorded once."""
    port = metrics.setup_metrics("dashboard-test", port=free_port(), host="127.0.0.1")
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
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
    finally:
        sampler.close()
    return {
        m.group(0)
        for line in text.splitlines()
        if not line.startswith("#")
        if (m := re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line))
    }


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def test_the_dashboard_is_grafana_json_with_a_prometheus_datasource(dashboard: dict[str, Any]) -> None:
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["panels"], list)
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    ids = [p["id"] for p in _panels(dashboard["panels"])]
    assert len(ids) == len(set(ids))
    for panel in _panels(dashboard["panels"]):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]


def test_it_covers_turn_latency_memory_growth_and_pixie_health(dashboard: dict[str, Any]) -> None:
    queried = set().union(*map(metric_names, _expressions(dashboard)))
    assert {
        "rpc_server_duration_milliseconds_bucket",
        "novaberg_lzg_nodes",
        "novaberg_lzg_edges",
        "novaberg_kzg_entries",
        "novaberg_promotion_queue_length",
        "novaberg_promotion_queue_lag_seconds",
        "novaberg_pixie_parked_jobs",
        "novaberg_pixie_runs_total",
    } <= queried


def test_every_metric_it_queries_is_exported(dashboard: dict[str, Any]) -> None:
    exported = asyncio.run(_scrape_everything())
    queried = set().union(*map(metric_names, _expressions(dashboard)))
    assert queried - exported == set()


def test_the_promql_reader_finds_names_not_labels_or_functions() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, m) (rate(a_b_bucket{rpc_service="x.Y"}[$__rate_interval])))'
    assert metric_names(expr) == {"a_b_bucket"}
    assert metric_names("novaberg_x / novaberg_y") == {"novaberg_x", "novaberg_y"}
