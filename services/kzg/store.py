"""All Redis I/O of the KZG (SPEC §3, §4): session lists, entry hashes, the search index, the queue.

The client speaks RESP3 without response decoding (the ``embedding`` field is raw bytes), so
text is decoded here and nowhere else. Formulas are never computed here: the write path passes
the values that ``services.kzg.domain`` computed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from redis.asyncio import Redis
from redis.exceptions import ResponseError, WatchError

from novaberg_core import redis_client
from novaberg_core.contract import pair_token, user_token
from novaberg_core.embedding import LEGACY_RECIPE, ModelStamp, check_store_model
from services.kzg.domain import (
    SESSION_MAX_TURNS,
    SESSION_SUMMARIZE_AT,
    SESSION_SUMMARIZE_OLDEST,
    SESSION_TTL,
    THEMEN_SEPARATOR,
)
from services.kzg.models import (
    KzgEntryData,
    Pair,
    PromotionJobData,
    QueueState,
    RetrieveFilters,
    SessionState,
    SessionTurnRecord,
    Vector,
)

__all__ = [
    "INDEX_SCHEMA_PATH",
    "MODEL_KEY",
    "PROMOTION_GROUP",
    "PROMOTION_STREAM",
    "VECTOR_ALGORITHMS",
    "KzgStore",
    "Neighbour",
    "NeighbourUpdate",
    "WriteOutcome",
    "entry_key",
    "escape_tag",
    "hash_dirty_key",
    "pair_prefix",
    "session_summary_key",
    "session_turns_key",
]

_LOG = logging.getLogger(__name__)

INDEX_SCHEMA_PATH = Path(__file__).resolve().parent / "index_schema.json"
_LUA_DIR = Path(__file__).resolve().parent / "lua"
_STORE_ENTRY_LUA = (_LUA_DIR / "store_entry.lua").read_text(encoding="utf-8")
_READ_ENTRIES_LUA = (_LUA_DIR / "read_entries.lua").read_text(encoding="utf-8")

PROMOTION_STREAM = "kzg:promotion:queue"
"""The promotion queue (SPEC §4.6): a stream consumed by the group below."""
PROMOTION_GROUP = "pixie"
MODEL_KEY = "kzg:meta:model"
"""JSON ``{"model_id", "dimension"}`` of the model that filled the store (SPEC §2)."""
INDEX_META_KEY = "kzg:meta:index"
"""Fingerprint of the FT.CREATE arguments the index was built with."""
VECTOR_ALGORITHMS = ("FLAT", "HNSW")

_NEIGHBOUR_LIMIT = 100_000
"""Upper bound of neighbours read per write; far above any pair's size in the seeds."""
_MAX_BLOCK_MS = 30_000

# Characters the query parser treats specially inside TAG values (dialect 2). Non-ASCII letters
# are passed through unescaped: a backslash before a multi-byte character would split it.
_TAG_SPECIAL = re.compile(r"([,.<>{}\[\]\\\"':;!@#$%^&*()\-+=~|/?`\s])")


def escape_tag(value: str) -> str:
    """``value`` escaped for use inside ``@field:{…}`` of a query."""
    return _TAG_SPECIAL.sub(r"\\\1", value)


def entry_key(pair: Pair, entry_id: str) -> str:
    """``kzg:{user_id}:{character_id}:{entry_id}`` (SPEC §4.1)."""
    return f"kzg:{pair.user_id}:{pair.character_id}:{entry_id}"


def pair_prefix(pair: Pair) -> str:
    return f"kzg:{pair.user_id}:{pair.character_id}:"


def hash_dirty_key(pair: Pair) -> str:
    return f"hash_dirty:{pair.user_id}:{pair.character_id}"


def session_turns_key(pair: Pair) -> str:
    return f"session:{pair.user_id}:{pair.character_id}:turns"


def session_summary_key(pair: Pair) -> str:
    return f"session:{pair.user_id}:{pair.character_id}:summary"


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
    key: str
    expected_haeufigkeit: str
    haeufigkeit: int
    salienz: float
    ttl_seconds: int
    reaches_high: bool


@dataclass(frozen=True)
class WriteOutcome:
    created: bool
    """False: the key existed already and nothing was written."""
    codes: tuple[int, ...]
    """Per update: 1 reinforced, 2 reinforced and queued, 0 gone, -1 changed meanwhile."""


def _s(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _float_or_none(value: bytes | None) -> float | None:
    if value is None or value == b"":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _int_or_none(value: bytes | None) -> int | None:
    """An integer field; None when absent or unreadable (a damaged hash must not break its pair's reads)."""
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _split(value: bytes | None, separator: str) -> tuple[str, ...]:
    text = _s(value)
    return tuple(part for part in text.split(separator) if part) if text else ()


def encode_vector(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def decode_entry(key: str, raw: Mapping[bytes, bytes], ttl: int, *, with_embedding: bool) -> KzgEntryData:
    """An entry from its hash fields (SPEC §4.1)."""

    def text(name: str) -> str:
        return _s(raw.get(name.encode()))

    timeline = raw.get(b"timeline_id")
    embedding = None
    if with_embedding and raw.get(b"embedding"):
        embedding = np.frombuffer(raw[b"embedding"], dtype=np.float32).copy()
    haeufigkeit = _int_or_none(raw.get(b"haeufigkeit"))
    return KzgEntryData(
        kzg_key=key,
        entry_id=key.rsplit(":", 1)[-1],
        pair=Pair(text("user_id"), text("character_id")),
        beobachter=text("beobachter"),
        inhalt=text("inhalt"),
        themen=_split(raw.get(b"themen"), THEMEN_SEPARATOR),
        salienz=_float_or_none(raw.get(b"salienz")) or 0.0,
        salienz_eingang=_float_or_none(raw.get(b"salienz_eingang")),
        salienz_eingang_herkunft=text("salienz_eingang_herkunft"),
        haeufigkeit=haeufigkeit if haeufigkeit is not None else 1,
        gedaechtnistyp=text("gedaechtnistyp"),
        dimension=text("dimension"),
        emotion=text("emotion"),
        modus=text("modus"),
        arousal=_float_or_none(raw.get(b"arousal")) or 0.0,
        emotions_vektor=text("emotions_vektor"),
        sprach_stil=text("sprach_stil"),
        beziehungs_dynamik=text("beziehungs_dynamik"),
        tone=text("tone"),
        intentionen=_split(raw.get(b"intentionen"), ","),
        entitaet_ids=tuple(i for part in _split(raw.get(b"entitaet_ids"), ",") if (i := _int_or_none(part.encode()))),
        timeline_id=_int_or_none(timeline),
        erstellt_am=_float_or_none(raw.get(b"erstellt_am")) or 0.0,
        turn_id=text("turn_id"),
        ttl_seconds=ttl,
        promotion_queued=raw.get(b"promotion_queued") == b"1",
        embedding=embedding,
        sprecher=text("sprecher"),
        sprache=text("sprache"),
        ablauf_am=_float_or_none(raw.get(b"ablauf_am")),
        traceparent=text("traceparent"),
    )


def _search_rows(response: Any) -> list[tuple[str, dict[bytes, bytes]]]:
    """(key, fields) of an FT.SEARCH answer in RESP3 form."""
    rows: list[tuple[str, dict[bytes, bytes]]] = []
    for item in response.get(b"results", []):
        rows.append((_s(item[b"id"]), dict(item.get(b"extra_attributes", {}))))
    return rows


def _tag_any(field: str, values: Sequence[str]) -> str:
    escaped = [escape_tag(v) for v in values if v]
    return f"@{field}:{{{'|'.join(escaped)}}}" if escaped else ""


class KzgStore:
    """The KZG's Redis: one client (RESP3, raw bytes), the declared index, the Lua write script."""

    def __init__(
        self,
        redis: Redis,
        *,
        dimension: int,
        vector_algorithm: str = "FLAT",
        schema_path: Path = INDEX_SCHEMA_PATH,
    ) -> None:
        if vector_algorithm not in VECTOR_ALGORITHMS:
            raise ValueError(f"vector algorithm must be one of {VECTOR_ALGORITHMS}, got {vector_algorithm!r}")
        self.redis = redis
        self.dimension = dimension
        self.vector_algorithm = vector_algorithm
        self.schema = json.loads(schema_path.read_text(encoding="utf-8"))
        self.index_name: str = self.schema["name"]
        self._store_entry = redis.register_script(_STORE_ENTRY_LUA)
        self._read_entries = redis.register_script(_READ_ENTRIES_LUA)

    @classmethod
    def from_url(cls, url: str, *, dimension: int, vector_algorithm: str = "FLAT") -> KzgStore:
        """A store on a new client for ``url`` (RESP3, no response decoding)."""
        client = redis_client.connect(url, decode_responses=False)
        return cls(client, dimension=dimension, vector_algorithm=vector_algorithm)

    async def close(self) -> None:
        await self.redis.aclose()

    # ------------------------------------------------------------------ start-up

    def index_arguments(self) -> list[str]:
        """The FT.CREATE arguments rendered from the declared schema (SPEC §4.5)."""
        args = ["FT.CREATE", self.index_name, "ON", "HASH", "PREFIX", "1", self.schema["prefix"]]
        if "language_field" in self.schema:
            args += ["LANGUAGE_FIELD", self.schema["language_field"]]
        args.append("SCHEMA")
        for field in self.schema["fields"]:
            args += [field["name"], field["type"]]
            if field["type"] == "TAG":
                if "separator" in field:
                    args += ["SEPARATOR", field["separator"]]
                if field.get("casesensitive"):
                    args.append("CASESENSITIVE")
            elif field["type"] == "VECTOR":
                params = ["TYPE", field["data_type"], "DIM", str(self.dimension),
                          "DISTANCE_METRIC", field["distance_metric"]]
                if self.vector_algorithm == "HNSW":
                    for name, value in self.schema["hnsw"].items():
                        params += [name, str(value)]
                args += [self.vector_algorithm, str(len(params)), *params]
        return args

    async def ensure_index(self) -> bool:
        """Create ``idx:kzg`` unless it exists with the same declaration; returns True if (re)created.

        A changed declaration (new field, other dimension or algorithm) drops the index, keeping
        the documents, and creates it again; Redis re-indexes the hashes in the background.
        """
        args = self.index_arguments()
        fingerprint = hashlib.sha256("\x1f".join(args).encode()).hexdigest()
        exists = True
        try:
            await self.redis.execute_command("FT.INFO", self.index_name)
        except ResponseError:
            exists = False
        if exists and _s(await self.redis.get(INDEX_META_KEY)) == fingerprint:
            return False
        if exists:
            _LOG.warning("kzg: index %s declaration changed, rebuilding it (documents kept)", self.index_name)
            await self.redis.execute_command("FT.DROPINDEX", self.index_name)
        await self.backfill_pair_tokens()
        try:
            await self.redis.execute_command(*args)
        except ResponseError as error:
            if "already exists" not in str(error).lower():
                raise
        await self.redis.set(INDEX_META_KEY, fingerprint)
        return True

    async def backfill_pair_tokens(self, chunk: int = 500) -> int:
        """Give entries written before the token fields existed their ``paar``/``nutzer`` tokens.

        Runs only when the index declaration changed; one pipelined round trip per ``chunk`` keys.
        Returns how many entries got tokens.
        """
        written = 0
        cursor: int = 0
        while True:
            cursor, keys = await self.redis.scan(cursor, match=f"{self.schema['prefix']}*", count=chunk, _type="HASH")
            if keys:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.hmget(key, ["user_id", "character_id", "paar"])
                    rows = await pipe.execute()
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key, (user_id, character_id, token) in zip(keys, rows, strict=True):
                        if token is None and user_id is not None and character_id is not None:
                            pipe.hset(key, mapping={
                                "paar": pair_token(_s(user_id), _s(character_id)), "nutzer": user_token(_s(user_id)),
                            })  # fmt: skip
                            written += 1
                    await pipe.execute()
            if cursor == 0:
                return written

    async def check_model(self, configured: ModelStamp) -> None:
        """Refuse a store filled by another model (SPEC §2); an unstamped store gets ``configured``."""
        raw = await self.redis.get(MODEL_KEY)
        recorded = None
        if raw is not None:
            data = json.loads(raw)
            recorded = ModelStamp(str(data["model_id"]), int(data["dimension"]), str(data.get("recipe", LEGACY_RECIPE)))
        check_store_model(recorded, configured)
        if recorded is None:
            stamp = json.dumps(
                {"model_id": configured.model_id, "dimension": configured.dimension, "recipe": configured.recipe}
            )
            if not await self.redis.set(MODEL_KEY, stamp, nx=True):
                await self.check_model(configured)  # another replica stamped it first

    async def ensure_promotion_group(self) -> None:
        """The consumer group ``pixie`` on the stream, reading from its start (idempotent)."""
        try:
            await self.redis.xgroup_create(PROMOTION_STREAM, PROMOTION_GROUP, id="0", mkstream=True)
        except ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    # ------------------------------------------------------------------ write path

    async def exists(self, key: str) -> bool:
        return bool(await self.redis.exists(key))

    async def exist(self, keys: Sequence[str]) -> list[bool]:
        """Whether each of ``keys`` exists, in one round trip."""
        if not keys:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.exists(key)
            return [bool(found) for found in await pipe.execute()]

    async def find_theme_neighbours(self, pair: Pair, themen_norm: Sequence[str], exclude_key: str) -> list[Neighbour]:
        """Same-pair entries sharing one of the normalised themes, via the index (SPEC §4.4)."""
        tags = _tag_any("themen_norm", themen_norm)
        if not tags:
            return []
        query = f"{self._pair_clause(pair)} {tags}"
        response = await self.redis.execute_command(
            "FT.SEARCH", self.index_name, query,
            "RETURN", "2", "salienz_eingang", "haeufigkeit",
            "LIMIT", "0", str(_NEIGHBOUR_LIMIT), "DIALECT", "2",
        )
        neighbours = []
        for key, fields in _search_rows(response):
            if key == exclude_key:
                continue
            neighbours.append(
                Neighbour(
                    key=key,
                    salienz_eingang=_float_or_none(fields.get(b"salienz_eingang")),
                    haeufigkeit_raw=_s(fields.get(b"haeufigkeit")),
                )
            )
        return neighbours

    async def read_neighbours(self, keys: Sequence[str]) -> list[Neighbour]:
        """Fresh reinforcement inputs of ``keys`` (after a concurrent change); gone keys are left out."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hmget(key, ["salienz_eingang", "haeufigkeit", "user_id"])
            rows = await pipe.execute()
        return [
            Neighbour(key=key, salienz_eingang=_float_or_none(row[0]), haeufigkeit_raw=_s(row[1]))
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
        now: float,
        updates: Sequence[NeighbourUpdate],
        create: bool = True,
    ) -> WriteOutcome:
        """One atomic script: create the hash (unless it exists), TTL, queue, hash_dirty, reinforce."""
        args: list[str | bytes | int] = [
            "create" if create else "reinforce", ttl_seconds, "1" if queue else "0",
            hash_dirty_reason, repr(now), len(fields),
        ]
        for name, value in fields.items():
            args += [name, value]
        # The neighbours' values as one JSON argument (strings, so salienz keeps its repr exactly).
        args.append(
            json.dumps(
                [
                    [
                        update.expected_haeufigkeit, str(update.haeufigkeit), repr(update.salienz),
                        str(update.ttl_seconds), "1" if update.reaches_high else "0",
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

    # ------------------------------------------------------------------ read path

    def _pair_clause(self, pair: Pair) -> str:
        """The pair filter: its hex token, which no id can split or widen (novaberg_core.contract)."""
        return f"@paar:{{{pair_token(pair.user_id, pair.character_id)}}}"

    def _filter_clause(self, beobachter: str | None, filters: RetrieveFilters) -> str:
        parts = []
        if beobachter:
            parts.append(_tag_any("beobachter", [beobachter]))
        parts.append(_tag_any("emotion", filters.emotion))
        parts.append(_tag_any("modus", filters.modus))
        parts.append(_tag_any("entitaet_ids", [str(i) for i in filters.entitaet_ids]))
        parts.append(_tag_any("themen_norm", filters.themen))
        if filters.timeline_id is not None:
            parts.append(f"@timeline_id:[{filters.timeline_id} {filters.timeline_id}]")
        if filters.min_salienz is not None:
            parts.append(f"@salienz:[{filters.min_salienz!r} +inf]")
        return " ".join(p for p in parts if p)

    @staticmethod
    def _time_clause(as_of: float | None) -> str:
        """Entries alive at ``as_of`` in the turns' own time: made by then, not expired (SPEC §11)."""
        if as_of is None:
            return ""
        return f"@ablauf_am:[{as_of!r} +inf] @erstellt_am:[-inf {as_of!r}]"

    async def knn(
        self,
        pair: Pair,
        vector: Vector,
        top_k: int,
        *,
        beobachter: str | None = None,
        filters: RetrieveFilters | None = None,
        as_of: float | None = None,
    ) -> list[tuple[str, float]]:
        """Keys of the ``top_k`` nearest entries of the pair with cosine similarity (1 − distance), best first."""
        clause = " ".join(
            p
            for p in (
                self._pair_clause(pair),
                self._filter_clause(beobachter, filters or RetrieveFilters()),
                self._time_clause(as_of),
            )
            if p
        )
        query = f"({clause})=>[KNN {int(top_k)} @embedding $vec AS __distance]"
        response = await self.redis.execute_command(
            "FT.SEARCH", self.index_name, query,
            "PARAMS", "2", "vec", encode_vector(vector),
            "SORTBY", "__distance", "ASC",
            "RETURN", "1", "__distance",
            "LIMIT", "0", str(int(top_k)), "DIALECT", "2",
        )
        return [(key, 1.0 - float(fields.get(b"__distance", b"2"))) for key, fields in _search_rows(response)]

    async def full_text(
        self,
        pair: Pair,
        words: Sequence[str],
        language: str,
        limit: int,
        *,
        beobachter: str | None = None,
        as_of: float | None = None,
    ) -> list[str]:
        """Keys of the pair's entries whose ``suchtext`` matches any of ``words``, best BM25 first (SPEC §11)."""
        terms = [escape_tag(word) for word in words if word]
        if not terms:
            return []
        clause = " ".join(
            p
            for p in (
                self._pair_clause(pair),
                _tag_any("beobachter", [beobachter] if beobachter else []),
                self._time_clause(as_of),
                f"@suchtext:({'|'.join(terms)})",
            )
            if p
        )
        response = await self.redis.execute_command(
            "FT.SEARCH", self.index_name, clause,
            "NOCONTENT", "SCORER", "BM25", "LANGUAGE", language,
            "LIMIT", "0", str(int(limit)), "DIALECT", "2",
        )
        return [key for key, _ in _search_rows(response)]

    async def embeddings(self, keys: Sequence[str]) -> list[Vector | None]:
        """The stored vectors of ``keys`` (None for a key that is gone)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hget(key, "embedding")
            raw = await pipe.execute()
        return [None if value is None else np.frombuffer(value, dtype=np.float32) for value in raw]

    async def read_entries(self, keys: Sequence[str]) -> list[KzgEntryData | None]:
        """The entries of ``keys`` without their vectors, with remaining TTL; None for a key that is gone."""
        if not keys:
            return []
        docs = await self._read_entries(keys=list(keys), args=[])
        entries: list[KzgEntryData | None] = []
        for key, doc in zip(keys, docs, strict=True):
            if not doc:
                entries.append(None)
                continue
            data = json.loads(doc)
            ttl = int(data.pop("__ttl"))
            raw = {name.encode(): value.encode() for name, value in data.items()}
            entries.append(decode_entry(key, raw, ttl, with_embedding=False))
        return entries

    async def get_entry(self, key: str, *, with_embedding: bool) -> KzgEntryData | None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key)
            pipe.ttl(key)
            raw, ttl = await pipe.execute()
        if not raw:
            return None
        return decode_entry(key, raw, int(ttl), with_embedding=with_embedding)

    async def delete_entry(self, key: str, *, hash_dirty: tuple[Pair, str, float] | None = None) -> tuple[bool, bool]:
        """DEL then EXISTS in one round trip: (deleted, verified_gone).

        ``hash_dirty`` = (pair, reason, time): the pair's marker is set first, in the same round trip.
        """
        async with self.redis.pipeline(transaction=False) as pipe:
            if hash_dirty is not None:
                pair, reason, now = hash_dirty
                pipe.hset(hash_dirty_key(pair), mapping={"reason": reason, "gesetzt_am": repr(now)})
            pipe.delete(key)
            pipe.exists(key)
            *_, deleted, still_there = await pipe.execute()
        return bool(deleted), not still_there

    async def mark_hash_dirty(self, pair: Pair, reason: str, now: float) -> None:
        await self.redis.hset(hash_dirty_key(pair), mapping={"reason": reason, "gesetzt_am": repr(now)})

    async def hash_dirty(self, pair: Pair) -> dict[str, str]:
        raw = await self.redis.hgetall(hash_dirty_key(pair))
        return {_s(k): _s(v) for k, v in raw.items()}

    # ------------------------------------------------------------------ promotion queue

    async def read_jobs(
        self, consumer: str, count: int, *, block_ms: int, reclaim_idle_ms: int
    ) -> list[PromotionJobData]:
        """Reclaimed pending jobs idle ≥ ``reclaim_idle_ms`` first, then new ones (SPEC §4.6)."""
        try:
            return await self._read_jobs(consumer, count, block_ms, reclaim_idle_ms)
        except ResponseError as error:
            if "NOGROUP" not in str(error):
                raise
            await self.ensure_promotion_group()  # the stream was deleted under us
            return await self._read_jobs(consumer, count, block_ms, reclaim_idle_ms)

    async def _read_jobs(self, consumer: str, count: int, block_ms: int, reclaim_idle_ms: int) -> list[PromotionJobData]:
        messages: list[tuple[str, Mapping[bytes, bytes]]] = []
        claimed = await self.redis.xautoclaim(
            PROMOTION_STREAM, PROMOTION_GROUP, consumer, reclaim_idle_ms, "0-0", count=count
        )
        # Entries deleted meanwhile come back in claimed[2] and leave the pending list.
        messages.extend((_s(message_id), fields) for message_id, fields in claimed[1] if fields is not None)
        remaining = count - len(messages)
        if remaining > 0:
            block = min(block_ms, _MAX_BLOCK_MS) if not messages and block_ms > 0 else None
            response = await self.redis.xreadgroup(
                PROMOTION_GROUP, consumer, {PROMOTION_STREAM: ">"}, count=remaining, block=block
            )
            messages.extend((_s(message_id), fields) for message_id, fields in _stream_entries(response))
        if not messages:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for message_id, _ in messages:
                pipe.xpending_range(PROMOTION_STREAM, PROMOTION_GROUP, message_id, message_id, 1)
            pendings = await pipe.execute()
        return [
            _job(message_id, fields, int(pending[0]["times_delivered"]) if pending else 1)
            for (message_id, fields), pending in zip(messages, pendings, strict=True)
        ]

    async def ack_jobs(self, job_ids: Sequence[str]) -> int:
        """XACK, then XDEL (the stream holds only unprocessed jobs); returns how many were pending."""
        if not job_ids:
            return 0
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xack(PROMOTION_STREAM, PROMOTION_GROUP, *job_ids)
            pipe.xdel(PROMOTION_STREAM, *job_ids)
            acked, _ = await pipe.execute()
        return int(acked)

    async def inspect_queue(self, limit: int) -> QueueState:
        length = int(await self.redis.xlen(PROMOTION_STREAM))
        try:
            summary = await self.redis.xpending(PROMOTION_STREAM, PROMOTION_GROUP)
            consumers_raw = await self.redis.xinfo_consumers(PROMOTION_STREAM, PROMOTION_GROUP)
        except ResponseError as error:
            if "NOGROUP" not in str(error) and "no such key" not in str(error).lower():
                raise
            return QueueState(length=length, pending=0, consumers=(), pending_jobs=())
        pending = int(summary["pending"])
        consumers = tuple(_consumer_name(c) for c in consumers_raw)
        jobs: list[PromotionJobData] = []
        if pending and limit > 0:
            rows = await self.redis.xpending_range(PROMOTION_STREAM, PROMOTION_GROUP, "-", "+", limit)
            async with self.redis.pipeline(transaction=False) as pipe:
                for row in rows:
                    pipe.xrange(PROMOTION_STREAM, min=row["message_id"], max=row["message_id"], count=1)
                ranges = await pipe.execute()
            for row, found in zip(rows, ranges, strict=True):
                fields = found[0][1] if found else {}
                message_id: bytes = row["message_id"]  # type: ignore[assignment]
                jobs.append(_job(_s(message_id), fields, int(row["times_delivered"])))
        return QueueState(length=length, pending=pending, consumers=consumers, pending_jobs=tuple(jobs))

    async def queue_metrics(self) -> dict[str, float]:
        """Cheap numbers for the metrics (one round trip): jobs queued (XLEN), delivered and not
        acked (XPENDING), the age of the oldest job in seconds, and the entries in the index."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xlen(PROMOTION_STREAM)
            pipe.xrange(PROMOTION_STREAM, count=1)
            pipe.xpending(PROMOTION_STREAM, PROMOTION_GROUP)
            pipe.execute_command("FT.INFO", self.index_name)
            length, oldest, pending, info = await pipe.execute(raise_on_error=False)
        values: dict[str, float] = {}
        if not isinstance(length, Exception):
            values["novaberg.promotion.queue.length"] = float(length)
        if not isinstance(pending, Exception):
            values["novaberg.promotion.queue.pending"] = float(pending["pending"])
        if not isinstance(oldest, Exception):
            lag = 0.0
            if oldest:
                millis = int(_s(oldest[0][0]).split("-", 1)[0])
                lag = max(time.time() - millis / 1000.0, 0.0)
            values["novaberg.promotion.queue.lag"] = lag
        if not isinstance(info, Exception):
            fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=False))
            docs = fields.get(b"num_docs", fields.get("num_docs"))
            if docs is not None:
                values["novaberg.kzg.entries"] = float(_s(docs) if isinstance(docs, bytes) else docs)
        return values

    # ------------------------------------------------------------------ session (SPEC §3)

    async def session_append(self, pair: Pair, turn: SessionTurnRecord) -> int:
        """RPUSH the turn and refresh the 4 h inactivity TTL of list and summary; returns the length."""
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        item = json.dumps(turn.__dict__, ensure_ascii=False)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.rpush(turns_key, item)
            pipe.expire(turns_key, SESSION_TTL)
            pipe.expire(summary_key, SESSION_TTL)
            length, _, _ = await pipe.execute()
        return int(length)

    async def session_append_many(self, pair: Pair, turns: Sequence[SessionTurnRecord]) -> list[int]:
        """RPUSH each turn in order in one transaction and refresh the TTLs; the length after each push."""
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        async with self.redis.pipeline(transaction=True) as pipe:
            for turn in turns:
                pipe.rpush(turns_key, json.dumps(turn.__dict__, ensure_ascii=False))
            pipe.expire(turns_key, SESSION_TTL)
            pipe.expire(summary_key, SESSION_TTL)
            results = await pipe.execute()
        return [int(length) for length in results[: len(turns)]]

    async def session_length(self, pair: Pair) -> int:
        return int(await self.redis.llen(session_turns_key(pair)))

    async def session_fold(
        self,
        pair: Pair,
        summarise: Callable[[str, list[SessionTurnRecord]], Awaitable[str]],
    ) -> tuple[bool, bool]:
        """Above SESSION_SUMMARIZE_AT turns: fold the oldest 10 into the summary, or on failure keep
        the newest SESSION_MAX_TURNS. Optimistic (WATCH): a concurrent append retries. → (summarized, trimmed)
        """
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        summarized = trimmed = False
        for _ in range(5):
            try:
                async with self.redis.pipeline(transaction=True) as pipe:
                    await pipe.watch(turns_key, summary_key)
                    if int(await pipe.llen(turns_key)) <= SESSION_SUMMARIZE_AT:
                        return summarized, trimmed
                    oldest = [_turn(raw) for raw in await pipe.lrange(turns_key, 0, SESSION_SUMMARIZE_OLDEST - 1)]
                    previous = _s(await pipe.get(summary_key))
                    try:
                        summary: str | None = await summarise(previous, oldest)
                    except Exception:
                        _LOG.exception("kzg: session summariser failed for %s; keeping the newest %d turns",
                                       turns_key, SESSION_MAX_TURNS)
                        summary = None
                    pipe.multi()
                    if summary is not None:
                        pipe.ltrim(turns_key, SESSION_SUMMARIZE_OLDEST, -1)
                        pipe.set(summary_key, summary, ex=SESSION_TTL)
                    else:
                        pipe.ltrim(turns_key, -SESSION_MAX_TURNS, -1)
                    pipe.expire(turns_key, SESSION_TTL)
                    await pipe.execute()
                    summarized, trimmed = summarized or summary is not None, trimmed or summary is None
            except WatchError:
                continue
        return summarized, trimmed

    async def session_read(self, pair: Pair) -> SessionState:
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lrange(turns_key, 0, -1)
            pipe.get(summary_key)
            pipe.ttl(turns_key)
            items, summary, ttl = await pipe.execute()
        return SessionState(
            turns=tuple(_turn(raw) for raw in items), summary=_s(summary), ttl_seconds=max(int(ttl), 0)
        )


def _turn(raw: bytes | str) -> SessionTurnRecord:
    return SessionTurnRecord(**json.loads(raw))


def _consumer_name(info: Mapping[Any, Any]) -> str:
    """A consumer's name from XINFO CONSUMERS (bytes keys under RESP3, str keys under RESP2)."""
    name = info.get(b"name", info.get("name"))
    return _s(name)


def _stream_entries(response: Any) -> list[tuple[bytes, Mapping[bytes, bytes]]]:
    """The (id, fields) entries of an XREADGROUP answer, as redis-py parses it (RESP3 or RESP2)."""
    if not response:
        return []
    per_stream = response.values() if isinstance(response, dict) else [item[1] for item in response]
    entries: list[tuple[bytes, Mapping[bytes, bytes]]] = []
    for value in per_stream:
        for item in value:
            if isinstance(item, tuple):
                entries.append(item)
            else:
                entries.extend(item)
    return entries


def _job(message_id: str, fields: Mapping[bytes, bytes], deliveries: int) -> PromotionJobData:
    return PromotionJobData(
        job_id=message_id,
        kzg_key=_s(fields.get(b"kzg_key")),
        ausloeser_turn_id=_s(fields.get(b"ausloeser_turn_id")),
        pair=Pair(_s(fields.get(b"user_id")), _s(fields.get(b"character_id"))),
        delivery_count=deliveries,
        ausgeloest_am=_float_or_none(fields.get(b"ausgeloest_am")),
    )
