"""Pipeline-log throughput (SPEC §8, syn §10.3): ingest through the real log service, and the
caller-side cost of ``PipelineLog.write()``.

1. Ingest: embedded PostgreSQL in a temp dir, the log service as its own process
   (``python -m services.log``, as in production), and in this process a :class:`PipelineLog`
   with a :class:`GrpcLogSink`. ``--rows`` realistic records (the arts' shapes of syn §10.2, 10
   rows per node run, pairs, span and trace ids) are written into the writer's buffer; then
   (A) the clock runs from the flusher's start until ``close()`` has flushed the last row — the
   production path: buffer → validation → protobuf → gRPC stream → validation → one ``COPY``
   per call into ``log.pipeline_log`` with its seven indexes; the table is counted afterwards.
   (B) the same with writing and flushing at the same time in one process (end to end).
   CPU seconds per row of the writer process, the service process and PostgreSQL are reported.
2. ``write()``: ``--calls`` single calls inside an active OpenTelemetry span (the trace id is
   captured), each timed with ``perf_counter_ns``; no flusher runs meanwhile, so this is the
   pure caller cost; p50/p99/p99.9/max.

    .venv/bin/python bench/log_bench.py [--rows 200000] [--batch 1000] [--batches-per-send 8]

Targets (issue 5): ingest ≥ 20,000 rows/s, write p99 ≤ 50 µs. The last line printed is one
JSON object with ``ingest_rows_per_s`` and ``write_p99_us``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import psutil

from bench.processes import cpu_seconds
from novaberg_core.pipeline_log import GrpcLogSink, InMemorySink, PipelineLog
from novaberg_core.server import wait_for_serving
from novaberg_core.telemetry import setup_telemetry, tracer
from novaberg_dev.embedded import create_database, start_stores, stop_stores
from novaberg_dev.embedded.state import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]
HEALTH_NAME = "novaberg.log.v1.LogService"


def write_span(plog: PipelineLog, i: int) -> int:
    """One node run as the pipeline logs it: 10 rows with one span_id (syn §10.2). Returns rows written."""
    turn_id = f"humangraph-2026-11-29T18:32-{i // 4:08d}"
    pair = {"user_id": f"meister-{i % 20}", "character_id": "nova"}
    span_id = _span_id(i)
    common: dict[str, Any] = {"turn_id": turn_id, "span_id": span_id, **pair}
    plog.write(node="salience", art="span_start", inhalt=None, **common)
    plog.write(
        node="salience", art="eingang", inhalt={"text": "Anna hat morgen Geburtstag, hilf mir"}, **common
    )
    plog.write(
        node="salience",
        art="prompt",
        inhalt={"system": "Du bist …" * 8, "user": "Anna …", "modell": "gemma4-gpu"},
        **common,
    )
    plog.token(
        node="salience",
        modell="deepseek/…",
        input_tokens=1689,
        output_tokens=185,
        kosten_usd=0.00010291,
        **common,
    )
    plog.write(
        node="salience",
        art="berechnung",
        inhalt={
            "intentionen": ["information_teilen", "planung"],
            "dimension": "interessen",
            "score": 0.73,
        },
        **common,
    )
    plog.decision(
        node="gv",
        entscheidung="gv.cluster",
        ausgang="naehe",
        eingang={"arousal": 0.4, "modus": "warm"},
        massstab={"schwelle": 0.55},
        **common,
    )
    plog.db_read(node="kzg", tabelle="kzg", treffer=3, **common)
    plog.db_write(node="kzg", tabelle="kzg", operation="insert", kzg_key=f"kzg:meister:nova:{i}", **common)
    plog.write(
        node="responder",
        art="ausgabe",
        inhalt={"text": "Glückwunsch zu Annas Geburtstag!"},
        quelle="nova",
        **common,
    )
    plog.write(node="salience", art="span_end", inhalt={"status": "ok"}, **common)
    return 10


def _span_id(i: int) -> str:
    """A deterministic UUID v4 per node run."""
    return str(uuid.UUID(int=(i * 2654435761) % (1 << 122) | (4 << 76) | (1 << 63)))


def _start_service(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "services.log"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _postmaster_pid(data_dir: str) -> int:
    state = json.loads((Path(data_dir) / "stores.json").read_text())
    return int(state["postgres"]["pid"])


async def _fill(plog: PipelineLog, rows: int) -> int:
    turn_tracer = tracer("log-bench")
    written = i = 0
    while written < rows:
        with turn_tracer.start_as_current_span("turn"):  # rows carry a trace id, as in the services
            written += write_span(plog, i)
        i += 1
        if i % 50 == 0:
            await asyncio.sleep(0)  # a pipeline awaits between steps; a running flusher gets its turn
    return written


async def _count_and_truncate(pg_url: str) -> int:
    conn = await asyncpg.connect(pg_url)
    try:
        count = int(await conn.fetchval("SELECT count(*) FROM log.pipeline_log"))
        await conn.execute("TRUNCATE log.pipeline_log")
        await conn.execute("VACUUM ANALYZE log.pipeline_log")
        return count
    finally:
        await conn.close()


def _check(plog: PipelineLog, in_table: int, written: int) -> None:
    if in_table != written or plog.dropped or plog.rejected or plog.lost:
        raise SystemExit(
            f"ingest lost rows: table {in_table}, written {written}, dropped {plog.dropped}, "
            f"rejected {plog.rejected}, lost {plog.lost}"
        )


async def bench_ingest(
    pg_url: str, data_dir: str, rows: int, batch: int, batches_per_send: int
) -> dict[str, float]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "NOVABERG_POSTGRES_URL": pg_url,
            "NOVABERG_LOG_HOST": "127.0.0.1",
            "NOVABERG_LOG_PORT": str(port),
            "NOVABERG_LOG_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "NOVABERG_TLS_MODE": "plaintext",  # numbers comparable with the earlier runs
        }
    )
    log_path = Path(data_dir) / "log-service.log"
    service = _start_service(env, log_path)
    try:
        target = f"127.0.0.1:{port}"
        try:
            await wait_for_serving(target, HEALTH_NAME, timeout=60.0)
        except Exception:
            print(log_path.read_text(errors="replace")[-4000:], file=sys.stderr)
            raise

        def writer() -> PipelineLog:
            return PipelineLog(
                GrpcLogSink(target, batch_size=batch),
                flush_seconds=10.0,
                batch_size=batch,
                batches_per_send=batches_per_send,
                max_buffer=rows + 10_000,
                close_timeout_seconds=120.0,
            )

        # Warm-up: connections, the COPY path, first pages.
        warm = writer()
        await _fill(warm, 5000)
        await warm.close()
        await _count_and_truncate(pg_url)

        # A. Ingest: the writer's buffer holds `rows` records; the clock runs from the flusher's
        #    start until the last row is committed (writer side conversion included).
        plog = writer()
        written = await _fill(plog, rows)
        # the client, the log service, PostgreSQL with its backends
        pids = {"bench client": psutil.Process().pid, "log": service.pid, "postgres": _postmaster_pid(data_dir)}
        cpu_before = cpu_seconds(pids)
        started = time.perf_counter()
        await plog.start()
        await plog.close()
        ingest_s = time.perf_counter() - started
        cpu_after = cpu_seconds(pids)
        cpu = tuple(cpu_after[name] - cpu_before[name] for name in ("bench client", "log", "postgres"))
        _check(plog, await _count_and_truncate(pg_url), written)

        # B. End to end: writing and flushing at the same time in one process (flush every batch).
        plog = writer()
        await plog.start()
        started = time.perf_counter()
        written_b = await _fill(plog, rows)
        await plog.close()
        e2e_s = time.perf_counter() - started
        _check(plog, await _count_and_truncate(pg_url), written_b)
        return {
            "rows": written,
            "ingest_seconds": ingest_s,
            "rows_per_s": written / ingest_s,
            "cpu_writer_us_per_row": cpu[0] / written * 1e6,
            "cpu_service_us_per_row": cpu[1] / written * 1e6,
            "cpu_postgres_us_per_row": cpu[2] / written * 1e6,
            "e2e_seconds": e2e_s,
            "e2e_rows_per_s": written_b / e2e_s,
        }
    finally:
        service.terminate()
        try:
            service.wait(timeout=15)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()


def bench_write(calls: int) -> dict[str, float]:
    """Caller-side cost of ``write()`` (and the helpers it stands for), inside a traced span."""
    setup_telemetry("log-bench", "none")
    plog = PipelineLog(InMemorySink(), max_buffer=calls + 1)
    timings: list[int] = []
    inhalt_pool = [{"text": f"Anna hat Geburtstag {i}"} for i in range(100)]
    gc.collect()
    with tracer(__name__).start_as_current_span("turn"):
        clock = time.perf_counter_ns
        for i in range(calls):
            t0 = clock()
            plog.write(
                turn_id="humangraph-2026-11-29T18:32-0001",
                node="salience",
                art="berechnung",
                inhalt=inhalt_pool[i % 100],
                span_id="f47ac10b-58cc-4372-a567-0e02b2c3d479",
                user_id="meister",
                character_id="nova",
            )
            timings.append(clock() - t0)
    assert plog.buffered == calls and plog._forensic[0].trace_id is not None
    timings.sort()

    def pct(p: float) -> float:
        return timings[min(len(timings) - 1, int(len(timings) * p))] / 1000.0

    return {
        "calls": calls,
        "p50_us": pct(0.50),
        "p99_us": pct(0.99),
        "p999_us": pct(0.999),
        "max_us": timings[-1] / 1000.0,
        "mean_us": statistics.fmean(timings) / 1000.0,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    setup_telemetry("log-bench", "none")
    data_dir = tempfile.mkdtemp(prefix="log-bench-stores-")
    urls = start_stores(data_dir, ephemeral=True)
    try:
        pg_url = create_database(urls.postgres_url, "log_bench")
        ingest = await bench_ingest(pg_url, data_dir, args.rows, args.batch, args.batches_per_send)
    finally:
        stop_stores(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
    write = bench_write(args.calls)
    return {"ingest": ingest, "write": write}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows to ingest (default 200000)")
    parser.add_argument(
        "--batch", type=int, default=1000, help="records per WriteBatch message (default 1000)"
    )
    parser.add_argument("--batches-per-send", type=int, default=8, help="WriteBatch messages per Write call")
    parser.add_argument("--calls", type=int, default=200_000, help="timed write() calls (default 200000)")
    args = parser.parse_args()
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    result = asyncio.run(main_async(args))
    ingest, write = result["ingest"], result["write"]
    print(
        f"cores: {os.cpu_count()}, load average before: {load_before}, batch {args.batch} × "
        f"{args.batches_per_send} per Write call"
    )
    print()
    print("| measurement | value | target |")
    print("|---|---|---|")
    print(
        f"| A. ingest, writer buffer → gRPC → validation → COPY (7 indexes) | {ingest['rows']:,} rows in "
        f"{ingest['ingest_seconds']:.2f} s = **{ingest['rows_per_s']:,.0f} rows/s** | ≥ 20,000 rows/s |"
    )
    print(
        f"| A. CPU per row: writer / log service / PostgreSQL | {ingest['cpu_writer_us_per_row']:.1f} / "
        f"{ingest['cpu_service_us_per_row']:.1f} / {ingest['cpu_postgres_us_per_row']:.1f} µs | |"
    )
    print(
        f"| B. end to end, writing and flushing in one process | {ingest['e2e_seconds']:.2f} s = "
        f"{ingest['e2e_rows_per_s']:,.0f} rows/s | |"
    )
    print(f"| write() p50 | {write['p50_us']:.2f} µs | |")
    print(f"| write() p99 | **{write['p99_us']:.2f} µs** | ≤ 50 µs |")
    print(f"| write() p99.9 / max | {write['p999_us']:.2f} / {write['max_us']:.1f} µs | |")
    print(
        json.dumps(
            {"ingest_rows_per_s": round(ingest["rows_per_s"]), "write_p99_us": round(write["p99_us"], 2)}
        )
    )


if __name__ == "__main__":
    main()
