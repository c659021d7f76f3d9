"""Reads through the KZG's search index (SPEC §4.4, §4.5, §11): theme neighbours, KNN, full text,
and the paged key lists of a pair or a user."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from services.kzg.store.base import StoreBase
from services.kzg.store.codec import encode_vector, float_or_none, search_rows, search_total, seconds, text
from services.kzg.store.entries import Neighbour
from services.kzg.store.keys import escape_tag, pair_clause, tag_any
from services.kzg.types import Pair, RetrieveFilters, Vector

__all__ = ["KEY_PAGE", "EntryScope", "Search", "SearchStore", "entry_scope"]

T = TypeVar("T")

_NEIGHBOUR_LIMIT = 100_000
"""Upper bound of neighbours read per write; far above any pair's size in the seeds."""
KEY_PAGE = 1_000
"""Keys per page of a key listing (and per SCAN step of an erasure)."""


@dataclass(frozen=True)
class Search(Generic[T]):
    """One FT.SEARCH: its arguments and how its reply reads, so several can share a round trip."""

    command: tuple[str | bytes, ...]
    read: Callable[[Any], T]


def _filter_clause(beobachter: str | None, filters: RetrieveFilters) -> str:
    parts = []
    if beobachter:
        parts.append(tag_any("beobachter", [beobachter]))
    parts.append(tag_any("emotion", filters.emotion))
    parts.append(tag_any("modus", filters.modus))
    parts.append(tag_any("entitaet_ids", [str(i) for i in filters.entitaet_ids]))
    parts.append(tag_any("themen_norm", filters.themen))
    if filters.timeline_id is not None:
        parts.append(f"@timeline_id:[{filters.timeline_id} {filters.timeline_id}]")
    if filters.min_salienz is not None:
        parts.append(f"@salienz:[{filters.min_salienz!r} +inf]")
    return " ".join(p for p in parts if p)


def _time_clause(as_of: datetime | None) -> str:
    """Entries alive at ``as_of`` in the turns' own time: made by then, not expired (SPEC §11)."""
    if as_of is None:
        return ""
    at = seconds(as_of)
    return f"@ablauf_am:[{at} +inf] @erstellt_am:[-inf {at}]"


def _nearest_rows(response: Any) -> list[tuple[str, float]]:
    """(key, distance) of a date aggregation's answer (RESP3), nearest first."""
    rows = [item.get(b"extra_attributes", {}) for item in response.get(b"results", [])]
    return [(text(row[b"__key"]), float(row[b"abstand"])) for row in rows if b"__key" in row and b"abstand" in row]


def _all_of(*clauses: str) -> str:
    return " ".join(clause for clause in clauses if clause)


@dataclass(frozen=True)
class EntryScope:
    """The index clause of the entries a retrieval may return; made by :func:`entry_scope` only, so a
    search through it stays within one pair."""

    clause: str


def entry_scope(
    pair: Pair, *, beobachter: str | None = None, filters: RetrieveFilters | None = None, as_of: datetime | None = None
) -> EntryScope:
    """The entries a retrieval may return (SPEC §4.5, §11): the pair's, of one ``beobachter`` where given,
    within the caller's filters, alive at ``as_of``. Built once, shared by every source (dense, lexical,
    entity, date), so no source widens what the caller asked for."""
    filtered = _filter_clause(beobachter, filters or RetrieveFilters())
    return EntryScope(_all_of(pair_clause(pair), filtered, _time_clause(as_of)))


class SearchStore(StoreBase):
    """FT.SEARCH (and the date source's FT.AGGREGATE) over ``idx:kzg``, always within one pair's (or one
    user's) token."""

    async def find_theme_neighbours(
        self, pair: Pair, themen_norm: Sequence[str], exclude_key: str, *, alive_at: datetime
    ) -> list[Neighbour]:
        """Same-pair entries sharing one of the normalised themes and alive at ``alive_at``, the writing
        turn's time, via the index (SPEC §4.4, §11): an entry expired or not yet made then is not revived."""
        tags = tag_any("themen_norm", themen_norm)
        if not tags:
            return []
        query = _all_of(pair_clause(pair), tags, _time_clause(alive_at))
        response = await self.redis.execute_command(
            "FT.SEARCH", self.index_name, query,
            "RETURN", "2", "salienz_eingang", "haeufigkeit",
            "LIMIT", "0", str(_NEIGHBOUR_LIMIT), "DIALECT", "2",
        )
        neighbours = []
        for key, fields in search_rows(response):
            if key == exclude_key:
                continue
            neighbours.append(
                Neighbour(
                    key=key,
                    salienz_eingang=float_or_none(fields.get(b"salienz_eingang")),
                    haeufigkeit_raw=text(fields.get(b"haeufigkeit")),
                )
            )
        return neighbours

    def knn_search(
        self, scope: EntryScope, vector: Vector, top_k: int, *, entitaet_ids: Sequence[int] = ()
    ) -> Search[list[tuple[str, float]]]:
        """The ``top_k`` nearest entries within ``scope`` (:func:`entry_scope`), naming one of ``entitaet_ids``
        where given (the entity source, SPEC §11): keys with cosine similarity (1 − distance), best first."""
        clause = _all_of(scope.clause, tag_any("entitaet_ids", [str(i) for i in entitaet_ids]))
        query = f"({clause})=>[KNN {int(top_k)} @embedding $vec AS __distance]"
        return Search(
            (
                "FT.SEARCH", self.index_name, query,
                "PARAMS", "2", "vec", encode_vector(vector),
                "SORTBY", "__distance", "ASC",
                "RETURN", "1", "__distance",
                "LIMIT", "0", str(int(top_k)), "DIALECT", "2",
            ),
            lambda response: [
                (key, 1.0 - float(fields.get(b"__distance", b"2"))) for key, fields in search_rows(response)
            ],
        )  # fmt: skip

    def full_text_search(
        self, scope: EntryScope, words: Sequence[str], language: str, limit: int
    ) -> Search[list[str]] | None:
        """The entries within ``scope`` (:func:`entry_scope`) whose ``suchtext`` matches any of ``words``, best
        BM25 first (SPEC §11); None without a word to search."""
        terms = [escape_tag(word) for word in words if word]
        if not terms:
            return None
        clause = _all_of(scope.clause, f"@suchtext:({'|'.join(terms)})")
        return Search(
            (
                "FT.SEARCH", self.index_name, clause,
                "NOCONTENT", "SCORER", "BM25", "LANGUAGE", language,
                "LIMIT", "0", str(int(limit)), "DIALECT", "2",
            ),
            lambda response: [key for key, _ in search_rows(response)],
        )  # fmt: skip

    def date_searches(
        self, scope: EntryScope, windows: Sequence[tuple[datetime, datetime]], limit: int
    ) -> list[Search[list[tuple[str, float]]]]:
        """Per window (first and last instant, SPEC §11 with the §5.4 tolerances:
        :func:`novaberg_core.timeline.timeline_window`), the ``limit`` entries within ``scope`` made
        within it, nearest to its middle first: keys with that distance in seconds. The index ranks
        them (an aggregation that keeps the nearest), so only those come back."""
        searches = []
        for first, last in windows:
            middle = (first.timestamp() + last.timestamp()) / 2.0
            clause = _all_of(scope.clause, f"@erstellt_am:[{seconds(first)} {seconds(last)}]")
            searches.append(Search(
                (
                    "FT.AGGREGATE", self.index_name, clause,
                    "LOAD", "2", "@__key", "@erstellt_am",
                    "APPLY", f"abs(@erstellt_am - {middle!r})", "AS", "abstand",
                    "SORTBY", "2", "@abstand", "ASC", "MAX", str(int(limit)), "DIALECT", "2",
                ),
                _nearest_rows,
            ))  # fmt: skip
        return searches

    async def search_all(self, searches: Sequence[Search[Any] | None]) -> list[Any]:
        """Independent searches in one round trip (a pipeline); each answer in place, None where none was asked."""
        asked = [search for search in searches if search is not None]
        if not asked:
            return [None] * len(searches)
        async with self.redis.pipeline(transaction=False) as pipe:
            for search in asked:
                pipe.execute_command(*search.command)
            replies = iter(await pipe.execute())
        return [None if search is None else search.read(next(replies)) for search in searches]

    async def index_keys(self, clause: str, *, offset: int = 0, limit: int = KEY_PAGE) -> tuple[list[str], int]:
        """Keys matching an index clause (one page) and the total number of matches."""
        response = await self.redis.execute_command(
            "FT.SEARCH", self.index_name, clause, "NOCONTENT", "LIMIT", str(offset), str(limit), "DIALECT", "2"
        )
        return [key for key, _ in search_rows(response)], search_total(response)

    async def pair_entry_keys(self, pair: Pair) -> list[str]:
        """Every entry key of the pair, through its index token (paged)."""
        clause = pair_clause(pair)
        keys: list[str] = []
        while True:
            page, total = await self.index_keys(clause, offset=len(keys))
            keys += page
            if not page or len(keys) >= total:
                return keys

    async def pair_entry_count(self, pair: Pair) -> int:
        """How many entries the index holds for the pair."""
        _, total = await self.index_keys(pair_clause(pair), limit=0)
        return total

    async def entries_of_turn(self, pair: Pair, turn_id: str) -> list[str]:
        """Keys of the pair's entries written by ``turn_id`` (the field is read, not indexed)."""
        keys = await self.pair_entry_keys(pair)
        turns = await self.per_key(keys, lambda pipe, key: pipe.hget(key, "turn_id"))
        return [key for key, value in zip(keys, turns, strict=True) if text(value) == turn_id]
