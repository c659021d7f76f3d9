"""Dispatch: after the answer, what the turn leaves in the memory (SPEC §5.6, §7, §8).

The steps: check the whole request, the models, the answer's magnets and the served node ids (one
LZG call for the ids this process did not serve itself); log the input; then, independent of each
other, the usage reinforcement with the answer embedded here (SPEC §5.6), the character's own session
turn and KZG entry, and this turn's cluster; then the character's answer. Whatever part fails, the
turn is recorded: its usage record, ``turn_roh``, and an error record per failed part, named in
the response. Each event is logged once, where it happens: the LZG logs the usage protocol, the KZG
the entry's write; the pipeline logs its own decisions (the cluster), the answer, ``turn_roh``, and
the usage record only when the LZG gave no answer (and so logged none). A resend is safe: the LZG
reinforces a turn once, the character's turn is written once, and the resend's answer and
``turn_roh`` are marked ``wiederholt`` (docs/decisions.md "A resent turn is written once").
"""

from __future__ import annotations

import asyncio
import json

import grpc
import numpy as np

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import query_embed_text
from novaberg_core.errors import NovabergError, Unavailable
from novaberg_core.timeutil import to_timestamp
from services.pipeline.app.context import ROLE, Timing
from services.pipeline.app.turn_writer import (
    TurnStep,
    TurnToWrite,
    Written,
    given_analysis,
    is_repeat,
)
from services.pipeline.deadline import DOING_WITHOUT, answer_or_none, within_time_left
from services.pipeline.records import NODE_DISPATCHER, step_records
from services.pipeline.text_rules import answered_question
from services.pipeline.validation import check_dispatch

__all__ = ["Dispatch"]


class Dispatch(TurnStep):
    """SPEC §7 "dispatch" over the shared context."""

    async def dispatch(self, request: pipeline_pb2.DispatchRequest) -> tuple[pipeline_pb2.DispatchResponse, Timing]:
        """Usage reinforcement, the character's own KZG entry, this turn's cluster, ``turn_roh`` (SPEC §7)."""
        ctx = self.ctx
        timing = Timing()
        cluster = check_dispatch(request, ctx.cluster_table)
        pair, as_of = await ctx.open_turn(request, "answer_analysis")
        served = list(dict.fromkeys(request.served_node_ids))
        await ctx.check_served(pair, served)
        profile = await ctx.clusters.profile(pair)
        assistant = common_pb2.BEOBACHTER_ASSISTANT
        async with step_records(ctx.log, NODE_DISPATCHER, request.turn_id, pair, as_of) as records:
            turn = records.turn
            records.received({"cluster": cluster, "lzg_resonanz_ids": served, "user_prompt": request.user_prompt})

            # The answer follows the user's prompt of this turn: a question there is what it answers.
            question = answered_question(ROLE[common_pb2.BEOBACHTER_USER], request.user_prompt, ROLE[assistant])

            async def analyse_answer() -> TurnToWrite:
                """The character's answer as a turn to write, with the caller's analysis or the analyzer's."""
                if request.HasField("answer_analysis"):
                    analysis = given_analysis(request.answer_analysis, request.answer_text)
                else:
                    analyzed = await self.writer.analyze(
                        request.answer_text, pair, assistant, as_of, turn, profile.zone, question
                    )
                    analysis = analyzed.analysis
                return TurnToWrite(assistant, request.answer_text, analysis, turn, as_of, question)

            async def embed_answer() -> tuple[np.ndarray | None, np.ndarray | None]:
                """One model batch: the answer (for the usage reinforcement, when a served node can be
                compared with it) and the character's KZG entry text (when the entry passes the gate)."""
                texts = [query_embed_text(request.answer_text)] if served else []
                entry_text = (await answer_turn).entry_text(profile)
                if entry_text is not None:
                    texts.append(entry_text)
                if not texts:
                    return None, None
                try:
                    vectors = await ctx.embed_texts(texts, timing)
                except NovabergError as error:
                    # The model is down: the LZG records the usage outcome (embedding itself, or
                    # `embed_fehler`), the KZG embeds the entry itself; the turn is recorded either way.
                    failed.append(f"embedding model: {error}")
                    return None, None
                return (vectors[0] if served else None), (vectors[-1] if entry_text is not None else None)

            failed: list[str] = []
            unresolved: list[str] = []  # the answer's analysis goes on without the LZG's registry
            DOING_WITHOUT.set(unresolved)
            answer_turn = asyncio.ensure_future(analyse_answer())
            embedded = asyncio.ensure_future(embed_answer())

            async def entry_vector() -> np.ndarray | None:
                return (await embedded)[1]

            async def reinforce() -> lzg_pb2.ReinforceUsedResponse:
                """Usage reinforcement with the answer vector embedded here (SPEC §5.6)."""
                answer, _ = await embedded
                reinforce_request = lzg_pb2.ReinforceUsedRequest(
                    pair=pair, answer_text=request.answer_text, served_node_ids=served, turn=turn,
                    as_of=to_timestamp(as_of),
                )  # fmt: skip
                if answer is not None:
                    reinforce_request.answer_vector.values.extend(answer.tolist())
                    reinforce_request.answer_vector.model_id = ctx.provider.model_id
                missing: list[str] = []  # an LZG that is out or silent is not waited for (deadline.py)
                reinforced = await answer_or_none(
                    "LZG", "ReinforceUsed", lambda: ctx.lzg.reinforce_used(reinforce_request), missing, ctx.silent_peers
                )
                if reinforced is None:
                    raise Unavailable(missing[0])
                return reinforced

            async def own_entry() -> Written:
                """The character's own session turn (sent once analysed) and KZG entry (beobachter = assistant)."""
                return await self.writer.write_turn(
                    pair, await answer_turn, "pipeline.dispatcher", timing, profile, entry_vector()
                )

            async def persist_cluster() -> None:
                previous = await ctx.clusters.put(pair, cluster, turn_id=request.turn_id, as_of=as_of)
                records.decided(
                    "cluster", cluster, {"vorher": previous.cluster if previous else None},
                    {"tabelle": list(ctx.cluster_table.known)},
                )  # fmt: skip
                records.wrote("pipeline:cluster", "set", cluster=cluster)

            # The three writes are independent of each other; the request was checked in full above.
            # Whatever fails of them, the turn is recorded (SPEC §5.6, §7, §8): its usage record,
            # `turn_roh`, and a `fehler` record per failed part, named in the response.
            outcomes = await asyncio.gather(
                reinforce(), within_time_left("KZG", own_entry()), within_time_left("Redis", persist_cluster()),
                return_exceptions=True,
            )
            for part, outcome in zip(("usage reinforcement", "own KZG entry", "cluster"), outcomes, strict=True):
                if isinstance(outcome, NovabergError | grpc.aio.AioRpcError):
                    failed.append(f"{part}: {outcome}")
                    records.failed(type(outcome).__name__, f"{part}: {outcome}")
                elif isinstance(outcome, BaseException):
                    unexpected = outcome
                    break
            else:
                unexpected = None
            reinforced = outcomes[0]
            written = outcomes[1] if isinstance(outcomes[1], Written) else None  # None: named in `fehler`
            stored = written.stored if written is not None else None
            # A resend (the character's turn stood already) is recorded as one: "last answers" (syn §10.4)
            # lists the answer once.
            resent = {"wiederholt": True} if written is not None and is_repeat(written) else {}
            # The character's answer as its own output (syn §10.4 "last answers" reads these).
            records.answered({"text": request.answer_text, **resent}, quelle=pair.character_id)
            if isinstance(reinforced, lzg_pb2.ReinforceUsedResponse):
                protokoll = reinforced.protokoll  # the LZG logged it (``verwendung.verstaerken``)
            else:
                # No answer from the LZG, so no record of its own: the turn's usage record is this one.
                protokoll = lzg_pb2.VerwendungsProtokoll(
                    ausgang=lzg_pb2.VERWENDUNG_AUSGANG_DB_FEHLER, error=f"usage reinforcement: {reinforced}"
                )
                records.usage_without_lzg(protokoll)
            failed.extend(unresolved)
            records.turn_roh({
                "user_prompt": request.user_prompt,
                "response": request.answer_text,
                "user_emotion": json.loads(request.user_emotion_json) if request.user_emotion_json else None,
                "nova_emotion": json.loads(request.nova_emotion_json) if request.nova_emotion_json else None,
                "herkunft": "pipeline.dispatch",
                **resent,
            })
        if unexpected is not None:
            raise unexpected
        response = pipeline_pb2.DispatchResponse(
            protokoll=protokoll, kzg=stored,
            cluster_persisted="" if isinstance(outcomes[2], BaseException) else cluster, fehler=failed,
        )
        return response, timing
