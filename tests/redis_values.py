"""Answers of a Redis client without ``decode_responses``, typed as what they are: bytes. redis-py types
them as ``bytes | str`` for either setting; these check it and say so to the type checker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def as_bytes(value: bytes | str | None) -> bytes:
    """A value that must be there, as bytes."""
    assert isinstance(value, bytes), f"expected bytes from Redis, got {value!r}"
    return value


def bytes_hash(raw: Mapping[Any, Any] | None) -> dict[bytes, bytes]:
    """A hash (HGETALL) or a stream entry's fields."""
    assert raw is not None
    return {as_bytes(key): as_bytes(value) for key, value in raw.items()}


def bytes_stream(entries: Iterable[Any] | None) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """A stream's entries (XRANGE): (id, fields)."""
    assert entries is not None
    return [(as_bytes(entry_id), bytes_hash(fields)) for entry_id, fields in entries]
