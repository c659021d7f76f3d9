"""A person's rights in the KZG's Redis: every key of a pair or a user found and deleted, an
exported pair written back (docs/decisions.md "Erasure").

Every key of a pair is found without KEYS and without walking other pairs: entries through the
index token fields (``paar``/``nutzer``), the pair's other keys by name (session list and summary,
hash_dirty marker, the pipeline's previous-turn cluster and profile). A user's erasure does not know the
user's characters beforehand, so it walks the keyspace once with ``SCAN MATCH *:{user}:*`` (the
user id glob-escaped) and keeps exactly the keys whose parsed user part is the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from novaberg_core.model import Profile
from novaberg_core.pair_keys import pipeline_cluster_key, pipeline_profile_key
from services.kzg.domain import SESSION_TTL
from services.kzg.store.codec import encode_turn, text
from services.kzg.store.entries import EntryStore
from services.kzg.store.keys import (
    PROMOTION_STREAM,
    glob_escape,
    hash_dirty_key,
    key_parts,
    pair_clause,
    session_summary_key,
    session_taken_key,
    session_turns_key,
    user_clause,
    user_key_kind,
)
from services.kzg.store.search import KEY_PAGE, SearchStore
from services.kzg.types import EraseCounts, Pair, SessionTurnRecord

__all__ = ["ImportItem", "RightsStore"]

ImportItem = tuple[str, Mapping[str, str | bytes], int, bool]
"""An entry to import: key, hash, TTL, and whether it goes back into the promotion queue."""


class RightsStore(SearchStore, EntryStore):
    """Erasure of a pair's or a user's keys, and the import of an exported pair."""

    async def pair_profile(self, pair: Pair) -> Profile | None:
        """The pipeline's profile of the pair as it keeps it; None when none is stored (or it does not parse)."""
        return Profile.from_json(await self.redis.get(pipeline_profile_key(pair)))

    async def erase_pair_keys(self, pair: Pair, counts: EraseCounts) -> None:
        """The pair's entries (page by page through its token), session, marker, cluster and profile keys."""
        clause = pair_clause(pair)
        while True:  # page by page from the start: what is deleted leaves the index
            page, _ = await self.index_keys(clause)
            deleted = await self.delete_keys(page) if page else 0
            counts.entries += deleted
            if not deleted:  # nothing left (or only index entries of keys already gone)
                break
        # The pair's keys by name, each kind counted: one pipelined round trip.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(session_turns_key(pair), session_summary_key(pair), session_taken_key(pair))
            pipe.delete(hash_dirty_key(pair))
            pipe.delete(pipeline_cluster_key(pair))
            pipe.delete(pipeline_profile_key(pair))
            session, marker, cluster, profile = await pipe.execute()
        counts.session_keys += int(session)
        counts.hash_dirty += int(marker)
        counts.cluster_keys += int(cluster)
        counts.profile_keys += int(profile)

    async def erase_user_keys(self, user_id: str, counts: EraseCounts) -> None:
        """Entries through the ``nutzer`` token, then one SCAN for the user's other keys (and stray ones)."""
        clause = user_clause(user_id)
        while True:
            keys, _ = await self.index_keys(clause)
            deleted = await self.delete_keys(keys) if keys else 0
            if not deleted:  # nothing left (or only index entries of keys already gone)
                break
            counts.characters.update(key_parts(k)[2] for k in keys if len(key_parts(k)) == 4)
            counts.entries += deleted
        cursor = 0
        pattern = f"*:{glob_escape(user_id)}:*"
        while True:
            cursor, found = await self.redis.scan(cursor, match=pattern, count=KEY_PAGE)
            mine: list[tuple[str, str]] = []
            for raw in found:
                key = text(raw)
                kind = user_key_kind(key, user_id)
                if kind is not None:
                    mine.append((key, kind))
            if mine:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key, _ in mine:
                        pipe.delete(key)
                    results = await pipe.execute()
                for (key, kind), deleted in zip(mine, results, strict=True):
                    if deleted:
                        parts = key_parts(key)
                        counts.characters.add(parts[3] if parts[0] == "pipeline" else parts[2])
                        setattr(counts, kind, getattr(counts, kind) + int(deleted))
            if cursor == 0:
                return

    async def import_pair_keys(
        self,
        pair: Pair,
        items: Sequence[ImportItem],
        session_turns: Sequence[SessionTurnRecord],
        session_summary: str,
        profile: Profile | None,
    ) -> None:
        """One pipelined round trip: the entries with their TTL, their jobs, the session list and summary,
        and the pair's profile where one is given (kept as the pipeline keeps it, without a TTL)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, fields, ttl, _ in items:
                pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
                pipe.expire(key, ttl)
            for key, fields, _, queued in items:
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
                pipe.rpush(session_turns_key(pair), *(encode_turn(t) for t in session_turns))
                pipe.expire(session_turns_key(pair), SESSION_TTL)
            if session_summary:
                pipe.set(session_summary_key(pair), session_summary, ex=SESSION_TTL)
            if profile is not None:
                pipe.set(pipeline_profile_key(pair), profile.to_json())
            await pipe.execute()
