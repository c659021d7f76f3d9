"""All Redis I/O of the KZG (SPEC §3, §4): the only code that speaks Redis commands.

One part per concern, composed into :class:`KzgStore`: ``keys`` (every key's name), ``codec`` (the
hash, session and stream formats), ``index`` (model stamp, declared index), ``entries`` (the entry
hashes and the write script), ``search`` (KNN, full text, theme neighbours, key listings),
``queue`` (the promotion stream), ``sessions`` (SPEC §3) and ``rights`` (erasure, import).
"""

from __future__ import annotations

from services.kzg.store.base import INDEX_SCHEMA_PATH, VECTOR_ALGORITHMS
from services.kzg.store.codec import decode_entry, encode_vector, entry_fields
from services.kzg.store.entries import Neighbour, NeighbourUpdate, WriteOutcome
from services.kzg.store.index import IndexStore
from services.kzg.store.keys import (
    MODEL_KEY,
    PROMOTION_GROUP,
    PROMOTION_STREAM,
    entry_key,
    escape_tag,
    glob_escape,
    hash_dirty_key,
    pair_prefix,
    session_summary_key,
    session_taken_key,
    session_turns_key,
)
from services.kzg.store.queue import QueueStore
from services.kzg.store.rights import ImportItem, RightsStore
from services.kzg.store.search import entry_scope
from services.kzg.store.sessions import SessionStore

__all__ = [
    "INDEX_SCHEMA_PATH",
    "MODEL_KEY",
    "PROMOTION_GROUP",
    "PROMOTION_STREAM",
    "VECTOR_ALGORITHMS",
    "ImportItem",
    "KzgStore",
    "Neighbour",
    "NeighbourUpdate",
    "WriteOutcome",
    "decode_entry",
    "encode_vector",
    "entry_fields",
    "entry_key",
    "entry_scope",
    "escape_tag",
    "glob_escape",
    "hash_dirty_key",
    "pair_prefix",
    "session_summary_key",
    "session_taken_key",
    "session_turns_key",
]


class KzgStore(IndexStore, RightsStore, QueueStore, SessionStore):
    """The KZG's Redis: one client (RESP3, raw bytes), the declared index, the Lua scripts."""
