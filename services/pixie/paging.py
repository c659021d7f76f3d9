"""How many records a Pixie list RPC returns (ListRuns, ListParkedJobs, ListErasures): the request's
``limit``, 0 meaning the RPC's default, never more than :data:`MAX_LIMIT`."""

from __future__ import annotations

from novaberg_core.errors import InvalidArgument

__all__ = ["MAX_LIMIT", "page_limit"]

MAX_LIMIT = 1000
"""The most records one list call returns."""


def page_limit(value: int, default: int, field: str = "limit") -> int:
    """``value`` (0 → ``default``) capped at :data:`MAX_LIMIT`; a negative one is InvalidArgument."""
    if value < 0:
        raise InvalidArgument(f"{field} must be >= 0 (0 means the default {default}), got {value}")
    return min(value or default, MAX_LIMIT)
