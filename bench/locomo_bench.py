"""LoCoMo retrieval through the running services: the dossier against dense and BM25 (SPEC §7, §11).

Run as a user would (every conversation of the file its own pair):

1. Embedded stores and all five services (``novaberg_dev.stack``), one embedding model everywhere
   (``--model``, default ``minilm``, passed as ``NOVABERG_EMBEDDING``).
2. Import: every turn in session order with its session's date (``parse_locomo`` of the CLI: turn id
   ``{sample_id}:{dia_id}``, image captions appended as the import does) through
   ``PipelineService/ObserveTurn`` without an analysis, so the pipeline's analyzer runs (as
   ``novaberg import``). Pixie promotes meanwhile; afterwards the bench waits (bounded) until the
   promotion queue is empty, nothing is pending and Pixie's promotion runs have ended.
3. Every question (categories 1-5) through ``PipelineService/BuildDossier`` at ``as_of`` = one day after
   the pair's last session. The response becomes a ranked list of turn ids by one function,
   :func:`dossier_turn_ids`: the ``recall`` list (SPEC §11) when the service fills it, else today's
   dossier (LZG memories by rank, then KZG hits by score).
4. Baselines on the same turns (the texts exactly as imported), same model: dense top-k over
   ``"{speaker}: {text}"`` and over the bare text (cosine, the services' provider class), and BM25
   (``bm25s``, English stopwords, Snowball stemming).

Metrics as LoCoMo's authors compute them (Maharana et al. 2024, Table 3): fractional evidence recall@k
(share of a question's evidence turns in the top k, averaged over questions) for k = 5, 10, 25, all@10
(every evidence turn in the top 10), per category and over categories 1-4 (the headline). Evidence ids
are parsed leniently (data README: ``D:?(\\d+):(\\d+)``, leading zeros dropped, ids naming no imported
turn dropped); questions left without evidence are excluded and counted. Also: memories returned per
question, client-side BuildDossier latency, import throughput, and ``offtopic_anchor_rate`` — the share
of off-topic and anaphoric probes (from ``bench/embedding_quality.py``, asked against every pair) that got
any LZG anchor or any recall item (the seeds' rule: they must get none, SPEC §11). A diagnostic section
shows where the evidence lies after import + promotion (LZG node, KZG entry, not stored), at which rank
by plain cosine among the pair's nodes an evidence node sits, and how often KZG hits are evidence.

The parts: ``bench/locomo_turns.py`` (the conversations as imported, the dense and BM25 baselines),
``bench/locomo_import.py`` (the import and the wait for Pixie), ``bench/locomo_scores.py`` (the metrics and
tables), ``bench/locomo_evidence.py`` (the diagnostics), ``bench/locomo_report.py`` (what a run measured, the
printed report, the plot and the JSON summary); this module runs the stack and asks the questions.

    .venv/bin/python bench/locomo_bench.py [--data FILE] [--sample conv-26 ...] [--model minilm]
        [--limit-questions N] [--data-dir DIR] [--keep]

Prints a table, writes a recall@k plot (k = 1..25) under ``bench/results/``, and as the last line one
JSON object (recall values in percent, rates as fractions), with the machine's pace measured after the
questions (``pace_python_loop_s``, ``pace_round_trip_us``, ``bench.processes.machine_pace``): the
dossier's latency is comparable only between runs at a similar pace.
"""

from __future__ import annotations

import os

# One BLAS thread in this process too (it embeds the baselines), as the services do.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import grpc
import grpc.aio
import numpy as np

from bench.locomo_evidence import Matrix, evidence_location, kzg_alive, pair_nodes
from bench.locomo_import import (
    IMPORT_FILE,
    RPC_TIMEOUT_S,
    import_turns,
    load_import,
    save_import,
    wait_for_promotion,
)
from bench.locomo_report import PROBES, VARIANTS, Measured, report
from bench.locomo_scores import CURVE_K, Asked, DossierRanking, Question
from bench.locomo_turns import Conversation, bm25_rankings, default_data, dense_rankings, load_conversations
from bench.processes import machine_pace, stack_pids
from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.embedding import lzg_embed_text, make_provider, profile_for, query_embed_text
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli import STACK_FILE, write_stack_file
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import Stack, start_stack

# --------------------------------------------------------------------------- the one mapping


def dossier_turn_ids(
    response: pipeline_pb2.BuildDossierResponse, node_keys: Mapping[int, str], key_turns: Mapping[str, str]
) -> DossierRanking:
    """The dossier as turn ids, best first: ``recall`` when filled, else LZG memories then KZG hits.

    ``node_keys``: LZG node id → ``kzg_quell_key``; ``key_turns``: KZG key → turn id (from ObserveTurn).
    """

    def by_key(key: str) -> str:
        return key_turns.get(key, "") if key else ""

    def by_node(node_id: int) -> str:
        return by_key(node_keys.get(node_id, "")) if node_id else ""

    if response.recall:
        source = "recall"
        candidates = [
            item.turn_id or by_key(item.kzg_key) or by_node(item.knoten_id) for item in response.recall
        ]
    else:
        source = "fallback"
        memories = sorted(response.lzg_resonanz.erinnerungen, key=lambda e: e.rang)
        hits = sorted(response.kzg_hits, key=lambda h: -h.score)
        candidates = [by_node(m.knoten_id) for m in memories]
        candidates += [h.hit.entry.turn_id or by_key(h.hit.entry.kzg_key) for h in hits]
    return DossierRanking(
        turn_ids=tuple(dict.fromkeys(t for t in candidates if t)),
        source=source,
        items=len(candidates),
        unmapped=sum(1 for t in candidates if not t),
    )


# --------------------------------------------------------------------------- the run


async def ask(
    pipeline: pipeline_pb2_grpc.PipelineServiceStub,
    conv: Conversation,
    turn_id: str,
    text: str,
    recall_k: int,
    node_keys: Mapping[int, str],
    key_turns: Mapping[str, str],
) -> Asked:
    """One BuildDossier at the conversation's ``as_of``, timed as the client sees it."""
    request = pipeline_pb2.BuildDossierRequest(
        pair=conv.pair,
        turn_id=turn_id,
        query_text=text,
        user_name=conv.speakers[0],
        character_name=conv.speakers[1],
        recall_k=recall_k,
        as_of=to_timestamp(conv.as_of),
    )
    t0 = time.perf_counter()
    response = await pipeline.BuildDossier(request, timeout=RPC_TIMEOUT_S)
    wall_ms = (time.perf_counter() - t0) * 1000.0
    return Asked(
        ranking=dossier_turn_ids(response, node_keys, key_turns),
        wall_ms=wall_ms,
        anchors=response.lzg_resonanz.anker_anzahl,
        lzg_ids=[m.knoten_id for m in sorted(response.lzg_resonanz.erinnerungen, key=lambda e: e.rang)],
        kzg_turns=[h.hit.entry.turn_id or key_turns.get(h.hit.entry.kzg_key, "") for h in response.kzg_hits],
        missing_parts=len(response.fehler),
    )


# --------------------------------------------------------------------------- main


async def measure(args: argparse.Namespace, stack: Stack, conversations: list[Conversation]) -> Measured:
    """Import, promotion, the dossiers, the probes, the baselines and the evidence diagnostics."""
    provider = make_provider(args.model)
    profile = profile_for(provider.model_id)
    async with contextlib.AsyncExitStack() as channels:
        channel = {
            s: await channels.enter_async_context(grpc.aio.insecure_channel(stack.addresses[s]))
            for s in ("pipeline", "kzg", "lzg", "pixie")
        }
        pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel["pipeline"])
        kzg = kzg_pb2_grpc.KzgServiceStub(channel["kzg"])
        lzg = lzg_pb2_grpc.LzgServiceStub(channel["lzg"])
        pixie = pixie_pb2_grpc.PixieServiceStub(channel["pixie"])

        saved = stack.data_dir / IMPORT_FILE
        if args.reuse is not None and saved.exists():
            imported, promotion = load_import(saved)
            print(f"  reusing the import in {saved} ({imported.turns} turns)", file=sys.stderr, flush=True)
        else:
            imported = await import_turns(pipeline, conversations, stack_pids(stack, stack.data_dir / "stores"))
            print(
                f"  import done: {imported.turns} turns in {imported.seconds:.1f} s; waiting for Pixie",
                file=sys.stderr,
                flush=True,
            )
            promotion = await wait_for_promotion(kzg, pixie, args.promotion_timeout)
            if args.reuse is not None:
                save_import(saved, imported, promotion)
        nodes = {c.sample_id: await pair_nodes(lzg, c.pair) for c in conversations}
        print(
            f"  promotion settled after {promotion.seconds:.1f} s; asking the questions",
            file=sys.stderr,
            flush=True,
        )

        asked: dict[tuple[str, int], Asked] = {}
        probes: list[tuple[str, Asked]] = []
        for conv in conversations:
            node_keys = nodes[conv.sample_id].keys
            for q in conv.questions:
                asked[(conv.sample_id, q.number)] = await ask(
                    pipeline,
                    conv,
                    f"locomo-q:{conv.sample_id}:{q.number}",
                    q.text,
                    args.recall_k,
                    node_keys,
                    imported.key_turns,
                )
            for number, (kind, text) in enumerate(PROBES):
                probes.append(
                    (
                        kind,
                        await ask(
                            pipeline,
                            conv,
                            f"locomo-probe:{conv.sample_id}:{number}",
                            text,
                            args.recall_k,
                            node_keys,
                            imported.key_turns,
                        ),
                    )
                )
            print(f"  asked {conv.sample_id}", file=sys.stderr, flush=True)
        alive: set[str] = set()
        turn_key = {turn: key for key, turn in imported.key_turns.items()}
        for conv in conversations:
            alive |= await kzg_alive(
                kzg, conv.pair, [turn_key[t.turn_id] for t in conv.turns if t.turn_id in turn_key], conv.as_of
            )

    # Baselines: same model, same turns as imported, while the services are idle.
    rankings: dict[str, list[list[str]]] = {v: [] for v in VARIANTS}
    questions: list[Question] = []
    query_vectors: dict[str, Matrix] = {}
    for conv in conversations:
        turn_ids = [t.turn_id for t in conv.turns]
        with_speaker = [f"{conv.speaker(t)}: {t.text}" for t in conv.turns]
        bare = [lzg_embed_text(t.text) for t in conv.turns]
        texts = [q.text for q in conv.questions]
        queries = (
            await provider.embed([query_embed_text(t) for t in texts])
            if texts
            else np.zeros((0, 1), np.float32)
        )
        query_vectors[conv.sample_id] = queries
        rankings["dossier"] += [
            list(asked[(conv.sample_id, q.number)].ranking.turn_ids) for q in conv.questions
        ]
        rankings["dense"] += dense_rankings(await provider.embed(with_speaker), queries, turn_ids, CURVE_K)
        rankings["dense-bare"] += dense_rankings(await provider.embed(bare), queries, turn_ids, CURVE_K)
        rankings["bm25"] += bm25_rankings(with_speaker, texts, turn_ids, CURVE_K)
        questions += conv.questions
    location_lines, location = evidence_location(
        conversations, asked, imported, nodes, alive, query_vectors, profile.anchor
    )
    return Measured(
        conversations,
        provider.model_id,
        imported,
        promotion,
        nodes,
        alive,
        asked,
        probes,
        questions,
        rankings,
        location_lines,
        location,
    )


async def run(args: argparse.Namespace, root: Path) -> int:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    conversations = load_conversations(data, samples=args.sample or (), limit_questions=args.limit_questions)
    print(
        f"{Path(args.data).name}: {len(conversations)} conversations, "
        f"{sum(len(c.turns) for c in conversations)} "
        f"turns, {sum(len(c.questions) for c in conversations)} questions",
        file=sys.stderr,
        flush=True,
    )
    # --reuse keeps durable stores between runs, so the read path can be measured again without a new import.
    urls = await asyncio.to_thread(start_stores, root / "stores", ephemeral=args.reuse is None)
    stack: Stack | None = None
    try:
        started = time.perf_counter()
        stack = await start_stack(
            root,
            urls=urls,
            extra_env={
                "NOVABERG_EMBEDDING": args.model,
                "NOVABERG_LOG_LEVEL": "WARNING",
                "OPENBLAS_NUM_THREADS": "1",
            },
            mtls=False,  # the bench's channels are plaintext; its stack file (--keep) says so by having no tls
        )
        print(f"stack up in {time.perf_counter() - started:.1f} s ({root})", file=sys.stderr, flush=True)
        measured = await measure(args, stack, conversations)
        pace = await asyncio.to_thread(machine_pace)
        summary = report(args, measured)
        print(f"after the questions: {pace.line()}")
        summary |= pace.json_fields()
        if args.keep:
            write_stack_file(
                root, stack.addresses, {"postgres_url": urls.postgres_url, "redis_url": urls.redis_url}
            )
            print(
                f"stack kept for inspection (novaberg <command> --data-dir {root}); Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )
        print(json.dumps(summary), flush=True)
        if args.keep:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
    finally:
        with contextlib.suppress(OSError):
            (root / STACK_FILE).unlink()
        if stack is not None:
            await stack.stop()
        await asyncio.to_thread(stop_stores, root / "stores")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=default_data(), help="a LoCoMo-format JSON file")
    parser.add_argument(
        "--sample", action="append", help="one conversation by sample_id (repeatable; default all)"
    )
    parser.add_argument(
        "--model", default="minilm", help="embedding provider of every service and the baselines"
    )
    parser.add_argument(
        "--limit-questions", type=int, default=0, help="first N questions of each conversation"
    )
    parser.add_argument("--data-dir", type=Path, help="where the stores live (default a temporary directory)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the stack serving after the run until Ctrl-C"
    )
    parser.add_argument(
        "--recall-k", type=int, default=CURVE_K, help="recall_k asked of BuildDossier (SPEC §11)"
    )
    parser.add_argument(
        "--promotion-timeout", type=float, default=900.0, help="max seconds to wait for Pixie"
    )
    parser.add_argument("--plot", type=Path, help="where to write the PNG (default under bench/results/)")
    parser.add_argument(
        "--reuse", type=Path,
        help="a directory kept between runs: the first run imports into durable stores there, later runs "
             "reuse that import (same --data/--sample/--model) and measure the read path of the current code",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not Path(args.data).exists():
        print(f"error: no LoCoMo file at {args.data} (use --data)", file=sys.stderr)
        return 2
    if args.reuse is not None:
        args.reuse.mkdir(parents=True, exist_ok=True)
        return asyncio.run(run(args, args.reuse.resolve()))
    if args.data_dir is not None:
        root = args.data_dir.resolve()
        if root.exists() and any(root.iterdir()):
            print(f"error: --data-dir {root} is not empty; the benchmark needs fresh stores", file=sys.stderr)
            return 2
        return asyncio.run(run(args, root))
    with tempfile.TemporaryDirectory(prefix="locomo-bench-") as tmp:
        return asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    sys.exit(main())
