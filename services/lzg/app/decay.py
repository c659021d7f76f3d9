"""Decay of the LZG's nodes (SPEC §5.7): set-based, pair batch by pair batch, then the log row(s) (SPEC §8)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from novaberg_core.maintenance import TASK_DECAY, check_scope
from novaberg_core.metrics import record_decay
from novaberg_core.pipeline_log import LogScope
from services.lzg.app.context import NO_TURN, UseCase
from services.lzg.usage import VERWENDUNG_MARKE_TAGE
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT

__all__ = ["Decay"]


class Decay(UseCase):
    """SPEC §5.7 over the shared context."""

    async def run_decay(
        self,
        as_of: datetime,
        *,
        pairs: Sequence[tuple[str, str]] = (),
        turn: LogScope = NO_TURN,
    ) -> tuple[int, int, float]:
        """Set-based over all active nodes, or only those of ``pairs``, under the pairs' write locks
        (:meth:`LzgStore.run_decay`); returns (decayed, deactivated, ms).

        Incremental form (SPEC §5.7): each node decays by the time since its own ``decay_am``, so
        two runs on one day decay by the elapsed hours only and together equal one run at the later
        time; a run at or before a node's ``decay_am`` (a repeat or a backdated replay) leaves it
        untouched. This is how "idempotent within a day" holds without a calendar-day rule. An
        all-pairs run with ``as_of`` in the future is refused (:mod:`novaberg_core.maintenance`). The
        all-pairs run also drops the turns' usage marks older than VERWENDUNG_MARKE_TAGE.
        """
        check_scope(as_of, pairs, what="RunDecay")
        started = time.perf_counter()
        decayed, deactivated = await self.store.run_decay(
            as_of, LZG_KNOTEN_DECAY_RATE, LZG_KNOTEN_MIN_GEWICHT, pairs
        )
        duration_ms = (time.perf_counter() - started) * 1000.0
        record_decay(decayed, deactivated, scoped=bool(pairs))
        marks = 0 if pairs else await self.store.expire_usage_marks(as_of - timedelta(days=VERWENDUNG_MARKE_TAGE))
        # SPEC §8: the all-pairs run's row leaves the pair NULL; a scoped run's rows carry each pair
        # (its counts are the run's, over all of its pairs).
        run_scope: dict[str, Any] = {"paare": len(pairs)} if pairs else {}
        targets: Sequence[tuple[str | None, str | None]] = pairs or [(None, None)]
        turn_id = turn.turn_id or f"{TASK_DECAY}:{as_of.astimezone(UTC).isoformat()}"
        for user_id, character_id in targets:
            where = LogScope(turn_id, turn.span_id, user_id, character_id, as_of)
            self.log.db_write(
                **where, node=TASK_DECAY, tabelle="lzg_knoten", operation="update",
                verfallen=decayed, deaktiviert=deactivated, dauer_ms=round(duration_ms, 1),
                rate=LZG_KNOTEN_DECAY_RATE, min_gewicht=LZG_KNOTEN_MIN_GEWICHT, **run_scope,
            )  # fmt: skip
        if marks:
            self.log.db_write(
                **LogScope(turn_id, turn.span_id, None, None, as_of), node=TASK_DECAY,
                tabelle="verwendung_turn", operation="delete", geloescht=marks,
            )  # fmt: skip
        return decayed, deactivated, duration_ms
