"""Every number two services need, each named once (issue 15): the store gate, id and text lengths, batch size.

A service imports its limits from here; :mod:`novaberg_core.contract` re-exports the length
limits it checks every request against, so its importers keep working.
"""

from __future__ import annotations

__all__ = [
    "BATCH_MAX_TURNS",
    "GEDAECHTNISTYP_MAX_LEN",
    "IDENT_MAX_LEN",
    "JSON_MAX_CHARS",
    "KZG_TOP_K_DEFAULT",
    "KZG_TOP_K_MAX",
    "LABEL_MAX_LEN",
    "NAME_MAX_LEN",
    "PAIR_ID_MAX_LEN",
    "SESSION_TTL",
    "STORE_GATE_RAW",
    "TEXT_MAX_CHARS",
    "THEME_MAX_LEN",
    "TURN_ID_MAX_LEN",
]

STORE_GATE_RAW = 0.3
"""Raw salience below which the KZG stores nothing (SPEC §4.3); the pipeline then creates no entity or timeline."""

SESSION_TTL = 14_400
"""Seconds of inactivity after which a session expires (4 h, SPEC §3), refreshed on every append: the KZG
keeps the session by it, the pipeline judges by it which turn a turn follows."""

PAIR_ID_MAX_LEN = 50
"""Width of ``character_id`` in ``lzg_knoten`` and of both ids in ``pipeline_log`` (syn §4.1, §10.1)."""
TURN_ID_MAX_LEN = 100
"""Width of ``turn_id`` in ``pipeline_log`` (syn §10.1)."""
IDENT_MAX_LEN = 200
"""Any other identifier: entry ids, job ids, task, reader and cluster names, trace and span ids."""
NAME_MAX_LEN = 200
"""Entity names and aliases, display names, timeline titles (the entity name index holds it easily)."""
THEME_MAX_LEN = 100
LABEL_MAX_LEN = 200
"""Emotion, modus, intention and style labels (``gedaechtnistyp``: :data:`GEDAECHTNISTYP_MAX_LEN`)."""
GEDAECHTNISTYP_MAX_LEN = 20
"""``gedaechtnistyp``: the width of its ``lzg_knoten`` column, VARCHAR(20) (syn §4.1)."""
TEXT_MAX_CHARS = 16_000
"""Free text of a turn, a query, an answer, a memory (~4,000 tokens; longer is refused)."""
JSON_MAX_CHARS = 1_000_000
"""A JSON document carried as a string (a pipeline-log record's ``inhalt``, emotion objects)."""

KZG_TOP_K_DEFAULT = 10
"""Hits of a KZG retrieval that names no ``top_k`` (SPEC §4.5), and the pipeline's default ``KZG_TOP_K``."""
KZG_TOP_K_MAX = 1_000
"""Most hits one KZG retrieval may ask for."""

BATCH_MAX_TURNS = 256
"""Turns of one bulk write (``ObserveTurns``, ``StoreEntries``, ``AppendSessionTurns``): a bounded batch."""
