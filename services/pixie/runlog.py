"""Pipeline-log records of Pixie's runs (SPEC §8): maintenance rows over all pairs, pair left NULL."""

from __future__ import annotations

import uuid

from novaberg_core.pipeline_log import PipelineLog
from services.pixie.store import RunRecord


def new_turn_id() -> str:
    """Every Pixie run gets a turn_id of its own that threads through its log rows (syn §10.1)."""
    return f"pixie-{uuid.uuid4()}"


class RunSpan:
    """``span_start`` when a run begins; the run's result and ``span_end`` when it ends."""

    def __init__(self, plog: PipelineLog, node: str, run: RunRecord) -> None:
        self.plog = plog
        self.node = node
        self.turn_id = run.turn_id
        self.span_id = str(uuid.uuid4())
        plog.write(
            turn_id=self.turn_id, node=node, art="span_start", span_id=self.span_id,
            inhalt={"run_id": run.id, "task": run.task, "trigger": run.trigger, "replica": run.replica,
                    "run_day": run.run_day.isoformat() if run.run_day else None, "forced": run.forced},
        )

    def end(self, run: RunRecord) -> None:
        self.plog.write(
            turn_id=self.turn_id, node=self.node, art="berechnung", span_id=self.span_id,
            inhalt={"run_id": run.id, "task": run.task, "outcome": run.outcome, "counts": run.counts,
                    "error": run.error or None},
        )
        self.plog.write(turn_id=self.turn_id, node=self.node, art="span_end", span_id=self.span_id,
                        inhalt={"status": run.outcome})


def log_single_run(plog: PipelineLog, node: str, run: RunRecord) -> None:
    """A run that ended at once (skipped): its start and end together."""
    RunSpan(plog, node, run).end(run)
