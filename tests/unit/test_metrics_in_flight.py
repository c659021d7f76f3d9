"""The in-flight gauges (the chart's HPA targets) show the calls being handled at the scrape."""

from __future__ import annotations

import re
import urllib.request

from novaberg_core import metrics
from novaberg_dev.embedded.state import free_port


def _value(text: str, name: str, label: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(name + "{") and label in line]
    assert len(lines) == 1, lines
    return float(lines[0].rsplit(" ", 1)[1])


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def test_in_flight_calls_and_turns_are_the_counts_at_the_scrape() -> None:
    port = metrics.setup_metrics("in-flight-test", port=free_port(), host="127.0.0.1")
    assert port is not None
    probe = {"rpc.service": "novaberg.test.v1.InFlightProbe"}
    label = 'rpc_service="novaberg.test.v1.InFlightProbe"'
    metrics.IN_FLIGHT.add(1, probe)
    metrics.IN_FLIGHT.add(1, probe)
    metrics.IN_FLIGHT.add(-1, probe)
    with metrics.turn_in_flight():
        text = _scrape(port)
        assert _value(text, "novaberg_grpc_server_in_flight_calls", label) == 1.0
        turns = re.search(r"^novaberg_pipeline_turns_in_flight(\{[^}]*\})? (\S+)$", text, re.M)
        assert turns is not None and float(turns.group(2)) == 1.0
    metrics.IN_FLIGHT.add(-1, probe)
    text = _scrape(port)
    assert _value(text, "novaberg_grpc_server_in_flight_calls", label) == 0.0
    assert "# TYPE novaberg_grpc_server_in_flight_calls gauge" in text
