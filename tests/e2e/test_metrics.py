"""Every service exports its metrics over Prometheus on a port of its own (issue 16): after a turn the
pipeline's endpoint shows the RPC latency histogram and the dossier's size, the KZG's the promotion
queue gauges; the stack file's ports are the ones serving."""

from __future__ import annotations

import asyncio
import re
import urllib.request

import grpc
import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_dev.stack import SERVICES, Stack
from tests.e2e.helpers import Clients
from tests.polling import eventually

PAIR = common_pb2.Pair(user_id="metrics-meister", character_id="nova")


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return str(response.read().decode())


def _samples(text: str, name: str) -> list[tuple[str, float]]:
    """(labels, value) of every sample of ``name`` (exactly that name, any labels)."""
    found = []
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}(\{{[^}}]*\}})? (\S+)", line)
        if match:
            found.append((match.group(1) or "", float(match.group(2))))
    return found


async def test_a_turn_shows_in_the_pipeline_and_kzg_metrics(stack: Stack, clients: Clients) -> None:
    observe = pipeline_pb2.ObserveTurnRequest(
        pair=PAIR,
        turn_id="metrics-turn-1",
        beobachter=common_pb2.BEOBACHTER_USER,
        text="Meine Schwester Anna hat morgen Geburtstag und ich backe ihr einen Kuchen.",
    )
    await clients.pipeline.ObserveTurn(observe)
    await clients.pipeline.BuildDossier(
        pipeline_pb2.BuildDossierRequest(
            pair=PAIR,
            turn_id="metrics-turn-1",
            query_text="Was backe ich für Anna?",
            readers=["analysis"],
        )
    )

    refused = pipeline_pb2.ObserveTurnRequest(pair=common_pb2.Pair(user_id="", character_id="nova"), text="x")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await clients.pipeline.ObserveTurn(refused)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    # A server records a call once its handler has returned, which its client may see first.
    pipeline = await eventually(
        lambda: asyncio.to_thread(_scrape, stack.metrics_url("pipeline")),
        lambda text: any(
            'rpc_method="ObserveTurn"' in labels and 'rpc_grpc_status_code="3"' in labels
            for labels, _ in _samples(text, "rpc_server_duration_milliseconds_count")
        ),
        within=10.0,
        what="the refused ObserveTurn in the pipeline's metrics",
    )
    observed = [
        labels
        for labels, count in _samples(pipeline, "rpc_server_duration_milliseconds_count")
        if 'rpc_method="ObserveTurn"' in labels and count >= 1
    ]
    assert observed, pipeline[:2000]
    assert 'rpc_service="novaberg.pipeline.v1.PipelineService"' in observed[0]
    assert 'rpc_grpc_status_code="0"' in observed[0] and "service_name" not in observed[0]
    # The mapped domain error counts with its status code (3 = INVALID_ARGUMENT), not as an exception.
    counts = _samples(pipeline, "rpc_server_duration_milliseconds_count")
    assert any(
        'rpc_method="ObserveTurn"' in labels and 'rpc_grpc_status_code="3"' in labels for labels, _ in counts
    )
    buckets = _samples(pipeline, "rpc_server_duration_milliseconds_bucket")
    assert any('rpc_method="BuildDossier"' in labels and 'le="+Inf"' in labels for labels, _ in buckets)
    assert _samples(pipeline, "novaberg_dossier_memories_count") and _samples(
        pipeline, "novaberg_dossier_anchors_count"
    )
    assert _samples(pipeline, "novaberg_pipeline_log_capacity")[0][1] > 0
    assert (
        'service_name="novaberg-pipeline"' in pipeline or 'service_name="pipeline"' in pipeline
    )  # target_info

    kzg = await asyncio.to_thread(_scrape, stack.metrics_url("kzg"))
    for gauge in (
        "novaberg_promotion_queue_length",
        "novaberg_promotion_queue_pending",
        "novaberg_promotion_queue_lag_seconds",
        "novaberg_kzg_entries",
    ):
        assert len(_samples(kzg, gauge)) == 1, gauge
    assert _samples(kzg, "novaberg_kzg_entries")[0][1] >= 1
    stored = [
        labels
        for labels, _ in _samples(kzg, "rpc_server_duration_milliseconds_count")
        if 'rpc_method="StoreEntry"' in labels
    ]
    assert stored, "the pipeline's StoreEntry call is missing from the KZG's histogram"


async def test_every_service_serves_its_own_endpoint(stack: Stack) -> None:
    assert len(set(stack.metrics_ports.values())) == len(SERVICES)
    for service in SERVICES:
        text = await asyncio.to_thread(_scrape, stack.metrics_url(service))
        assert "process_resident_memory_bytes" in text, service
    lzg = await asyncio.to_thread(_scrape, stack.metrics_url("lzg"))
    assert _samples(lzg, "novaberg_lzg_nodes") and _samples(lzg, "novaberg_lzg_edges")
    pixie = await asyncio.to_thread(_scrape, stack.metrics_url("pixie"))
    assert _samples(pixie, "novaberg_pixie_parked_jobs")
