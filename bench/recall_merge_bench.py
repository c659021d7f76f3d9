"""What the pipeline's recall merge costs per dossier (SPEC §11; ``services.pipeline.recall.merge_recall``).

The merge is on every dossier's critical path, after both layers answered: the KZG's hits are scored
with the LZG's idf (their texts tokenised and stemmed), every memory is weighed by its prior, the
sources fused, and the listed memories become recall items. Inputs shaped as a dossier of the turn
benchmark sees them: 75 KZG hits (three sources × 25) and 29 LZG candidates (25 + reserve, a quarter
of them associations with a path) of 22-word texts, ``recall_k`` 25.

- warm: the same memories merged again, as a pair's short-term memories come back question after
  question (the texts' term counts and priors are remembered, ``novaberg_core.lexical``,
  ``novaberg_core.fusion``);
- cold: those memories never seen before (both caches cleared before each merge).

    .venv/bin/python bench/recall_merge_bench.py [--calls 300] [--rounds 7]

Prints the median per-call time of each over ``--rounds`` rounds of ``--calls`` merges, warm and cold
in turn; the last line is one JSON object with ``warm_ms`` and ``cold_ms``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "libs"))

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.fusion import memory_prior
from novaberg_core.lexical import LexicalIndex, QueryTerms, clear_term_counts, tokenize
from services.pipeline.recall import merge_recall

NAMES = ("Meister", "Nova")
WORDS = (
    "garden dinner sister bought painting weekend concert guitar hiking mountain coffee chocolate birthday "
    "dentist butcher bratwurst remember yesterday tomorrow really wonderful beautiful exciting friends family "
    "children school teacher library books reading running marathon training doctor holiday beach"
).split()


def dossier_inputs(
    rng: random.Random,
) -> tuple[list[kzg_pb2.RetrieveHit], list[lzg_pb2.RecallKandidat], QueryTerms]:
    """75 KZG hits, 29 LZG candidates and the LZG's query terms over 400 memories."""
    texts = [
        " ".join(rng.choice(WORDS) for _ in range(22)).capitalize() + rng.choice([".", "!", "?"]) for _ in range(400)
    ]
    index = LexicalIndex()
    for text in texts:
        index.append(tokenize(text, "en"))
    query = index.query_terms(tokenize("When did you go hiking in the mountain with your sister?", "en"))
    hits = [
        kzg_pb2.RetrieveHit(
            entry=common_pb2.KzgEntry(kzg_key=f"kzg:u:c:e{i}", turn_id=f"t{i}", inhalt=rng.choice(texts),
                                      beobachter=common_pb2.BEOBACHTER_USER, sprecher=NAMES[0]),
            similarity=rng.random(), quellen=rng.choice([["dense"], ["lexical"], ["dense", "lexical"]]),
        )
        for i in range(75)
    ]  # fmt: skip
    path = [lzg_pb2.PfadSchritt(von_knoten_id=1, kante_id=2, verbindungs_gruende=["themen"], geteilte_themen=["x"])]
    candidates = [
        lzg_pb2.RecallKandidat(
            knoten_id=100 + i, turn_id=f"n{i}", inhalt=rng.choice(texts), beobachter=common_pb2.BEOBACHTER_ASSISTANT,
            cosine=rng.random(), lexical_score=3 * rng.random(),
            quellen=["assoziation"] if i % 4 == 0 else rng.choice([["dense"], ["lexical", "dense"], ["kontext"]]),
            pfad=path if i % 4 == 0 else [], schale=1 if i % 4 == 0 else 0,
        )
        for i in range(29)
    ]  # fmt: skip
    return hits, candidates, query


def per_call_ms(calls: int, merge: Callable[[], object], before: Callable[[], None] | None = None) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        if before is not None:
            before()
        merge()
    return (time.perf_counter() - started) / calls * 1000.0


def forget_texts() -> None:
    clear_term_counts()
    memory_prior.cache_clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    hits, candidates, query = dossier_inputs(random.Random(1))

    def merge() -> object:
        return merge_recall(hits, candidates, query, "en", 25, NAMES)

    per_call_ms(args.calls, merge)  # warm-up
    warm, cold = [], []
    for _ in range(args.rounds):
        warm.append(per_call_ms(args.calls, merge))
        cold.append(per_call_ms(args.calls, merge, before=forget_texts))
    result = {"warm_ms": round(statistics.median(warm), 3), "cold_ms": round(statistics.median(cold), 3)}
    print(f"recall merge of 75 KZG hits + 29 LZG candidates, recall_k 25, median of {args.rounds} rounds × "
          f"{args.calls}: warm {result['warm_ms']:.3f} ms, cold {result['cold_ms']:.3f} ms per call")  # fmt: skip
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
