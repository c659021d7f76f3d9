"""Machinery of the attack suites: bad values per field, raw requests, store fingerprints.

Pure helpers (no fixtures): which field paths a request type has, which bad values each kind of
field gets (hypothesis strategies), a request with one field replaced — serialised to bytes, so
invalid UTF-8 can be sent too — and fingerprints of every Redis key and PostgreSQL row, to prove
that a refused call changed nothing.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
import redis
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

__all__ = [
    "INVALID_UTF8",
    "FieldPath",
    "bad_values",
    "field_paths",
    "imported_records",
    "node_ids",
    "pairs_with_memories",
    "postgres_fingerprint",
    "record_counts",
    "redis_fingerprint",
    "with_values",
]

T = TypeVar("T")

INVALID_UTF8 = object()
"""Stands for a string whose bytes on the wire are not UTF-8 (protobuf cannot build one)."""

_INVALID_BYTES = b"\xff\xfe\xc3\x28"
_MARKER = "QZXW"  # ASCII, the same byte length as _INVALID_BYTES

_TIMESTAMP = "google.protobuf.Timestamp"

BAD_STRINGS: tuple[str, ...] = (
    "", " ", "   x   ", "a\x00b", "\x00", "\x07bell", "line\nbreak", "tab\tstop", "\x1b[31mred", "\u0085next",
    "\u202eevil", "\ufeffbom", "\uffff", "\U0010ffff", "u1,u2", "a|b", "a:b", "{a}", "*", "-", "@a", "\"q\"",
    "'q'", "\\", "%s%n", "$1", "'; DROP TABLE lzg_knoten; --", "аnna", "Ａｎｎａ", "ǅ", "e\u0301", "x" * 101,
    "y" * 5_000, "z" * 20_000, "🙂" * 60,
)  # fmt: skip
"""Hand-picked: control characters, separators and query syntax, look-alikes, lengths at the limits."""

BAD_INTS32 = (-1, -(2**31), 2**31 - 1, 0, 1, 99_999)
BAD_INTS64 = (-1, -(2**63), 2**63 - 1, 0)
BAD_FLOATS = (float("nan"), float("inf"), float("-inf"), -1.0, 1.5, 1e308, -0.0, 5e-324)
BAD_SECONDS = (-62_135_596_800, -1, 0, 253_402_300_799, 253_402_300_800 - 86_400 * 2, 4_102_444_800)
BAD_NANOS = (-1, 999_999_999, 1_000_000_000)


@dataclass(frozen=True)
class FieldPath:
    """A field reached from the request through nested messages (names joined by dots)."""

    fields: tuple[FieldDescriptor, ...]

    @property
    def name(self) -> str:
        return ".".join(f.name for f in self.fields)

    @property
    def leaf(self) -> FieldDescriptor:
        return self.fields[-1]


def field_paths(descriptor: Any, depth: int = 3, _seen: tuple[str, ...] = ()) -> list[FieldPath]:
    """Every scalar, repeated-scalar and Timestamp field reachable within ``depth`` message hops."""
    paths: list[FieldPath] = []
    for field in descriptor.fields:
        message = field.message_type
        if message is None or message.full_name == _TIMESTAMP:
            paths.append(FieldPath((field,)))
        elif message.GetOptions().map_entry:
            continue
        elif depth > 0 and message.full_name not in _seen:
            if field.is_repeated:
                paths.append(FieldPath((field,)))  # a flood of empty items
            paths += [FieldPath((field, *p.fields)) for p in field_paths(message, depth - 1, (*_seen, message.full_name))]
    return paths


def bad_values(path: FieldPath) -> st.SearchStrategy[Any]:
    """Values for the leaf of ``path``: hand-picked extremes plus generated ones."""
    field = path.leaf
    kind = field.type
    if field.message_type is not None and field.message_type.full_name == _TIMESTAMP:
        scalar: st.SearchStrategy[Any] = st.tuples(
            st.one_of(st.sampled_from(BAD_SECONDS), st.integers(-(2**62), 2**62)),
            st.one_of(st.sampled_from(BAD_NANOS), st.integers(0, 999_999_999)),
        )
    elif field.message_type is not None:
        return st.integers(1, 5_000).map(lambda n: ("flood", n))
    elif kind == FieldDescriptor.TYPE_STRING:
        scalar = st.one_of(
            st.sampled_from(BAD_STRINGS),
            st.just(INVALID_UTF8),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
            st.text(alphabet=st.characters(max_codepoint=0x9F), max_size=20),  # controls and C1
        )
    elif kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        scalar = st.one_of(st.sampled_from(BAD_FLOATS), st.floats(allow_nan=True, allow_infinity=True, width=32))
    elif kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
        scalar = st.one_of(st.sampled_from(BAD_INTS64), st.integers(-(2**63), 2**63 - 1))
    elif kind == FieldDescriptor.TYPE_ENUM:
        scalar = st.one_of(st.sampled_from((-1, 3, 99, 2**31 - 1)), st.integers(-(2**31), 2**31 - 1))
    elif kind == FieldDescriptor.TYPE_BOOL:
        scalar = st.booleans()
    else:
        scalar = st.one_of(st.sampled_from(BAD_INTS32), st.integers(-(2**31), 2**31 - 1))
    if field.is_repeated:
        return st.one_of(
            st.lists(scalar, min_size=1, max_size=4),
            st.tuples(scalar, st.integers(50, 20_000)).map(lambda pair: [pair[0]] * pair[1]),
        )
    return scalar


def _container(request: Message, path: FieldPath) -> Message:
    """The message holding the leaf (intermediate messages created; repeated ones get one item)."""
    message = request
    for field in path.fields[:-1]:
        if field.is_repeated:
            items = getattr(message, field.name)
            message = items[0] if len(items) else items.add()
        else:
            message = getattr(message, field.name)
    return message


def _assign(message: Message, field: FieldDescriptor, value: Any) -> None:
    if field.message_type is not None and field.message_type.full_name == _TIMESTAMP:
        seconds, nanos = value
        target = getattr(message, field.name)
        # Timestamp.FromDatetime would refuse these; the wire carries any int64/int32.
        target.seconds, target.nanos = seconds, nanos
    elif field.message_type is not None:
        items = getattr(message, field.name)
        del items[:]
        for _ in range(value[1]):
            items.add()
    elif field.is_repeated:
        items = getattr(message, field.name)
        del items[:]
        items.extend(_MARKER if v is INVALID_UTF8 else v for v in value)
    else:
        setattr(message, field.name, _MARKER if value is INVALID_UTF8 else value)


def with_values(base: Message, assignments: Sequence[tuple[FieldPath, Any]]) -> bytes:
    """``base`` with each leaf set to its value in turn (a later one of the same field wins), serialised
    (invalid UTF-8 spliced in)."""
    request = type(base)()
    request.CopyFrom(base)
    for path, value in assignments:
        _assign(_container(request, path), path.leaf, value)
    data = request.SerializeToString()
    if any(_uses_invalid_utf8(value) for _, value in assignments):
        data = data.replace(_MARKER.encode(), _INVALID_BYTES)
    return data


def _uses_invalid_utf8(value: Any) -> bool:
    if value is INVALID_UTF8:
        return True
    return isinstance(value, list) and any(v is INVALID_UTF8 for v in value)


def describe(value: Any) -> str:
    """A short printable form of a bad value for failure messages."""
    if value is INVALID_UTF8:
        return "<invalid UTF-8>"
    if isinstance(value, list) and len(value) > 3:
        return f"[{describe(value[0])} × {len(value)}]"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------------------- fingerprints


def redis_fingerprint(client: redis.Redis, *, ignore_prefixes: Sequence[bytes] = ()) -> dict[bytes, str]:
    """Every key with a digest of its serialised value (``DUMP``); TTLs left out, they tick."""
    keys = sorted(k for k in client.scan_iter(count=1_000) if not k.startswith(tuple(ignore_prefixes)))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
    dumps = pipe.execute()
    return {key: hashlib.sha256(dump or b"").hexdigest()[:16] for key, dump in zip(keys, dumps, strict=True)}


def pairs_with_memories(url: str) -> set[tuple[str, str]]:
    """The pairs that hold LZG nodes, entities or timelines (from a synchronous test)."""

    async def read() -> set[tuple[str, str]]:
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(
                "SELECT user_id, character_id FROM lzg.lzg_knoten UNION SELECT user_id, character_id FROM lzg.entitaet "
                "UNION SELECT user_id, character_id FROM lzg.timeline"
            )
            return {(row[0], row[1]) for row in rows}
        finally:
            await conn.close()

    return _run_sync(read())


_IMPORT_COUNT_OF_TYPE = {
    "entity": "entities", "timeline": "timelines", "node": "nodes", "edge": "edges", "kzg_entry": "kzg_entries",
    "profile": "profile",
}


def record_counts(lines: Sequence[str]) -> dict[str, int]:
    """Records per kind of an export's JSON lines (header skipped), named as ImportPair counts them."""
    counts: collections.Counter[str] = collections.Counter({name: 0 for name in _IMPORT_COUNT_OF_TYPE.values()})
    counts["session_turns"] = 0
    for line in lines[1:]:
        record = json.loads(line)
        if record["type"] == "session":
            counts["session_turns"] += len(record.get("turns", []))
        else:
            counts[_IMPORT_COUNT_OF_TYPE[record["type"]]] += 1
    return dict(counts)


def node_ids(lines: Sequence[str]) -> list[int]:
    """The ids of the LZG nodes of an export, in file order."""
    return [int(record["id"]) for record in map(json.loads, lines[1:]) if record["type"] == "node"]


def imported_records(counts: dict[str, int]) -> dict[str, int]:
    """ImportPair's counts as :func:`record_counts` names them (an entry expired meanwhile still counts)."""
    records = {name: counts.get(name, 0) for name in (*_IMPORT_COUNT_OF_TYPE.values(), "session_turns")}
    records["kzg_entries"] += counts.get("kzg_skipped_expired", 0)
    return records


async def _pg_fingerprint(url: str, schemas: Sequence[str]) -> dict[str, str]:
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema = ANY($1::text[]) AND table_type = 'BASE TABLE' ORDER BY 1, 2",
            list(schemas),
        )
        digests: dict[str, str] = {}
        for row in tables:
            name = f'"{row["table_schema"]}"."{row["table_name"]}"'
            digests[name] = await conn.fetchval(
                f"SELECT md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM {name} t"
            )
        return digests
    finally:
        await conn.close()


def postgres_fingerprint(url: str, schemas: Sequence[str]) -> dict[str, str]:
    """A digest of every row of every table in ``schemas`` (from a synchronous test)."""
    return _run_sync(_pg_fingerprint(url, schemas))


def _run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` run to its end on a loop of its own (the thread's loop, if any, stays untouched)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def changed(before: dict[Any, str], after: dict[Any, str]) -> list[str]:
    """Names of what differs between two fingerprints (added, removed or rewritten)."""
    names = set(before) | set(after)
    return sorted(str(n) for n in names if before.get(n) != after.get(n))
