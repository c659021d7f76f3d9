"""An idle Pixie leaves no traces (issue 16): its poll for promotion jobs (about one a second in
production) is traced on neither side; work a poll finds is one root span with the calls below it."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace import ReadableSpan

from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg_core.telemetry import install_in_memory_exporter
from tests.polling import eventually
from tests.service.pixie.conftest import PixieCluster, nodes_of, store_entry

POLL = "/novaberg.kzg.v1.KzgService/ReadPromotionJobs"
BATCH = "pixie synapsen_promotion batch"


LOG_WRITE = "/novaberg.log.v1.LogService/Write"


def _roots(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """Root spans, leaving out pipeline-log flushes: other writers in this test process (earlier
    tests' services) flush rows on their own schedule, and that is work, not an idle poll."""
    return [s for s in spans if s.parent is None and s.name != LOG_WRITE]


async def test_idle_polls_make_no_spans_and_found_work_one_root(
    cluster: PixieCluster, kzg: kzg_pb2_grpc.KzgServiceStub, lzg: lzg_pb2_grpc.LzgServiceStub
) -> None:
    exporter = install_in_memory_exporter()
    a = await cluster.start("pixie-a", background=True)  # block_ms 50: ~20 polls a second
    await asyncio.sleep(1.5)
    exporter.clear()
    await asyncio.sleep(1.5)  # idle: dozens of polls
    idle = list(exporter.get_finished_spans())
    assert [s.name for s in idle if s.name == POLL] == []
    assert _roots(idle) == [], [s.name for s in _roots(idle)]

    entry = await store_entry(kzg, "Meister hat heute seinen ersten Marathon gelaufen.", salienz=0.9)
    await eventually(lambda: nodes_of(lzg), lambda nodes: len(nodes) == 1, what="the promoted node")
    await asyncio.sleep(0.3)  # the batch span ends after the ack
    spans = list(exporter.get_finished_spans())
    assert POLL not in {s.name for s in spans}
    batches = [s for s in spans if s.name == BATCH]
    assert len(batches) == 1 and batches[0].parent is None and (batches[0].attributes or {}).get("novaberg.jobs") == 1
    children = {
        s.name for s in spans if s.parent is not None and s.context.trace_id == batches[0].context.trace_id
    }
    assert {
        "/novaberg.kzg.v1.KzgService/GetEntry",
        "/novaberg.lzg.v1.LzgService/Promote",
        "/novaberg.kzg.v1.KzgService/AckPromotionJobs",
    } <= children
    # Only the test's own calls and the batch start traces; no poll anywhere.
    own = {"/novaberg.kzg.v1.KzgService/StoreEntry", "/novaberg.lzg.v1.LzgService/ListNodes"}
    assert {s.name for s in _roots(spans)} <= {BATCH, *own}
    assert entry.queued_for_promotion
    await cluster.stop(a)
