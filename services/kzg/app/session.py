"""The session of a pair (SPEC §3): append turns, fold the oldest into the summary, read it as of a time."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import datetime

from novaberg_core.errors import InvalidArgument
from novaberg_core.limits import SESSION_TTL
from services.kzg.app.checks import batch_item, check_batch
from services.kzg.app.context import KzgContext, log_scope
from services.kzg.domain import SESSION_ROLES, SESSION_SUMMARIZE_AT, session_stretch_start
from services.kzg.types import AppendResult, Pair, SessionState, SessionTurnRecord

__all__ = ["Session", "session_as_of"]

_SESSION_NODE = "session"


def session_as_of(state: SessionState, as_of: datetime) -> SessionState:
    """``state`` as it was at ``as_of`` (SPEC §3, §11): the turns made by then since the last idle gap longer
    than SESSION_TTL (the list had expired before the turn after it), empty when SESSION_TTL had run out
    since the newest. The summary holds turns folded out before the list's oldest, so it stays only while
    the session reaches back to the oldest turn made by then."""
    made = [(t, t.created_at) for t in state.turns if t.created_at is not None and t.created_at <= as_of]
    idle_s = (as_of - max(at for _, at in made)).total_seconds() if made else math.inf
    if idle_s > SESSION_TTL:
        return SessionState(turns=(), summary="", ttl_seconds=-2)
    start = session_stretch_start([at for _, at in made])
    return SessionState(
        turns=tuple(t for t, _ in made[start:]),
        summary=state.summary if start == 0 else "",
        ttl_seconds=int(SESSION_TTL - idle_s),
    )


def _check_session_turn(pair: Pair, turn: SessionTurnRecord) -> None:
    pair.check()
    if turn.role not in SESSION_ROLES:
        raise InvalidArgument(f"turn.role must be one of {', '.join(SESSION_ROLES)}, got {turn.role!r}")
    if not turn.text.strip():
        raise InvalidArgument("turn.text must not be empty")
    if not math.isfinite(turn.arousal):
        raise InvalidArgument(f"turn.arousal must be a finite number, got {turn.arousal!r}")


class Session:
    """SPEC §3 over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    def _stamped(self, turn: SessionTurnRecord, as_of: datetime | None) -> SessionTurnRecord:
        """The turn with its ``created_at`` (the caller's, else ``as_of``, else now)."""
        return turn if turn.created_at is not None else dataclasses.replace(turn, created_at=self.ctx.now(as_of))

    async def append_session_turns(
        self, appends: Sequence[tuple[Pair, SessionTurnRecord, datetime | None, bool]]
    ) -> list[AppendResult]:
        """Many appends of one pair, in order, as :meth:`append_session_turn` one after another.

        Checked as a whole before the first append (``appends[i]`` names a bad one). The appends up to
        the next fold (SESSION_SUMMARIZE_AT) go to Redis in one atomic step, and the fold follows the
        append a single call would have folded after: the list, the summary and every reported length
        are those of single appends (a writer appending to the same session meanwhile may shift
        where the fold falls, as it would between single calls). An append with ``resend_safe`` (the
        fourth item) whose turn the list holds already is a repeat: nothing is appended.
        """
        check_batch("appends", [pair for pair, _, _, _ in appends])
        for index, (pair, turn, _, _) in enumerate(appends):
            with batch_item("appends", index):
                _check_session_turn(pair, turn)
        pair = appends[0][0]
        stamped = [(self._stamped(turn, as_of), as_of, once) for _, turn, as_of, once in appends]
        results: list[AppendResult] = []
        length = await self.store.session_length(pair)
        while len(results) < len(stamped):
            # The appends up to the one after which a single append would fold go in one round trip.
            run = stamped[len(results) : len(results) + max(1, SESSION_SUMMARIZE_AT + 1 - length)]
            appended = await self.store.session_append_many(
                pair, [turn for turn, _, _ in run], [once for _, _, once in run]
            )
            lengths = [a.length for a in appended]
            summarized = trimmed = False
            if lengths[-1] > SESSION_SUMMARIZE_AT and not appended[-1].repeated:
                summarized, trimmed = await self.store.session_fold(pair, self.ctx.summariser)
                lengths[-1] = await self.store.session_length(pair)
            for position, ((turn, as_of, _), reported, one) in enumerate(zip(run, lengths, appended, strict=True)):
                last = position == len(run) - 1
                result = AppendResult(
                    turn_count=reported, summarized=summarized and last, trimmed=trimmed and last, repeated=one.repeated
                )
                self._log_append(pair, turn, as_of, result)
                results.append(result)
            length = lengths[-1]
        return results

    async def append_session_turn(
        self, pair: Pair, turn: SessionTurnRecord, *, as_of: datetime | None = None, resend_safe: bool = False
    ) -> AppendResult:
        """Append, refresh the 4 h TTL, fold the oldest 10 turns into the summary above 25. A turn made over
        SESSION_TTL after the newest (turn time, a replay's) opens a new session, as the old one had expired.

        ``resend_safe``: a turn whose turn_id and role the list holds already is not appended again
        (``repeated``; a resent ObserveTurn).
        """
        _check_session_turn(pair, turn)
        turn = self._stamped(turn, as_of)
        length, repeated = await self.store.session_append(pair, turn, resend_safe=resend_safe)
        summarized = trimmed = False
        if length > SESSION_SUMMARIZE_AT and not repeated:
            summarized, trimmed = await self.store.session_fold(pair, self.ctx.summariser)
            length = len((await self.store.session_read(pair)).turns)
        result = AppendResult(turn_count=length, summarized=summarized, trimmed=trimmed, repeated=repeated)
        self._log_append(pair, turn, as_of, result)
        return result

    def _log_append(self, pair: Pair, turn: SessionTurnRecord, as_of: datetime | None, result: AppendResult) -> None:
        self.ctx.log.db_write(
            **log_scope(pair, turn.turn_id, as_of=as_of), node=_SESSION_NODE, tabelle="session",
            operation="none" if result.repeated else "append", rolle=turn.role, laenge=result.turn_count,
            zusammengefasst=result.summarized, gekuerzt=result.trimmed, wiederholt=result.repeated,
        )

    async def get_session(
        self, pair: Pair, *, as_of: datetime | None = None, turn_id: str = "", span_id: str = ""
    ) -> SessionState:
        """The session as of ``as_of`` (SPEC §3, §11): turns made by then, empty once it had expired.

        A session expires SESSION_TTL after its last turn; read at a later ``as_of`` (a replay's
        time) it is empty, and turns before an idle gap longer than that are left out, as they would
        have been live (:func:`session_as_of`). Unset = now (Redis's own TTL applies).
        """
        pair.check()
        state = await self.store.session_read(pair)
        if as_of is not None:
            state = session_as_of(state, as_of)
        self.ctx.log.db_read(
            **log_scope(pair, turn_id, span_id, as_of), node=_SESSION_NODE, tabelle="session", treffer=len(state.turns)
        )
        return state
