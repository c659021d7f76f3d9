"""What every KZG use case shares (one per process), and the ids its log records carry."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from novaberg_core.canon import Canon
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.pipeline_log import LogScope, PipelineLog
from novaberg_core.rights import RIGHTS_NODE
from services.kzg.store import KzgStore
from services.kzg.summary import Summariser
from services.kzg.types import Pair

__all__ = [
    "READ_NODE", "RIGHTS_NODE", "WRITE_NODE", "KzgContext", "log_canon_rejections", "log_scope", "log_span",
    "log_turn",
]  # fmt: skip

_LOG = logging.getLogger("novaberg.kzg")

WRITE_NODE = "kzg_speicher"
"""Pipeline-log node of the write path (kzg §4b)."""
READ_NODE = "kzg"
"""Pipeline-log node of the KZG's reads."""


@dataclass
class KzgContext:
    """The store, the embedding provider, the log and the settings of the use cases."""

    store: KzgStore
    provider: EmbeddingProvider
    log: PipelineLog
    canon: Canon
    retrieval_threshold: float
    """The model's ``kzg_retrieval`` threshold (SPEC §4.5)."""
    reinforcement: str
    """``thema`` (SPEC §4.4) or ``aus``."""
    summariser: Summariser
    """Folds the oldest session turns into the summary (SPEC §3); replaceable at run time."""
    reclaim_idle_ms: int
    """Pending jobs idle this long are taken over from a consumer presumed dead (SPEC §4.6)."""
    clock: Callable[[], datetime]

    def now(self, as_of: datetime | None) -> datetime:
        """A request's ``as_of``, or the clock's now when unset."""
        return as_of if as_of is not None else self.clock()


def log_turn(turn_id: str) -> str:
    """The pipeline-log turn id: the caller's, or a fresh one for a call outside any turn."""
    return turn_id or f"kzg-{uuid.uuid4()}"


def log_span(span_id: str) -> str | None:
    """The caller's span id if it is a UUID (the log refuses anything else), else none."""
    if not span_id:
        return None
    try:
        uuid.UUID(span_id)
    except ValueError:
        return None
    return span_id


def log_scope(pair: Pair, turn_id: str = "", span_id: str = "", as_of: datetime | None = None) -> LogScope:
    """Where a record of a step of ``pair`` belongs: the caller's turn (or a fresh one, per
    record), the caller's span when it is a UUID, and a replay's time (None → the log's now)."""
    return LogScope.of_pair(log_turn(turn_id), pair, log_span(span_id), as_of)


def log_canon_rejections(
    log: PipelineLog,
    scope: LogScope,
    rejections: Sequence[tuple[str, str]],
    *,
    node: str,
    writer: str,
    kzg_key: str = "",
) -> None:
    """Each value the canon check emptied or dropped (SPEC §4.1: an ERROR line naming writer, field and
    value), as a log line and a ``fehler`` record of the pipeline log; ``kzg_key`` names the entry too."""
    entry = f" ({kzg_key})" if kzg_key else ""
    for field, value in rejections:
        _LOG.error(
            "kzg canon: writer=%s field=%s value=%r is not in %s; %s%s",
            writer, field, value, "MODUS_KANON" if field == "modus" else "INTENT_KANON",
            "stored empty" if field == "modus" else "dropped", entry,
        )  # fmt: skip
        log.error(
            **scope, node=node, typ="kanon",
            message=f"writer={writer} field={field} value={value!r} nicht im Kanon{entry}",
        )  # fmt: skip
