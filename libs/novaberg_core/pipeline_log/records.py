"""A pipeline_log record and its rules (SPEC §8, syn §10.1–10.2): the arts, the column widths,
the buffered record, the encoding of ``inhalt`` and the checks the log service applies too."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, Protocol

from novaberg_core.contract import PAIR_ID_MAX_LEN, TURN_ID_MAX_LEN, NamesPair

ARTEN: Final[frozenset[str]] = frozenset(
    {
        "eingang",
        "prompt",
        "berechnung",
        "switch",
        "db_write",
        "db_read",
        "ausgabe",
        "fehler",
        "bemerkung",
        "span_start",
        "span_end",
        "token",
        "turn_roh",
    }
)
"""The 13 ``art`` values of SPEC §8 (syn §10.2)."""

TURN_ROH: Final = "turn_roh"
"""The one art that is not forensic: never dropped by the writer, never purged (syn §10.5)."""

SHAPED_ARTEN: Final[frozenset[str]] = frozenset({"switch", "token", "turn_roh"})
"""Arts whose ``inhalt`` has a fixed shape that :func:`record_problem` checks."""

# Column widths of log.pipeline_log (syn §10.1).
QUELLE_MAX_LEN: Final = 50
NODE_MAX_LEN: Final = 50


DEFAULT_FLUSH_SECONDS: Final = 10.0
"""LZG_PIPELINE_LOG_FLUSH_SEKUNDEN (syn §3 config block)."""
DEFAULT_BATCH_SIZE: Final = 1000
DEFAULT_MAX_BUFFER: Final = 100_000

ENV_FLUSH_SECONDS: Final = "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN"
ENV_FLUSH_SECONDS_SEED: Final = "LZG_PIPELINE_LOG_FLUSH_SEKUNDEN"
ENV_BATCH_SIZE: Final = "NOVABERG_PIPELINE_LOG_BATCH"
ENV_MAX_BUFFER: Final = "NOVABERG_PIPELINE_LOG_MAX_BUFFER"

_ENTSCHEIDUNG = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_CANONICAL_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# One encoder instance: json.dumps with options builds a new encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False, separators=(",", ":"))
_STRICT_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

# --- where a record belongs ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogScope(Mapping[str, Any]):
    """Where records belong (SPEC §8 columns): the turn, the span they ran in, the pair and the
    time of the step (the request's ``as_of``; None: now).

    A use case builds it once and passes it to every record it writes as one argument,
    ``log.db_write(**where, node=…, …)``: it is the mapping of those keywords.
    """

    turn_id: str
    span_id: str | None = None
    user_id: str | None = None
    character_id: str | None = None
    erstellt_am: datetime | None = None

    @classmethod
    def of_pair(
        cls, turn_id: str, pair: NamesPair, span_id: str | None = None, erstellt_am: datetime | None = None
    ) -> LogScope:
        """The scope of a step of one pair (anything with ``user_id`` and ``character_id``)."""
        return cls(turn_id, span_id, pair.user_id, pair.character_id, erstellt_am)

    def __getitem__(self, key: str) -> Any:
        if key not in _SCOPE_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_SCOPE_KEYS)

    def __len__(self) -> int:
        return len(_SCOPE_KEYS)


_SCOPE_KEYS: Final = ("turn_id", "span_id", "user_id", "character_id", "erstellt_am")


def count_names(counts_type: type, **names: str) -> Mapping[str, str]:
    """The table of what a result type's numbers are called in its record (log name → attribute),
    read-only and checked once: an attribute that is not a field of ``counts_type`` fails at import."""
    known = {f.name for f in fields(counts_type)}
    unknown = sorted(set(names.values()) - known)
    if unknown:
        raise TypeError(f"{counts_type.__name__} has no field {', '.join(unknown)}")
    return MappingProxyType(names)


def count_fields(counts: object, names: Mapping[str, str]) -> dict[str, Any]:
    """A record's counts, ``{log name: counts.<attribute>}`` in the order of ``names``
    (:func:`count_names`)."""
    return {log_name: getattr(counts, attribute) for log_name, attribute in names.items()}


# --- record and its rules ---------------------------------------------------------------------


@dataclass(slots=True)
class PendingRecord:
    """One pipeline_log row waiting in the buffer (columns of syn §10.1 plus ``trace_id``)."""

    erstellt_am: datetime
    turn_id: str
    node: str
    art: str
    inhalt: Any
    quelle: str
    span_id: str | None = None
    user_id: str | None = None
    character_id: str | None = None
    trace_id: str | None = None
    seq: int = 0
    """Write order within this writer; keeps a turn's rows in order across the two buffers."""
    inhalt_text: str | None = field(default=None, repr=False)
    """``inhalt`` as JSON text, filled once by the flusher."""

    def inhalt_json(self) -> str:
        """``inhalt`` as JSON text that PostgreSQL's jsonb accepts (cached)."""
        if self.inhalt_text is None:
            self.inhalt_text = encode_inhalt(self.inhalt)
        return self.inhalt_text


def encode_inhalt(inhalt: Any) -> str:
    """JSON text for ``inhalt`` that jsonb stores (SPEC §8: string, object or null).

    Values JSON cannot express are made expressible instead of failing a forensic write:
    unknown types become their ``str()``, NaN/±inf become strings, non-string keys become strings
    and NUL characters (which jsonb refuses) become U+FFFD.
    """
    try:
        text = _ENCODER.encode(inhalt)
    except (TypeError, ValueError):
        return _STRICT_ENCODER.encode(_jsonable(inhalt))
    if "\\u0000" in text:
        return _STRICT_ENCODER.encode(_jsonable(inhalt))
    return text


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, Mapping):
        return {_jsonable(str(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return _jsonable(str(value))


class RecordColumns(Protocol):
    """The columns of one record that SPEC §8 rules: a buffered :class:`PendingRecord` or a
    ``LogRecord`` as the log service receives it."""

    @property
    def turn_id(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def art(self) -> str: ...
    @property
    def quelle(self) -> str: ...
    @property
    def span_id(self) -> str | None: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def character_id(self) -> str | None: ...
    @property
    def trace_id(self) -> str | None: ...


def record_problem(record: RecordColumns, inhalt: Any) -> str | None:
    """What is wrong with one record under SPEC §8, naming the field; None when it is valid.

    The same rules run in the writer's flusher and in the log service. ``inhalt`` is the decoded
    JSON value; it is only inspected for :data:`SHAPED_ARTEN`. Empty strings count as NULL for
    ``span_id``, ``user_id``, ``character_id`` and ``trace_id``.
    """
    turn_id, node, art, quelle = record.turn_id, record.node, record.art, record.quelle
    span_id, user_id, character_id, trace_id = record.span_id, record.user_id, record.character_id, record.trace_id
    if art not in ARTEN:
        return f"art {art!r} is not one of {', '.join(sorted(ARTEN))}"
    if not turn_id:
        return "turn_id must be set"
    if len(turn_id) > TURN_ID_MAX_LEN:
        return f"turn_id is longer than {TURN_ID_MAX_LEN} characters"
    if not node:
        return "node must be set"
    if len(node) > NODE_MAX_LEN:
        return f"node is longer than {NODE_MAX_LEN} characters"
    if not quelle:
        return "quelle must be set"
    if len(quelle) > QUELLE_MAX_LEN:
        return f"quelle is longer than {QUELLE_MAX_LEN} characters"
    if bool(user_id) != bool(character_id):
        return "user_id and character_id must be both set or both empty (a half pair)"
    if user_id and len(user_id) > PAIR_ID_MAX_LEN:
        return f"user_id is longer than {PAIR_ID_MAX_LEN} characters"
    if character_id and len(character_id) > PAIR_ID_MAX_LEN:
        return f"character_id is longer than {PAIR_ID_MAX_LEN} characters"
    if span_id and not _CANONICAL_UUID.match(span_id):
        return f"span_id {span_id!r} is not a UUID (8-4-4-4-12 hex digits)"
    if trace_id and (not _TRACE_ID.match(trace_id) or trace_id == "0" * 32):
        return f"trace_id {trace_id!r} is not 32 lowercase hex digits of a valid trace"
    if art == "switch":
        return _decision_problem(inhalt)
    if art == "token":
        return _token_problem(inhalt)
    if art == TURN_ROH and not isinstance(inhalt, dict):
        return "inhalt of a turn_roh record must be a JSON object"
    return None


def _decision_problem(inhalt: Any) -> str | None:
    """The decision shape of SPEC §8: ``entscheidung`` = ``<node>.<weiche>``, ``ausgang``, ``eingang``, ``massstab``."""
    if not isinstance(inhalt, dict):
        return "inhalt of a switch record must be a JSON object with entscheidung, ausgang, eingang, massstab"
    missing = [key for key in ("entscheidung", "ausgang", "eingang", "massstab") if key not in inhalt]
    if missing:
        return f"inhalt of a switch record lacks {', '.join(missing)}"
    entscheidung = inhalt["entscheidung"]
    if not isinstance(entscheidung, str) or not _ENTSCHEIDUNG.match(entscheidung):
        return f"inhalt.entscheidung {entscheidung!r} must be '<node>.<weiche>'"
    if inhalt["ausgang"] is None:
        return "inhalt.ausgang of a switch record must not be null"
    if inhalt["eingang"] is not None and not isinstance(inhalt["eingang"], dict):
        return "inhalt.eingang of a switch record must be a JSON object (the inputs one by one) or null"
    return None


def _token_problem(inhalt: Any) -> str | None:
    """The token shape of syn §10.2: ``input_tokens``, ``output_tokens``, ``kosten_usd`` (``modell``)."""
    if not isinstance(inhalt, dict):
        return "inhalt of a token record must be a JSON object"
    for key in ("input_tokens", "output_tokens"):
        value = inhalt.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"inhalt.{key} of a token record must be a non-negative integer"
    kosten = inhalt.get("kosten_usd")
    if isinstance(kosten, bool) or not isinstance(kosten, int | float) or not kosten >= 0:
        return "inhalt.kosten_usd of a token record must be a non-negative number"
    if "modell" in inhalt and not isinstance(inhalt["modell"], str):
        return "inhalt.modell of a token record must be a string"
    return None
