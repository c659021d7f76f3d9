"""The KZG's behaviour (SPEC §3, §4): validation, gate, reinforcement, retrieval, queue, session.

Ties the pure rules of ``domain`` to the I/O of ``store`` and the embedding provider, and writes
the pipeline-log records. The servicer only translates proto messages to and from these calls.

``as_of``: Redis expires keys by its own clock, so TTLs are always relative to the moment of the
write (a tier's full 7/14/30 days, the session's 4 h). An explicit ``as_of`` pins the recorded
times — ``erstellt_am`` of an entry, ``created_at`` of a session turn, ``gesetzt_am`` of
hash_dirty — and nothing else; replaying an old turn therefore never writes an entry that is
already expired.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import random
import re
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from novaberg_core.canon import Canon, default_canon
from novaberg_core.contract import BATCH_MAX_TURNS, pair_token, user_token
from novaberg_core.embedding import EmbeddingProvider, kzg_embed_text, query_embed_text, speaker_text
from novaberg_core.errors import AlreadyExists, InvalidArgument, NotFound
from novaberg_core.lexical import LANGUAGES, language_of, lexical_words
from novaberg_core.pipeline_log import PipelineLog
from services.kzg.domain import (
    BEOBACHTER,
    KZG_SALIENZ_HIGH,
    KZG_SALIENZ_MID,
    KZG_SALIENZ_MINIMUM,
    REINFORCEMENT_MODES,
    SESSION_ROLES,
    SESSION_SUMMARIZE_AT,
    SESSION_TTL,
    THEMEN_SEPARATOR,
    CanonCheck,
    Tier,
    check_canon,
    check_entry_id,
    check_pair,
    check_unit_interval,
    clean_themen,
    dedupe_entitaet_ids,
    reinforce,
    salienz_berechnen,
    themen_norm,
    tier_for,
    ttl_seconds,
)
from services.kzg.models import (
    AppendResult,
    EntryInput,
    Hit,
    KzgEntryData,
    Pair,
    PromotionJobData,
    QueueState,
    RetrieveQuery,
    RetrieveResult,
    SessionState,
    SessionTurnRecord,
    StoreResult,
    Vector,
)
from services.kzg.store import (
    KzgStore,
    Neighbour,
    NeighbourUpdate,
    encode_vector,
    entry_key,
    hash_dirty_key,
    pair_prefix,
)
from services.kzg.summary import ExtractiveSummariser, Summariser

__all__ = ["DEFAULT_RECLAIM_IDLE_MS", "DEFAULT_TOP_K", "MAX_TOP_K", "KzgMemory", "entry_fields"]

_LOG = logging.getLogger("novaberg.kzg")

DEFAULT_TOP_K = 10
MAX_TOP_K = 1_000
DEFAULT_RECLAIM_IDLE_MS = 60_000
"""Pending jobs idle this long are taken over from a consumer presumed dead (SPEC §4.6)."""
_CAS_ATTEMPTS = 10
_STREAM_ID = re.compile(r"\d+-\d+")
_WRITE_NODE = "kzg_speicher"
"""Pipeline-log node of the write path (kzg §4b)."""
_READ_NODE = "kzg"
_SESSION_NODE = "session"
_QUEUE_NODE = "promotion_queue"


def entry_fields(
    entry: EntryInput,
    themen: Sequence[str],
    canon: CanonCheck,
    salienz: float,
    vector: Vector,
    *,
    now: float,
    queued: bool,
    ttl_seconds: int,
) -> dict[str, str | bytes]:
    """The hash of a new entry (SPEC §4.1) from a validated request; the only place it is encoded.

    Beyond §4.1 (SPEC §11): the speaker and language, ``suchtext`` for full-text retrieval, the
    expiry in the turn's own time (``ablauf_am``) and the turn's trace (``traceparent``).
    """
    sprache = language_of(entry.sprache)
    fields: dict[str, str | bytes] = {
        "inhalt": entry.inhalt,
        "themen": THEMEN_SEPARATOR.join(themen),
        "themen_norm": THEMEN_SEPARATOR.join(themen_norm(themen)),
        "salienz": repr(salienz),
        "salienz_eingang": repr(float(entry.salienz)),
        "salienz_eingang_herkunft": "gemessen",
        "haeufigkeit": "1",
        "gedaechtnistyp": entry.gedaechtnistyp,
        "dimension": entry.dimension,
        "intentionen": ",".join(canon.intentionen),
        "emotion": entry.emotion,
        "modus": canon.modus,
        "arousal": repr(float(entry.arousal)),
        "emotions_vektor": entry.emotions_vektor,
        "sprach_stil": entry.sprach_stil,
        "beziehungs_dynamik": entry.beziehungs_dynamik or "neutral",
        "tone": entry.tone,
        "user_id": entry.pair.user_id,
        "character_id": entry.pair.character_id,
        "paar": pair_token(entry.pair.user_id, entry.pair.character_id),
        "nutzer": user_token(entry.pair.user_id),
        "beobachter": entry.beobachter,
        "entitaet_ids": ",".join(str(i) for i in dedupe_entitaet_ids(entry.entitaet_ids)),
        "embedding": encode_vector(vector),
        "erstellt_am": repr(float(now)),
        "turn_id": entry.turn_id,
        "promotion_queued": "1" if queued else "0",
        "sprecher": entry.sprecher,
        "sprache": sprache,
        "suchsprache": LANGUAGES[sprache],
        "suchtext": speaker_text(entry.sprecher, entry.inhalt),
        "ablauf_am": f"{now + ttl_seconds:.3f}",
        "traceparent": entry.traceparent,
    }
    if entry.timeline_id is not None:
        fields["timeline_id"] = str(entry.timeline_id)
    return fields


def session_as_of(state: SessionState, as_of: float) -> SessionState:
    """``state`` as it was at ``as_of``: later turns left out, empty when SESSION_TTL had run out (SPEC §3, §11)."""
    turns = tuple(t for t in state.turns if t.created_at <= as_of)
    if not turns or as_of - max(t.created_at for t in turns) > SESSION_TTL:
        return SessionState(turns=(), summary="", ttl_seconds=-2)
    remaining = int(SESSION_TTL - (as_of - max(t.created_at for t in turns)))
    return SessionState(turns=turns, summary=state.summary, ttl_seconds=remaining)


async def _nothing() -> list[Any]:
    """A search that was not asked for (an empty source of :meth:`KzgMemory.retrieve`)."""
    return []


class KzgMemory:
    """Everything the KZG service does, over one store, one embedding provider and one log."""

    def __init__(
        self,
        store: KzgStore,
        provider: EmbeddingProvider,
        log: PipelineLog,
        *,
        retrieval_threshold: float,
        canon: Canon | None = None,
        reinforcement: str = "thema",
        summariser: Summariser | None = None,
        reclaim_idle_ms: int = DEFAULT_RECLAIM_IDLE_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if reinforcement not in REINFORCEMENT_MODES:
            raise ValueError(f"reinforcement must be one of {REINFORCEMENT_MODES}, got {reinforcement!r}")
        if provider.dimension != store.dimension:
            raise ValueError(f"provider dimension {provider.dimension} != store dimension {store.dimension}")
        self.store = store
        self.provider = provider
        self.log = log
        self.retrieval_threshold = retrieval_threshold
        self.canon = canon or default_canon()
        self.reinforcement = reinforcement
        self.summariser: Summariser = summariser or ExtractiveSummariser()
        self.reclaim_idle_ms = reclaim_idle_ms
        self.clock = clock
        self._pair_locks: weakref.WeakValueDictionary[Pair, asyncio.Lock] = weakref.WeakValueDictionary()

    def _pair_lock(self, pair: Pair) -> asyncio.Lock:
        lock = self._pair_locks.get(pair)
        if lock is None:
            lock = asyncio.Lock()
            self._pair_locks[pair] = lock
        return lock

    async def start(self) -> None:
        """Model guard, index and consumer group, in that order (SPEC §2, §4.5, §4.6)."""
        await self.store.check_model(self.provider.stamp)
        await self.store.ensure_index()
        await self.store.ensure_promotion_group()

    # ------------------------------------------------------------------ session (SPEC §3)

    @staticmethod
    def _check_session_turn(pair: Pair, turn: SessionTurnRecord) -> None:
        check_pair(pair.user_id, pair.character_id)
        if turn.role not in SESSION_ROLES:
            raise InvalidArgument(f"turn.role must be one of {', '.join(SESSION_ROLES)}, got {turn.role!r}")
        if not turn.text.strip():
            raise InvalidArgument("turn.text must not be empty")
        if not math.isfinite(turn.arousal):
            raise InvalidArgument(f"turn.arousal must be a finite number, got {turn.arousal!r}")

    async def append_session_turns(
        self, appends: Sequence[tuple[Pair, SessionTurnRecord, float | None]]
    ) -> list[AppendResult]:
        """Many appends of one pair, in order, as :meth:`append_session_turn` one after another.

        Checked as a whole before the first append (``appends[i]`` names a bad one). The appends up to
        the next fold (SESSION_SUMMARIZE_AT) go to Redis in one transaction, and the fold follows the
        append a single call would have folded after: the list, the summary and every reported length
        are those of single appends (a writer appending to the same session meanwhile may shift
        where the fold falls, as it would between single calls).
        """
        _check_batch("appends", [pair for pair, _, _ in appends])
        for index, (pair, turn, _) in enumerate(appends):
            with _batch_item("appends", index):
                self._check_session_turn(pair, turn)
        pair = appends[0][0]
        stamped = [
            (turn if turn.created_at else dataclasses.replace(turn, created_at=as_of if as_of is not None else self.clock()),
             as_of)
            for _, turn, as_of in appends
        ]  # fmt: skip
        results: list[AppendResult] = []
        length = await self.store.session_length(pair)
        while len(results) < len(stamped):
            # The appends up to the one after which a single append would fold go in one round trip.
            run = stamped[len(results) : len(results) + max(1, SESSION_SUMMARIZE_AT + 1 - length)]
            lengths = await self.store.session_append_many(pair, [turn for turn, _ in run])
            summarized = trimmed = False
            if lengths[-1] > SESSION_SUMMARIZE_AT:
                summarized, trimmed = await self.store.session_fold(pair, self.summariser)
                lengths[-1] = await self.store.session_length(pair)
            for position, ((turn, as_of), reported) in enumerate(zip(run, lengths, strict=True)):
                last = position == len(run) - 1
                result = AppendResult(turn_count=reported, summarized=summarized and last, trimmed=trimmed and last)
                self._log_append(pair, turn, as_of, result)
                results.append(result)
            length = lengths[-1]
        return results

    async def append_session_turn(
        self, pair: Pair, turn: SessionTurnRecord, *, as_of: float | None = None
    ) -> AppendResult:
        """Append, refresh the 4 h TTL, fold the oldest 10 turns into the summary above 25."""
        self._check_session_turn(pair, turn)
        if not turn.created_at:
            turn = dataclasses.replace(turn, created_at=as_of if as_of is not None else self.clock())
        length = await self.store.session_append(pair, turn)
        summarized = trimmed = False
        if length > SESSION_SUMMARIZE_AT:
            summarized, trimmed = await self.store.session_fold(pair, self.summariser)
            length = len((await self.store.session_read(pair)).turns)
        result = AppendResult(turn_count=length, summarized=summarized, trimmed=trimmed)
        self._log_append(pair, turn, as_of, result)
        return result

    def _log_append(self, pair: Pair, turn: SessionTurnRecord, as_of: float | None, result: AppendResult) -> None:
        self.log.db_write(
            turn_id=_log_turn(turn.turn_id), node=_SESSION_NODE, tabelle="session", operation="append",
            rolle=turn.role, laenge=result.turn_count, zusammengefasst=result.summarized, gekuerzt=result.trimmed,
            user_id=pair.user_id, character_id=pair.character_id, erstellt_am=_log_time(as_of),
        )

    async def get_session(self, pair: Pair, *, as_of: float | None = None) -> SessionState:
        """The session as of ``as_of`` (SPEC §3, §11): turns made by then, empty once it had expired.

        A session expires SESSION_TTL after its last turn; read at a later ``as_of`` (a replay's
        time) it is empty, as it would have been live. Unset = now (Redis's own TTL applies).
        """
        check_pair(pair.user_id, pair.character_id)
        state = await self.store.session_read(pair)
        if as_of is not None:
            state = session_as_of(state, as_of)
        self.log.db_read(
            turn_id=_log_turn(""), node=_SESSION_NODE, tabelle="session", treffer=len(state.turns),
            user_id=pair.user_id, character_id=pair.character_id, erstellt_am=_log_time(as_of),
        )
        return state

    # ------------------------------------------------------------------ write path (SPEC §4.1–§4.4)

    def _validate_entry(self, entry: EntryInput) -> list[str]:
        check_pair(entry.pair.user_id, entry.pair.character_id)
        if entry.beobachter not in BEOBACHTER:
            raise InvalidArgument(f"beobachter must be one of {', '.join(BEOBACHTER)}, got {entry.beobachter!r}")
        if not entry.inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        check_unit_interval("salience.salienz", entry.salienz)
        check_unit_interval("ei.arousal", entry.arousal)
        if entry.entry_id:
            check_entry_id(entry.entry_id)
        if entry.embedding is not None:
            self._check_vector("embedding", entry.embedding)
        return clean_themen(entry.themen)

    def _check_vector(self, name: str, vector: Vector) -> None:
        if vector.shape != (self.provider.dimension,):
            raise InvalidArgument(
                f"{name} has {vector.size} values, the model {self.provider.model_id} has {self.provider.dimension}"
            )
        if not np.all(np.isfinite(vector)):
            raise InvalidArgument(f"{name} contains NaN or infinite values")

    async def store_entry(self, entry: EntryInput) -> StoreResult:
        """Gate, canon, embed, write with TTL, queue ≥ HIGH, reinforce neighbours (SPEC §4.1–§4.4)."""
        themen = self._validate_entry(entry)
        pair = entry.pair
        # The log records of this write: the pair, and a replay's simulated time.
        pair_kwargs: dict[str, Any] = {
            "user_id": pair.user_id, "character_id": pair.character_id, "erstellt_am": _log_time(entry.as_of),
        }
        turn_id, span_id = _log_turn(entry.turn_id), _log_span(entry.span_id)

        canon = check_canon(entry.modus, entry.intentionen, self.canon)
        writer = entry.writer or "unbekannt"
        for field, value in canon.rejections:
            _LOG.error(
                "kzg canon: writer=%s field=%s value=%r is not in %s; %s",
                writer, field, value, "MODUS_KANON" if field == "modus" else "INTENT_KANON",
                "stored empty" if field == "modus" else "dropped",
            )
            self.log.error(
                turn_id=turn_id, node=_WRITE_NODE, typ="kanon",
                message=f"writer={writer} field={field} value={value!r} nicht im Kanon",
                span_id=span_id, **pair_kwargs,
            )
        rejections = tuple(f"{field}={value}" for field, value in canon.rejections)

        salienz = salienz_berechnen(entry.salienz, 1)
        tier = tier_for(salienz)
        self.log.decision(
            turn_id=turn_id, node=_WRITE_NODE, entscheidung=f"{_WRITE_NODE}.salienz_tor",
            ausgang=tier.name if tier else "abgelehnt",
            eingang={"salienz_eingang": entry.salienz, "salienz": salienz},
            massstab={"minimum": KZG_SALIENZ_MINIMUM, "mid": KZG_SALIENZ_MID, "high": KZG_SALIENZ_HIGH},
            span_id=span_id, **pair_kwargs,
        )
        if tier is None:
            return StoreResult(stored=False, salienz=salienz, canon_rejections=rejections)

        if entry.embedding is not None:
            vector = entry.embedding
        else:
            vector = await self.provider.embed_one(kzg_embed_text(themen, entry.inhalt, entry.sprecher))
        # An existing key is refused by the write script itself, atomically and before any change.
        key = entry_key(pair, entry.entry_id or uuid.uuid4().hex)

        now = entry.as_of if entry.as_of is not None else self.clock()
        ttl = ttl_seconds(tier)
        queue = tier is Tier.HIGH
        norm = themen_norm(themen)
        entitaet_ids = dedupe_entitaet_ids(entry.entitaet_ids)
        fields = entry_fields(entry, themen, canon, salienz, vector, now=now, queued=queue, ttl_seconds=ttl)

        # One write per pair at a time in this process: neighbour search and update see a settled
        # pair. Other replicas are handled by the compare-and-set in the script (_settle).
        async with self._pair_lock(pair):
            neighbours: list[Neighbour] = []
            if self.reinforcement == "thema" and norm:
                neighbours = await self.store.find_theme_neighbours(pair, norm, exclude_key=key)
            updates = self._updates(neighbours, turn_id, pair_kwargs)
            outcome = await self.store.write_entry(
                key, fields, ttl_seconds=ttl, queue=queue, hash_dirty_key_=hash_dirty_key(pair),
                hash_dirty_reason="kzg_salienz_high" if queue else "", now=float(now), updates=updates,
            )
            if not outcome.created:
                raise AlreadyExists(f"KZG entry {key} exists already; entry ids are unique")
            reinforced, queued = await self._settle(
                key, pair, updates, list(outcome.codes), turn_id, pair_kwargs, float(now)
            )

        self.log.db_write(
            turn_id=turn_id, node=_WRITE_NODE, tabelle="kzg", operation="hset",
            kzg_key=key, entitaet_ids=entitaet_ids, timeline_id=entry.timeline_id, themen=themen,
            dimension=entry.dimension, salienz=salienz, ttl=ttl, beobachter=entry.beobachter,
            promotion_queue=queue, verstaerkt=reinforced, verstaerkt_queue=queued,
            span_id=span_id, **pair_kwargs,
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

    async def store_entries(self, entries: Sequence[EntryInput]) -> list[StoreResult]:
        """Many entries of one pair, in order, exactly as :meth:`store_entry` one after another.

        Checked as a whole first (``entries[i]`` names a bad one; given entry ids must be new),
        so a refused batch writes nothing. The entries past the gate that carry no embedding are
        embedded in one model batch; then each is written in turn — neighbour search, reinforcement
        and queue see the entries of the batch written before it (SPEC §4.4).
        """
        _check_batch("entries", [entry.pair for entry in entries])
        for index, entry in enumerate(entries):
            with _batch_item("entries", index):
                self._validate_entry(entry)
        keys = [entry_key(entry.pair, entry.entry_id) for entry in entries if entry.entry_id]
        if len(set(keys)) != len(keys):
            raise InvalidArgument("entries: an entry_id may appear at most once in a batch")
        taken = [key for key, exists in zip(keys, await self.store.exist(keys), strict=True) if exists]
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
            vectors = await self.provider.embed(texts)
            for index, vector in zip(to_embed, vectors, strict=True):
                prepared[index] = dataclasses.replace(entries[index], embedding=vector)
        return [await self.store_entry(entry) for entry in prepared]

    def bulk_fields(self, entry: EntryInput) -> tuple[str, dict[str, str | bytes], int] | None:
        """(key, hash, TTL) of an entry with an explicit embedding, without logs or reinforcement.

        For loading a store in bulk (benchmarks, imports); None when the gate rejects it.
        """
        themen = self._validate_entry(entry)
        if entry.embedding is None:
            raise InvalidArgument("bulk loading needs an explicit embedding")
        salienz = salienz_berechnen(entry.salienz, 1)
        tier = tier_for(salienz)
        if tier is None:
            return None
        canon = check_canon(entry.modus, entry.intentionen, self.canon)
        now = entry.as_of if entry.as_of is not None else self.clock()
        ttl = ttl_seconds(tier)
        fields = entry_fields(
            entry, themen, canon, salienz, entry.embedding, now=now, queued=tier is Tier.HIGH, ttl_seconds=ttl
        )
        return entry_key(entry.pair, entry.entry_id or uuid.uuid4().hex), fields, ttl

    def _updates(
        self, neighbours: Sequence[Neighbour], turn_id: str, pair_kwargs: dict[str, Any]
    ) -> list[NeighbourUpdate]:
        """Reinforcement of each neighbour by SPEC §4.4; entries without salienz_eingang are skipped."""
        updates = []
        for neighbour in neighbours:
            haeufigkeit = _parse_haeufigkeit(neighbour.haeufigkeit_raw)
            if neighbour.salienz_eingang is None or haeufigkeit is None:
                missing = "salienz_eingang" if neighbour.salienz_eingang is None else "haeufigkeit"
                _LOG.error(
                    "kzg reinforcement: %s has no readable %s; skipped, not reinforced", neighbour.key, missing
                )
                self.log.error(
                    turn_id=turn_id, node=_WRITE_NODE, typ="verstaerkung_uebersprungen",
                    message=f"{neighbour.key}: {missing} fehlt oder ist unlesbar", **pair_kwargs,
                )
                continue
            step = reinforce(neighbour.salienz_eingang, haeufigkeit)
            updates.append(
                NeighbourUpdate(
                    key=neighbour.key,
                    expected_haeufigkeit=neighbour.haeufigkeit_raw,
                    haeufigkeit=step.haeufigkeit,
                    salienz=step.salienz,
                    ttl_seconds=step.ttl_seconds,
                    reaches_high=step.reaches_high,
                )
            )
        return updates

    async def _settle(
        self,
        key: str,
        pair: Pair,
        updates: list[NeighbourUpdate],
        codes: list[int],
        turn_id: str,
        pair_kwargs: dict[str, Any],
        now: float,
    ) -> tuple[int, int]:
        """Retry neighbours whose haeufigkeit changed concurrently (compare-and-set); → (reinforced, queued)."""
        reinforced = sum(1 for c in codes if c > 0)
        queued = sum(1 for c in codes if c == 2)
        conflicts = [u.key for u, c in zip(updates, codes, strict=True) if c == -1]
        for attempt in range(_CAS_ATTEMPTS):
            if not conflicts:
                break
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # another replica writes this pair
            retry = self._updates(await self.store.read_neighbours(conflicts), turn_id, pair_kwargs)
            outcome = await self.store.write_entry(
                key, {}, ttl_seconds=0, queue=False, hash_dirty_key_=hash_dirty_key(pair),
                hash_dirty_reason="", now=now, updates=retry, create=False,
            )
            reinforced += sum(1 for c in outcome.codes if c > 0)
            queued += sum(1 for c in outcome.codes if c == 2)
            conflicts = [u.key for u, c in zip(retry, outcome.codes, strict=True) if c == -1]
        if conflicts:
            _LOG.error("kzg reinforcement: gave up on %d entries changed concurrently: %s", len(conflicts), conflicts)
        return reinforced, queued

    # ------------------------------------------------------------------ retrieval (SPEC §4.5)

    async def retrieve(self, query: RetrieveQuery) -> RetrieveResult:
        """KNN within the pair; hits below the model's ``kzg_retrieval`` dropped; empty is valid."""
        pair = query.pair
        check_pair(pair.user_id, pair.character_id)
        if query.beobachter is not None and query.beobachter not in BEOBACHTER:
            raise InvalidArgument(f"beobachter must be one of {', '.join(BEOBACHTER)}, got {query.beobachter!r}")
        top_k = query.top_k or DEFAULT_TOP_K
        if not 0 < top_k <= MAX_TOP_K:
            raise InvalidArgument(f"top_k must be within 1..{MAX_TOP_K} (0 = {DEFAULT_TOP_K}), got {query.top_k}")
        if query.filters.min_salienz is not None and not math.isfinite(query.filters.min_salienz):
            raise InvalidArgument("filters.min_salienz must be a finite number")
        if query.query_vector is not None:
            self._check_vector("query_vector", query.query_vector)
            vector = query.query_vector
        elif query.query_text and query.query_text.strip():
            vector = await self.provider.embed_one(query_embed_text(query.query_text))
        else:
            raise InvalidArgument("either query_text (non-empty) or query_vector is required")
        filters = dataclasses.replace(query.filters, themen=tuple(themen_norm(query.filters.themen)))
        as_of = query.as_of
        # The sources are independent searches: one round trip for all of them (SPEC §11).
        words = lexical_words(query.lexical_text, query.sprache) if query.lexical_text else []
        named = dataclasses.replace(filters, entitaet_ids=query.question_entity_ids)
        found, lexical, by_entity = await asyncio.gather(
            self.store.knn(pair, vector, top_k, beobachter=query.beobachter, filters=filters, as_of=as_of),
            self.store.full_text(
                pair, words, LANGUAGES[language_of(query.sprache)], top_k, beobachter=query.beobachter, as_of=as_of
            ) if words else _nothing(),
            self.store.knn(pair, vector, top_k, beobachter=query.beobachter, filters=named, as_of=as_of)
            if query.question_entity_ids else _nothing(),
        )  # fmt: skip
        similarity = {key: sim for key, sim in found}
        sources: dict[str, list[str]] = {key: ["dense"] for key, sim in found if sim >= self.retrieval_threshold}
        dropped = len(found) - len(sources)
        for key in lexical:
            sources.setdefault(key, []).append("lexical")
        for key, sim in by_entity:
            similarity[key] = sim
            sources.setdefault(key, []).append("entity")
        unscored = [key for key in sources if key not in similarity]
        candidates = list(sources)
        stored, read = await asyncio.gather(self.store.embeddings(unscored), self.store.read_entries(candidates))
        for key, vector_of_key in zip(unscored, stored, strict=True):
            similarity[key] = float(np.dot(vector_of_key, vector)) if vector_of_key is not None else -1.0
        entry_of = dict(zip(candidates, read, strict=True))
        ranked = sorted(sources, key=lambda key: -similarity[key])
        # An entry that expired between the search and the read is simply not there any more.
        hits = tuple(
            Hit(entry=entry, similarity=similarity[key], quellen=tuple(sources[key]))
            for key in ranked
            if (entry := entry_of[key]) is not None
        )
        self.log.db_read(
            turn_id=_log_turn(query.turn_id), node=_READ_NODE, tabelle="kzg", treffer=len(hits),
            verworfen_unter_schwelle=dropped, schwelle=self.retrieval_threshold, top_k=top_k,
            beobachter=query.beobachter or "beide", kzg_keys=[h.entry.kzg_key for h in hits],
            quellen={key: sources[key] for key in ranked}, span_id=_log_span(query.span_id),
            user_id=pair.user_id, character_id=pair.character_id, erstellt_am=_log_time(query.as_of),
        )
        return RetrieveResult(
            hits=hits, threshold=self.retrieval_threshold, model_id=self.provider.model_id,
            dropped_below_threshold=dropped,
        )

    # ------------------------------------------------------------------ get / delete / hash_dirty

    def _check_key(self, pair: Pair, key: str) -> None:
        check_pair(pair.user_id, pair.character_id)
        prefix = pair_prefix(pair)
        if not key.startswith(prefix) or ":" in key[len(prefix) :] or len(key) == len(prefix):
            raise InvalidArgument(f"kzg_key {key!r} is not a KZG key of the pair (expected {prefix}<entry_id>)")

    async def get_entry(self, pair: Pair, key: str, *, include_embedding: bool = False) -> KzgEntryData:
        self._check_key(pair, key)
        entry = await self.store.get_entry(key, with_embedding=include_embedding)
        self.log.db_read(
            turn_id=_log_turn(""), node=_READ_NODE, tabelle="kzg", treffer=int(entry is not None), kzg_key=key,
            user_id=pair.user_id, character_id=pair.character_id,
        )
        if entry is None:
            raise NotFound(f"KZG entry {key} does not exist (expired, deleted or never written)")
        return entry

    async def delete_entry(
        self, pair: Pair, key: str, *, turn_id: str = "", span_id: str = "", hash_dirty_reason: str = "",
        as_of: float | None = None,
    ) -> tuple[bool, bool]:
        """DEL, then EXISTS to verify (SPEC §5.3 step 6); a missing key is reported, not an error.

        With ``hash_dirty_reason`` the pair's marker is set first, as :meth:`mark_hash_dirty` would.
        """
        self._check_key(pair, key)
        marker = None
        if hash_dirty_reason:
            marker = (pair, hash_dirty_reason, as_of if as_of is not None else self.clock())
        deleted, gone = await self.store.delete_entry(key, hash_dirty=marker)
        if hash_dirty_reason:
            self.log.db_write(
                turn_id=_log_turn(turn_id), node=_WRITE_NODE, tabelle="hash_dirty", operation="hset",
                grund=hash_dirty_reason, span_id=_log_span(span_id), user_id=pair.user_id,
                character_id=pair.character_id,
            )  # fmt: skip
        self.log.db_write(
            turn_id=_log_turn(turn_id), node=_WRITE_NODE, tabelle="kzg", operation="del", kzg_key=key,
            geloescht=deleted, verifiziert_weg=gone, span_id=_log_span(span_id),
            user_id=pair.user_id, character_id=pair.character_id,
        )
        return deleted, gone

    async def mark_hash_dirty(self, pair: Pair, reason: str, *, as_of: float | None = None) -> None:
        check_pair(pair.user_id, pair.character_id)
        now = as_of if as_of is not None else self.clock()
        await self.store.mark_hash_dirty(pair, reason or "unbenannt", now)
        self.log.db_write(
            turn_id=_log_turn(""), node=_WRITE_NODE, tabelle="hash_dirty", operation="hset", grund=reason,
            user_id=pair.user_id, character_id=pair.character_id,
        )

    # ------------------------------------------------------------------ promotion queue (SPEC §4.6)

    async def read_promotion_jobs(
        self, consumer: str, count: int, *, block_ms: int = 0, reclaim_idle_ms: int = 0
    ) -> list[PromotionJobData]:
        if not consumer.strip():
            raise InvalidArgument("consumer must not be empty")
        if count < 0 or block_ms < 0 or reclaim_idle_ms < 0:
            raise InvalidArgument("count, block_ms and reclaim_idle_ms must not be negative")
        jobs = await self.store.read_jobs(
            consumer, count or 10, block_ms=block_ms, reclaim_idle_ms=reclaim_idle_ms or self.reclaim_idle_ms
        )
        if jobs:  # an empty poll is not worth a record
            self.log.db_read(
                turn_id=_log_turn(""), node=_QUEUE_NODE, tabelle="kzg_promotion_queue", treffer=len(jobs),
                consumer=consumer, jobs=[{"job_id": j.job_id, "kzg_key": j.kzg_key,
                                          "zustellungen": j.delivery_count} for j in jobs],
            )
        return jobs

    async def ack_promotion_jobs(self, job_ids: Sequence[str]) -> int:
        for job_id in job_ids:
            if not _STREAM_ID.fullmatch(job_id):
                raise InvalidArgument(f"job id {job_id!r} is not a stream id like 1764428000000-0")
        acked = await self.store.ack_jobs(list(job_ids))
        if job_ids:
            self.log.db_write(
                turn_id=_log_turn(""), node=_QUEUE_NODE, tabelle="kzg_promotion_queue", operation="xack",
                job_ids=list(job_ids), bestaetigt=acked,
            )
        return acked

    async def inspect_promotion_queue(self, limit: int) -> QueueState:
        return await self.store.inspect_queue(limit if limit > 0 else 100)


def _check_batch(field: str, pairs: Sequence[Pair]) -> None:
    """A bulk write: 1 to BATCH_MAX_TURNS items, all of the first item's pair."""
    if not pairs:
        raise InvalidArgument(f"{field} must not be empty")
    if len(pairs) > BATCH_MAX_TURNS:
        raise InvalidArgument(f"{field} may hold at most {BATCH_MAX_TURNS} items, got {len(pairs)}")
    for index, pair in enumerate(pairs):
        if pair != pairs[0]:
            raise InvalidArgument(
                f"{field}[{index}].pair is {pair.user_id}:{pair.character_id}, not the batch's pair "
                f"{pairs[0].user_id}:{pairs[0].character_id}; a batch is one pair's"
            )


@contextlib.contextmanager
def _batch_item(field: str, index: int) -> Iterator[None]:
    """An item's refusal names the item: ``entries[3].inhalt must not be empty``."""
    try:
        yield
    except InvalidArgument as error:
        raise InvalidArgument(f"{field}[{index}].{error}") from None


def _log_time(as_of: float | None) -> datetime | None:
    """A request's ``as_of`` as the log records' time (None → the log's now)."""
    return None if as_of is None else datetime.fromtimestamp(as_of, UTC)


def _log_turn(turn_id: str) -> str:
    """The pipeline-log turn id: the caller's, or a fresh one for a call outside any turn."""
    return turn_id or f"kzg-{uuid.uuid4()}"


def _log_span(span_id: str) -> str | None:
    """The caller's span id if it is a UUID (the log refuses anything else), else none."""
    if not span_id:
        return None
    try:
        uuid.UUID(span_id)
    except ValueError:
        return None
    return span_id


def _parse_haeufigkeit(raw: str) -> int | None:
    """The stored haeufigkeit; an absent field counts as 1 (never reinforced)."""
    if raw == "":
        return 1
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None
