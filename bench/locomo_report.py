"""What one run of ``bench/locomo_bench.py`` measured and how it is reported: the table, the
diagnostics, the recall@k plot under ``bench/results/`` and the JSON summary (its last line)."""

from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.embedding_quality import ANAPHORIC_QUESTIONS, OFF_TOPIC_QUESTIONS
from bench.locomo_evidence import PairNodes
from bench.locomo_import import ImportResult, PromotionResult
from bench.locomo_scores import (
    CURVE_K,
    KS,
    Asked,
    Question,
    Score,
    by_conversation,
    conversation_table,
    scores_by_group,
    table,
)
from bench.locomo_turns import REPO_ROOT, Conversation
from bench.processes import percentile

RESULTS = REPO_ROOT / "bench" / "results"
VARIANTS = ("dossier", "dense", "dense-bare", "bm25")
PROBES: tuple[tuple[str, str], ...] = (
    *(("off-topic", q) for q in OFF_TOPIC_QUESTIONS),
    *(("anaphoric", q) for q in ANAPHORIC_QUESTIONS),
)


# --------------------------------------------------------------------------- what was measured


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
