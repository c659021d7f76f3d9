"""One turn is one trace (SPEC §7, issue 5): pipeline → KZG / LZG hops carry the trace context,
every hop's server span has the turn, and the pipeline_log rows of the turn carry the trace id.

The five services run in this process (real servers on free ports, real stores) so that one
in-memory span exporter sees the spans of all of them; each writes its pipeline log through the
real log service. A ``chat.turn`` span stands for the caller (the chat front end) of the turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from novaberg.common.v1 import common_pb2
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg_core.config import CommonConfig
from novaberg_core.embedding import EmbeddingProvider, make_provider
from novaberg_core.pipeline_log import GrpcLogSink, PipelineLog
from novaberg_core.server import RunningServer, insecure_channel
from novaberg_core.telemetry import (
    ATTR_CHARACTER_ID,
    ATTR_TURN_ID,
    ATTR_USER_ID,
    install_in_memory_exporter,
    tracer,
)
from services.kzg.config import KzgConfig
from services.kzg.server import create_server as create_kzg_server
from services.log.config import LogConfig
from services.log.server import create_server as create_log_server
from services.lzg.config import LzgConfig
from services.lzg.server import create_server as create_lzg_server
from services.pipeline.config import PipelineConfig
from services.pipeline.server import create_server as create_pipeline_server

PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
TURN = "trace-turn-1"
SERVICES = {
    "pipeline": "novaberg.pipeline.v1.PipelineService",
    "kzg": "novaberg.kzg.v1.KzgService",
    "lzg": "novaberg.lzg.v1.LzgService",
}


@pytest.fixture(scope="module")
def provider() -> EmbeddingProvider:
    return make_provider("minilm")


@dataclass
class InProcessStack:
    log: RunningServer
    servers: list[RunningServer]
    writers: list[PipelineLog]
    pipeline: pipeline_pb2_grpc.PipelineServiceStub
    log_stub: log_pb2_grpc.LogServiceStub

    async def flush_logs(self) -> None:
        for writer in self.writers:
            await writer.flush()


@pytest.fixture
async def stack(pg_url: str, redis_url: str, provider: EmbeddingProvider) -> AsyncIterator[InProcessStack]:
    def local(name: str) -> CommonConfig:
        return CommonConfig(service_name=name, host="127.0.0.1", port=0)

    log = await create_log_server(LogConfig(common=local("log"), postgres_url=pg_url))
    writers = [PipelineLog(GrpcLogSink(log.target), flush_seconds=60.0) for _ in range(3)]
    kzg = await create_kzg_server(
        KzgConfig(common=local("kzg"), redis_url=redis_url), provider=provider, log=writers[0]
    )
    lzg = await create_lzg_server(
        LzgConfig(common=local("lzg"), postgres_url=pg_url), provider=provider, log=writers[1]
    )
    pipeline = await create_pipeline_server(
        PipelineConfig(
            common=local("pipeline"), kzg_addr=kzg.target, lzg_addr=lzg.target, redis_url=redis_url
        ),
        provider=provider,
        log=writers[2],
    )
    channels = [insecure_channel(pipeline.target), insecure_channel(log.target)]
    try:
        yield InProcessStack(
            log=log,
            servers=[pipeline, lzg, kzg],
            writers=writers,
            pipeline=pipeline_pb2_grpc.PipelineServiceStub(channels[0]),
            log_stub=log_pb2_grpc.LogServiceStub(channels[1]),
        )
    finally:
        for channel in channels:
            await channel.close()
        for server in (pipeline, lzg, kzg):
            await server.stop(None)
        for writer in writers:
            await writer.close()
        await log.stop(None)


def _service_of(span: ReadableSpan) -> str | None:
    attributes = span.attributes or {}
    value = attributes.get("rpc.service")
    return str(value) if value is not None else None


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    chain: list[ReadableSpan] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        chain.append(by_id[parent.span_id])
        parent = chain[-1].parent
    return chain


def _server_spans(spans: Sequence[ReadableSpan], service: str) -> list[ReadableSpan]:
    return [s for s in spans if s.kind == SpanKind.SERVER and _service_of(s) == service]


async def test_one_turn_is_one_trace_across_services_and_joins_its_log_rows(stack: InProcessStack) -> None:
    exporter = install_in_memory_exporter()
    exporter.clear()
    with tracer(__name__).start_as_current_span("chat.turn") as root:
        trace_id = root.get_span_context().trace_id
        observed = await stack.pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(
                pair=PAIR, turn_id=TURN, beobachter=common_pb2.BEOBACHTER_USER,
                text="My sister Anna celebrates her birthday on March 12.",
            )
        )  # fmt: skip
        dossier = await stack.pipeline.BuildDossier(
            pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id=TURN, query_text="When is Anna's birthday?")
        )
        await stack.pipeline.Dispatch(
            pipeline_pb2.DispatchRequest(
                pair=PAIR, turn_id=TURN, user_prompt="When is Anna's birthday?",
                answer_text="Anna's birthday is on March 12.", cluster=dossier.cluster,
                served_node_ids=list(dossier.served_node_ids),
            )
        )  # fmt: skip
    assert observed.kzg.kzg_key

    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == trace_id]
    by_id = {s.context.span_id: s for s in spans}
    pipeline_spans = _server_spans(spans, SERVICES["pipeline"])
    kzg_spans = _server_spans(spans, SERVICES["kzg"])
    lzg_spans = _server_spans(spans, SERVICES["lzg"])
    assert {s.name.rsplit("/", 1)[1] for s in pipeline_spans} == {"ObserveTurn", "BuildDossier", "Dispatch"}
    assert kzg_spans and lzg_spans

    # Every pipeline server span carries the turn and the pair (SPEC §7: the turn_id threads through).
    for span in pipeline_spans:
        attributes = span.attributes or {}
        assert (
            attributes.get(ATTR_TURN_ID),
            attributes.get(ATTR_USER_ID),
            attributes.get(ATTR_CHARACTER_ID),
        ) == (TURN, PAIR.user_id, PAIR.character_id)
    # KZG and LZG server spans carry the pair, and the turn wherever the request names it; GetModel
    # (the pipeline's model guard, once per process) names no pair.
    model_checks = [s for s in kzg_spans + lzg_spans if s.name.endswith("/GetModel")]
    assert all(not (s.attributes or {}).get(ATTR_USER_ID) for s in model_checks)
    for span in (s for s in kzg_spans + lzg_spans if s not in model_checks):
        attributes = span.attributes or {}
        assert (attributes.get(ATTR_USER_ID), attributes.get(ATTR_CHARACTER_ID)) == (
            PAIR.user_id,
            PAIR.character_id,
        ), span.name
        assert attributes.get(ATTR_TURN_ID) in (None, TURN), span.name
    turn_tagged = {
        s.name.rsplit("/", 1)[1] for s in kzg_spans + lzg_spans if (s.attributes or {}).get(ATTR_TURN_ID)
    }
    assert {"StoreEntry", "Retrieve", "SpreadingRead", "ReinforceUsed"} <= turn_tagged, turn_tagged
    # Each KZG/LZG hop hangs below a pipeline client span below a pipeline server span below the root:
    # the context crossed the hop, not just the trace id.
    for span in kzg_spans + lzg_spans:
        chain = _ancestors(span, by_id)
        assert chain and chain[0].kind == SpanKind.CLIENT
        assert any(s in pipeline_spans for s in chain), span.name
        assert chain[-1].context.span_id == root.get_span_context().span_id

    # The turn's log rows, written by three services through the log service, carry this trace id.
    await stack.flush_logs()
    trace_hex = trace.format_trace_id(trace_id)
    rows = (await stack.log_stub.Query(log_pb2.QueryRequest(turn_id=TURN, limit=5000))).records
    assert rows and {r.trace_id for r in rows} == {trace_hex}
    by_trace = (await stack.log_stub.Query(log_pb2.QueryRequest(trace_id=trace_hex, limit=5000))).records
    assert [r.id for r in by_trace] == [r.id for r in rows]
    # The rows came from all three services' writers (KZG, LZG, pipeline) and nothing else.
    assert all(writer.sent > 0 for writer in stack.writers), [w.sent for w in stack.writers]
    assert sum(writer.sent for writer in stack.writers) == len(rows)
    nodes = {r.node for r in rows}
    assert {"observe", "salience", "enricher", "dispatcher", "kzg_speicher", "verwendung"} <= nodes, nodes
    assert any(r.art == "turn_roh" for r in rows)
    # syn §10.4: the pipeline's cluster decision (dispatcher.cluster) is what ClusterCounts counts.
    counts = await stack.log_stub.ClusterCounts(log_pb2.ClusterCountsRequest(pair=PAIR))
    assert [(c.cluster, c.count) for c in counts.counts] == [(dossier.cluster, 1)]
    roh = next(r for r in rows if r.art == "turn_roh")
    assert json.loads(roh.inhalt_json)["response"] == "Anna's birthday is on March 12."


async def test_a_log_write_hop_joins_the_callers_trace(stack: InProcessStack) -> None:
    """Two hops of the log path itself: a writer inside a traced call → its rows → Query by trace."""
    exporter = install_in_memory_exporter()
    exporter.clear()
    writer = PipelineLog(GrpcLogSink(stack.log.target), flush_seconds=0.05)
    with tracer(__name__).start_as_current_span("caller") as root:
        await writer.start()  # started inside the caller's trace on purpose
        writer.write(turn_id="log-hop", node="test", art="eingang", inhalt={"text": "hallo"})
        rows: Sequence[log_pb2.LogRecord] = []
        for _ in range(100):  # the background flusher delivers within its interval
            rows = (await stack.log_stub.Query(log_pb2.QueryRequest(turn_id="log-hop"))).records
            if rows:
                break
            await asyncio.sleep(0.05)
    await writer.close()
    trace_id = root.get_span_context().trace_id
    trace_hex = trace.format_trace_id(trace_id)
    assert [(r.turn_id, r.trace_id) for r in rows] == [("log-hop", trace_hex)]
    by_trace = (await stack.log_stub.Query(log_pb2.QueryRequest(trace_id=trace_hex))).records
    assert [r.id for r in by_trace] == [r.id for r in rows]
    spans = exporter.get_finished_spans()
    log_server_spans = _server_spans(spans, "novaberg.log.v1.LogService")
    queries = [s for s in log_server_spans if s.name.endswith("/Query") and s.context.trace_id == trace_id]
    assert queries and all((s.attributes or {}).get(ATTR_TURN_ID) == "log-hop" for s in queries)
    # The flusher's Write calls batch many turns: they never join the trace of whoever started it.
    writes = [s for s in log_server_spans if s.name.endswith("/Write")]
    assert writes and all(s.context.trace_id != trace_id for s in writes)
