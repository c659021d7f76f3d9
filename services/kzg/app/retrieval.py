"""Retrieval from the KZG (SPEC §4.5, §11): KNN within the pair, full-text, entity and date candidates."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from novaberg_core.embedding import query_embed_text
from novaberg_core.errors import InvalidArgument
from novaberg_core.lexical import LANGUAGES, language_of, lexical_words
from novaberg_core.limits import KZG_TOP_K_DEFAULT as DEFAULT_TOP_K  # re-exported by kzg.memory
from novaberg_core.limits import KZG_TOP_K_MAX as MAX_TOP_K
from novaberg_core.model import Beobachter, check_vector
from novaberg_core.timeline import timeline_window
from services.kzg.app.context import READ_NODE, KzgContext, log_scope
from services.kzg.domain import themen_norm
from services.kzg.store import entry_scope
from services.kzg.types import Hit, RetrieveQuery, RetrieveResult, Vector

__all__ = ["DEFAULT_TOP_K", "MAX_TOP_K", "Retrieval", "nearest_first"]


def nearest_first(per_window: Sequence[Sequence[tuple[str, float]]], limit: int) -> list[str]:
    """The ``limit`` keys nearest to one of the named dates, each once at its smallest distance (SPEC §11)."""
    nearest: dict[str, float] = {}
    for key, distance in (row for rows in per_window for row in rows):
        nearest[key] = min(distance, nearest.get(key, distance))
    return sorted(nearest, key=lambda key: (nearest[key], key))[:limit]


class Retrieval:
    """SPEC §4.5 over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def _query_vector(self, query: RetrieveQuery) -> Vector:
        """The given vector (checked), else the embedded question."""
        if query.query_vector is not None:
            check_vector(query.query_vector, self.ctx.provider.dimension, "query_vector", self.ctx.provider.model_id)
            return query.query_vector
        if query.query_text and query.query_text.strip():
            return await self.ctx.provider.embed_one(query_embed_text(query.query_text))
        raise InvalidArgument("either query_text (non-empty) or query_vector is required")

    async def retrieve(self, query: RetrieveQuery) -> RetrieveResult:
        """KNN within the pair; hits below the model's ``kzg_retrieval`` dropped; empty is valid."""
        pair, threshold = query.pair, self.ctx.retrieval_threshold
        pair.check()
        if query.beobachter is not None:
            Beobachter.of_name(query.beobachter)
        top_k = query.top_k or DEFAULT_TOP_K
        if not 0 < top_k <= MAX_TOP_K:
            raise InvalidArgument(f"top_k must be within 1..{MAX_TOP_K} (0 = {DEFAULT_TOP_K}), got {query.top_k}")
        if query.filters.min_salienz is not None and not math.isfinite(query.filters.min_salienz):
            raise InvalidArgument("filters.min_salienz must be a finite number")
        if query.full_entries < 0:
            raise InvalidArgument(f"full_entries must be 0 (every hit whole) or more, got {query.full_entries}")
        vector = await self._query_vector(query)
        filters = dataclasses.replace(query.filters, themen=tuple(themen_norm(query.filters.themen)))
        # One scope for every source: the entity and lexical candidates keep the caller's filters (SPEC §4.5, §11).
        scope = entry_scope(pair, beobachter=query.beobachter, filters=filters, as_of=query.as_of)
        # The sources are independent searches: one round trip for all of them (SPEC §11).
        words = lexical_words(query.lexical_text, query.sprache) if query.lexical_text else []
        dense = self.store.knn_search(scope, vector, top_k)
        lexical_search = self.store.full_text_search(scope, words, LANGUAGES[language_of(query.sprache)], top_k)
        entity_search = (
            self.store.knn_search(scope, vector, top_k, entitaet_ids=query.question_entity_ids)
            if query.question_entity_ids
            else None
        )
        windows = [timeline_window(moment, praezision) for moment, praezision in query.zeitfenster]
        found, lexical, by_entity, *dated = await self.store.search_all(
            [dense, lexical_search, entity_search, *self.store.date_searches(scope, windows, top_k)]
        )
        lexical, by_entity = lexical or [], by_entity or []
        by_date = nearest_first(dated, top_k)
        similarity = {key: sim for key, sim in found}
        sources: dict[str, list[str]] = {key: ["dense"] for key, sim in found if sim >= threshold}
        dropped = len(found) - len(sources)
        for key in lexical:
            sources.setdefault(key, []).append("lexical")
        for key, sim in by_entity:
            similarity[key] = sim
            sources.setdefault(key, []).append("entity")
        for key in by_date:  # nearest to a named date first (SPEC §11)
            sources.setdefault(key, []).append("timeline")
        unscored = [key for key in sources if key not in similarity]
        # The whole entry for the best hits found by meaning (the caller's top k, SPEC §4.5); the
        # others are brief, what a recall item needs (SPEC §11). Their order among themselves is the
        # order of the hits below (by similarity, ties in the order found).
        whole = set(sources)
        if query.full_entries:
            by_meaning = [key for key, found_by in sources.items() if "dense" in found_by]
            whole = set(sorted(by_meaning, key=lambda key: -similarity[key])[: query.full_entries])
        whole_keys = [key for key in sources if key in whole]
        brief_keys = [key for key in sources if key not in whole]
        stored, read, read_brief = await asyncio.gather(
            self.store.embeddings(unscored),
            self.store.read_entries(whole_keys),
            self.store.read_entries(brief_keys, brief=True),
        )
        for key, vector_of_key in zip(unscored, stored, strict=True):
            similarity[key] = float(np.dot(vector_of_key, vector)) if vector_of_key is not None else -1.0
        entry_of = dict(zip(whole_keys, read, strict=True)) | dict(zip(brief_keys, read_brief, strict=True))
        ranked = sorted(sources, key=lambda key: -similarity[key])
        # An entry that expired between the search and the read is simply not there any more.
        hits = tuple(
            Hit(entry=entry, similarity=similarity[key], quellen=tuple(sources[key]), brief=key not in whole)
            for key in ranked
            if (entry := entry_of[key]) is not None
        )
        self.ctx.log.db_read(
            **log_scope(pair, query.turn_id, query.span_id, query.as_of), node=READ_NODE, tabelle="kzg",
            treffer=len(hits), verworfen_unter_schwelle=dropped, schwelle=threshold, top_k=top_k,
            beobachter=query.beobachter or "beide", kzg_keys=[h.entry.kzg_key for h in hits],
            quellen={key: sources[key] for key in ranked},
        )
        return RetrieveResult(
            hits=hits, threshold=threshold, model_id=self.ctx.provider.model_id, dropped_below_threshold=dropped
        )
