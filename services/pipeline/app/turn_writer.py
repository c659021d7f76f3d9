"""One turn analysed and written: what Observe (the user's turns) and Dispatch (the answer) share.

A turn's analysis comes from the caller or the analyzer (SPEC §7); the turn is appended to the
session (SPEC §3) and written to the KZG with the embedding of its KZG embed text, computed here so
the KZG's write stays a pure store operation (SPEC §2, §4, §11). Each write is logged once, where
it happens: the KZG records the session append (``session``) and the entry's gate, canon and write
(``kzg_speicher``) under the turn's id; the pipeline logs only the analysis it ran (``salience``).
Both writes are resend-safe: the entry's id is the turn's (:func:`turn_entry_id`) and the append
skips a turn the session holds, so a resent turn writes nothing twice, and the KZG client sends either
write again after UNAVAILABLE or ABORTED (``novaberg_core.peers.PeerClient.resent``; docs/decisions.md).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import NamedTuple

import grpc
import numpy as np
from google.protobuf.json_format import MessageToDict

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import clean_themen, kzg_embed_text
from novaberg_core.errors import NovabergError, Unavailable
from novaberg_core.limits import STORE_GATE_RAW
from novaberg_core.model import Profile
from novaberg_core.peers import count_resendings, peer_error
from novaberg_core.pipeline_log import LogScope
from novaberg_core.telemetry import set_turn_attributes
from novaberg_core.timeutil import to_timestamp
from services.pipeline.analyzer import AnalyzedTurn
from services.pipeline.app.context import ROLE, TRACER, PipelineContext, Timing
from services.pipeline.deadline import DOING_WITHOUT
from services.pipeline.records import NODE_SALIENCE

__all__ = [
    "TurnStep",
    "TurnToWrite",
    "TurnWriter",
    "Written",
    "given_analysis",
    "is_repeat",
    "kzg_entry_text",
    "turn_entry_id",
]

class Written(NamedTuple):
    """A turn's session append and KZG write, as the KZG answered them."""

    appended: kzg_pb2.AppendSessionTurnResponse
    stored: kzg_pb2.StoreEntryResponse
    sent_again: bool = False
    """Whether a write of the call was sent a second time (``novaberg_core.peers.PeerClient.resent``)."""


def kzg_entry_text(analysis: pipeline_pb2.TurnAnalysis, sprecher: str) -> str | None:
    """The KZG embed text of a turn (SPEC §2, §11); None below the store gate, where the KZG writes nothing.

    Of the themes as the KZG stores them (:func:`clean_themen`), so re-embedding builds the same text.
    """
    if analysis.salience.salienz < STORE_GATE_RAW:
        return None
    return kzg_embed_text(clean_themen(analysis.salience.themen), analysis.inhalt, sprecher)


def turn_entry_id(turn_id: str, beobachter: common_pb2.Beobachter) -> str:
    """The KZG entry id of a turn's entry: one per turn and perspective (SPEC §7: a turn_id names one
    turn), so a resent turn finds the entry its first sending wrote (docs/decisions.md)."""
    digest = hashlib.blake2b(turn_id.encode("utf-8"), digest_size=12).hexdigest()
    return f"{ROLE[beobachter]}-{digest}"


def is_repeat(written: Written) -> bool:
    """Whether a turn's writes were a resend's: the session held it and its entry stood (or was gated).
    Not said after a write was sent again: what stood may be this call's own first sending."""
    appended, stored, sent_again = written
    return not sent_again and appended.repeated and stored.outcome != kzg_pb2.STORE_OUTCOME_STORED


def given_analysis(given: pipeline_pb2.TurnAnalysis, text: str) -> pipeline_pb2.TurnAnalysis:
    """The caller's analysis of a turn (a copy), its ``inhalt`` the turn's text when the caller left it empty."""
    analysis = pipeline_pb2.TurnAnalysis()
    analysis.CopyFrom(given)
    if not analysis.inhalt:
        analysis.inhalt = text
    return analysis


@dataclass(frozen=True, slots=True)
class TurnToWrite:
    """One analysed turn as the session and the KZG are given it (SPEC §3, §4, §7)."""

    beobachter: common_pb2.Beobachter
    text: str
    analysis: pipeline_pb2.TurnAnalysis
    turn: common_pb2.TurnContext
    as_of: datetime
    antwort_auf: str = ""
    """The other speaker's question the turn answers ("" for none; SPEC §11: lexical search reads it)."""

    def session_append(self, pair: common_pb2.Pair) -> kzg_pb2.AppendSessionTurnRequest:
        """The session append of the turn (SPEC §3), resend-safe."""
        ei, at = self.analysis.ei, to_timestamp(self.as_of)
        turn = kzg_pb2.SessionTurn(
            role=ROLE[self.beobachter], text=self.text, turn_id=self.turn.turn_id, created_at=at,
            intention=ei.intentionen[0] if ei.intentionen else "", emotion=ei.emotion, modus=ei.modus,
            arousal=ei.arousal, emotions_vektor=ei.emotions_vektor,
        )  # fmt: skip
        return kzg_pb2.AppendSessionTurnRequest(pair=pair, turn=turn, as_of=at, resend_safe=True)

    def entry_text(self, profile: Profile) -> str | None:
        """The turn's KZG embed text (:func:`kzg_entry_text`) with the pair's name for its speaker."""
        return kzg_entry_text(self.analysis, profile.speaker(self.beobachter))


class TurnWriter:
    """The analyzer's run over one turn, and a turn's (or a chunk of turns') session append and KZG write."""

    def __init__(self, ctx: PipelineContext) -> None:
        self.ctx = ctx

    async def analyze(
        self,
        text: str,
        pair: common_pb2.Pair,
        beobachter: common_pb2.Beobachter,
        as_of: datetime,
        turn: common_pb2.TurnContext,
        zone: tzinfo = UTC,
        question_before: str = "",
    ) -> AnalyzedTurn:
        """The analyzer's result for one turn (SPEC §7), logged under ``salience`` (failures too).

        The analyzer sees the turn's time in the pair's ``zone`` (the calendar its relative dates name)
        and ``question_before``, the other speaker's question the turn follows ("" for none)."""
        analyzer, log = self.ctx.analyzer, self.ctx.log
        missing = DOING_WITHOUT.get()
        missed_before = len(missing) if missing is not None else 0
        with TRACER.start_as_current_span("pipeline.analyze") as span:
            set_turn_attributes(span, turn.turn_id, pair.user_id, pair.character_id)
            span.set_attribute("novaberg.analyzer", analyzer.name)
            try:
                result = await analyzer.analyze(
                    text, pair, beobachter, as_of.astimezone(zone), question_before=question_before
                )
            except grpc.aio.AioRpcError as error:  # the registry (LZG) refused or failed
                self._log_failure(pair, as_of, turn, error, str(error.details()))
                where = f"analyzer {analyzer.name}: LZG registry"
                raise (peer_error(where, "ResolveEntities", error) or Unavailable(f"{where}: {error.details()}")) from error
            except NovabergError as error:
                self._log_failure(pair, as_of, turn, error, str(error))
                raise
        if not result.analysis.inhalt:
            result.analysis.inhalt = text
        scope = LogScope.of_pair(turn.turn_id, pair, turn.span_id, as_of)
        for failure in (missing or [])[missed_before:]:  # the registry gave no answer: names left unresolved
            log.error(**scope, node=NODE_SALIENCE, typ="ohne_antwort", message=failure)
        log.write(
            **scope, node=NODE_SALIENCE, art="berechnung",
            inhalt={
                "analyzer": result.herkunft,
                "beobachter": ROLE[beobachter],
                "analyse": MessageToDict(result.analysis, preserving_proto_field_name=True),
                **result.details,
            },
        )
        tokens_in = result.details.get("input_tokens")
        if isinstance(tokens_in, int) and tokens_in > 0:
            log.token(
                **scope, node=NODE_SALIENCE, modell=str(result.details.get("modell", "")),
                input_tokens=tokens_in, output_tokens=int(result.details.get("output_tokens", 0)), kosten_usd=0.0,
            )  # fmt: skip
        return result

    def _log_failure(
        self, pair: common_pb2.Pair, as_of: datetime, turn: common_pb2.TurnContext, error: Exception, message: str
    ) -> None:
        scope = LogScope.of_pair(turn.turn_id, pair, turn.span_id, as_of)
        self.ctx.log.error(**scope, node=NODE_SALIENCE, typ=type(error).__name__, message=message)

    async def write_turn(
        self,
        pair: common_pb2.Pair,
        item: TurnToWrite,
        writer: str,
        timing: Timing,
        profile: Profile,
        vector: Awaitable[np.ndarray | None] | None = None,
    ) -> Written:
        """Session append and KZG write of one turn (SPEC §3, §4), the KZG embed text computed here.

        ``vector``: the embedding of the turn's :meth:`TurnToWrite.entry_text` when the caller computes
        it (awaited only by the KZG write, so the session append does not wait for the model).
        """
        ctx = self.ctx

        async def store() -> kzg_pb2.StoreEntryResponse:
            embedding: list[float] = []
            given = await vector if vector is not None else None
            text_to_embed = item.entry_text(profile)
            if text_to_embed is not None and given is not None:
                embedding = given.tolist()
            elif text_to_embed is not None and vector is None:
                embedding = (await ctx.embed(text_to_embed, timing)).tolist()
            # else: the caller's batch could not embed it (the model failed): the KZG embeds the same text.
            return await ctx.kzg.store_entry(self.store_request(pair, item, writer, profile, embedding))

        # The session append runs while the model embeds the entry.
        with count_resendings() as resendings:
            appended, stored = await asyncio.gather(ctx.kzg.append_session_turn(item.session_append(pair)), store())
        return Written(appended, stored, resendings.count > 0)

    async def write_turns(
        self,
        pair: common_pb2.Pair,
        items: Sequence[TurnToWrite],
        timing: Timing,
        profile: Profile,
        after: Awaitable[object] | None = None,
    ) -> list[Written]:
        """:meth:`write_turn` for a chunk of turns: one model batch, one KZG call for the appends, one for
        the entries — sent once ``after`` (the previous chunk's write) has succeeded."""
        ctx = self.ctx
        # A batch takes the KZG longer than one turn: the deadline grows with it.
        timeout_s = ctx.kzg.timeout_s * (1.0 + len(items) / 16)
        appends = kzg_pb2.AppendSessionTurnsRequest(appends=[item.session_append(pair) for item in items])

        texts = [item.entry_text(profile) for item in items]
        wanted = [index for index, text in enumerate(texts) if text is not None]
        embeddings: list[list[float]] = [[] for _ in items]
        if wanted:  # while the previous chunk is written
            vectors = await ctx.embed_texts([texts[index] or "" for index in wanted], timing)
            for index, vector in zip(wanted, vectors, strict=True):
                embeddings[index] = vector.tolist()
        entries = kzg_pb2.StoreEntriesRequest(entries=[
            self.store_request(pair, item, "pipeline.observe", profile, embedding)
            for item, embedding in zip(items, embeddings, strict=True)
        ])  # fmt: skip
        if after is not None:
            await after
        with count_resendings() as resendings:
            appended, stored = await asyncio.gather(
                ctx.kzg.append_session_turns(appends, timeout_s), ctx.kzg.store_entries(entries, timeout_s)
            )
        sent_again = resendings.count > 0
        return [Written(a, s, sent_again) for a, s in zip(appended.results, stored.results, strict=True)]

    def store_request(
        self, pair: common_pb2.Pair, item: TurnToWrite, writer: str, profile: Profile, embedding: list[float]
    ) -> kzg_pb2.StoreEntryRequest:
        """The KZG write of one turn; an empty ``embedding`` leaves the embedding to the KZG. The entry's id
        is the turn's (:func:`turn_entry_id`), so a resent turn answers STORE_OUTCOME_REPEATED."""
        analysis, beobachter = item.analysis, item.beobachter
        return kzg_pb2.StoreEntryRequest(
            pair=pair, beobachter=beobachter, inhalt=analysis.inhalt, salience=analysis.salience, ei=analysis.ei,
            magnets=analysis.magnets, turn=item.turn, embedding=embedding, as_of=to_timestamp(item.as_of),
            writer=writer, sprecher=profile.speaker(beobachter), sprache=profile.sprache,
            embedding_model_id=self.ctx.provider.model_id if embedding else "",
            entry_id=turn_entry_id(item.turn.turn_id, beobachter), resend_safe=True, antwort_auf=item.antwort_auf,
        )  # fmt: skip


class TurnStep:
    """A step that writes a turn (observe, dispatch): the shared context and the turn writer."""

    def __init__(self, ctx: PipelineContext, writer: TurnWriter) -> None:
        self.ctx = ctx
        self.writer = writer
