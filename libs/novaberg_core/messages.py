"""Records as proto messages and back: one conversion each way for every dataclass whose fields
carry the message's field names (Pixie's results, the stores' erasure counts, the LZG's stored
nodes and edges), so no servicer lists them field by field."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from google.protobuf.message import Message

from novaberg_core.timeutil import TIMESTAMP_TYPE, from_timestamp, to_timestamp

__all__ = ["from_message", "to_message"]

_M = TypeVar("_M", bound=Message)
_R = TypeVar("_R")


def to_message(message_type: type[_M], record: Any, **converted: Any) -> _M:
    """``message_type`` filled from the dataclass ``record``: every field the message has, by name
    (a datetime as a Timestamp, None left unset), except those given ``converted``."""
    names = message_type.DESCRIPTOR.fields_by_name
    values: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name in names and f.name not in converted and value is not None:
            values[f.name] = to_timestamp(value) if isinstance(value, datetime) else value
    return message_type(**values, **converted)


def from_message(record_type: type[_R], message: Message, **converted: Any) -> _R:
    """The dataclass ``record_type`` filled from ``message``: every field the message has, by name
    (a Timestamp as a datetime, a repeated field as a tuple, an unset field with presence as None),
    except those given ``converted``; a field the message lacks keeps its default."""
    descriptors = message.DESCRIPTOR.fields_by_name
    values: dict[str, Any] = {}
    for f in fields(record_type):  # type: ignore[arg-type]
        descriptor = descriptors.get(f.name)
        if descriptor is None or f.name in converted:
            continue
        value = getattr(message, f.name)
        if descriptor.is_repeated:
            value = tuple(value)
        elif descriptor.has_presence and not message.HasField(f.name):
            value = None
        elif descriptor.message_type is not None and descriptor.message_type.full_name == TIMESTAMP_TYPE:
            value = from_timestamp(value)
        values[f.name] = value
    return record_type(**values, **converted)
