"""The names of the KZG's Redis keys and streams (SPEC §3, §4.1, §4.6) and the query-syntax escapes.

Every key the KZG reads or writes is named here, so erasure and the write path agree on them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from novaberg_core.contract import pair_token, user_token
from novaberg_core.rights import kzg_key, kzg_key_prefix
from services.kzg.types import Pair

__all__ = [
    "INDEX_META_KEY",
    "MODEL_KEY",
    "PROMOTION_GROUP",
    "PROMOTION_STREAM",
    "entry_key",
    "escape_tag",
    "glob_escape",
    "hash_dirty_key",
    "key_parts",
    "pair_clause",
    "pair_prefix",
    "session_summary_key",
    "session_taken_key",
    "session_turns_key",
    "tag_any",
    "user_clause",
    "user_key_kind",
]

PROMOTION_STREAM = "kzg:promotion:queue"
"""The promotion queue (SPEC §4.6): a stream consumed by the group below."""
PROMOTION_GROUP = "pixie"
MODEL_KEY = "kzg:meta:model"
"""JSON ``{"model_id", "dimension"}`` of the model that filled the store (SPEC §2)."""
INDEX_META_KEY = "kzg:meta:index"
"""Fingerprint of the FT.CREATE arguments the index was built with."""

# Characters the query parser treats specially inside TAG values (dialect 2). Non-ASCII letters
# are passed through unescaped: a backslash before a multi-byte character would split it.
_TAG_SPECIAL = re.compile(r"([,.<>{}\[\]\\\"':;!@#$%^&*()\-+=~|/?`\s])")
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def escape_tag(value: str) -> str:
    """``value`` escaped for use inside ``@field:{…}`` of a query."""
    return _TAG_SPECIAL.sub(r"\\\1", value)


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a SCAN MATCH pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def tag_any(field: str, values: Sequence[str]) -> str:
    """``@field:{a|b}``: any of ``values`` (empty ones left out); "" when none is left."""
    escaped = [escape_tag(v) for v in values if v]
    return f"@{field}:{{{'|'.join(escaped)}}}" if escaped else ""


def pair_clause(pair: Pair) -> str:
    """The pair filter: its hex token, which no id can split or widen (novaberg_core.contract)."""
    return f"@paar:{{{pair_token(pair.user_id, pair.character_id)}}}"


def user_clause(user_id: str) -> str:
    """Every pair of ``user_id``: its hex token (novaberg_core.contract)."""
    return f"@nutzer:{{{user_token(user_id)}}}"


def entry_key(pair: Pair, entry_id: str) -> str:
    """``kzg:{user_id}:{character_id}:{entry_id}`` (SPEC §4.1)."""
    return kzg_key(pair.user_id, pair.character_id, entry_id)


def pair_prefix(pair: Pair) -> str:
    return kzg_key_prefix(pair.user_id, pair.character_id)


def hash_dirty_key(pair: Pair) -> str:
    return f"hash_dirty:{pair.user_id}:{pair.character_id}"


def session_turns_key(pair: Pair) -> str:
    return f"session:{pair.user_id}:{pair.character_id}:turns"


def session_summary_key(pair: Pair) -> str:
    return f"session:{pair.user_id}:{pair.character_id}:summary"


def session_taken_key(pair: Pair) -> str:
    """The turns the session took (``turn_id\\nrole``, newest SESSION_TAKEN_KEPT): a resend is known by it."""
    return f"session:{pair.user_id}:{pair.character_id}:taken"


def key_parts(key: str) -> list[str]:
    return key.split(":")


def user_key_kind(key: str, user_id: str) -> str | None:
    """Which erasure counter a key of the user falls under, or None when the key is not the user's."""
    parts = key_parts(key)
    if len(parts) == 4 and parts[0] == "kzg" and parts[1] == user_id:
        return "entries"
    if (
        len(parts) == 4
        and parts[0] == "session"
        and parts[1] == user_id
        and parts[3] in ("turns", "summary", "taken")
    ):
        return "session_keys"
    if len(parts) == 3 and parts[0] == "hash_dirty" and parts[1] == user_id:
        return "hash_dirty"
    if len(parts) == 4 and parts[:2] == ["pipeline", "cluster"] and parts[2] == user_id:
        return "cluster_keys"
    if len(parts) == 4 and parts[:2] == ["pipeline", "profile"] and parts[2] == user_id:
        return "profile_keys"
    return None
