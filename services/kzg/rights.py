"""A person's rights over their memories in the KZG's Redis: erase, export, import, forget, correct.

Every Redis key of a pair is found without KEYS and without walking other pairs: entries through
the index token fields (``paar`` = :func:`~novaberg_core.contract.pair_token`, ``nutzer`` =
:func:`~novaberg_core.contract.user_token`), the pair's other keys by name (session list and
summary, hash_dirty marker, the pipeline's previous-turn cluster). A user's erasure does not know
the user's characters beforehand, so it walks the keyspace once with ``SCAN MATCH *:{user}:*``
(the user id glob-escaped) and keeps exactly the keys whose parsed user part is the user.

Records of these operations in the pipeline log never name an erased pair: an erasure writes a
maintenance row (no ids) with its counts only (docs/decisions.md "Erasure").
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from redis.exceptions import ResponseError

from novaberg_core.contract import pair_token, user_token
from novaberg_core.embedding import kzg_embed_text
from novaberg_core.errors import FailedPrecondition, InvalidArgument, NotFound
from services.kzg.domain import (
    KZG_TTL_HIGH_SEKUNDEN,
    SESSION_TTL,
    check_canon,
    check_entry_id,
    check_pair,
    check_unit_interval,
    clean_themen,
)
from services.kzg.memory import KzgMemory, _log_span, _log_turn, entry_fields
from services.kzg.models import EntryInput, KzgEntryData, Pair, SessionTurnRecord
from services.kzg.store import (
    PROMOTION_GROUP,
    PROMOTION_STREAM,
    _s,
    _search_rows,
    encode_vector,
    entry_key,
    hash_dirty_key,
    session_summary_key,
    session_turns_key,
)

__all__ = [
    "PIPELINE_CLUSTER_KEY",
    "EraseCounts",
    "ExportedEntryData",
    "ImportCounts",
    "KzgRights",
    "glob_escape",
]

PIPELINE_CLUSTER_KEY = "pipeline:cluster:{user_id}:{character_id}"
"""The pipeline's previous-turn cluster key (equal to ``services.pipeline.store.CLUSTER_KEY``, checked
by a test): it lives in the same Redis, so the KZG's erasure takes it too (docs/decisions.md)."""

ERASURE_NODE = "loeschung"
"""Pipeline-log node of the rights operations."""

_PAGE = 1_000
_DELETE_CHUNK = 500
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")

_FORGET_SESSION_LUA = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local removed = 0
for _, item in ipairs(items) do
  local ok, turn = pcall(cjson.decode, item)
  if ok and type(turn) == 'table' and turn['turn_id'] == ARGV[1] then
    removed = removed + redis.call('LREM', KEYS[1], 0, item)
  end
end
return removed
"""
"""Removes a source turn's items from a session list (the list is at most a few dozen items)."""

_CORRECT_ENTRY_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local previous = redis.call('HGET', KEYS[1], 'inhalt')
redis.call('HSET', KEYS[1], 'inhalt', ARGV[1], 'embedding', ARGV[2])
return previous
"""
"""New content and vector for an entry that still exists; returns the previous content (or nil)."""

_ENQUEUE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local f = redis.call('HMGET', KEYS[1], 'turn_id', 'user_id', 'character_id')
local trigger = ARGV[1]
if trigger == '' then
  trigger = f[1] or ''
end
redis.call('HSET', KEYS[1], 'promotion_queued', '1')
return redis.call('XADD', KEYS[2], '*', 'kzg_key', KEYS[1], 'ausloeser_turn_id', trigger,
  'user_id', f[2] or '', 'character_id', f[3] or '')
"""
"""Queues a promotion job for an entry that still exists (the fields the write path's job has)."""


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a SCAN MATCH pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


@dataclass
class EraseCounts:
    """What one erasure removed from Redis."""

    entries: int = 0
    session_keys: int = 0
    hash_dirty: int = 0
    cluster_keys: int = 0
    queue_jobs: int = 0
    stream_cutoff: str = "0-0"
    characters: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class ExportedEntryData:
    """An entry as exported: its fields (without vector) and whether it was queued for promotion."""

    entry: KzgEntryData
    promotion_queued: bool


@dataclass
class ImportCounts:
    entries: int = 0
    queued: int = 0
    session_turns: int = 0
    skipped_expired: int = 0


def _key_parts(key: str) -> list[str]:
    return key.split(":")


class KzgRights:
    """Erase, export, import, forget, correct and requeue over one :class:`KzgMemory`."""

    def __init__(self, memory: KzgMemory) -> None:
        self.memory = memory
        self.store = memory.store
        self.redis = memory.store.redis
        self._forget_session = self.redis.register_script(_FORGET_SESSION_LUA)
        self._correct_entry = self.redis.register_script(_CORRECT_ENTRY_LUA)
        self._enqueue = self.redis.register_script(_ENQUEUE_LUA)

    # ------------------------------------------------------------------ lookups

    async def _index_keys(self, clause: str, *, offset: int = 0, limit: int = _PAGE) -> tuple[list[str], int]:
        """Keys matching an index clause (one page) and the total number of matches."""
        response = await self.redis.execute_command(
            "FT.SEARCH",
            self.store.index_name,
            clause,
            "NOCONTENT",
            "LIMIT",
            str(offset),
            str(limit),
            "DIALECT",
            "2",
        )
        total = int(response.get(b"total_results", 0)) if isinstance(response, dict) else 0
        return [key for key, _ in _search_rows(response)], total

    async def _pair_entry_keys(self, pair: Pair) -> list[str]:
        """Every entry key of the pair, through its index token (paged)."""
        clause = f"@paar:{{{pair_token(pair.user_id, pair.character_id)}}}"
        keys: list[str] = []
        while True:
            page, total = await self._index_keys(clause, offset=len(keys))
            keys += page
            if not page or len(keys) >= total:
                return keys

    async def _entries_of_turn(self, pair: Pair, turn_id: str) -> list[str]:
        """Keys of the pair's entries written by ``turn_id`` (the field is read, not indexed)."""
        keys = await self._pair_entry_keys(pair)
        if not keys:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hget(key, "turn_id")
            turns = await pipe.execute()
        return [key for key, value in zip(keys, turns, strict=True) if _s(value) == turn_id]

    async def _delete(self, keys: Sequence[str]) -> int:
        deleted = 0
        for start in range(0, len(keys), _DELETE_CHUNK):
            deleted += int(await self.redis.delete(*keys[start : start + _DELETE_CHUNK]))
        return deleted

    # ------------------------------------------------------------------ erase

    async def erase(self, pair: Pair | None, user_id: str | None) -> EraseCounts:
        """Every key of a pair (``pair``) or of every pair of ``user_id``; idempotent."""
        if (pair is None) == (user_id is None):
            raise InvalidArgument("target must name either a pair or a user_id")
        if pair is not None:
            check_pair(pair.user_id, pair.character_id)
            user = pair.user_id
        else:
            assert user_id is not None
            check_pair(user_id, "-")
            user = user_id
        counts = EraseCounts(stream_cutoff=await self._stream_cutoff())
        if pair is not None:
            clause = f"@paar:{{{pair_token(pair.user_id, pair.character_id)}}}"
            while True:  # page by page from the start: what is deleted leaves the index
                page, _ = await self._index_keys(clause)
                deleted = await self._delete(page) if page else 0
                counts.entries += deleted
                if not deleted:  # nothing left (or only index entries of keys already gone)
                    break
            entries = counts.entries
            counts.session_keys += await self._delete([session_turns_key(pair), session_summary_key(pair)])
            counts.hash_dirty += await self._delete([hash_dirty_key(pair)])
            counts.cluster_keys += await self._delete(
                [PIPELINE_CLUSTER_KEY.format(user_id=pair.user_id, character_id=pair.character_id)]
            )
            if entries or counts.session_keys or counts.hash_dirty or counts.cluster_keys:
                counts.characters.add(pair.character_id)
        else:
            await self._erase_user_keys(user, counts)
        counts.queue_jobs = await self._erase_jobs(
            user, pair.character_id if pair is not None else None, counts
        )
        self.memory.log.db_write(
            turn_id=f"loeschung-{uuid.uuid4()}",
            node=ERASURE_NODE,
            tabelle="kzg",
            operation="erase",
            umfang="paar" if pair is not None else "nutzer",
            eintraege=counts.entries,
            session_schluessel=counts.session_keys,
            hash_dirty=counts.hash_dirty,
            cluster_schluessel=counts.cluster_keys,
            queue_jobs=counts.queue_jobs,
        )
        return counts

    async def _erase_user_keys(self, user_id: str, counts: EraseCounts) -> None:
        """Entries through the ``nutzer`` token, then one SCAN for the user's other keys (and stray ones)."""
        clause = f"@nutzer:{{{user_token(user_id)}}}"
        while True:
            keys, _ = await self._index_keys(clause)
            deleted = await self._delete(keys) if keys else 0
            if not deleted:  # nothing left (or only index entries of keys already gone)
                break
            counts.characters.update(_key_parts(k)[2] for k in keys if len(_key_parts(k)) == 4)
            counts.entries += deleted
        cursor = 0
        pattern = f"*:{glob_escape(user_id)}:*"
        while True:
            cursor, found = await self.redis.scan(cursor, match=pattern, count=_PAGE)
            mine: list[tuple[str, str]] = []
            for raw in found:
                key = _s(raw)
                kind = self._user_key_kind(key, user_id)
                if kind is not None:
                    mine.append((key, kind))
            if mine:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key, _ in mine:
                        pipe.delete(key)
                    results = await pipe.execute()
                for (key, kind), deleted in zip(mine, results, strict=True):
                    if deleted:
                        parts = _key_parts(key)
                        counts.characters.add(parts[3] if kind == "cluster_keys" else parts[2])
                        setattr(counts, kind, getattr(counts, kind) + int(deleted))
            if cursor == 0:
                return

    @staticmethod
    def _user_key_kind(key: str, user_id: str) -> str | None:
        """Which counter a key of the user falls under, or None when the key is not the user's."""
        parts = _key_parts(key)
        if len(parts) == 4 and parts[0] == "kzg" and parts[1] == user_id:
            return "entries"
        if (
            len(parts) == 4
            and parts[0] == "session"
            and parts[1] == user_id
            and parts[3] in ("turns", "summary")
        ):
            return "session_keys"
        if len(parts) == 3 and parts[0] == "hash_dirty" and parts[1] == user_id:
            return "hash_dirty"
        if len(parts) == 4 and parts[:2] == ["pipeline", "cluster"] and parts[2] == user_id:
            return "cluster_keys"
        return None

    async def _stream_cutoff(self) -> str:
        """The promotion stream's last id now ("0-0" without a stream)."""
        try:
            info = await self.redis.xinfo_stream(PROMOTION_STREAM)
        except ResponseError:
            return "0-0"
        raw: dict[Any, Any] = dict(info)
        return _s(raw.get("last-generated-id", raw.get(b"last-generated-id"))) or "0-0"

    async def _erase_jobs(self, user_id: str, character_id: str | None, counts: EraseCounts) -> int:
        """Acks and deletes the target's jobs in the stream (which holds only unprocessed jobs)."""
        ids: list[str] = []
        start = "-"
        while True:
            batch = await self.redis.xrange(PROMOTION_STREAM, min=start, max="+", count=_PAGE)
            if not batch:
                break
            for message_id, raw_fields in batch:
                fields: dict[Any, Any] = dict(raw_fields or {})
                if _s(fields.get(b"user_id")) != user_id:
                    continue
                job_character = _s(fields.get(b"character_id"))
                if character_id is None or job_character == character_id:
                    ids.append(_s(message_id))
                    counts.characters.add(job_character)
            start = "(" + _s(batch[-1][0])
            if len(batch) < _PAGE:
                break
        removed = 0
        for begin in range(0, len(ids), _DELETE_CHUNK):
            chunk = ids[begin : begin + _DELETE_CHUNK]
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.xack(PROMOTION_STREAM, PROMOTION_GROUP, *chunk)
                pipe.xdel(PROMOTION_STREAM, *chunk)
                _, deleted = await pipe.execute()
            removed += int(deleted)
        return removed

    # ------------------------------------------------------------------ export / import

    async def export(
        self, pair: Pair, chunk: int = 200
    ) -> AsyncIterator[tuple[list[ExportedEntryData], Any]]:
        """The pair's entries in chunks; the first chunk carries the session state (else None)."""
        check_pair(pair.user_id, pair.character_id)
        session = await self.store.session_read(pair)
        keys = await self._pair_entry_keys(pair)
        first = True
        for start in range(0, max(len(keys), 1), chunk):
            entries = [e for e in await self.store.read_entries(keys[start : start + chunk]) if e is not None]
            yield [ExportedEntryData(e, e.promotion_queued) for e in entries], (session if first else None)
            first = False

    async def is_empty(self, pair: Pair) -> bool:
        _, total = await self._index_keys(f"@paar:{{{pair_token(pair.user_id, pair.character_id)}}}", limit=0)
        exists = int(await self.redis.exists(session_turns_key(pair), session_summary_key(pair)))
        return total == 0 and exists == 0

    async def import_pair(
        self,
        pair: Pair,
        entries: Sequence[ExportedEntryData],
        session_turns: Sequence[SessionTurnRecord],
        session_summary: str,
        *,
        check_empty: bool = True,
        validate_only: bool = False,
    ) -> ImportCounts:
        """Writes exported entries (re-embedded, remaining TTL, queued again) and the session.

        ``validate_only``: every check, nothing embedded or written (a caller about to write other
        stores first learns whether this part would be refused).
        """
        check_pair(pair.user_id, pair.character_id)
        if check_empty and not await self.is_empty(pair):
            raise FailedPrecondition(
                f"pair {pair.user_id} · {pair.character_id} holds KZG entries or a session; "
                "import into an empty pair"
            )
        counts = ImportCounts()
        prepared: list[tuple[str, dict[str, str | bytes], int, bool]] = []
        live = [e for e in entries if e.entry.ttl_seconds != 0]
        counts.skipped_expired = len(entries) - len(live)
        themen_of = [clean_themen(e.entry.themen) for e in live]
        for index, exported in enumerate(live):
            entry = exported.entry
            check_entry_id(entry.entry_id)
            if not entry.inhalt.strip():
                raise InvalidArgument(f"entries[{index}].inhalt must not be empty")
            check_unit_interval(f"entries[{index}].salienz", entry.salienz)
            if entry.beobachter not in ("user", "assistant"):
                raise InvalidArgument(f"entries[{index}].beobachter must be user or assistant")
        if len({e.entry.entry_id for e in live}) != len(live):
            raise InvalidArgument("an entry id appears twice in the import")
        if validate_only:
            return counts
        texts = [
            kzg_embed_text(themen, e.entry.inhalt, e.entry.sprecher) for themen, e in zip(themen_of, live, strict=True)
        ]
        vectors = await self.memory.provider.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        for index, (exported, themen) in enumerate(zip(live, themen_of, strict=True)):
            entry = exported.entry
            salienz_eingang = entry.salienz_eingang if entry.salienz_eingang is not None else entry.salienz
            source = EntryInput(
                pair=pair,
                beobachter=entry.beobachter,
                inhalt=entry.inhalt,
                salienz=salienz_eingang,
                themen=tuple(themen),
                gedaechtnistyp=entry.gedaechtnistyp,
                dimension=entry.dimension,
                emotion=entry.emotion,
                modus=entry.modus,
                arousal=entry.arousal,
                emotions_vektor=entry.emotions_vektor,
                sprach_stil=entry.sprach_stil,
                beziehungs_dynamik=entry.beziehungs_dynamik,
                tone=entry.tone,
                intentionen=tuple(entry.intentionen),
                entitaet_ids=tuple(entry.entitaet_ids),
                timeline_id=entry.timeline_id,
                turn_id=entry.turn_id,
                sprecher=entry.sprecher,
                sprache=entry.sprache,
            )
            canon = check_canon(entry.modus, entry.intentionen, self.memory.canon)
            # The remaining TTL, never past the highest tier's (an unknown one gets the session's 4 h).
            ttl = min(entry.ttl_seconds, KZG_TTL_HIGH_SEKUNDEN) if entry.ttl_seconds > 0 else SESSION_TTL
            fields = entry_fields(
                source,
                themen,
                canon,
                entry.salienz,
                np.asarray(vectors[index], dtype=np.float32),
                now=entry.erstellt_am,
                queued=exported.promotion_queued,
                ttl_seconds=ttl,
            )
            fields["haeufigkeit"] = str(max(entry.haeufigkeit, 1))
            fields["salienz_eingang_herkunft"] = entry.salienz_eingang_herkunft or "gemessen"
            prepared.append((entry_key(pair, entry.entry_id), fields, ttl, exported.promotion_queued))
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, fields, ttl, _ in prepared:
                pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
                pipe.expire(key, ttl)
            for key, fields, _, queued in prepared:
                if queued:
                    pipe.xadd(
                        PROMOTION_STREAM,
                        {
                            "kzg_key": key,
                            "ausloeser_turn_id": fields.get("turn_id", ""),
                            "user_id": pair.user_id,
                            "character_id": pair.character_id,
                        },
                    )
            if session_turns:
                pipe.rpush(
                    session_turns_key(pair),
                    *(json.dumps(t.__dict__, ensure_ascii=False) for t in session_turns),
                )
                pipe.expire(session_turns_key(pair), SESSION_TTL)
            if session_summary:
                pipe.set(session_summary_key(pair), session_summary, ex=SESSION_TTL)
            await pipe.execute()
        counts.entries = len(prepared)
        counts.queued = sum(1 for p in prepared if p[3])
        counts.session_turns = len(session_turns)
        self.memory.log.db_write(
            turn_id=f"import-{uuid.uuid4()}",
            node=ERASURE_NODE,
            tabelle="kzg",
            operation="import",
            eintraege=counts.entries,
            queue=counts.queued,
            session_turns=counts.session_turns,
            user_id=pair.user_id,
            character_id=pair.character_id,
        )
        return counts

    # ------------------------------------------------------------------ forget / correct

    async def forget(
        self,
        pair: Pair,
        kzg_keys: Sequence[str],
        source_turn_id: str,
        *,
        turn_id: str = "",
        span_id: str = "",
    ) -> tuple[list[str], int]:
        """Deletes the named entries and those of ``source_turn_id`` → (deleted keys, session turns)."""
        check_pair(pair.user_id, pair.character_id)
        if not kzg_keys and not source_turn_id:
            raise InvalidArgument("name kzg_keys or a source_turn_id to forget")
        for key in kzg_keys:
            self.memory._check_key(pair, key)
        keys = list(dict.fromkeys(kzg_keys))
        removed_session = 0
        if source_turn_id:
            keys += [k for k in await self._entries_of_turn(pair, source_turn_id) if k not in keys]
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.delete(key)
            results = await pipe.execute() if keys else []
        deleted = [key for key, gone in zip(keys, results, strict=True) if gone]
        if source_turn_id:
            removed_session = int(
                await self._forget_session(keys=[session_turns_key(pair)], args=[source_turn_id])
            )
            if removed_session == 0 and deleted:
                # The turn's entry was here but the turn has left the list: it may have been folded
                # into the running summary (SPEC §3), which goes too.
                removed_session = int(await self.redis.delete(session_summary_key(pair)))
        if not deleted and not removed_session:
            return [], 0
        self.memory.log.db_write(
            turn_id=_log_turn(turn_id),
            node=ERASURE_NODE,
            tabelle="kzg",
            operation="forget",
            kzg_keys=deleted,
            quell_turn_id=source_turn_id or None,
            session_eintraege=removed_session,
            span_id=_log_span(span_id),
            user_id=pair.user_id,
            character_id=pair.character_id,
        )
        return deleted, removed_session

    async def correct(
        self, pair: Pair, kzg_key: str, inhalt: str, *, turn_id: str = "", span_id: str = ""
    ) -> str:
        """New content for one entry, re-embedded with its themes (SPEC §2); returns the old content."""
        self.memory._check_key(pair, kzg_key)
        if not inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        entry = await self.store.get_entry(kzg_key, with_embedding=False)
        if entry is None:
            raise NotFound(f"KZG entry {kzg_key} does not exist (expired, deleted or never written)")
        vector = await self.memory.provider.embed_one(kzg_embed_text(list(entry.themen), inhalt, entry.sprecher))
        previous = await self._correct_entry(keys=[kzg_key], args=[inhalt, encode_vector(vector)])
        if previous is None:
            raise NotFound(f"KZG entry {kzg_key} vanished during the correction")
        self.memory.log.db_write(
            turn_id=_log_turn(turn_id),
            node=ERASURE_NODE,
            tabelle="kzg",
            operation="correct",
            kzg_key=kzg_key,
            span_id=_log_span(span_id),
            user_id=pair.user_id,
            character_id=pair.character_id,
        )
        return _s(previous)

    # ------------------------------------------------------------------ requeue

    async def enqueue(self, jobs: Sequence[tuple[Pair, str, str]]) -> list[str]:
        """(pair, kzg_key, trigger turn) → the new stream id per job, "" where the entry is gone."""
        for pair, key, _ in jobs:
            self.memory._check_key(pair, key)
        ids: list[str] = []
        for _, key, trigger in jobs:
            new_id = await self._enqueue(keys=[key, PROMOTION_STREAM], args=[trigger])
            ids.append(_s(new_id) if new_id else "")
        if jobs:
            self.memory.log.db_write(
                turn_id=f"requeue-{uuid.uuid4()}",
                node="promotion_queue",
                tabelle="kzg_promotion_queue",
                operation="xadd",
                job_ids=[i for i in ids if i],
                weg=sum(1 for i in ids if not i),
            )
        return ids
