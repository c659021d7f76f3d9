"""The LZG's pipeline-log records (SPEC §8) as named functions: each names what happened, once.

A use case calls these where the event happens; the field names and their order are the
records' contract with the log service and its readers, so they are written out here only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from novaberg_core.pipeline_log import LogScope, PipelineLog, count_names
from novaberg_core.pipeline_log.nodes import DECISION_PROMOTION_OUTCOME, NODE_PROMOTION
from novaberg_core.rights import RIGHTS_NODE as RIGHTS_LOG_NODE
from novaberg_core.rights import rights_write
from services.lzg.store.rights import EraseCounts
from services.lzg.types import PromotionInput, PromotionOutcome, Trigger3Result

__all__ = ["ERASED_COUNTS", "RIGHTS_LOG_NODE", "TRIGGER3_COUNTS", "PromotionRecords", "rights_write"]

# What a result's numbers are called in its record (log name → attribute; ``count_fields``).
ERASED_COUNTS: Final = count_names(
    EraseCounts, knoten="nodes", kanten="edges", entitaeten="entities", timelines="timelines",
    verbindungen="verbindungen",
)  # fmt: skip
"""An erasure's :class:`~services.lzg.store.rights.EraseCounts`."""
TRIGGER3_COUNTS: Final = count_names(
    Trigger3Result, knoten_umgeschrieben="nodes_rewritten", kanten_neu_berechnet="edges_recomputed",
    kanten_geloescht="edges_deleted",
)  # fmt: skip
"""A registry change's :class:`~services.lzg.types.Trigger3Result` (SPEC §5.5)."""


def erased_promotion_dropped(log: PipelineLog) -> None:
    """A promotion of an entry whose pair was erased after it was written: nothing written; the
    record names no pair (docs/decisions.md "Erasure")."""
    log.decision(
        turn_id="loeschung", node=NODE_PROMOTION, entscheidung=DECISION_PROMOTION_OUTCOME,
        ausgang=PromotionOutcome.ERASED.value, massstab="Paar nach dem Schreiben des Eintrags geloescht",
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PromotionRecords:
    """The records of one promotion (SPEC §5.3), each with its turn, pair, span and time."""

    log: PipelineLog
    where: LogScope

    @classmethod
    def of(cls, log: PipelineLog, job: PromotionInput) -> PromotionRecords:
        return cls(log, LogScope.of_pair(job.log_turn_id, job.entry.pair, job.span_id, job.as_of))

    def received(self, job: PromotionInput) -> None:
        """The entry arrived (step 1)."""
        inhalt = {"kzg_key": job.entry.kzg_key, "ausloeser_turn_id": job.ausloeser_turn_id}
        self.log.write(node=NODE_PROMOTION, art="eingang", inhalt=inhalt, **self.where)

    def already_promoted(self, kzg_key: str, node_id: int) -> None:
        """The same job ran before (at-least-once delivery): the entry's node exists."""
        self.log.decision(
            node=NODE_PROMOTION,
            entscheidung="promotion.bereits_promotet",
            ausgang="neu",
            eingang={"kzg_key": kzg_key, "knoten_id": node_id},
            massstab={"eindeutig": "kzg_quell_key"},
            **self.where,
        )

    def cache_read(self, nodes: int, best_cosine: float) -> None:
        """The pair's nodes compared with the entry (step 2)."""
        self.log.db_read(
            node=NODE_PROMOTION,
            tabelle="lzg_knoten",
            treffer=nodes,
            bester_cosine=round(best_cosine, 6),
            **self.where,
        )

    def hit(self, outcome: PromotionOutcome, eingang: dict[str, Any], match: float) -> None:
        """Step 4's decision: a new node, a duplicate or a half-reactivation."""
        self.log.decision(
            node=NODE_PROMOTION,
            entscheidung="promotion.treffer",
            ausgang=outcome.value,
            eingang=eingang,
            massstab={"match": match},
            **self.where,
        )

    def wrote(self, tabelle: str, operation: str, **details: Any) -> None:
        """A row written (node, edges, bridge)."""
        self.log.db_write(
            node=NODE_PROMOTION,
            tabelle=tabelle,
            operation=operation,
            **details,
            **self.where,
        )

    def error(self, typ: str, message: str) -> None:
        """What the promotion dropped or could not write, and went on."""
        self.log.error(node=NODE_PROMOTION, typ=typ, message=message, **self.where)
