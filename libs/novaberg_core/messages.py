"""Records as proto messages: one conversion for every dataclass whose fields carry the message's
field names (Pixie's results, the stores' erasure counts), so no servicer lists them field by field."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, TypeVar

from google.protobuf.message import Message

from novaberg_core.timeutil import to_timestamp

__all__ = ["to_message"]

_M = TypeVar("_M", bound=Message)


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
