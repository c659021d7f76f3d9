"""The one contract for what a request may carry, checked at every service's edge (SPEC §0, §10).

Every request of every service passes :func:`check_request` in the server bootstrap
(``novaberg_core.server``) before its handler runs, streaming requests message by message. A
violation is :class:`~novaberg_core.errors.InvalidArgument` naming the field path, so a refused
call has read and written nothing. The rules are data, chosen by field name (the contracts name
their fields uniformly), and every string field of every request must have a kind here — a test
walks all request types, so a new field cannot slip through unclassified.

What the contract guarantees to the stores behind it:

- no string holds NUL, a C0/C1 control character (free text may hold tab and line breaks), a
  lone surrogate or a Unicode non-character; invalid UTF-8 never reaches a handler
  (:func:`safe_deserializer`);
- identifiers and names are NFC-normalised in place (so one pair never has two spellings) and
  bounded; pair ids hold no ``:`` (it separates the parts of memory keys) and no outer whitespace;
- text is bounded (:data:`TEXT_MAX_CHARS`); embedded text is truncated further, documented in
  :mod:`novaberg_core.embedding.texts`;
- every number is finite, counts and ids are not negative and stay under their maxima, enums are
  defined values, repeated fields are bounded, and every timestamp lies in the range every store
  holds (:data:`TIME_MIN` … :data:`TIME_MAX`; a timeline's ``zeitpunkt`` may reach back to year 1).

Pair isolation does not rest on this check alone: the KZG's search index filters by
:func:`pair_token`, a hex token that no id can alter (docs/decisions.md).
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from novaberg_core.errors import InvalidArgument
from novaberg_core.timeutil import TIMESTAMP_TYPE

__all__ = [
    "BATCH_MAX_TURNS",
    "INT_MAXIMA",
    "PAIR_ID_MAX_LEN",
    "REPEATED_MAXIMA",
    "STRING_KINDS",
    "TEXT_MAX_CHARS",
    "TIME_MAX",
    "TIME_MIN",
    "TURN_ID_MAX_LEN",
    "UNDECODABLE",
    "ZEITPUNKT_MIN",
    "Kind",
    "check_pair",
    "check_request",
    "check_text",
    "pair_token",
    "safe_deserializer",
    "string_fields_of",
    "user_token",
]

from novaberg_core.limits import (  # re-exported: the contract checks every request against them
    BATCH_MAX_TURNS,
    GEDAECHTNISTYP_MAX_LEN,
    IDENT_MAX_LEN,
    JSON_MAX_CHARS,
    LABEL_MAX_LEN,
    NAME_MAX_LEN,
    PAIR_ID_MAX_LEN,
    TEXT_MAX_CHARS,
    THEME_MAX_LEN,
    TURN_ID_MAX_LEN,
)

TIME_MIN = datetime(1970, 1, 1, tzinfo=UTC)
"""Earliest instant the system records (``as_of``, creation times): the stores' epoch arithmetic."""
TIME_MAX = datetime(9999, 12, 30, tzinfo=UTC)
"""Latest instant: a day inside what Python, PostgreSQL and the protobuf Timestamp all hold."""
ZEITPUNKT_MIN = datetime(1, 1, 2, tzinfo=UTC)
"""A timeline reference may name a date long past (a day inside year 1, so no zone shifts it out)."""


class Kind(StrEnum):
    """What a string field holds; each kind has its own rule (:func:`_check_string`)."""

    PAIR_ID = "pair_id"
    IDENT = "ident"
    NAME = "name"
    THEME = "theme"
    LABEL = "label"
    TEXT = "text"
    JSON = "json"


STRING_KINDS: Mapping[str, Kind] = {
    # the pair (SPEC §0); log records carry them loose, empty for maintenance runs (SPEC §8)
    "user_id": Kind.PAIR_ID,
    "character_id": Kind.PAIR_ID,
    # identifiers
    **dict.fromkeys(
        (
            "turn_id", "ausloeser_turn_id", "span_id", "trace_id", "entry_id", "kzg_key", "job_ids",
            "consumer", "task", "reader", "readers", "cluster", "praezision", "writer", "role", "node",
            "quelle", "art", "typ", "typ_for_new", "salienz_eingang_herkunft", "nova_sektor", "sprache", "zeitzone",
            "traceparent", "quell_turn_id", "kzg_quell_key", "model_id", "embedding_model_id",
            # a person's rights (forget, correct, import, requeue)
            "kzg_keys", "source_turn_id", "job_id",
        ),
        Kind.IDENT,
    ),
    # names people and things go by
    **dict.fromkeys(("name", "names", "aliases", "user_name", "character_name", "titel", "sprecher"), Kind.NAME),
    # themes (SPEC §4.4: '|' separates them in the KZG index)
    **dict.fromkeys(("themen", "geteilte_themen"), Kind.THEME),
    # labels of the salience/EI analysis and of the read
    **dict.fromkeys(
        (
            "emotion", "modus", "intentionen", "intention", "sprach_stil", "tone", "beziehungs_dynamik",
            "emotions_vektor", "dimension", "gedaechtnistyp", "nova_emotion", "verbindungs_gruende", "term",
            "quellen",
        ),
        Kind.LABEL,
    ),
    # free text
    **dict.fromkeys(
        ("inhalt", "text", "query_text", "answer_text", "user_prompt", "reason", "hash_dirty_reason", "lexical_text",
         "session_summary", "antwort_auf"),
        Kind.TEXT,
    ),
    # the lines of an export file (novaberg.export/1), one JSON record each
    **dict.fromkeys(("inhalt_json", "user_emotion_json", "nova_emotion_json", "lines"), Kind.JSON),
}
"""Every string field name of every request, and its kind."""

_STRING_MAX: Mapping[Kind, int] = {
    Kind.PAIR_ID: PAIR_ID_MAX_LEN,
    Kind.IDENT: IDENT_MAX_LEN,
    Kind.NAME: NAME_MAX_LEN,
    Kind.THEME: THEME_MAX_LEN,
    Kind.LABEL: LABEL_MAX_LEN,
    Kind.TEXT: TEXT_MAX_CHARS,
    Kind.JSON: JSON_MAX_CHARS,
}
_FIELD_MAX_LEN: Mapping[str, int] = {"turn_id": TURN_ID_MAX_LEN, "ausloeser_turn_id": TURN_ID_MAX_LEN,
                                     "source_turn_id": TURN_ID_MAX_LEN, "gedaechtnistyp": GEDAECHTNISTYP_MAX_LEN}  # fmt: skip
_NORMALISED = frozenset({Kind.PAIR_ID, Kind.IDENT, Kind.NAME, Kind.THEME, Kind.LABEL})

REPEATED_MAXIMA: Mapping[str, int] = {
    "turns": BATCH_MAX_TURNS, "appends": BATCH_MAX_TURNS,
    "themen": 32, "geteilte_themen": 32, "intentionen": 32, "entitaet_ids": 64, "geteilte_entitaet_ids": 64,
    "served_node_ids": 64, "names": 256, "aliases": 64, "readers": 8, "goals": 32, "erinnerungen": 100,
    "pfad": 8, "verbindungs_gruende": 8, "ids": 1_000, "job_ids": 1_000, "kzg_keys": 1_000, "node_ids": 1_000,
    "question_entity_ids": 64, "zeitfenster": 16, "recall": 100, "query_terms": 256,
    "lines": 1_000, "entries": 1_000, "nodes": 1_000, "edges": 1_000, "session_turns": 1_000,
    "embedding": 4_096, "values": 4_096,
}  # fmt: skip
"""Most items a repeated field may carry; any other repeated field: :data:`_REPEATED_DEFAULT_MAX`."""
_REPEATED_DEFAULT_MAX = 1_000

INT_MAXIMA: Mapping[str, int] = {
    "count": 1_000, "limit": 100_000, "top_k": 100, "recall_k": 100, "block_ms": 30_000,
    "reclaim_idle_ms": 7 * 86_400_000, "retention_days": 100 * 366, "haeufigkeit": 1_000_000,
}  # fmt: skip
"""Upper bounds of counts; every integer is also ≥ 0 unless listed in :data:`_INT_MAY_BE_NEGATIVE`."""
_INT_MAY_BE_NEGATIVE = frozenset({"ttl_seconds"})  # -1: the key has no TTL (SPEC §4.1)
_UNIT_INTERVAL = frozenset({"salienz", "salienz_eingang", "arousal", "min_salienz"})
"""Numbers that are scores within 0..1 wherever they appear (SPEC §4.2, kzg §2)."""

_WIDE_TIME_FIELDS = frozenset({"zeitpunkt"})

_ALLOWED_IN_TEXT = frozenset("\t\n\r")


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


_TIME_BOUNDS = (_epoch(TIME_MIN), _epoch(TIME_MAX))
_WIDE_TIME_BOUNDS = (_epoch(ZEITPUNKT_MIN), _epoch(TIME_MAX))


def _bad_character(value: str, allow_whitespace_controls: bool) -> str | None:
    """A description of the first character no store may hold, or None."""
    for index, char in enumerate(value):
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            if allow_whitespace_controls and char in _ALLOWED_IN_TEXT:
                continue
            return f"control character U+{code:04X} at position {index}"
        if 0xD800 <= code <= 0xDFFF:
            return f"lone surrogate U+{code:04X} at position {index}"
        if (code & 0xFFFE) == 0xFFFE or 0xFDD0 <= code <= 0xFDEF:
            return f"non-character U+{code:04X} at position {index}"
    return None


def check_text(value: str, path: str, *, kind: Kind = Kind.TEXT, max_len: int | None = None) -> str:
    """``value`` checked by the rule of ``kind``; returns it NFC-normalised where the kind says so."""
    limit = max_len if max_len is not None else _STRING_MAX[kind]
    if len(value) > limit:
        raise InvalidArgument(f"{path} must be at most {limit} characters, got {len(value)}")
    if value.isascii() and value.isprintable():
        bad = None  # the common case: nothing to look at character by character
    else:
        bad = _bad_character(value, allow_whitespace_controls=kind in (Kind.TEXT, Kind.JSON))
    if bad is not None:
        raise InvalidArgument(f"{path} must not contain a {bad}")
    if kind is Kind.JSON and "\\u0000" in value:
        raise InvalidArgument(f"{path} must not contain the JSON escape \\u0000 (no store can hold NUL)")
    if kind is Kind.THEME and "|" in value:
        raise InvalidArgument(f"{path} must not contain '|' (it separates themes): {value!r}")
    if kind is Kind.PAIR_ID:
        if value != value.strip():
            raise InvalidArgument(f"{path} must not start or end with whitespace: {value!r}")
        if ":" in value:
            raise InvalidArgument(f"{path} must not contain ':' (it separates the parts of memory keys): {value!r}")
    if kind in _NORMALISED and not value.isascii():
        value = unicodedata.normalize("NFC", value)
    return value


class NamesPair(Protocol):
    """Anything that names a pair (SPEC §0): the shared ``Pair``, a ``common_pb2.Pair``, a request."""

    @property
    def user_id(self) -> str: ...

    @property
    def character_id(self) -> str: ...


def check_pair(user_id: str, character_id: str, field: str = "pair") -> None:
    """Both ids set and within the pair-id rule (SPEC §0); raises naming ``<field>.user_id`` etc."""
    for name, value in ((f"{field}.user_id", user_id), (f"{field}.character_id", character_id)):
        if not value or not value.strip():
            raise InvalidArgument(f"{name} must not be empty")
        check_text(value, name, kind=Kind.PAIR_ID)


def pair_token(user_id: str, character_id: str) -> str:
    """A pair's index token: 32 hex digits that no id can alter or split (length-prefixed hash).

    The KZG's search index filters a pair by this token instead of by the raw ids, so a ``,``, ``|``
    or any query syntax inside an id can never widen a filter (the breach a TAG list allowed).
    """
    digest = hashlib.sha256(f"{len(user_id)}:{user_id}\x1f{character_id}".encode()).hexdigest()
    return digest[:32]


def user_token(user_id: str) -> str:
    """The token of all pairs of one user (e.g. to find every character's memories of a user)."""
    return hashlib.sha256(f"user\x1f{user_id}".encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------------- the walker


def _check_timestamp(message: Message, path: str, wide: bool) -> None:
    seconds, nanos = message.seconds, message.nanos  # type: ignore[attr-defined]
    if not 0 <= nanos < 1_000_000_000:
        raise InvalidArgument(f"{path}.nanos must be within 0..999999999, got {nanos}")
    low, high = _WIDE_TIME_BOUNDS if wide else _TIME_BOUNDS
    # The last instant is TIME_MAX itself: a fraction of a second after it is after it (stored as a
    # float epoch it rounded up to the next second, which an export then carried and an import refused).
    if not low <= seconds <= high or (seconds == high and nanos > 0):
        first = ZEITPUNKT_MIN if wide else TIME_MIN
        got = f"seconds={seconds}" + (f", nanos={nanos}" if nanos else "")
        raise InvalidArgument(
            f"{path} must lie between {first.date().isoformat()} and {TIME_MAX.date().isoformat()} "
            f"(seconds {low}..{high}), got {got}"
        )


def _check_number(name: str, value: float, path: str) -> None:
    if not math.isfinite(value):
        raise InvalidArgument(f"{path} must be a finite number, got {value!r}")
    if name in _UNIT_INTERVAL and not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{path} must lie within 0..1, got {value!r}")


def _check_int(name: str, value: int, path: str) -> None:
    if value < 0 and name not in _INT_MAY_BE_NEGATIVE:
        raise InvalidArgument(f"{path} must not be negative, got {value}")
    limit = INT_MAXIMA.get(name)
    if limit is not None and value > limit:
        raise InvalidArgument(f"{path} must be at most {limit}, got {value}")


_FLOATS = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)
_INTS = (
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64,
)  # fmt: skip


def _check_string(field: FieldDescriptor, value: str, path: str) -> str:
    kind = STRING_KINDS.get(field.name)
    if kind is None:  # guarded by a test over every request type; free text is the safe default
        kind = Kind.TEXT
    return check_text(value, path, kind=kind, max_len=_FIELD_MAX_LEN.get(field.name))


def _check_scalar(field: FieldDescriptor, value: Any, path: str) -> Any:
    """One scalar value; returns the (possibly normalised) value to keep."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _check_string(field, value, path)
    if kind in _FLOATS:
        _check_number(field.name, value, path)
    elif kind in _INTS:
        _check_int(field.name, value, path)
    elif kind == FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if enum.values_by_number.get(value) is None:
            allowed = ", ".join(v.name for v in enum.values)
            raise InvalidArgument(f"{path} = {value} is not a value of {enum.name} ({allowed})")
    return value


def _check_message(message: Message, path: str) -> None:
    for field, value in message.ListFields():
        here = f"{path}.{field.name}" if path else field.name
        if field.is_repeated:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                continue  # no request carries a map today
            limit = REPEATED_MAXIMA.get(field.name, _REPEATED_DEFAULT_MAX)
            if len(value) > limit:
                raise InvalidArgument(f"{here} may hold at most {limit} items, got {len(value)}")
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                for index, item in enumerate(value):
                    _check_submessage(field, item, f"{here}[{index}]")
            elif field.type in _FLOATS:
                if not all(map(math.isfinite, value)):
                    raise InvalidArgument(f"{here} must hold finite numbers only")
                if field.name in _UNIT_INTERVAL and not all(0.0 <= v <= 1.0 for v in value):
                    raise InvalidArgument(f"{here} values must lie within 0..1")
            else:
                for index, item in enumerate(value):
                    checked = _check_scalar(field, item, f"{here}[{index}]")
                    if checked is not item and checked != item:
                        value[index] = checked
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            _check_submessage(field, value, here)
        else:
            checked = _check_scalar(field, value, here)
            if checked != value:
                setattr(message, field.name, checked)


def _check_submessage(field: FieldDescriptor, message: Message, path: str) -> None:
    if message.DESCRIPTOR.full_name == TIMESTAMP_TYPE:
        _check_timestamp(message, path, wide=field.name in _WIDE_TIME_FIELDS)
    else:
        _check_message(message, path)


def check_request(request: Message) -> None:
    """Checks (and NFC-normalises in place) every set field of ``request``; see the module docstring."""
    _check_message(request, "")


# ------------------------------------------------------------------------ undecodable requests


class _Undecodable:
    """Stands in for a request whose bytes are not a valid message (e.g. invalid UTF-8 in a string)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def refuse(self) -> InvalidArgument:
        return InvalidArgument(f"the request is not a valid message: {self.reason}")


UNDECODABLE = _Undecodable
"""The type :func:`safe_deserializer` returns for bytes that do not parse."""


def safe_deserializer(parse: Callable[[bytes], Message]) -> Callable[[bytes], Message | _Undecodable]:
    """``parse`` that returns an :data:`UNDECODABLE` marker instead of raising.

    gRPC answers a raising deserializer with UNKNOWN/INTERNAL; with the marker the bootstrap
    answers INVALID_ARGUMENT instead, for unary and streaming requests alike.
    """

    def deserialize(data: bytes) -> Message | _Undecodable:
        try:
            return parse(data)
        except (DecodeError, UnicodeDecodeError, ValueError) as error:
            reason = str(error) or type(error).__name__
            if "utf-8" in reason.lower() or "utf8" in reason.lower():
                reason = "a string field holds invalid UTF-8"
            return _Undecodable(reason)

    return deserialize


def string_fields_of(descriptor: Descriptor, seen: set[str] | None = None) -> Iterable[tuple[str, str]]:
    """(message full name, field name) of every string field reachable from ``descriptor``."""
    seen = set() if seen is None else seen
    if descriptor.full_name in seen:
        return
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            yield descriptor.full_name, field.name
        elif field.message_type is not None:
            yield from string_fields_of(field.message_type, seen)
