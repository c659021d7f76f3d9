"""The dossier's recall list: both layers in one ranking, one item per source turn (SPEC §11) — pure.

The KZG answers with its hits (dense, lexical, entity, date candidates), the LZG with its recall
candidates and, for the question's terms, their idf over the pair's long-term memories. The KZG
hits are scored lexically here with that idf (``novaberg_core.lexical.bm25_scores``), so both
layers rank on one scale: per source, every item of either layer by the same signal, fused by
reciprocal rank (``novaberg_core.fusion``); before the cut to ``recall_k`` each score is weighed by
what the memory can hold (``memory_prior``: a question or a few words hold less than a statement).
A KZG entry and the node promoted from it are one item (same turn, same speaker; the node is kept, it
knows its associations); the user's turn and the character's answer share a turn_id and are two items.

Gates judge the question, not each memory: the LZG lists candidates only for a question that got
a gated candidate there; a KZG hit passes its gate when found by meaning above the KZG's threshold
(there), by a named entity, or by words with the lexical strength the LZG asks. A question with no
gated candidate in either layer gets an empty list (the seeds' rule: no anchors for unrelated or
anaphoric questions); otherwise every hit is ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import searched_text
from novaberg_core.fusion import LEXICAL_GATE, SOURCES, fuse, interleave, memory_prior
from novaberg_core.lexical import QueryTerms, bm25_scores

__all__ = ["RecallEntry", "merge_recall", "named_entity_ids", "query_terms_of"]

_LZG_LISTS = ("timeline", "antwort", "kontext", "assoziation")
"""Sources the LZG lists in its own order (the KZG finds by ``timeline`` too, in turns with it)."""


@dataclass
class RecallEntry:
    """One source turn with every signal that found it, in whichever layer."""

    key: str
    found: kzg_pb2.RetrieveHit | lzg_pb2.RecallKandidat
    """What the layer answered: a KZG hit, or an LZG recall candidate (kept when both name the turn)."""
    inhalt: str
    cosine: float
    lexical: float
    sources: set[str] = field(default_factory=set)

    def item(self, names: tuple[str, str], score: float) -> pipeline_pb2.RecallItem:
        """The recall item of this turn (built only for the turns listed)."""
        quellen = [source for source in SOURCES if source in self.sources]
        found = self.found
        if isinstance(found, lzg_pb2.RecallKandidat):
            return pipeline_pb2.RecallItem(
                layer="lzg", beobachter=found.beobachter, speaker=_speaker(found.sprecher, found.beobachter, names),
                zeitpunkt=found.zeitpunkt, inhalt=found.inhalt, turn_id=found.turn_id, knoten_id=found.knoten_id,
                schale=found.schale, pfad=found.pfad, score=score, quellen=quellen, antwort_auf=found.antwort_auf,
            )  # fmt: skip
        e = found.entry
        return pipeline_pb2.RecallItem(
            layer="kzg", beobachter=e.beobachter, speaker=_speaker(e.sprecher, e.beobachter, names),
            zeitpunkt=e.erstellt_am, inhalt=e.inhalt, turn_id=e.turn_id, kzg_key=e.kzg_key, score=score,
            quellen=quellen, antwort_auf=e.antwort_auf,
        )  # fmt: skip


def query_terms_of(response: lzg_pb2.SpreadingReadResponse) -> QueryTerms:
    """The LZG's lexical query (terms, idf over the pair's nodes, mean node length)."""
    terms = tuple(t.term for t in response.query_terms)
    return QueryTerms(terms, tuple(t.idf for t in response.query_terms), response.mittlere_laenge)


def _speaker(sprecher: str, beobachter: int, names: tuple[str, str]) -> str:
    if sprecher:
        return sprecher
    return names[0] if beobachter == common_pb2.BEOBACHTER_USER else names[1]


def _source_turn(turn_id: str, beobachter: int, without_turn_id: str) -> str:
    """The key of a memory's source turn (SPEC §11): its turn_id and who spoke it.

    ObserveTurn and Dispatch write the user's turn and the character's answer under one turn_id
    (decisions.md "A resent turn is written once": two turns). A memory without a turn_id is its
    own KZG entry (a node: the entry it was promoted from, else the node itself).
    """
    if not turn_id:
        return without_turn_id
    return f"{turn_id}\n{beobachter}"


def merge_recall(
    kzg_hits: Sequence[kzg_pb2.RetrieveHit],
    lzg: Sequence[lzg_pb2.RecallKandidat],
    query: QueryTerms,
    sprache: str,
    recall_k: int,
    names: tuple[str, str],
) -> list[pipeline_pb2.RecallItem]:
    """Both layers fused into the recall list, best first, at most ``recall_k`` items (module docstring)."""
    if recall_k <= 0:
        return []
    entries: dict[str, RecallEntry] = {}
    lzg_order: dict[str, list[str]] = {source: [] for source in _LZG_LISTS}
    for candidate in lzg:
        key = _source_turn(candidate.turn_id, candidate.beobachter, candidate.kzg_quell_key or f"lzg:{candidate.knoten_id}")
        if key in entries:
            continue
        sources = set(candidate.quellen)
        entries[key] = RecallEntry(key, candidate, candidate.inhalt, candidate.cosine, candidate.lexical_score, sources)
        for source in _LZG_LISTS:
            if source in sources:
                lzg_order[source].append(key)
    texts = [
        searched_text(_speaker(h.entry.sprecher, h.entry.beobachter, names), h.entry.inhalt, h.entry.antwort_auf)
        for h in kzg_hits
    ]
    scored = list(zip(kzg_hits, bm25_scores(texts, sprache, query), strict=True))
    on_topic = bool(entries) or any(
        set(hit.quellen) != {"lexical"} or strength >= LEXICAL_GATE for hit, (_, strength) in scored
    )
    if not on_topic:
        return []  # found by words alone, and too few of the question's: not about the question
    for hit, (bm25, _) in scored:
        found = set(hit.quellen) or {"dense"}
        key = _source_turn(hit.entry.turn_id, hit.entry.beobachter, hit.entry.kzg_key)
        if key in entries:  # the node promoted from this entry is already listed: one item per turn
            entries[key].sources |= found
            continue
        entries[key] = RecallEntry(key, hit, hit.entry.inhalt, hit.similarity, bm25, found)
    by_cosine = sorted(entries.values(), key=lambda e: -e.cosine)
    # Both layers find memories by a named date (SPEC §11), ranked on no common scale: taken in turns.
    kzg_dated = [e.key for e in by_cosine if "timeline" in e.sources]
    lists: dict[str, list[str]] = {
        "dense": [e.key for e in by_cosine],
        "lexical": [e.key for e in sorted(entries.values(), key=lambda e: -e.lexical) if e.lexical > 0.0],
        "entity": [e.key for e in by_cosine if "entity" in e.sources],
        **lzg_order,
        "timeline": interleave(lzg_order["timeline"], kzg_dated),
    }
    ranked = fuse(lists)
    for fused in ranked:
        fused.score *= memory_prior(entries[fused.key].inhalt)
    ranked.sort(key=lambda fused: -fused.score)  # stable: ties keep the fusion's order
    return [entries[fused.key].item(names, fused.score) for fused in ranked[:recall_k]]


def named_entity_ids(resolved: Mapping[str, int], speakers: Sequence[str]) -> list[int]:
    """Registry ids of the names a question mentions, the pair's own speakers left out.

    A speaker's name in a question asks about that speaker, whose memories carry the name as their
    speaker already; the memories that *mention* the name are mostly the other speaker addressing
    them ("Thanks, Evan!") — the wrong turns (issue: speaker-aware recall).
    """
    own = {name.strip().casefold() for name in speakers if name}
    return list(dict.fromkeys(i for name, i in resolved.items() if i > 0 and name.strip().casefold() not in own))
