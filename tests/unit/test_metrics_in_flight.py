"""The in-flight gauges (the chart's HPA targets) and the store samplers, as a collection reads them."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint, Sum

from novaberg_core import metrics


def _points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[tuple[tuple[str, Any], ...], float] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    assert isinstance(point, NumberDataPoint) and point.attributes is not None
                    points[tuple(sorted(point.attributes.items()))] = point.value
    return points


def test_a_live_count_shows_the_calls_in_flight_at_the_collection() -> None:
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    calls = metrics.LiveCount("test.in_flight", "{call}", "calls now", meter=meter)
    service = {"rpc.service": "novaberg.test.v1.Probe"}
    calls.add(1, service)
    calls.add(1, service)
    calls.add(1)
    calls.add(-1, service)
    assert _points(reader, "test.in_flight") == {(("rpc.service", "novaberg.test.v1.Probe"),): 1, (): 1}
    calls.add(-1, service)
    calls.add(-1)
    assert _points(reader, "test.in_flight") == {(("rpc.service", "novaberg.test.v1.Probe"),): 0, (): 0}
    data = reader.get_metrics_data()
    assert data is not None
    (metric,) = [m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics]
    assert isinstance(metric.data, Sum) and not metric.data.is_monotonic  # exported as a gauge


def test_a_sampler_whose_loop_has_stopped_answers_with_its_last_values_at_once() -> None:
    # A scrape used to queue a read on the stopped loop and wait wait_s for it, per such sampler
    # (seen: this file's scrape timing out after the service tests had left their samplers).
    reads = []

    async def read() -> dict[str, float]:
        reads.append(1)
        return {"entries": 7.0}

    async def make() -> metrics.StoreSampler:
        sampler = metrics.StoreSampler(read, min_interval_s=0.0, wait_s=30.0)
        await sampler._refresh()  # the values a scrape saw while the service ran
        return sampler

    loop = asyncio.new_event_loop()
    try:
        sampler = loop.run_until_complete(make())
        assert reads == [1]
        assert sampler.values() == {"entries": 7.0}  # the loop no longer runs: nothing queued, no wait
        loop.run_until_complete(asyncio.sleep(0.01))
        assert reads == [1]
    finally:
        sampler.close()
        loop.close()
