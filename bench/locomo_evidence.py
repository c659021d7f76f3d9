"""Where the evidence of the LoCoMo questions lies after import and promotion, and how far the dossier
reached it (``bench/locomo_bench.py``'s diagnostics, read-only): in the LZG (with each evidence node's
rank by plain cosine among the pair's active nodes), in the KZG, or not stored at all."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

import grpc
import grpc.aio
import numpy as np
import numpy.typing as npt

from bench.locomo_import import RPC_TIMEOUT_S, ImportResult
from bench.locomo_scores import HEADLINE, Asked
from bench.locomo_turns import Conversation
from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.fusion import is_question
from services.lzg.recall import KONTEXT_FENSTER_S

__all__ = ["Matrix", "PairNodes", "evidence_location", "kzg_alive", "pair_nodes", "share"]

Matrix = npt.NDArray[np.float32]


@dataclass
class PairNodes:
    keys: dict[int, str]
    """Node id → kzg_quell_key (active and inactive)."""
    active_ids: list[int]
    vectors: Matrix
    """Stored embeddings of the active nodes, in ``active_ids`` order."""


async def pair_nodes(lzg: lzg_pb2_grpc.LzgServiceStub, pair: common_pb2.Pair) -> PairNodes:
    listed = await lzg.ListNodes(
        lzg_pb2.ListNodesRequest(pair=pair, limit=100_000, include_inactive=True), timeout=RPC_TIMEOUT_S
    )
    keys = {node.id: node.kzg_quell_key for node in listed.nodes}
    active = sorted(node.id for node in listed.nodes if node.aktiv)
    rows = []
    for node_id in active:
        got = await lzg.GetNode(
            lzg_pb2.GetNodeRequest(pair=pair, node_id=node_id, include_embedding=True), timeout=RPC_TIMEOUT_S
        )
        rows.append(np.asarray(got.node.embedding, dtype=np.float32))
    vectors = np.vstack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
    return PairNodes(keys, active, vectors)


async def kzg_alive(
    kzg: kzg_pb2_grpc.KzgServiceStub, pair: common_pb2.Pair, keys: Iterable[str], as_of: datetime
) -> set[str]:
    """The KZG keys whose entry still exists and has not expired at ``as_of``, the questions' time: an
    entry of a replay outlives its TTL in Redis (wall-clock), but no read at ``as_of`` returns it (SPEC §11)."""
    alive = set()
    for key in keys:
        try:
            found = await kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=pair, kzg_key=key), timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            continue
        entry = found.entry
        if not entry.HasField("ablauf_am") or entry.ablauf_am.ToDatetime(tzinfo=UTC) > as_of:
            alive.add(key)
    return alive


# --------------------------------------------------------------------------- evidence location


def share(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else float("nan")


def _layer(key: str, node_of_key: Mapping[str, int], active: Mapping[int, int], alive: AbstractSet[str]) -> str:
    """Where a stored turn lives now: an active LZG node, a live KZG entry, or neither."""
    node_id = node_of_key.get(key) if key else None
    if node_id is not None and node_id in active:
        return "LZG"
    return "KZG" if key in alive else "neither"


def evidence_location(
    conversations: Sequence[Conversation],
    asked: Mapping[tuple[str, int], Asked],
    imported: ImportResult,
    nodes: Mapping[str, PairNodes],
    alive: AbstractSet[str],
    query_vectors: Mapping[str, Matrix],
    anchor_threshold: float,
) -> tuple[list[str], dict[str, float]]:
    """Where the evidence of the questions of categories 1-4 lies after import + promotion (read-only)."""
    turn_key = {turn: key for key, turn in imported.key_turns.items()}
    places: Counter[str] = Counter()
    unique_places: dict[str, str] = {}
    ranks: list[int] = []
    cosines_ok = 0
    served_lzg = 0
    in_kzg = 0
    served_kzg = 0
    kzg_hits = kzg_hits_evidence = lzg_served = lzg_served_evidence = 0
    questions_with_kzg_evidence = questions_with_lzg_evidence = questions_with_anchor_evidence = 0
    questions = 0
    answers: Counter[tuple[str, str]] = Counter()
    """(layer of the evidence turn, layer of the question right before it) for evidence that answers."""
    for conv in conversations:
        pn = nodes[conv.sample_id]
        node_of_key = {key: node_id for node_id, key in pn.keys.items()}
        active_index = {node_id: i for i, node_id in enumerate(pn.active_ids)}
        asked_before = {
            turn.turn_id: previous.turn_id
            for previous, turn in pairwise(conv.turns)
            if is_question(previous.text) and previous.as_of and turn.as_of
            and (turn.as_of - previous.as_of).total_seconds() <= KONTEXT_FENSTER_S
        }  # fmt: skip

        for qi, q in enumerate(conv.questions):
            if q.category not in HEADLINE:
                continue
            questions += 1
            a = asked[(conv.sample_id, q.number)]
            served_node_turns = {imported.key_turns.get(pn.keys.get(n, ""), "") for n in a.lzg_ids}
            sims = (pn.vectors @ query_vectors[conv.sample_id][qi]) if len(pn.active_ids) else np.zeros(0)
            best_rank: int | None = None
            for turn_id in q.evidence:
                key = turn_key.get(turn_id, "")
                node_id = node_of_key.get(key) if key else None
                if not key:
                    place = "not stored (below the 0.3 gate)"
                elif node_id is not None and node_id in active_index:
                    place = "LZG node"
                elif node_id is not None:
                    place = "LZG node, inactive"
                elif key in alive:
                    place = (
                        "KZG entry (high tier: duplicate)"
                        if imported.turn_tier.get(turn_id) == "high"
                        else "KZG entry"
                    )
                else:
                    place = "gone (expired at as_of, or deleted)"
                places[place] += 1
                unique_places[turn_id] = place
                if turn_id in asked_before:
                    answer_key, question_key = turn_key.get(turn_id, ""), turn_key.get(asked_before[turn_id], "")
                    answers[(
                        _layer(answer_key, node_of_key, active_index, alive),
                        _layer(question_key, node_of_key, active_index, alive),
                    )] += 1  # fmt: skip
                if place == "LZG node" and node_id is not None:
                    i = active_index[node_id]
                    rank = int(np.sum(sims > sims[i])) + 1
                    ranks.append(rank)
                    best_rank = rank if best_rank is None else min(best_rank, rank)
                    cosines_ok += int(sims[i] >= anchor_threshold)
                    served_lzg += int(turn_id in served_node_turns)
                elif place.startswith("KZG"):
                    in_kzg += 1
                    served_kzg += int(turn_id in a.kzg_turns)
            kzg_hits += len(a.kzg_turns)
            kzg_hits_evidence += sum(1 for t in a.kzg_turns if t in q.evidence)
            lzg_served += len(a.lzg_ids)
            lzg_served_evidence += sum(1 for t in served_node_turns if t in q.evidence)
            questions_with_kzg_evidence += int(any(t in q.evidence for t in a.kzg_turns))
            questions_with_lzg_evidence += int(any(t in q.evidence for t in served_node_turns))
            questions_with_anchor_evidence += int(best_rank is not None and best_rank <= 3)
    total = sum(places.values())
    unique = Counter(unique_places.values())
    lines = [
        f"where the evidence lies (categories 1-4: {total} question-evidence pairs, "
        f"{len(unique_places)} distinct turns)"
    ]
    for place, count in places.most_common():
        lines.append(
            f"  {place:<36}{count:>6}  {share(count, total):5.1f} %   distinct turns {unique[place]:>5}"
        )
    buckets = ((1, 3), (4, 10), (11, 25), (26, 50), (51, 10**9))
    lines.append(
        f"evidence in the LZG ({len(ranks)}): rank by plain cosine among the pair's active nodes "
        f"(median {statistics.median(ranks) if ranks else float('nan'):.0f})"
    )
    for lo, hi in buckets:
        n = sum(1 for r in ranks if lo <= r <= hi)
        label = f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}"
        lines.append(f"  rank {label:<8}{n:>6}  {share(n, len(ranks)):5.1f} %")
    lines.append(
        f"  cosine >= anchor threshold {anchor_threshold:.2f}: {share(cosines_ok, len(ranks)):5.1f} %; "
        f"served in lzg_resonanz (top 3): {share(served_lzg, len(ranks)):5.1f} %"
    )
    lines.append(
        f"  questions whose best evidence node ranks 1-3 by cosine (would be an anchor): "
        f"{share(questions_with_anchor_evidence, questions):5.1f} %; with an evidence node served: "
        f"{share(questions_with_lzg_evidence, questions):5.1f} %"
    )
    lines.append(
        f"evidence in the KZG ({in_kzg}): among the dossier's KZG hits {share(served_kzg, in_kzg):5.1f} %"
    )
    lines.append(
        f"KZG hits: {kzg_hits / max(questions, 1):.2f} per question, "
        f"{share(kzg_hits_evidence, kzg_hits):5.1f} % of them evidence; "
        f"questions with an evidence hit {share(questions_with_kzg_evidence, questions):5.1f} %"
    )
    lines.append(
        f"LZG memories served: {lzg_served / max(questions, 1):.2f} per question, "
        f"{share(lzg_served_evidence, lzg_served):5.1f} % of them evidence"
    )
    answering = sum(answers.values())
    lines.append(
        f"evidence that answers the question right before it ({answering}, {share(answering, total):4.1f} %), "
        "by layer of answer / question (the LZG's antwort source joins LZG / LZG only): "
        + ", ".join(f"{a} / {q} {n}" for (a, q), n in sorted(answers.items(), key=lambda kv: -kv[1]))
    )
    numbers = {
        "evidence_in_lzg_pct": share(places["LZG node"], total),
        "evidence_in_kzg_pct": share(sum(v for k, v in places.items() if k.startswith("KZG")), total),
        "evidence_not_stored_pct": share(places["not stored (below the 0.3 gate)"], total),
        "evidence_expired_pct": share(places["gone (expired at as_of, or deleted)"], total),
        "evidence_node_rank_median": float(statistics.median(ranks)) if ranks else float("nan"),
        "evidence_node_rank_top3_pct": share(sum(1 for r in ranks if r <= 3), len(ranks)),
        "evidence_node_rank_top10_pct": share(sum(1 for r in ranks if r <= 10), len(ranks)),
        "evidence_node_served_pct": share(served_lzg, len(ranks)),
        "kzg_hit_precision_pct": share(kzg_hits_evidence, kzg_hits),
        "evidence_kzg_retrieved_pct": share(served_kzg, in_kzg),
        "evidence_answers_pct": share(answering, total),
        "evidence_answers_within_lzg_pct": share(answers[("LZG", "LZG")], answering),
    }
    return lines, numbers
