"""The Grafana dashboard ``deploy/grafana/novaberg-memory-core.json`` parses, covers turn latency,
memory growth and Pixie health, and queries only metrics and labels the services export
(``tests.deploy.promql``: its PromQL parsed, the names checked against a real scrape)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.promql import SCRAPE_LABELS, exported_series, selectors

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "novaberg-memory-core.json"


def _panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items:
        yield item
        yield from _panels(item.get("panels", []))


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in _panels(dashboard["panels"]) for t in p.get("targets", []) if t.get("expr")]


def metric_names(expr: str) -> set[str]:
    return {name for name, _ in selectors(expr)}


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


def test_every_metric_it_queries_is_exported_with_the_labels_it_reads(dashboard: dict[str, Any]) -> None:
    exported = exported_series()
    for expr in _expressions(dashboard):
        for name, labels in selectors(expr):
            assert name in exported, (name, expr)
            assert labels - exported[name] - SCRAPE_LABELS == set(), (name, expr)
