"""Pipeline-log records of Pixie's runs (SPEC §8): a run over all pairs leaves the pair NULL; a run
scoped to pairs writes its rows once for each of its pairs, carrying the pair."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from novaberg_core.metrics import record_run
from novaberg_core.pipeline_log import PipelineLog
from services.pixie.store import RunRecord


def new_turn_id() -> str:
    """Every Pixie run gets a turn_id of its own that threads through its log rows (syn §10.1)."""
    return f"pixie-{uuid.uuid4()}"


def pair_fields(pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The pipeline-log keywords for each row copy of a run: one per pair, or one without a pair."""
    if not pairs:
        return [{}]
    return [{"user_id": user, "character_id": character} for user, character in pairs]


class RunSpan:
    """``span_start`` when a run begins; the run's result and ``span_end`` when it ends."""

    def __init__(self, plog: PipelineLog, node: str, run: RunRecord) -> None:
        self.plog = plog
        self.node = node
        self.turn_id = run.turn_id
        self.span_id = str(uuid.uuid4())
        self.pairs = run.pairs
        inhalt: dict[str, Any] = {
            "run_id": run.id, "task": run.task, "trigger": run.trigger, "replica": run.replica,
            "run_day": run.run_day.isoformat() if run.run_day else None, "forced": run.forced,
        }  # fmt: skip
        if run.pairs:
            inhalt["paare"] = [list(p) for p in run.pairs]
        self.write("span_start", inhalt)

    def write(self, art: str, inhalt: Any) -> None:
        """One row of this run (per pair of a scoped run)."""
        for where in pair_fields(self.pairs):
            self.plog.write(
                turn_id=self.turn_id, node=self.node, art=art, span_id=self.span_id, inhalt=inhalt, **where
            )

    def end(self, run: RunRecord) -> None:
        record_run(run.task, run.outcome)
        self.write("berechnung", {
            "run_id": run.id, "task": run.task, "outcome": run.outcome, "counts": run.counts,
            "error": run.error or None,
        })  # fmt: skip
        self.write("span_end", {"status": run.outcome})


def log_single_run(plog: PipelineLog, node: str, run: RunRecord) -> None:
    """A run that ended at once (skipped): its start and end together."""
    RunSpan(plog, node, run).end(run)
