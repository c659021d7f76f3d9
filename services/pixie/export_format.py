"""The export format ``novaberg.export/1`` (docs/decisions.md "Export"): JSON lines, UTF-8. The first line
is the header ``{"schema": "novaberg.export/1", "exported_at", "pair", "model_id", "counts"}``; then
one record per line with a ``type`` — ``entity``, ``timeline``, ``node``, ``edge`` (the proto3 JSON
mapping of ``lzg.v1.Entity``/``Timeline``/``Node``/``Edge`` with field names as in the proto, the
pair left out), ``kzg_entry`` (``common.v1.KzgEntry`` plus ``promotion_queued``), one ``session``
(turns, summary) and, where the pair has one, one ``profile`` (``common.v1.PairProfile``: how its
speakers are named, its language). Ids are those of the exporting store; an import maps them to new
ones. Vectors are not exported: they are derived from the text by the model and re-made at import.

The lines of an export (:func:`export_lines`), their parse (:func:`parse_lines`) and the chunking of
lines and records (:func:`chunks`); the calls that move them are :mod:`services.pixie.app.rights`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.errors import InvalidArgument
from novaberg_core.timeutil import utc_now

__all__ = ["EXPORT_SCHEMA", "LINES_PER_CHUNK", "ParsedExport", "chunks", "export_lines", "parse_lines"]

EXPORT_SCHEMA: Final = "novaberg.export/1"
LINES_PER_CHUNK: Final = 500
"""Lines per ExportChunk and records per import message (under gRPC's 4 MB message limit)."""


def _json(message: Message) -> dict[str, Any]:
    return MessageToDict(
        message,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
        unquote_int64_if_possible=True,
    )


def _record(kind: str, message: Message, *, drop: Iterable[str] = ("pair",), **extra: Any) -> str:
    data = _json(message)
    for name in (*drop, "embedding"):
        data.pop(name, None)
    return json.dumps({"type": kind, **data, **extra}, ensure_ascii=False)


def export_lines(
    pair: common_pb2.Pair,
    model_id: str,
    lzg_chunks: Sequence[lzg_pb2.ExportPairChunk],
    kzg_chunks: Sequence[kzg_pb2.ExportPairResponse],
) -> list[str]:
    """The lines of an export (header first) from what the LZG and the KZG answered."""
    entities = [e for c in lzg_chunks for e in c.entities]
    timelines = [t for c in lzg_chunks for t in c.timelines]
    nodes = [n for c in lzg_chunks for n in c.nodes]
    edges = [e for c in lzg_chunks for e in c.edges]
    entries = [e for c in kzg_chunks for e in c.entries]
    session = kzg_chunks[0] if kzg_chunks else kzg_pb2.ExportPairResponse()
    profiles = [c.profile for c in kzg_chunks if c.HasField("profile")]
    header = {
        "schema": EXPORT_SCHEMA,
        "exported_at": utc_now().isoformat(),
        "pair": {"user_id": pair.user_id, "character_id": pair.character_id},
        "model_id": model_id,
        "counts": {
            "entity": len(entities),
            "timeline": len(timelines),
            "node": len(nodes),
            "edge": len(edges),
            "kzg_entry": len(entries),
            "session_turn": len(session.session_turns),
            "profile": len(profiles),
        },
    }
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [_record("entity", e) for e in entities]
    lines += [_record("timeline", t) for t in timelines]
    lines += [_record("node", n) for n in nodes]
    lines += [_record("edge", e) for e in edges]
    lines += [_record("kzg_entry", e.entry, promotion_queued=e.promotion_queued) for e in entries]
    lines.append(
        json.dumps(
            {
                "type": "session",
                "turns": [_json(t) for t in session.session_turns],
                "summary": session.session_summary,
            },
            ensure_ascii=False,
        )
    )
    lines += [_record("profile", p) for p in profiles]
    return lines


@dataclass
class ParsedExport:
    header: dict[str, Any]
    entities: list[lzg_pb2.Entity] = field(default_factory=list)
    timelines: list[lzg_pb2.Timeline] = field(default_factory=list)
    nodes: list[lzg_pb2.Node] = field(default_factory=list)
    edges: list[lzg_pb2.Edge] = field(default_factory=list)
    entries: list[kzg_pb2.ExportedEntry] = field(default_factory=list)
    turns: list[kzg_pb2.SessionTurn] = field(default_factory=list)
    summary: str = ""
    profile: common_pb2.PairProfile | None = None


_TYPES: Final[dict[str, type[Message]]] = {
    "entity": lzg_pb2.Entity,
    "timeline": lzg_pb2.Timeline,
    "node": lzg_pb2.Node,
    "edge": lzg_pb2.Edge,
    "kzg_entry": common_pb2.KzgEntry,
    "profile": common_pb2.PairProfile,
}


def parse_lines(lines: Sequence[str]) -> ParsedExport:
    """An export's lines as messages; INVALID_ARGUMENT naming the line for anything else."""
    if not lines:
        raise InvalidArgument("the import holds no lines (expected a novaberg.export/1 file)")
    try:
        header = json.loads(lines[0])
    except ValueError as error:
        raise InvalidArgument(f"line 1 is not JSON: {error}") from None
    if not isinstance(header, dict) or header.get("schema") != EXPORT_SCHEMA:
        schema = header.get("schema") if isinstance(header, dict) else None
        raise InvalidArgument(f"line 1 must be a {EXPORT_SCHEMA} header, got schema {schema!r}")
    parsed = ParsedExport(header)
    sessions = 0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as error:
            raise InvalidArgument(f"line {number} is not JSON: {error}") from None
        if not isinstance(data, dict):
            raise InvalidArgument(f"line {number} is not a JSON object")
        kind = data.pop("type", None)
        try:
            if kind == "session":
                sessions += 1
                parsed.turns += [ParseDict(t, kzg_pb2.SessionTurn()) for t in data.get("turns", [])]
                parsed.summary = str(data.get("summary", ""))
                continue
            message_type = _TYPES.get(str(kind))
            if message_type is None:
                raise InvalidArgument(f"line {number}: unknown record type {kind!r}")
            queued = bool(data.pop("promotion_queued", False))
            message = ParseDict(data, message_type())
        except (ParseError, ValueError, TypeError, AttributeError) as error:
            raise InvalidArgument(f"line {number} ({kind}): {error}") from None
        if isinstance(message, lzg_pb2.Entity):
            parsed.entities.append(message)
        elif isinstance(message, lzg_pb2.Timeline):
            parsed.timelines.append(message)
        elif isinstance(message, lzg_pb2.Node):
            parsed.nodes.append(message)
        elif isinstance(message, lzg_pb2.Edge):
            parsed.edges.append(message)
        elif isinstance(message, common_pb2.PairProfile):
            if parsed.profile is not None:
                raise InvalidArgument(f"line {number}: the import holds more than one profile line")
            parsed.profile = message
        else:
            assert isinstance(message, common_pb2.KzgEntry)
            parsed.entries.append(kzg_pb2.ExportedEntry(entry=message, promotion_queued=queued))
    if sessions > 1:
        raise InvalidArgument("the import holds more than one session line")
    return parsed



def chunks(items: Sequence[Any], size: int = LINES_PER_CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

