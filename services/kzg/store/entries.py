"""The KZG's entry hashes (SPEC §4.1–§4.4): the atomic write with reinforcement, reads, deletes,
the pair's hash_dirty marker."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from services.kzg.domain import Reinforcement
from services.kzg.store.base import StoreBase
from services.kzg.store.codec import (
    BRIEF_FIELDS,
    ENTRY_FIELDS,
    corrected_fields,
    decode_brief,
    decode_entry,
    decode_read,
    decode_vector,
    float_or_none,
    seconds,
    text,
)
from services.kzg.store.keys import PROMOTION_STREAM, hash_dirty_key
from services.kzg.types import KzgEntry, Pair, Vector

__all__ = ["EntryStore", "Neighbour", "NeighbourUpdate", "WriteOutcome"]

_DELETE_CHUNK = 500


@dataclass(frozen=True)
class Neighbour:
    """A same-pair entry sharing a theme, with the two inputs reinforcement needs (SPEC §4.4)."""

    key: str
    salienz_eingang: float | None
    """None when the hash lacks the field (or it is unreadable): such an entry is skipped."""
    haeufigkeit_raw: str
    """The stored value as is ('' when absent); the compare-and-set in Lua checks it."""


@dataclass(frozen=True)
class NeighbourUpdate:
    """A neighbour's reinforcement step, written only if its haeufigkeit is still the one read."""

    key: str
    expected_haeufigkeit: str
    step: Reinforcement


@dataclass(frozen=True)
class WriteOutcome:
    created: bool
    """False: the key existed already and nothing was written."""
    codes: tuple[int, ...]
    """Per update: 1 reinforced, 2 reinforced and queued, 0 gone, -1 changed meanwhile."""


def _hash_dirty_fields(reason: str, now: datetime) -> dict[Any, str]:
    return {"reason": reason, "gesetzt_am": seconds(now)}


class EntryStore(StoreBase):
    """HSET/HGET/DEL of ``kzg:{user}:{character}:{entry_id}`` and the Lua write script."""

    async def exists(self, key: str) -> bool:
        return bool(await self.redis.exists(key))

    async def entry_turn_ids(self, keys: Sequence[str]) -> list[str | None]:
        """The turn_id each entry of ``keys`` was written for, None where no entry stands, in one round trip."""
        rows = await self.per_key(keys, lambda pipe, key: pipe.hmget(key, ["turn_id", "user_id"]))
        return [None if row[1] is None else text(row[0]) for row in rows]

    async def read_neighbours(self, keys: Sequence[str]) -> list[Neighbour]:
        """Fresh reinforcement inputs of ``keys`` (after a concurrent change); gone keys are left out."""
        rows = await self.per_key(keys, lambda pipe, key: pipe.hmget(key, ["salienz_eingang", "haeufigkeit", "user_id"]))
        return [
            Neighbour(key=key, salienz_eingang=float_or_none(row[0]), haeufigkeit_raw=text(row[1]))
            for key, row in zip(keys, rows, strict=True)
            if row[2] is not None
        ]

    async def write_entry(
        self,
        key: str,
        fields: Mapping[str, str | bytes],
        *,
        ttl_seconds: int,
        queue: bool,
        hash_dirty_key_: str,
        hash_dirty_reason: str,
        now: datetime,
        updates: Sequence[NeighbourUpdate],
        create: bool = True,
    ) -> WriteOutcome:
        """One atomic script: create the hash (unless it exists), TTL, queue, hash_dirty, reinforce."""
        args: list[str | bytes | int] = [
            "create" if create else "reinforce", ttl_seconds, "1" if queue else "0",
            hash_dirty_reason, seconds(now), len(fields),
        ]
        for name, value in fields.items():
            args += [name, value]
        # The neighbours' values as one JSON argument (strings, so salienz keeps its repr exactly).
        args.append(
            json.dumps(
                [
                    [
                        update.expected_haeufigkeit, str(update.step.haeufigkeit), repr(update.step.salienz),
                        str(update.step.ttl_seconds), "1" if update.step.reaches_high else "0",
                    ]
                    for update in updates
                ],
                separators=(",", ":"),
            )
        )
        keys = [key, PROMOTION_STREAM, hash_dirty_key_, *(u.key for u in updates)]
        result = await self._store_entry(keys=keys, args=args)
        status = int(result[0])
        return WriteOutcome(created=status == 1, codes=tuple(int(code) for code in result[1:]))

    async def bulk_load(self, items: Sequence[tuple[str, Mapping[str, str | bytes], int]], chunk: int = 500) -> None:
        """Pipelined HSET + EXPIRE of prepared entries (key, hash, TTL); no reinforcement, no queue."""
        for start in range(0, len(items), chunk):
            async with self.redis.pipeline(transaction=False) as pipe:
                for key, fields, ttl in items[start : start + chunk]:
                    pipe.hset(key, items=[part for pair in fields.items() for part in pair])
                    pipe.expire(key, ttl)
                await pipe.execute()

    async def embeddings(self, keys: Sequence[str]) -> list[Vector | None]:
        """The stored vectors of ``keys`` (None for a key that is gone)."""
        raw = await self.per_key(keys, lambda pipe, key: pipe.hget(key, "embedding"))
        return [None if value is None else decode_vector(value) for value in raw]

    async def read_entries(self, keys: Sequence[str], *, brief: bool = False) -> list[KzgEntry | None]:
        """The entries of ``keys`` without their vectors, with remaining TTL; None for a key that is gone.

        ``brief``: only :data:`~services.kzg.store.codec.BRIEF_FIELDS` are read, the rest left empty.
        """
        if not keys:
            return []
        fields, decode = (BRIEF_FIELDS, decode_brief) if brief else (ENTRY_FIELDS, decode_read)
        answers = await self._read_entries(keys=list(keys), args=list(fields))
        return [decode(key, values) if values else None for key, values in zip(keys, answers, strict=True)]

    async def get_entry(self, key: str, *, with_embedding: bool) -> KzgEntry | None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key)
            pipe.ttl(key)
            raw, ttl = await pipe.execute()
        if not raw:
            return None
        return decode_entry(key, raw, int(ttl), with_embedding=with_embedding)

    async def delete_entry(self, key: str, *, hash_dirty: tuple[Pair, str, datetime] | None = None) -> tuple[bool, bool]:
        """DEL then EXISTS in one round trip: (deleted, verified_gone).

        ``hash_dirty`` = (pair, reason, time): the pair's marker is set first, in the same round trip.
        """
        async with self.redis.pipeline(transaction=False) as pipe:
            if hash_dirty is not None:
                pair, reason, now = hash_dirty
                pipe.hset(hash_dirty_key(pair), mapping=_hash_dirty_fields(reason, now))
            pipe.delete(key)
            pipe.exists(key)
            *_, deleted, still_there = await pipe.execute()
        return bool(deleted), not still_there

    async def delete_each(self, keys: Sequence[str]) -> list[str]:
        """DEL of each key in one round trip; the keys that were there."""
        results = await self.per_key(keys, lambda pipe, key: pipe.delete(key))
        return [key for key, gone in zip(keys, results, strict=True) if gone]

    async def delete_keys(self, keys: Sequence[str]) -> int:
        """DEL of ``keys`` in chunks; how many were there."""
        deleted = 0
        for start in range(0, len(keys), _DELETE_CHUNK):
            deleted += int(await self.redis.delete(*keys[start : start + _DELETE_CHUNK]))
        return deleted

    async def correct_entry(
        self, key: str, inhalt: str, vector: Vector, *, sprecher: str, sprache: str, antwort_auf: str
    ) -> str | None:
        """New content, vector and search text (``sprecher``/``sprache``/``antwort_auf``: the entry's own)
        for an entry that still exists; its previous content (None: gone)."""
        fields = corrected_fields(inhalt, vector, sprecher=sprecher, sprache=sprache, antwort_auf=antwort_auf)
        args = [part for name, value in fields.items() for part in (name, value)]
        previous = await self._correct_entry(keys=[key], args=args)
        return None if previous is None else text(previous)

    async def mark_hash_dirty(self, pair: Pair, reason: str, now: datetime) -> None:
        await self.redis.hset(hash_dirty_key(pair), mapping=_hash_dirty_fields(reason, now))

    async def hash_dirty(self, pair: Pair) -> dict[str, str]:
        raw = await self.redis.hgetall(hash_dirty_key(pair))
        return {text(k): text(v) for k, v in raw.items()}
