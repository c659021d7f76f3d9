"""The one rule for a conversation pair's ids, checked at every service's edge (SPEC §0, §10)."""

from __future__ import annotations

from novaberg_core.errors import InvalidArgument

PAIR_ID_MAX_LEN = 50
"""Width of ``character_id`` in ``lzg_knoten`` and of both ids in ``pipeline_log`` (syn §4.1, §10.1)."""


def check_pair(user_id: str, character_id: str, field: str = "pair") -> None:
    """Both ids set, no outer whitespace, no ``:`` (it separates the parts of memory keys), ≤ 50 chars.

    Raises :class:`InvalidArgument` naming ``<field>.user_id`` or ``<field>.character_id``.
    """
    for name, value in ((f"{field}.user_id", user_id), (f"{field}.character_id", character_id)):
        if not value or not value.strip():
            raise InvalidArgument(f"{name} must not be empty")
        if value != value.strip():
            raise InvalidArgument(f"{name} must not start or end with whitespace: {value!r}")
        if ":" in value:
            raise InvalidArgument(f"{name} must not contain ':' (it separates the parts of memory keys): {value!r}")
        if len(value) > PAIR_ID_MAX_LEN:
            raise InvalidArgument(f"{name} must be at most {PAIR_ID_MAX_LEN} characters, got {len(value)}")
