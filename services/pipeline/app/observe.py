"""ObserveTurn and ObserveTurns: a turn (or a pair's turns in order) into the session and the KZG (SPEC §7).

The steps: check the whole request (nothing is written for a refused one), check the models and the
caller's magnets, update the pair's profile when the caller sent one and read the other speaker's
question the turn follows (the session's last turn; in a batch, the turn before), then per turn: log
its input, take the caller's analysis or run the analyzer (which sees that question), append it to
the session and write it to the KZG with its ``beobachter``, salience result and the question it
answers (``antwort_auf``, read by lexical search; SPEC §3, §4, §11).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from datetime import datetime

from opentelemetry import trace

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.limits import SESSION_TTL
from novaberg_core.model import Profile
from novaberg_core.timeutil import to_timestamp
from services.pipeline.app.context import ROLE, Timing, turn_time
from services.pipeline.app.turn_writer import TurnStep, TurnToWrite, Written, given_analysis, is_repeat
from services.pipeline.deadline import DOING_WITHOUT
from services.pipeline.records import NODE_OBSERVE, StepRecords, step_records
from services.pipeline.text_rules import answered_question
from services.pipeline.validation import check_observe, check_observe_batch

__all__ = ["WRITE_CHUNK", "Observe"]

WRITE_CHUNK = 64
"""Turns of an ObserveTurns batch embedded and written together: the next chunk is analysed while one is
embedded and written. Large enough for the model to sort its runs by length (little padding)."""

ObservedTurn = pipeline_pb2.ObserveTurnRequest | pipeline_pb2.ObservedTurn
"""One observed turn: alone (ObserveTurn) or in a batch (ObserveTurns); the fields share their names."""


def _questions_within(turns: Sequence[ObservedTurn], as_ofs: Sequence[datetime]) -> list[str]:
    """For each turn of a batch after the first, the other speaker's question it follows: the batch's
    turn before it (the KZG appends them in this order, SPEC §3), unless that session had expired — the
    turn came more than SESSION_TTL after the newest before it, the rule the KZG's append keeps."""
    questions: list[str] = []
    newest = as_ofs[0]
    for before, observed, at in zip(turns[:-1], turns[1:], as_ofs[1:], strict=True):
        alive = (at - newest).total_seconds() <= SESSION_TTL
        questions.append(answered_question(ROLE[before.beobachter], before.text, ROLE[observed.beobachter]) if alive else "")
        newest = max(newest, at)
    return questions


class Observe(TurnStep):
    """SPEC §7 "observe" over the shared context."""

    async def observe(self, request: pipeline_pb2.ObserveTurnRequest) -> tuple[pipeline_pb2.ObserveTurnResponse, Timing]:
        """Session append, KZG write with the turn's ``beobachter`` and salience result (SPEC §7)."""
        ctx = self.ctx
        timing = Timing()
        check_observe(request)
        pair, as_of = await ctx.open_turn(request, "analysis")
        profile, asked = await asyncio.gather(
            self._profile(pair, request.profile if request.HasField("profile") else None),
            self._asked_before(pair, request, as_of),
        )
        missing: list[str] = []
        DOING_WITHOUT.set(missing)  # one turn goes on without the LZG's registry (services.pipeline.deadline)
        async with step_records(ctx.log, NODE_OBSERVE, request.turn_id, pair, as_of) as records:
            item = await self._take_in(pair, request, as_of, records, profile, asked)
            written = await self.writer.write_turn(pair, item, "pipeline.observe", timing, profile)
        response = pipeline_pb2.ObserveTurnResponse(
            kzg=written.stored, analysis=item.analysis, analyzed_by_service=not request.HasField("analysis"),
            session_turn_count=written.appended.turn_count, fehler=missing, repeated=is_repeat(written),
        )  # fmt: skip
        return response, timing

    async def observe_batch(
        self, request: pipeline_pb2.ObserveTurnsRequest
    ) -> tuple[pipeline_pb2.ObserveTurnsResponse, Timing]:
        """Many turns of one pair in order, each with the result and log records of :meth:`observe`.

        The batch is checked as a whole before anything is written. Then each turn is analysed in
        order (a turn may name someone an earlier turn registered); every WRITE_CHUNK turns go
        through the model in one run and to the KZG in one call each for the session appends and the
        entries, which the KZG applies in order (SPEC §3, §4.4), one chunk strictly after the other —
        so the stored result is the one ObserveTurn gives turn after turn. A failed chunk stops the
        batch: the chunks before it are written, the analysis goes no further than the chunk at hand.
        """
        ctx = self.ctx
        timing = Timing()
        check_observe_batch(request)
        pair = request.pair
        turns = list(request.turns)
        await ctx.begin(turns[0].turn_id, pair)
        trace.get_current_span().set_attribute("novaberg.turns", len(turns))
        for index, observed in enumerate(turns):
            if observed.HasField("analysis"):
                await ctx.check_magnets(pair, observed.analysis.magnets, f"turns[{index}].analysis")
        as_ofs = [turn_time(t) for t in turns]
        profile, asked_first = await asyncio.gather(
            self._profile(pair, request.profile if request.HasField("profile") else None),
            self._asked_before(pair, turns[0], as_ofs[0]),
        )
        asked = [asked_first, *_questions_within(turns, as_ofs)]
        results: list[pipeline_pb2.ObserveTurnResponse] = []
        async with contextlib.AsyncExitStack() as spans:
            items: list[TurnToWrite] = []
            # Each chunk's turns are written as soon as they are analysed and embedded, while the
            # next chunk is analysed; the writes run strictly one chunk after the other.
            writes: list[asyncio.Future[list[Written]]] = []
            try:
                for start in range(0, len(turns), WRITE_CHUNK):
                    if writes and writes[-1].done():
                        await writes[-1]  # a failed write ends the batch before more names are registered
                    chunk = slice(start, start + WRITE_CHUNK)
                    for observed, as_of, question in zip(turns[chunk], as_ofs[chunk], asked[chunk], strict=True):
                        records = await spans.enter_async_context(
                            step_records(ctx.log, NODE_OBSERVE, observed.turn_id, pair, as_of)
                        )
                        items.append(await self._take_in(pair, observed, as_of, records, profile, question))
                    writes.append(asyncio.ensure_future(self.writer.write_turns(
                        pair, items[chunk], timing, profile, after=writes[-1] if writes else None,
                    )))  # fmt: skip
                written = [one for write in writes for one in await write]
            except BaseException:
                # The chunks handed over before the failure are earlier turns, complete in themselves: they
                # finish (or fail) before the error is answered, as ObserveTurn calls sent before it would.
                await asyncio.gather(*writes, return_exceptions=True)
                raise
            for observed, item, one in zip(turns, items, written, strict=True):
                results.append(pipeline_pb2.ObserveTurnResponse(
                    kzg=one.stored, analysis=item.analysis, analyzed_by_service=not observed.HasField("analysis"),
                    session_turn_count=one.appended.turn_count, repeated=is_repeat(one),
                ))  # fmt: skip
        return pipeline_pb2.ObserveTurnsResponse(results=results), timing

    async def _profile(self, pair: common_pb2.Pair, given: common_pb2.PairProfile | None) -> Profile:
        """The pair's profile, updated with the fields the caller gave (stored only when it changes)."""
        profile = await self.ctx.clusters.profile(pair)
        if given is None:
            return profile
        updated = profile.merged(given)
        if updated != profile:
            await self.ctx.clusters.put_profile(pair, updated)
        return updated

    async def _asked_before(self, pair: common_pb2.Pair, observed: ObservedTurn, as_of: datetime) -> str:
        """The other speaker's question the turn follows in the session as of its time ("" for none): what
        the analyzer weighs (the ``answer`` cue) and the entry keeps for lexical search (``antwort_auf``)."""
        session = await self.ctx.kzg.get_session(kzg_pb2.GetSessionRequest(
            pair=pair, as_of=to_timestamp(as_of), turn=common_pb2.TurnContext(turn_id=observed.turn_id),
        ))  # fmt: skip
        if not session.turns:
            return ""
        before = session.turns[-1]
        return answered_question(before.role, before.text, ROLE[observed.beobachter])

    async def _take_in(
        self, pair: common_pb2.Pair, observed: ObservedTurn, as_of: datetime, records: StepRecords,
        profile: Profile, question_before: str,
    ) -> TurnToWrite:
        """One turn's input record, and the turn with its analysis: the caller's, or the analyzer's
        (SPEC §7), which sees the question the turn answers, if any."""
        turn = records.turn
        quelle = pair.user_id if observed.beobachter == common_pb2.BEOBACHTER_USER else pair.character_id
        records.received(
            {"text": observed.text, "beobachter": ROLE[observed.beobachter], "as_of": as_of.isoformat()}, quelle
        )
        if observed.HasField("analysis"):
            analysis = given_analysis(observed.analysis, observed.text)
        else:
            analyzed = await self.writer.analyze(
                observed.text, pair, observed.beobachter, as_of, turn, profile.zone, question_before
            )
            analysis = analyzed.analysis
        return TurnToWrite(observed.beobachter, observed.text, analysis, turn, as_of, question_before)
