"""The KZG's Redis formats both ways (SPEC §3, §4.1, §4.6): entry hashes, session items, stream jobs.

The client speaks RESP3 without response decoding (the ``embedding`` field is raw bytes), so
text is decoded here and nowhere else. Formulas are never computed here: the write path passes
the values that ``services.kzg.domain`` computed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from novaberg_core.contract import pair_token, user_token
from novaberg_core.embedding import THEMEN_SEPARATOR, searched_text
from novaberg_core.lexical import LANGUAGES, language_of
from novaberg_core.model import EI_SCALARS, Ei, Magnets
from novaberg_core.timeutil import EPOCH
from services.kzg.domain import CanonCheck, dedupe_entitaet_ids, themen_norm
from services.kzg.types import EntryInput, KzgEntry, Pair, PromotionJobData, SessionTurnRecord, Vector

__all__ = [
    "BRIEF_FIELDS",
    "ENTRY_FIELDS",
    "consumer_name",
    "corrected_fields",
    "decode_brief",
    "decode_entry",
    "decode_read",
    "decode_turn",
    "decode_vector",
    "encode_turn",
    "encode_vector",
    "entry_fields",
    "float_or_none",
    "int_or_none",
    "job_from_fields",
    "moment_or_none",
    "search_rows",
    "search_total",
    "seconds",
    "stream_entries",
    "taken_member",
    "text",
]


def text(value: bytes | str | None) -> str:
    """A reply value as text ("" for none)."""
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def float_or_none(value: bytes | None) -> float | None:
    if value is None or value == b"":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def moment_or_none(value: bytes | None) -> datetime | None:
    """A time field (unix seconds, as every KZG time is kept in Redis); None when absent or unreadable
    (not a number, or none a datetime can hold: a damaged hash must not break its pair's reads)."""
    at = float_or_none(value)
    if at is None:
        return None
    try:
        return datetime.fromtimestamp(at, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def seconds(moment: datetime) -> str:
    """A time as a Redis field: unix seconds, so the search index can range over it (SPEC §11)."""
    return repr(moment.timestamp())


def int_or_none(value: bytes | None) -> int | None:
    """An integer field; None when absent or unreadable (a damaged hash must not break its pair's reads)."""
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _split(value: bytes | None, separator: str) -> tuple[str, ...]:
    joined = text(value)
    return tuple(part for part in joined.split(separator) if part) if joined else ()


def encode_vector(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def decode_vector(raw: bytes) -> Vector:
    return np.frombuffer(raw, dtype=np.float32)


def entry_fields(
    entry: EntryInput,
    themen: Sequence[str],
    canon: CanonCheck,
    salienz: float,
    vector: Vector,
    *,
    now: datetime,
    queued: bool,
    ttl_seconds: int,
    ablauf_am: datetime | None = None,
) -> dict[str, str | bytes]:
    """The hash of a new entry (SPEC §4.1) from a validated request; the only place it is encoded.

    Beyond §4.1 (SPEC §11): the speaker and language, ``suchtext`` for full-text retrieval, the
    expiry in the turn's own time (``ablauf_am``: ``now`` + ``ttl_seconds`` unless given, as an
    import gives the exported one) and the turn's trace (``traceparent``).
    """
    sprache = language_of(entry.sprache)
    expires = ablauf_am.timestamp() if ablauf_am is not None else now.timestamp() + ttl_seconds
    ei = entry.ei
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
        "emotion": ei.emotion,
        "modus": canon.modus,
        "arousal": repr(float(ei.arousal)),
        "emotions_vektor": ei.emotions_vektor,
        "sprach_stil": ei.sprach_stil,
        "beziehungs_dynamik": ei.beziehungs_dynamik or "neutral",
        "tone": ei.tone,
        "user_id": entry.pair.user_id,
        "character_id": entry.pair.character_id,
        "paar": pair_token(entry.pair.user_id, entry.pair.character_id),
        "nutzer": user_token(entry.pair.user_id),
        "beobachter": entry.beobachter,
        "entitaet_ids": ",".join(str(i) for i in dedupe_entitaet_ids(entry.magnets.entitaet_ids)),
        "embedding": encode_vector(vector),
        "erstellt_am": seconds(now),
        "turn_id": entry.turn_id,
        "promotion_queued": "1" if queued else "0",
        "sprecher": entry.sprecher,
        "sprache": sprache,
        "antwort_auf": entry.antwort_auf,
        **_search_fields(entry.sprecher, sprache, entry.inhalt, entry.antwort_auf),
        "ablauf_am": f"{expires:.3f}",
        "traceparent": entry.traceparent,
    }
    if entry.magnets.timeline_id is not None:
        fields["timeline_id"] = str(entry.magnets.timeline_id)
    return fields


def _search_fields(sprecher: str, sprache: str, inhalt: str, antwort_auf: str) -> dict[str, str]:
    """What full-text retrieval reads of an entry (SPEC §11): ``suchtext`` (``searched_text``: who said
    what, and the question it answers) and the language its words are stemmed in (``suchsprache``)."""
    return {
        "suchsprache": LANGUAGES[language_of(sprache)],
        "suchtext": searched_text(sprecher, inhalt, antwort_auf),
    }


def corrected_fields(
    inhalt: str, vector: Vector, *, sprecher: str, sprache: str, antwort_auf: str
) -> dict[str, str | bytes]:
    """The fields a correction rewrites (a person's right to correct a memory): the content, its vector
    and what full-text retrieval reads of it, so the corrected-away words no longer find the entry."""
    return {
        "inhalt": inhalt,
        "embedding": encode_vector(vector),
        **_search_fields(sprecher, sprache, inhalt, antwort_auf),
    }


ENTRY_FIELDS: tuple[str, ...] = (
    "user_id", "character_id", "beobachter", "inhalt", "themen", "salienz", "salienz_eingang",
    "salienz_eingang_herkunft", "haeufigkeit", "gedaechtnistyp", "dimension", *EI_SCALARS, "arousal",
    "intentionen", "entitaet_ids", "timeline_id", "erstellt_am", "turn_id", "promotion_queued", "sprecher",
    "sprache", "ablauf_am", "traceparent", "antwort_auf",
)  # fmt: skip
"""The hash fields :func:`decode_entry` reads (all but the vector): what a retrieval asks Redis for."""
_ENTRY_FIELD_KEYS = tuple(name.encode() for name in ENTRY_FIELDS)


BRIEF_FIELDS: tuple[str, ...] = (
    "user_id", "character_id", "beobachter", "inhalt", "sprecher", "sprache", "turn_id", "erstellt_am", "ablauf_am",
    "antwort_auf",
)  # fmt: skip
"""What a brief hit of a retrieval holds (RetrieveHit.brief): what a recall item needs (SPEC §11)."""
_BRIEF_FIELD_KEYS = tuple(name.encode() for name in BRIEF_FIELDS)
_NO_EI = Ei()
_NO_MAGNETS = Magnets()


def decode_read(key: str, values: Sequence[Any]) -> KzgEntry:
    """An entry from the read script's answer for it: the values of :data:`ENTRY_FIELDS`, then its TTL."""
    raw = {name: value for name, value in zip(_ENTRY_FIELD_KEYS, values, strict=False) if value is not None}
    return decode_entry(key, raw, int(values[len(ENTRY_FIELDS)]), with_embedding=False)


def decode_brief(key: str, values: Sequence[Any]) -> KzgEntry:
    """A brief entry from the read script's answer for it: the values of :data:`BRIEF_FIELDS`, then its
    TTL; every other field keeps its empty default."""
    raw = {name: value for name, value in zip(_BRIEF_FIELD_KEYS, values, strict=False) if value is not None}
    return KzgEntry(
        **_recall_part(key, raw),
        ttl_seconds=int(values[len(BRIEF_FIELDS)]),
        themen=(),
        salienz=0.0,
        salienz_eingang=None,
        salienz_eingang_herkunft="",
        haeufigkeit=0,
        gedaechtnistyp="",
        dimension="",
        ei=_NO_EI,
        magnets=_NO_MAGNETS,
    )


def _recall_part(key: str, raw: Mapping[bytes, bytes]) -> dict[str, Any]:
    """The fields of :data:`BRIEF_FIELDS` (and the key's own) as the entry's keyword arguments."""
    return {
        "kzg_key": key,
        "entry_id": key.rsplit(":", 1)[-1],
        "pair": Pair(text(raw.get(b"user_id")), text(raw.get(b"character_id"))),
        "beobachter": text(raw.get(b"beobachter")),
        "inhalt": text(raw.get(b"inhalt")),
        "sprecher": text(raw.get(b"sprecher")),
        "sprache": text(raw.get(b"sprache")),
        "antwort_auf": text(raw.get(b"antwort_auf")),
        "turn_id": text(raw.get(b"turn_id")),
        "erstellt_am": moment_or_none(raw.get(b"erstellt_am")) or EPOCH,
        "ablauf_am": moment_or_none(raw.get(b"ablauf_am")),
    }


def decode_entry(key: str, raw: Mapping[bytes, bytes], ttl: int, *, with_embedding: bool) -> KzgEntry:
    """An entry from its hash fields (SPEC §4.1)."""

    def field(name: str) -> str:
        return text(raw.get(name.encode()))

    embedding = None
    if with_embedding and raw.get(b"embedding"):
        embedding = decode_vector(raw[b"embedding"]).copy()
    haeufigkeit = int_or_none(raw.get(b"haeufigkeit"))
    return KzgEntry(
        **_recall_part(key, raw),
        themen=_split(raw.get(b"themen"), THEMEN_SEPARATOR),
        salienz=float_or_none(raw.get(b"salienz")) or 0.0,
        salienz_eingang=float_or_none(raw.get(b"salienz_eingang")),
        salienz_eingang_herkunft=field("salienz_eingang_herkunft"),
        haeufigkeit=haeufigkeit if haeufigkeit is not None else 1,
        gedaechtnistyp=field("gedaechtnistyp"),
        dimension=field("dimension"),
        ei=Ei.from_row({
            **{name: field(name) for name in EI_SCALARS},
            "arousal": float_or_none(raw.get(b"arousal")) or 0.0,
            "intentionen": _split(raw.get(b"intentionen"), ","),
        }),
        magnets=Magnets.of(
            [i for part in _split(raw.get(b"entitaet_ids"), ",") if (i := int_or_none(part.encode()))],
            int_or_none(raw.get(b"timeline_id")),
        ),
        ttl_seconds=ttl,
        promotion_queued=raw.get(b"promotion_queued") == b"1",
        embedding=embedding,
        traceparent=field("traceparent"),
    )


def encode_turn(turn: SessionTurnRecord) -> str:
    """A session turn as one JSON item of the list (SPEC §3), its time in unix seconds (0: none)."""
    at = turn.created_at.timestamp() if turn.created_at is not None else 0.0
    return json.dumps({**turn.__dict__, "created_at": at}, ensure_ascii=False)


def taken_member(turn: SessionTurnRecord) -> str:
    """The turn in the session's taken set (``append_session.lua``): ``turn_id\\nrole``, '' without a turn_id
    (the role, from a fixed set, comes last, so no two turns share a member)."""
    return f"{turn.turn_id}\n{turn.role}" if turn.turn_id else ""


def decode_turn(raw: bytes | str) -> SessionTurnRecord:
    item = json.loads(raw)
    at = item.pop("created_at", 0.0)
    return SessionTurnRecord(**item, created_at=datetime.fromtimestamp(at, UTC) if at else None)


def search_rows(response: Any) -> list[tuple[str, dict[bytes, bytes]]]:
    """(key, fields) of an FT.SEARCH answer in RESP3 form."""
    rows: list[tuple[str, dict[bytes, bytes]]] = []
    for item in response.get(b"results", []):
        rows.append((text(item[b"id"]), dict(item.get(b"extra_attributes", {}))))
    return rows


def search_total(response: Any) -> int:
    """The number of matches of an FT.SEARCH answer (RESP3; 0 for another form)."""
    return int(response.get(b"total_results", 0)) if isinstance(response, dict) else 0


def consumer_name(info: Mapping[Any, Any]) -> str:
    """A consumer's name from XINFO CONSUMERS (bytes keys under RESP3, str keys under RESP2)."""
    name = info.get(b"name", info.get("name"))
    return text(name)


def stream_entries(response: Any) -> list[tuple[bytes, Mapping[bytes, bytes]]]:
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


def job_from_fields(message_id: str, fields: Mapping[bytes, bytes], deliveries: int) -> PromotionJobData:
    """A promotion job from its stream entry (SPEC §4.6)."""
    return PromotionJobData(
        job_id=message_id,
        kzg_key=text(fields.get(b"kzg_key")),
        ausloeser_turn_id=text(fields.get(b"ausloeser_turn_id")),
        pair=Pair(text(fields.get(b"user_id")), text(fields.get(b"character_id"))),
        delivery_count=deliveries,
        ausgeloest_am=moment_or_none(fields.get(b"ausgeloest_am")),
    )
