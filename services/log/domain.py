"""Rules of the pipeline log (SPEC §8, syn §10): record validation, query filters, windows, retention.

Pure functions without I/O. The per-record rules are shared with the writer client
(:func:`novaberg_core.pipeline_log.record_problem`) so writer and service agree on what is valid.
"""

from __future__ import annotations

import functools
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from novaberg_core.errors import InvalidArgument
from novaberg_core.pipeline_log import ARTEN, TURN_ROH, RecordColumns, record_problem
from novaberg_core.timeutil import EPOCH

__all__ = [
    "CLUSTER_WINDOW",
    "COPY_COLUMNS",
    "DEFAULT_LAST_ANSWERS",
    "DEFAULT_QUERY_LIMIT",
    "MAX_QUERY_LIMIT",
    "TOKEN_WINDOW",
    "TURN_ROH",
    "LogQuery",
    "NewRow",
    "WireRecord",
    "decode_inhalt",
    "new_row",
    "pair_filter",
    "positive_limit",
    "retention_horizon",
    "time_from_parts",
    "window",
]

DEFAULT_QUERY_LIMIT: Final = 1000
MAX_QUERY_LIMIT: Final = 10_000
DEFAULT_LAST_ANSWERS: Final = 5
CLUSTER_WINDOW: Final = timedelta(days=7)
"""syn §10.4: clusters chosen "in der letzten Woche"."""
TOKEN_WINDOW: Final = timedelta(hours=24)
"""syn §10.4: token usage "der letzten 24 Stunden"."""

COPY_COLUMNS: Final = (
    "erstellt_am",
    "turn_id",
    "span_id",
    "quelle",
    "node",
    "art",
    "inhalt",
    "user_id",
    "character_id",
    "trace_id",
)
"""Columns of one :data:`NewRow`, in order (``id`` comes from the sequence)."""

NewRow = tuple[datetime, str, str | None, str, str, str, str, str | None, str | None, str | None]
"""One row to insert, in :data:`COPY_COLUMNS` order; ``inhalt`` as JSON text."""

_MIN_SECONDS: Final = -62_135_596_800  # 0001-01-01T00:00:00Z, the protobuf Timestamp range
_MAX_SECONDS: Final = 253_402_300_799  # 9999-12-31T23:59:59Z


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (jsonb has no NaN or Infinity)")


# One decoder instance: json.loads with options builds a new decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def decode_inhalt(text: str) -> Any:
    """Parse ``inhalt_json`` (empty → JSON null); ValueError with the reason when jsonb cannot hold it."""
    if not text:
        return None
    value = _DECODER.decode(text)
    if "\\u0000" in text and _has_nul(value):
        raise ValueError("contains a NUL character (\\u0000), which jsonb cannot store")
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in k or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def time_from_parts(seconds: int, nanos: int) -> datetime:
    """A protobuf Timestamp's fields as aware UTC (exact to the microsecond); ValueError out of range."""
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS or not 0 <= nanos <= 999_999_999:
        raise ValueError("is outside the protobuf Timestamp range")
    return _second(seconds).replace(microsecond=nanos // 1000)


@functools.lru_cache(maxsize=4096)
def _second(seconds: int) -> datetime:
    """The start of a second (cached: a batch's records share few seconds)."""
    return EPOCH + timedelta(seconds=seconds)


class _Stamp(Protocol):
    @property
    def seconds(self) -> int: ...
    @property
    def nanos(self) -> int: ...


class WireRecord(RecordColumns, Protocol):
    """A record as the log service receives it (``LogRecord``): the columns, the time as seconds
    and nanos, ``inhalt`` as JSON text."""

    @property
    def erstellt_am(self) -> _Stamp: ...
    @property
    def inhalt_json(self) -> str: ...


def new_row(record: WireRecord, now: datetime) -> NewRow:
    """One validated row (SPEC §8); ValueError naming the field otherwise.

    Empty strings become NULL; an unset ``erstellt_am`` (0, 0) becomes ``now``.
    """
    try:
        inhalt = decode_inhalt(record.inhalt_json)
    except ValueError as exc:
        raise ValueError(f"inhalt_json is not valid JSON for jsonb: {exc}") from None
    problem = record_problem(record, inhalt)
    if problem is not None:
        raise ValueError(problem)
    seconds, nanos = record.erstellt_am.seconds, record.erstellt_am.nanos
    if seconds == 0 and nanos == 0:
        erstellt_am = now
    else:
        try:
            erstellt_am = time_from_parts(seconds, nanos)
        except ValueError as exc:
            raise ValueError(f"erstellt_am {exc}") from None
    r = record
    return (
        erstellt_am, r.turn_id, r.span_id or None, r.quelle, r.node, r.art, r.inhalt_json or "null",
        r.user_id or None, r.character_id or None, r.trace_id or None,
    )  # fmt: skip


def pair_filter(user_id: str, character_id: str, field: str = "pair") -> tuple[str | None, str | None]:
    """A pair filter: both set, or both empty (no filter); a half pair is InvalidArgument."""
    if bool(user_id) != bool(character_id):
        raise InvalidArgument(f"{field}: user_id and character_id must be both set or both empty")
    return (user_id or None, character_id or None)


def positive_limit(limit: int, default: int, field: str = "limit") -> int:
    """``limit`` (0 → ``default``) within 1..MAX_QUERY_LIMIT; negative or too large is InvalidArgument."""
    if limit < 0:
        raise InvalidArgument(f"{field} must be >= 0 (0 = default {default}), got {limit}")
    if limit > MAX_QUERY_LIMIT:
        raise InvalidArgument(f"{field} must be <= {MAX_QUERY_LIMIT}, got {limit}")
    return limit or default


def window(
    since: datetime | None, until: datetime | None, default_span: timedelta, now: datetime
) -> tuple[datetime, datetime]:
    """The half-open window [since, until): ``until`` defaults to now, ``since`` to ``until - default_span``."""
    end = until or now
    start = since or end - default_span
    if start >= end:
        raise InvalidArgument(f"since ({start.isoformat()}) must be before until ({end.isoformat()})")
    return start, end


def retention_horizon(as_of: datetime, retention_days: int) -> datetime:
    """Rows created before this instant are purged, except ``turn_roh`` (syn §10.5)."""
    if retention_days < 1:
        raise InvalidArgument(f"retention_days must be >= 1, got {retention_days}")
    return as_of - timedelta(days=retention_days)


@dataclass(frozen=True, slots=True)
class LogQuery:
    """A validated ``Query`` request: every filter optional, ``until`` exclusive."""

    turn_id: str | None = None
    span_id: uuid.UUID | None = None
    node: str | None = None
    art: str | None = None
    user_id: str | None = None
    character_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    trace_id: str | None = None
    quelle: str | None = None
    limit: int = DEFAULT_QUERY_LIMIT
    descending: bool = False

    @classmethod
    def build(
        cls,
        *,
        turn_id: str = "",
        span_id: str = "",
        node: str = "",
        art: str = "",
        user_id: str = "",
        character_id: str = "",
        since: datetime | None = None,
        until: datetime | None = None,
        trace_id: str = "",
        quelle: str = "",
        limit: int = 0,
        descending: bool = False,
    ) -> LogQuery:
        """Validate the filters of a ``Query`` (empty = no filter); InvalidArgument names the field."""
        if art and art not in ARTEN:
            raise InvalidArgument(f"art {art!r} is not one of {', '.join(sorted(ARTEN))}")
        span: uuid.UUID | None = None
        if span_id:
            try:
                span = uuid.UUID(span_id)
            except ValueError:
                raise InvalidArgument(f"span_id {span_id!r} is not a UUID") from None
        user, character = pair_filter(user_id, character_id)
        if since is not None and until is not None and since >= until:
            raise InvalidArgument(f"since ({since.isoformat()}) must be before until ({until.isoformat()})")
        return cls(
            turn_id=turn_id or None,
            span_id=span,
            node=node or None,
            art=art or None,
            user_id=user,
            character_id=character,
            since=since,
            until=until,
            trace_id=trace_id.lower() or None,
            quelle=quelle or None,
            limit=positive_limit(limit, DEFAULT_QUERY_LIMIT),
            descending=descending,
        )
