"""The types every service shares, each owning its one conversion to and from proto (issue 15).

A service translates a request into these once, at its servicer, and back once; nested stays
nested (an entry carries its :class:`Ei` and :class:`Magnets`, not their fields flattened). The
checks are the shared contract's (:mod:`novaberg_core.contract`); the meaning is SPEC §0 (pair,
perspective) and SPEC §4.1 (the emotional-intelligence fields copied unchanged from KZG into LZG).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from enum import StrEnum
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import numpy as np
import numpy.typing as npt

from novaberg.common.v1 import common_pb2
from novaberg_core.contract import check_pair
from novaberg_core.embedding.guard import ModelStamp
from novaberg_core.embedding.texts import DEFAULT_CHARACTER_NAME, DEFAULT_USER_NAME
from novaberg_core.errors import InvalidArgument
from novaberg_core.lexical import DEFAULT_LANGUAGE, LANGUAGES, language_of
from novaberg_core.timeutil import from_timestamp, optional_timestamp, to_timestamp

__all__ = ["DEFAULT_ZONE", "EI_FIELDS", "EI_SCALARS", "READERS", "Beobachter", "Ei", "KzgEntry", "Magnets", "Pair", "Praezision", "Profile", "PromotionOutcome", "check_reader", "check_unit_interval", "check_vector", "model_info", "model_stamp", "time_zone"]


class Beobachter(StrEnum):
    """Whose perspective a turn or memory is (SPEC §0); the value is what the stores keep."""

    USER = "user"
    ASSISTANT = "assistant"

    @classmethod
    def from_proto(cls, value: int, field: str = "beobachter") -> Beobachter:
        """The perspective of a proto enum value; UNSPECIFIED or an unknown number is refused."""
        try:
            return _BEOBACHTER_OF_PROTO[value]
        except KeyError:
            raise InvalidArgument(f"{field} must be BEOBACHTER_USER or BEOBACHTER_ASSISTANT, got {value}") from None

    @classmethod
    def filter_from_proto(cls, value: int, field: str = "beobachter") -> Beobachter | None:
        """A read filter: UNSPECIFIED means both perspectives (None)."""
        if value == common_pb2.BEOBACHTER_UNSPECIFIED:
            return None
        return cls.from_proto(value, field)

    @classmethod
    def of_name(cls, name: str, field: str = "beobachter") -> Beobachter:
        """The perspective a store or a document names; anything else is refused."""
        try:
            return cls(name)
        except ValueError:
            raise InvalidArgument(f"{field} must be one of {', '.join(cls)}, got {name!r}") from None

    @classmethod
    def name_of_proto(cls, value: int, unknown: str = "") -> str:
        """The stored name of a proto value, ``unknown`` for any other number.

        For a conversion that does not check: the use case behind it refuses ``unknown`` with its own field name.
        """
        member = _BEOBACHTER_OF_PROTO.get(value)
        return unknown if member is None else member.value

    @staticmethod
    def proto_of_name(name: str) -> common_pb2.Beobachter:
        """The proto value of a stored name; UNSPECIFIED for any other (an answer is never refused for it)."""
        return _PROTO_OF_NAME.get(name, common_pb2.BEOBACHTER_UNSPECIFIED)

    def to_proto(self) -> common_pb2.Beobachter:
        return _PROTO_OF_BEOBACHTER[self]


_PROTO_OF_BEOBACHTER: Mapping[Beobachter, common_pb2.Beobachter] = {
    Beobachter.USER: common_pb2.BEOBACHTER_USER,
    Beobachter.ASSISTANT: common_pb2.BEOBACHTER_ASSISTANT,
}
_BEOBACHTER_OF_PROTO: Mapping[int, Beobachter] = {int(value): name for name, value in _PROTO_OF_BEOBACHTER.items()}
_PROTO_OF_NAME: Mapping[str, common_pb2.Beobachter] = {name.value: value for name, value in _PROTO_OF_BEOBACHTER.items()}


@dataclass(frozen=True, slots=True)
class Pair:
    """A conversation pair (SPEC §0): the unit of isolation of every store."""

    user_id: str
    character_id: str

    def check(self, field: str = "pair") -> Pair:
        """The shared pair rule (both ids set, within the pair-id rule); returns ``self``."""
        check_pair(self.user_id, self.character_id, field)
        return self

    @classmethod
    def from_proto(cls, message: common_pb2.Pair, field: str = "pair") -> Pair:
        """The checked pair of a request."""
        return cls.of_proto(message).check(field)

    @classmethod
    def of_proto(cls, message: common_pb2.Pair) -> Pair:
        """The pair a message names, unchecked (for a use case whose rule differs, e.g. a user-only target)."""
        return cls(message.user_id, message.character_id)

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Pair:
        """The pair a store row (or any mapping) names in its ``user_id`` and ``character_id``, unchecked."""
        return cls(row["user_id"], row["character_id"])

    def to_proto(self) -> common_pb2.Pair:
        return common_pb2.Pair(user_id=self.user_id, character_id=self.character_id)


DEFAULT_ZONE = "UTC"
"""The time zone of a pair that names none."""


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` ("Europe/Berlin"); InvalidArgument for a name the zone database lacks.

    Checked against the database's list of zones, so a caller's string never names a file to open."""
    if name not in _zone_names():
        raise InvalidArgument(f"{name[:64]!r} is no IANA time zone (e.g. Europe/Berlin, UTC)")
    return ZoneInfo(name)  # ZoneInfo keeps one instance per key


@dataclass(frozen=True, slots=True)
class Profile:
    """How a pair is talked about (SPEC §11): its speakers' display names, its language and its time zone.

    The pipeline keeps it under ``pipeline:profile:…`` (:mod:`novaberg_core.pair_keys`) as the JSON
    object :meth:`to_json` writes; the KZG's export carries it out and its import back in. The zone
    is the pair's calendar: "yesterday" said at 00:30 in Berlin names the day before *that* day
    (docs/decisions.md "Relative dates on the pair's calendar").
    """

    user_name: str = DEFAULT_USER_NAME
    character_name: str = DEFAULT_CHARACTER_NAME
    sprache: str = DEFAULT_LANGUAGE
    zeitzone: str = DEFAULT_ZONE

    @property
    def zone(self) -> ZoneInfo:
        return time_zone(self.zeitzone)

    def speaker(self, beobachter: int) -> str:
        """The display name of the turn's speaker (user or character)."""
        return self.user_name if beobachter == common_pb2.BEOBACHTER_USER else self.character_name

    def merged(self, given: common_pb2.PairProfile) -> Profile:
        """This profile with the fields a caller gave (empty fields keep the stored value)."""
        return Profile(
            user_name=given.user_name.strip() or self.user_name,
            character_name=given.character_name.strip() or self.character_name,
            sprache=language_of(given.sprache) if given.sprache else self.sprache,
            zeitzone=given.zeitzone.strip() or self.zeitzone,
        )

    @staticmethod
    def check_proto(message: common_pb2.PairProfile, field: str = "profile") -> None:
        """A caller's profile: its language and time zone, when given, ones the product reads (the
        names are the contract's NAME kind, checked with every request)."""
        if message.sprache and message.sprache not in LANGUAGES:
            raise InvalidArgument(f"{field}.sprache must be one of {', '.join(LANGUAGES)} or empty, got {message.sprache!r}")
        if message.zeitzone.strip():
            try:
                time_zone(message.zeitzone.strip())
            except InvalidArgument as error:
                raise InvalidArgument(f"{field}.zeitzone: {error}") from None

    @classmethod
    def from_proto(cls, message: common_pb2.PairProfile, field: str = "profile") -> Profile:
        """A caller's checked profile; the fields it leaves empty are the defaults."""
        cls.check_proto(message, field)
        return cls().merged(message)

    def to_proto(self) -> common_pb2.PairProfile:
        return common_pb2.PairProfile(
            user_name=self.user_name, character_name=self.character_name, sprache=self.sprache, zeitzone=self.zeitzone
        )

    @classmethod
    def from_json(cls, raw: object) -> Profile | None:
        """A stored profile; None for none, and for a value that does not parse (nothing stored breaks a pair).

        A stored zone the zone database no longer knows reads as UTC (the pair keeps working)."""
        if not isinstance(raw, str | bytes):
            return None
        try:
            data = json.loads(raw)
            zeitzone = str(data.get("zeitzone") or DEFAULT_ZONE)
            if zeitzone != DEFAULT_ZONE and zeitzone not in _zone_names():
                zeitzone = DEFAULT_ZONE
            return cls(
                user_name=str(data.get("user_name") or DEFAULT_USER_NAME),
                character_name=str(data.get("character_name") or DEFAULT_CHARACTER_NAME),
                sprache=language_of(str(data.get("sprache") or DEFAULT_LANGUAGE)),
                zeitzone=zeitzone,
            )
        except (ValueError, AttributeError):
            return None

    def to_json(self) -> str:
        """The stored form: one JSON object, names as given (not ASCII-escaped)."""
        fields_ = {"user_name": self.user_name, "character_name": self.character_name, "sprache": self.sprache,
                   "zeitzone": self.zeitzone}  # fmt: skip
        return json.dumps(fields_, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Ei:
    """The emotional-intelligence fields of a turn, copied unchanged from KZG into LZG (SPEC §4.1)."""

    emotion: str = ""
    modus: str = ""
    arousal: float = 0.0
    emotions_vektor: str = ""
    sprach_stil: str = ""
    beziehungs_dynamik: str = ""
    tone: str = ""
    intentionen: tuple[str, ...] = ()

    @classmethod
    def from_proto(cls, message: common_pb2.EiFields) -> Ei:
        return cls.from_row({name: getattr(message, name) for name in EI_FIELDS})

    @classmethod
    def from_row(cls, row: Mapping[str, Any], intentionen: Sequence[str] | None = None) -> Ei:
        """The fields of a store row (or any mapping) that names them as the proto does; ``intentionen``
        given where the store keeps them in a form of its own (the LZG's JSON text)."""
        scalars = {name: row[name] for name in EI_FIELDS if name != "intentionen"}
        if intentionen is None:
            intentionen = row["intentionen"] or ()
        return cls(**scalars, intentionen=tuple(intentionen))

    def to_proto(self) -> common_pb2.EiFields:
        return common_pb2.EiFields(**self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, ``intentionen`` as a list (a store row's or a JSON document's shape)."""
        values = {name: getattr(self, name) for name in EI_FIELDS}
        values["intentionen"] = list(self.intentionen)
        return values


EI_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Ei))
"""The eight field names, in the proto's order."""
EI_SCALARS: tuple[str, ...] = tuple(name for name in EI_FIELDS if name != "intentionen")
"""The seven single-valued fields (a store keeps each in its own column; ``intentionen`` is a list)."""


@dataclass(frozen=True, slots=True)
class Magnets:
    """What a turn is attached to (SPEC §4.1): the entities it names, in order of first mention, and its timeline."""

    entitaet_ids: tuple[int, ...] = ()
    timeline_id: int | None = None

    @classmethod
    def from_proto(cls, message: common_pb2.Magnets) -> Magnets:
        timeline = message.timeline_id if message.HasField("timeline_id") else None
        return cls(entitaet_ids=tuple(message.entitaet_ids), timeline_id=timeline)

    @classmethod
    def of(cls, entitaet_ids: Sequence[int], timeline_id: int | None) -> Magnets:
        return cls(tuple(entitaet_ids), timeline_id)

    def check(self, field: str = "magnets") -> Magnets:
        """Every id names a registry row, so it is positive (the LZG promotes nothing else, SPEC §5.3);
        a refusal is InvalidArgument naming ``field``."""
        if any(i <= 0 for i in self.entitaet_ids):
            raise InvalidArgument(f"{field}.entitaet_ids must be positive ids, got {list(self.entitaet_ids)}")
        if self.timeline_id is not None and self.timeline_id <= 0:
            raise InvalidArgument(f"{field}.timeline_id must be a positive id, got {self.timeline_id}")
        return self

    def to_proto(self) -> common_pb2.Magnets:
        message = common_pb2.Magnets(entitaet_ids=list(self.entitaet_ids))
        if self.timeline_id is not None:
            message.timeline_id = self.timeline_id
        return message


@dataclass(frozen=True)
class KzgEntry:
    """One short-term memory (SPEC §4.1): what the KZG stores, exports and serves, and what a promotion
    reads fresh (SPEC §5.3 step 1). Each use case checks it by its own rule (an import, a promotion)."""

    kzg_key: str
    entry_id: str
    pair: Pair
    beobachter: str
    """The perspective by its :class:`Beobachter` name, as stored ("" for an unknown number)."""
    inhalt: str
    themen: tuple[str, ...]
    salienz: float
    salienz_eingang: float | None
    salienz_eingang_herkunft: str
    haeufigkeit: int
    gedaechtnistyp: str
    dimension: str
    ei: Ei
    magnets: Magnets
    erstellt_am: datetime
    turn_id: str
    ttl_seconds: int
    promotion_queued: bool = False
    """Whether a promotion job waits for it (the KZG's state; the shared message does not carry it)."""
    embedding: npt.NDArray[np.float32] | None = None
    sprecher: str = ""
    sprache: str = ""
    ablauf_am: datetime | None = None
    """Expiry in the turn's own time (SPEC §11); None for entries written before it was kept."""
    traceparent: str = ""
    antwort_auf: str = ""

    @classmethod
    def from_proto(cls, message: common_pb2.KzgEntry, field: str = "entry") -> KzgEntry:
        """The entry a message carries, as sent: ``salienz_eingang`` 0 is none (a stored one is at least
        the gate's raw 0.3, SPEC §4.3), an unset ``entry_id`` the key's last part; an unset
        ``erstellt_am`` is refused (InvalidArgument naming ``field``), every other check is the use case's."""
        if not message.HasField("erstellt_am"):
            raise InvalidArgument(f"{field}.erstellt_am must be set")
        return cls(
            **{name: getattr(message, name) for name in _ENTRY_AS_IS},
            entry_id=message.entry_id or message.kzg_key.rsplit(":", 1)[-1],
            pair=Pair.of_proto(message.pair),
            beobachter=Beobachter.name_of_proto(message.beobachter),
            themen=tuple(message.themen),
            salienz_eingang=message.salienz_eingang or None,
            haeufigkeit=message.haeufigkeit,
            ei=Ei.from_proto(message.ei),
            magnets=Magnets.from_proto(message.magnets),
            erstellt_am=from_timestamp(message.erstellt_am),
            embedding=np.asarray(message.embedding, dtype=np.float32) if len(message.embedding) else None,
            ablauf_am=from_timestamp(message.ablauf_am) if message.HasField("ablauf_am") else None,
            traceparent=message.traceparent,
        )

    def check(self, field: str = "entry") -> KzgEntry:
        """What every reader holds an entry to (SPEC §4.1): a known perspective, content, a salience within
        0..1 and magnets naming registry rows; a refusal is InvalidArgument naming ``field``."""
        Beobachter.of_name(self.beobachter, f"{field}.beobachter")
        if not self.inhalt.strip():
            raise InvalidArgument(f"{field}.inhalt must not be empty")
        check_unit_interval(f"{field}.salienz", self.salienz)
        self.magnets.check(f"{field}.magnets")
        return self

    def brief_proto(self) -> common_pb2.KzgEntry:
        """The fields of a brief retrieval hit (what a recall item needs, SPEC §11); every other one unset."""
        return common_pb2.KzgEntry(**self._brief_fields())

    def to_proto(self) -> common_pb2.KzgEntry:
        message = common_pb2.KzgEntry(
            **self._brief_fields(),
            **{name: getattr(self, name) for name in _WHOLE_AS_IS},
            themen=list(self.themen),
            salienz_eingang=self.salienz_eingang if self.salienz_eingang is not None else 0.0,
            haeufigkeit=self.haeufigkeit,
            ei=self.ei.to_proto(),
            magnets=self.magnets.to_proto(),
            traceparent=self.traceparent,
        )
        if self.embedding is not None:
            message.embedding.extend(self.embedding.tolist())
        return message

    def _brief_fields(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in _BRIEF_AS_IS},
            "entry_id": self.entry_id,
            "pair": self.pair.to_proto(),
            "beobachter": Beobachter.proto_of_name(self.beobachter),
            "erstellt_am": to_timestamp(self.erstellt_am),
            "ablauf_am": optional_timestamp(self.ablauf_am),
        }


_BRIEF_AS_IS = ("kzg_key", "inhalt", "turn_id", "ttl_seconds", "sprecher", "sprache", "antwort_auf")
"""The fields of a brief hit that an entry and its message share by name and type."""
_WHOLE_AS_IS = ("salienz", "salienz_eingang_herkunft", "gedaechtnistyp", "dimension")
"""The fields a whole entry adds to a brief hit's, shared with its message by name and type."""
_ENTRY_AS_IS = (*_BRIEF_AS_IS, *_WHOLE_AS_IS)


class PromotionOutcome(StrEnum):
    """SPEC §5.3: what a promotion did; the value is what ``verbindung.ausgang`` stores and the LZG and Pixie log."""

    NEW_NODE = "neu"
    DUPLICATE = "dublette"
    HALF_REACTIVATION = "halbreaktivierung"
    ERASED = "geloescht"
    """The pair was erased after the entry was written: nothing written (docs/decisions.md "Erasure")."""

    @classmethod
    def from_proto(cls, value: int) -> PromotionOutcome:
        """The outcome a PromoteResponse names; UNSPECIFIED or an unknown number is refused."""
        try:
            return _OUTCOME_OF_PROTO[value]
        except KeyError:
            raise InvalidArgument(f"outcome {value} is not a promotion outcome") from None

    def to_proto(self) -> common_pb2.PromotionOutcome:
        return _PROTO_OF_OUTCOME[self]


_PROTO_OF_OUTCOME: Mapping[PromotionOutcome, common_pb2.PromotionOutcome] = {
    PromotionOutcome.NEW_NODE: common_pb2.PROMOTION_OUTCOME_NEW_NODE,
    PromotionOutcome.DUPLICATE: common_pb2.PROMOTION_OUTCOME_DUPLICATE,
    PromotionOutcome.HALF_REACTIVATION: common_pb2.PROMOTION_OUTCOME_HALF_REACTIVATION,
    PromotionOutcome.ERASED: common_pb2.PROMOTION_OUTCOME_ERASED,
}
_OUTCOME_OF_PROTO: Mapping[int, PromotionOutcome] = {int(value): name for name, value in _PROTO_OF_OUTCOME.items()}


class Praezision(StrEnum):
    """Precision of a timeline reference (SPEC §5.4): the LZG's timeline layer and registry, and the dates
    the pipeline finds in a turn or a question."""

    MINUTE = "minute"
    STUNDE = "stunde"
    TAG = "tag"
    WOCHE = "woche"
    MONAT = "monat"
    QUARTAL = "quartal"
    JAHR = "jahr"


READERS: tuple[str, ...] = ("analysis", "composer")
"""The readers a memory block is rendered for (SPEC §5.9): the analysis (character and user named as such)
and the composer (``Person A`` / ``Person B``); a request naming none gets both, in this order."""


def check_reader(reader: str) -> str:
    """``reader`` if it is one of :data:`READERS`, else InvalidArgument naming the choices."""
    if reader not in READERS:
        raise InvalidArgument(f"unknown reader {reader!r}; known: {', '.join(READERS)}")
    return reader


def check_unit_interval(name: str, value: float) -> None:
    """A score of the analysis (salience, arousal): a finite number within 0..1 (SPEC §4.1)."""
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(f"{name} must be a number within 0..1, got {value!r}")


def check_vector(
    values: Sequence[float] | npt.NDArray[np.floating[Any]], dimension: int, field: str, model_id: str = ""
) -> npt.NDArray[np.float32]:
    """A caller's vector as float32: exactly the model's ``dimension`` values, all finite (SPEC §2).

    The one vector rule of every service; a refusal is InvalidArgument naming ``field`` (and the
    model, where the caller knows it). The proto carries floats, so float32 loses nothing.
    """
    if len(values) != dimension:
        model = f"the embedding model {model_id}" if model_id else "the embedding model"
        raise InvalidArgument(f"{field} has {len(values)} values; {model} needs {dimension}")
    vector = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(vector)):
        raise InvalidArgument(f"{field} holds a value that is not finite")
    return vector


def model_info(stamp: ModelStamp) -> common_pb2.ModelInfo:
    """A service's embedding model as its ``GetModel`` answer (SPEC §2)."""
    return common_pb2.ModelInfo(model_id=stamp.model_id, dimension=stamp.dimension, recipe=stamp.recipe)


def model_stamp(info: common_pb2.ModelInfo) -> ModelStamp:
    """A peer's ``GetModel`` answer as the stamp its vectors are compared by (the inverse of :func:`model_info`)."""
    return ModelStamp(info.model_id, info.dimension, info.recipe)
