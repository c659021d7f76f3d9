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
tables), ``bench/locomo_evidence.py`` (the diagnostics); this module runs the stack and asks the questions.

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
import math
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import numpy as np

from bench.embedding_quality import ANAPHORIC_QUESTIONS, OFF_TOPIC_QUESTIONS
from bench.locomo_evidence import RPC_TIMEOUT_S, Matrix, PairNodes, evidence_location, kzg_alive, pair_nodes
from bench.locomo_import import (
    IMPORT_FILE,
    ImportResult,
    PromotionResult,
    import_turns,
    load_import,
    save_import,
    wait_for_promotion,
)
from bench.locomo_scores import (
    CURVE_K,
    KS,
    Question,
    Score,
    by_conversation,
    conversation_table,
    scores_by_group,
    table,
)
from bench.locomo_turns import (
    REPO_ROOT,
    Conversation,
    bm25_rankings,
    default_data,
    dense_rankings,
    load_conversations,
)
from bench.processes import machine_pace, percentile, stack_pids
from novaberg.kzg.v1 import kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2_grpc
from novaberg_core.embedding import lzg_embed_text, make_provider, profile_for, query_embed_text
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli import STACK_FILE, write_stack_file
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.stack import Stack, start_stack

RESULTS = REPO_ROOT / "bench" / "results"
VARIANTS = ("dossier", "dense", "dense-bare", "bm25")
PROBES: tuple[tuple[str, str], ...] = (
    *(("off-topic", q) for q in OFF_TOPIC_QUESTIONS),
    *(("anaphoric", q) for q in ANAPHORIC_QUESTIONS),
)


# --------------------------------------------------------------------------- the one mapping


@dataclass(frozen=True)
class DossierRanking:
    """What a dossier returned, as a ranked list of distinct turn ids."""

    turn_ids: tuple[str, ...]
    source: str
    """``recall`` (the SPEC §11 list) or ``fallback`` (LZG memories by rank, then KZG hits by score)."""
    items: int
    """Memories in the response (recall items, or LZG memories + KZG hits)."""
    unmapped: int
    """Items that named no known turn."""


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


@dataclass
class Asked:
    """One dossier: the question's ranking and what the response held."""

    ranking: DossierRanking
    wall_ms: float
    anchors: int
    lzg_ids: list[int]
    kzg_turns: list[str]
    missing_parts: int = 0
    """Parts the dossier went without (``BuildDossierResponse.fehler``): a layer out or too late."""


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


# --------------------------------------------------------------------------- output


def json_value(value: Any, digits: int) -> Any:
    """Floats rounded, NaN (a category without questions) as null, dicts and lists element-wise."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, digits)
    if isinstance(value, dict):
        return {k: json_value(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [json_value(v, digits) for v in value]
    return value


def plot(scores: Mapping[str, Mapping[str, Score]], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    ks = list(range(1, CURVE_K + 1))
    for ax, group, name in ((axes[0], "1-4", "categories 1-4"), (axes[1], "multi-hop", "multi-hop")):
        for variant, groups in scores.items():
            ax.plot(ks, groups[group].curve, label=variant)
        ax.set_title(f"{name} (n = {next(iter(scores.values()))[group].n})")
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fractional evidence recall@k (%)")
    axes[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- main


@dataclass
class Measured:
    """Everything one run measured, before it is reported."""

    conversations: list[Conversation]
    model_id: str
    imported: ImportResult
    promotion: PromotionResult
    nodes: dict[str, PairNodes]
    alive: set[str]
    asked: dict[tuple[str, int], Asked]
    probes: list[tuple[str, Asked]]
    questions: list[Question]
    rankings: dict[str, list[list[str]]]
    location_lines: list[str]
    location: dict[str, float]


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
                kzg, conv.pair, [turn_key[t.turn_id] for t in conv.turns if t.turn_id in turn_key]
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


def report(args: argparse.Namespace, m: Measured) -> dict[str, Any]:
    """Prints the table and the diagnostics, writes the plot; returns the JSON summary."""
    data_name = Path(args.data).name
    scores = {variant: scores_by_group(m.rankings[variant], m.questions) for variant in VARIANTS}
    all_asked = list(m.asked.values())
    sources = Counter(a.ranking.source for a in all_asked)
    unmapped = sum(a.ranking.unmapped for a in all_asked)
    items = [float(a.ranking.items) for a in all_asked]
    walls = [a.wall_ms for a in all_asked]
    # Any LZG anchor or any recall item: the seeds' rule says neither may appear for these probes.
    probe_hit = [
        (kind, a.anchors > 0 or (a.ranking.source == "recall" and a.ranking.items > 0))
        for kind, a in m.probes
    ]
    offtopic_rate = statistics.fmean(hit for _, hit in probe_hit)
    by_kind = {
        kind: 100 * statistics.fmean(h for k, h in probe_hit if k == kind)
        for kind in ("off-topic", "anaphoric")
    }
    probe_kzg = 100 * statistics.fmean(bool(a.kzg_turns) for _, a in m.probes)
    excluded = sum(c.excluded for c in m.conversations)
    nodes_total = sum(len(n.active_ids) for n in m.nodes.values())
    imp, promo = m.imported, m.promotion
    tiers = ", ".join(f"{t} {imp.tiers[t]}" for t in ("high", "mid", "minimum", "rejected") if imp.tiers[t])

    print(
        f"\nLoCoMo retrieval through the services: {data_name}, {len(m.conversations)} conversations "
        f"({', '.join(c.sample_id for c in m.conversations)}), model {m.model_id}"
    )
    print(
        f"import: {imp.turns} turns in {imp.seconds:.1f} s ({imp.turns / imp.seconds:.1f} turns/s); "
        f"KZG {tiers}; "
        f"{imp.queued} queued for promotion"
    )
    print("CPU s during import: " + ", ".join(f"{name} {s:.1f}" for name, s in imp.cpu_s.items()))
    print(
        f"Pixie settled {promo.seconds:.1f} s after the import "
        f"({'drained' if promo.drained else 'NOT DRAINED'}); "
        f"{promo.runs} promotion runs: "
        + ", ".join(f"{k} {v}" for k, v in sorted(promo.counts.items()) if v)
        + f"; parked {promo.parked}; LZG active nodes {nodes_total}, KZG entries left {len(m.alive)}"
    )
    print(
        f"{len(m.questions)} questions asked at as_of = last session + 1 day (recall_k {args.recall_k}); "
        f"{excluded} excluded (no evidence id naming an imported turn)"
    )
    print(
        f"dossier mapping: {', '.join(f'{k} {v}' for k, v in sources.items())} "
        f"(fallback = LZG memories by rank, then KZG hits by score); unmapped items: {unmapped}"
    )
    print(
        f"memories per dossier: mean {statistics.fmean(items):.2f}, p50 {percentile(items, 50):.0f}; "
        f"BuildDossier wall p50 {percentile(walls, 50):.1f} ms, p95 {percentile(walls, 95):.1f} ms"
    )
    print(
        f"off-topic/anaphoric probes ({len(m.probes)} = {len(PROBES)} × {len(m.conversations)} pairs) "
        f"with any LZG anchor or recall item: {100 * offtopic_rate:.1f} % "
        f"(off-topic {by_kind['off-topic']:.1f} %, anaphoric "
        f"{by_kind['anaphoric']:.1f} %); with any KZG hit {probe_kzg:.1f} %"
    )
    print()
    for line in table(scores):
        print(line)
    print("(published reference, DRAGON, all categories, 10 conversations: R@5 56.7, R@10 66.2, R@25 76.7)")
    per_conversation = by_conversation(m.rankings, m.questions)
    if len(per_conversation) > 1:
        print()
        for line in conversation_table(per_conversation):
            print(line)
    print()
    for line in m.location_lines:
        print(line)
    plot_path = plot(
        scores,
        args.plot or RESULTS / f"locomo_{Path(args.data).stem}_{args.model}.png",
        f"LoCoMo {Path(args.data).stem}, {m.model_id}, {len(m.conversations)} conversations",
    )
    print(f"\nplot: {plot_path}")

    head = {v: s["1-4"] for v, s in scores.items()}
    result: dict[str, Any] = {
        "dossier_r10": head["dossier"].recall[10],
        "dense_r10": head["dense"].recall[10],
        "dense_bare_r10": head["dense-bare"].recall[10],
        "bm25_r10": head["bm25"].recall[10],
        "multihop_r10": scores["dossier"]["multi-hop"].recall[10],
        "multihop_all10": scores["dossier"]["multi-hop"].all10,
        "temporal_r10": scores["dossier"]["temporal"].recall[10],
        "offtopic_anchor_rate": offtopic_rate,
        "dossier_p50_ms": percentile(walls, 50),
        "dossier_p95_ms": percentile(walls, 95),
        "import_turns_per_s": imp.turns / imp.seconds,
        "memories_mean": statistics.fmean(items),
        "memories_p50": percentile(items, 50),
        "mapping": "recall" if sources.get("recall") else "fallback",
        "unmapped_items": unmapped,
        "dossiers_without_a_layer": sum(1 for a in all_asked if a.missing_parts),
        "questions": len(m.questions),
        "questions_headline": head["dossier"].n,
        "questions_excluded": excluded,
        "conversations": [c.sample_id for c in m.conversations],
        "model": m.model_id,
        "promotion_drained": promo.drained,
        "lzg_nodes": nodes_total,
        "kzg_entries": len(m.alive),
    }
    for variant, groups in scores.items():
        key = variant.replace("-", "_")
        for k in KS:
            result[f"{key}_r{k}"] = groups["1-4"].recall[k]
        result[f"{key}_all10"] = groups["1-4"].all10
        result[f"{key}_r10_by_category"] = {g: s.recall[10] for g, s in groups.items() if g != "1-4"}
    result["dossier_r10_by_conversation"] = {
        sample: variants["dossier"]["1-4"].recall[10] for sample, variants in per_conversation.items()
    }
    result["multihop_r10_by_conversation"] = {
        sample: variants["dossier"]["multi-hop"].recall[10] for sample, variants in per_conversation.items()
    }
    result.update(m.location)
    return {k: json_value(v, 3 if k.endswith("rate") else 2) for k, v in result.items()}


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
