"""The KZG's write path (SPEC §4.1–§4.4): gate by salience, canon, embed, write with the tier's
TTL, queue ≥ HIGH, reinforce same-theme neighbours."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import uuid
import weakref
from collections.abc import Sequence
from datetime import datetime

from novaberg_core.embedding import clean_themen, kzg_embed_text
from novaberg_core.errors import AlreadyExists, InvalidArgument
from novaberg_core.model import Beobachter, check_unit_interval, check_vector
from novaberg_core.pipeline_log import LogScope
from services.kzg.app.checks import batch_item, check_batch
from services.kzg.app.context import WRITE_NODE, KzgContext, log_canon_rejections, log_scope
from services.kzg.domain import (
    KZG_SALIENZ_HIGH,
    KZG_SALIENZ_MID,
    KZG_SALIENZ_MINIMUM,
    Tier,
    check_canon,
    check_entry_id,
    dedupe_entitaet_ids,
    reinforce,
    salienz_berechnen,
    themen_norm,
    tier_for,
    ttl_seconds,
)
from services.kzg.store import Neighbour, NeighbourUpdate, entry_fields, entry_key, hash_dirty_key
from services.kzg.types import EntryInput, Pair, StoreResult

__all__ = ["Storing"]

_LOG = logging.getLogger("novaberg.kzg")

_CAS_ATTEMPTS = 10


def _parse_haeufigkeit(raw: str) -> int | None:
    """The stored haeufigkeit; an absent field counts as 1 (never reinforced)."""
    if raw == "":
        return 1
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None


def _counts(codes: Sequence[int]) -> tuple[int, int]:
    """(reinforced, reinforced and queued) of the write script's per-neighbour codes."""
    return sum(1 for c in codes if c > 0), sum(1 for c in codes if c == 2)


def _conflicts(updates: Sequence[NeighbourUpdate], codes: Sequence[int]) -> list[str]:
    """The neighbours whose haeufigkeit changed between read and write (code -1)."""
    return [u.key for u, c in zip(updates, codes, strict=True) if c == -1]


class Storing:
    """SPEC §4.1–§4.4 over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self._pair_locks: weakref.WeakValueDictionary[Pair, asyncio.Lock] = weakref.WeakValueDictionary()

    def _pair_lock(self, pair: Pair) -> asyncio.Lock:
        lock = self._pair_locks.get(pair)
        if lock is None:
            lock = asyncio.Lock()
            self._pair_locks[pair] = lock
        return lock

    def validate_entry(self, entry: EntryInput) -> list[str]:
        """Every check of a write request; returns its cleaned themes."""
        entry.pair.check()
        Beobachter.of_name(entry.beobachter)
        if not entry.inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        check_unit_interval("salience.salienz", entry.salienz)
        check_unit_interval("ei.arousal", entry.ei.arousal)
        entry.magnets.check()
        if entry.entry_id:
            check_entry_id(entry.entry_id)
        elif entry.resend_safe:
            raise InvalidArgument("resend_safe needs an entry_id: a resend is known by it")
        if entry.embedding is not None:
            check_vector(entry.embedding, self.ctx.provider.dimension, "embedding", self.ctx.provider.model_id)
        return clean_themen(entry.themen)

    async def store_entry(self, entry: EntryInput) -> StoreResult:
        """Gate, canon, embed, write with TTL, queue ≥ HIGH, reinforce neighbours (SPEC §4.1–§4.4)."""
        themen = self.validate_entry(entry)
        pair, log = entry.pair, self.ctx.log
        # Where every record of this write belongs: the caller's turn and span, the pair, a replay's time.
        scope = log_scope(pair, entry.turn_id, entry.span_id, entry.as_of)

        canon = check_canon(entry.ei.modus, entry.ei.intentionen, self.ctx.canon)
        rejections = tuple(f"{field}={value}" for field, value in canon.rejections)
        salienz = salienz_berechnen(entry.salienz, 1)
        tier = tier_for(salienz)
        if tier is None:
            self._log_gate(entry, scope, canon.rejections, salienz, tier)
            return StoreResult(stored=False, salienz=salienz, canon_rejections=rejections)

        if entry.embedding is not None:
            vector = entry.embedding
        else:
            vector = await self.ctx.provider.embed_one(kzg_embed_text(themen, entry.inhalt, entry.sprecher))
        # An existing key is refused by the write script itself, atomically and before any change.
        key = entry_key(pair, entry.entry_id or uuid.uuid4().hex)

        now = self.ctx.now(entry.as_of)
        ttl = ttl_seconds(tier)
        queue = tier is Tier.HIGH
        norm = themen_norm(themen)
        entitaet_ids = dedupe_entitaet_ids(entry.magnets.entitaet_ids)
        fields = entry_fields(entry, themen, canon, salienz, vector, now=now, queued=queue, ttl_seconds=ttl)

        # One write per pair at a time in this process: neighbour search and update see a settled
        # pair. Other replicas are handled by the compare-and-set in the script (_settle).
        async with self._pair_lock(pair):
            neighbours: list[Neighbour] = []
            if self.ctx.reinforcement == "thema" and norm:
                neighbours = await self.store.find_theme_neighbours(pair, norm, exclude_key=key, alive_at=now)
            updates = self._updates(neighbours, scope)
            outcome = await self.store.write_entry(
                key, fields, ttl_seconds=ttl, queue=queue, hash_dirty_key_=hash_dirty_key(pair),
                hash_dirty_reason="kzg_salienz_high" if queue else "", now=now, updates=updates,
            )
            if not outcome.created:  # refused, so nothing to log; a resend of the same turn is answered as one
                return await self._repeated(entry, key, scope, rejections)
            reinforced, queued = await self._settle(key, pair, updates, list(outcome.codes), scope, now)

        self._log_gate(entry, scope, canon.rejections, salienz, tier)
        log.db_write(
            **scope, node=WRITE_NODE, tabelle="kzg", operation="hset",
            kzg_key=key, entitaet_ids=entitaet_ids, timeline_id=entry.magnets.timeline_id, themen=themen,
            dimension=entry.dimension, salienz=salienz, ttl=ttl, beobachter=entry.beobachter,
            promotion_queue=queue, verstaerkt=reinforced, verstaerkt_queue=queued,
        )
        _LOG.info(
            "KZG-Dispatch: Paar=%s:%s, Beobachter=%s, key=%s, tier=%s, verstaerkt=%d",
            pair.user_id, pair.character_id, entry.beobachter, key, tier.name, reinforced,
        )
        return StoreResult(
            stored=True, kzg_key=key, tier=tier, salienz=salienz, ttl_seconds=ttl,
            queued_for_promotion=queue, reinforced_count=reinforced, reinforced_queued_count=queued,
            canon_rejections=rejections,
        )

    async def _repeated(
        self, entry: EntryInput, key: str, scope: LogScope, rejections: tuple[str, ...]
    ) -> StoreResult:
        """The answer to a write whose key stands already: a repeat when the caller resends the same
        turn's entry (``resend_safe``, the standing entry of the same turn_id), else ALREADY_EXISTS."""
        standing = await self.store.get_entry(key, with_embedding=False) if entry.resend_safe else None
        if standing is None or standing.turn_id != entry.turn_id:
            raise AlreadyExists(f"KZG entry {key} exists already; entry ids are unique")
        self.ctx.log.db_write(
            **scope, node=WRITE_NODE, tabelle="kzg", operation="none", kzg_key=key, wiederholt=True,
        )  # fmt: skip
        return StoreResult(
            stored=True, kzg_key=key, tier=tier_for(standing.salienz), salienz=standing.salienz,
            ttl_seconds=max(standing.ttl_seconds, 0), queued_for_promotion=standing.promotion_queued,
            canon_rejections=rejections, repeated=True,
        )  # fmt: skip

    async def store_entries(self, entries: Sequence[EntryInput]) -> list[StoreResult]:
        """Many entries of one pair, in order, exactly as :meth:`store_entry` one after another.

        Checked as a whole first (``entries[i]`` names a bad one; given entry ids must be new),
        so a refused batch writes nothing. The entries past the gate that carry no embedding are
        embedded in one model batch; then each is written in turn — neighbour search, reinforcement
        and queue see the entries of the batch written before it (SPEC §4.4).
        """
        check_batch("entries", [entry.pair for entry in entries])
        for index, entry in enumerate(entries):
            with batch_item("entries", index):
                self.validate_entry(entry)
        named = [entry for entry in entries if entry.entry_id]
        keys = [entry_key(entry.pair, entry.entry_id) for entry in named]
        if len(set(keys)) != len(keys):
            raise InvalidArgument("entries: an entry_id may appear at most once in a batch")
        # A standing entry is a repeat only for a resend of the same turn (resend_safe); any other is taken.
        standing = await self.store.entry_turn_ids(keys)
        taken = [
            key
            for key, entry, turn_id in zip(keys, named, standing, strict=True)
            if turn_id is not None and not (entry.resend_safe and turn_id == entry.turn_id)
        ]
        if taken:
            raise AlreadyExists(f"KZG entries {taken} exist already; entry ids are unique")
        to_embed = [
            index for index, entry in enumerate(entries)
            if entry.embedding is None and tier_for(salienz_berechnen(entry.salienz, 1)) is not None
        ]  # fmt: skip
        prepared = list(entries)
        if to_embed:
            texts = [
                kzg_embed_text(clean_themen(entries[i].themen), entries[i].inhalt, entries[i].sprecher) for i in to_embed
            ]
            vectors = await self.ctx.provider.embed(texts)
            for index, vector in zip(to_embed, vectors, strict=True):
                prepared[index] = dataclasses.replace(entries[index], embedding=vector)
        return [await self.store_entry(entry) for entry in prepared]

    def bulk_fields(self, entry: EntryInput) -> tuple[str, dict[str, str | bytes], int] | None:
        """(key, hash, TTL) of an entry with an explicit embedding, without logs or reinforcement.

        For loading a store in bulk (benchmarks, imports); None when the gate rejects it.
        """
        themen = self.validate_entry(entry)
        if entry.embedding is None:
            raise InvalidArgument("bulk loading needs an explicit embedding")
        salienz = salienz_berechnen(entry.salienz, 1)
        tier = tier_for(salienz)
        if tier is None:
            return None
        canon = check_canon(entry.ei.modus, entry.ei.intentionen, self.ctx.canon)
        now = self.ctx.now(entry.as_of)
        ttl = ttl_seconds(tier)
        fields = entry_fields(
            entry, themen, canon, salienz, entry.embedding, now=now, queued=tier is Tier.HIGH, ttl_seconds=ttl
        )
        return entry_key(entry.pair, entry.entry_id or uuid.uuid4().hex), fields, ttl

    def _log_gate(
        self,
        entry: EntryInput,
        scope: LogScope,
        canon_rejections: Sequence[tuple[str, str]],
        salienz: float,
        tier: Tier | None,
    ) -> None:
        """The canon's rejections and the salience gate's decision of a write that happened (or that the
        gate turned away), logged once its outcome is known (SPEC §4.1, §8)."""
        log_canon_rejections(
            self.ctx.log, scope, canon_rejections, node=WRITE_NODE, writer=entry.writer or "unbekannt"
        )
        self.ctx.log.decision(
            **scope, node=WRITE_NODE, entscheidung=f"{WRITE_NODE}.salienz_tor",
            ausgang=tier.name if tier else "abgelehnt",
            eingang={"salienz_eingang": entry.salienz, "salienz": salienz},
            massstab={"minimum": KZG_SALIENZ_MINIMUM, "mid": KZG_SALIENZ_MID, "high": KZG_SALIENZ_HIGH},
        )

    def _updates(self, neighbours: Sequence[Neighbour], scope: LogScope) -> list[NeighbourUpdate]:
        """Reinforcement of each neighbour by SPEC §4.4; entries without salienz_eingang are skipped."""
        updates = []
        for neighbour in neighbours:
            haeufigkeit = _parse_haeufigkeit(neighbour.haeufigkeit_raw)
            if neighbour.salienz_eingang is None or haeufigkeit is None:
                missing = "salienz_eingang" if neighbour.salienz_eingang is None else "haeufigkeit"
                _LOG.error(
                    "kzg reinforcement: %s has no readable %s; skipped, not reinforced", neighbour.key, missing
                )
                self.ctx.log.error(
                    **scope, node=WRITE_NODE, typ="verstaerkung_uebersprungen",
                    message=f"{neighbour.key}: {missing} fehlt oder ist unlesbar",
                )
                continue
            step = reinforce(neighbour.salienz_eingang, haeufigkeit)
            updates.append(NeighbourUpdate(neighbour.key, neighbour.haeufigkeit_raw, step))
        return updates

    async def _settle(
        self,
        key: str,
        pair: Pair,
        updates: list[NeighbourUpdate],
        codes: list[int],
        scope: LogScope,
        now: datetime,
    ) -> tuple[int, int]:
        """Retry neighbours whose haeufigkeit changed concurrently (compare-and-set); → (reinforced, queued)."""
        reinforced, queued = _counts(codes)
        conflicts = _conflicts(updates, codes)
        for attempt in range(_CAS_ATTEMPTS):
            if not conflicts:
                break
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # another replica writes this pair
            retry = self._updates(await self.store.read_neighbours(conflicts), scope)
            outcome = await self.store.write_entry(
                key, {}, ttl_seconds=0, queue=False, hash_dirty_key_=hash_dirty_key(pair),
                hash_dirty_reason="", now=now, updates=retry, create=False,
            )
            more_reinforced, more_queued = _counts(outcome.codes)
            reinforced, queued = reinforced + more_reinforced, queued + more_queued
            conflicts = _conflicts(retry, outcome.codes)
        if conflicts:
            _LOG.error("kzg reinforcement: gave up on %d entries changed concurrently: %s", len(conflicts), conflicts)
        return reinforced, queued
