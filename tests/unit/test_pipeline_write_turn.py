"""A turn's session append rides on its KZG write; a KZG that predates that gets a separate append (SPEC §3, §7)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.clusters import default_clusters
from novaberg_core.embedding import EmbeddingProvider
from novaberg_core.embedding.base import Vectors
from novaberg_core.pipeline_log import PipelineLog
from services.pipeline.turns import Timing, TurnPipeline

PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
AS_OF = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


class FourDims(EmbeddingProvider):
    model_id = "four"
    dimension = 4

    async def embed(self, texts: Sequence[str]) -> Vectors:
        return np.tile(np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


class FakeKzg:
    """Answers StoreEntry with or without the session result, as a KZG before/after ``session_turn``."""

    def __init__(self, *, knows_session_turn: bool) -> None:
        self.knows = knows_session_turn
        self.calls: list[tuple[str, Any]] = []

    async def StoreEntry(self, request: kzg_pb2.StoreEntryRequest, **_: Any) -> kzg_pb2.StoreEntryResponse:
        self.calls.append(("StoreEntry", request))
        response = kzg_pb2.StoreEntryResponse(
            outcome=kzg_pb2.STORE_OUTCOME_STORED, kzg_key="kzg:meister:nova:x"
        )
        if self.knows:
            response.session.turn_count = 4
        return response

    async def AppendSessionTurn(
        self, request: kzg_pb2.AppendSessionTurnRequest, **_: Any
    ) -> kzg_pb2.AppendSessionTurnResponse:
        self.calls.append(("AppendSessionTurn", request))
        return kzg_pb2.AppendSessionTurnResponse(turn_count=7)


def pipeline(kzg: FakeKzg) -> TurnPipeline:
    return TurnPipeline(
        kzg=kzg,  # type: ignore[arg-type]
        lzg=None,  # type: ignore[arg-type]
        clusters=None,  # type: ignore[arg-type]
        cluster_table=default_clusters(),
        analyzer=None,  # type: ignore[arg-type]
        provider=FourDims(),
        log=PipelineLog(),
    )


ANALYSIS = pipeline_pb2.TurnAnalysis(
    salience=common_pb2.SalienceResult(salienz=0.6, themen=["wandern"]),
    ei=common_pb2.EiFields(emotion="freude", intentionen=["information_teilen"]),
    inhalt="Ich war wandern.",
)


async def _write(
    kzg: FakeKzg,
) -> tuple[kzg_pb2.AppendSessionTurnResponse, kzg_pb2.StoreEntryResponse, Timing]:
    timing = Timing()
    turn = common_pb2.TurnContext(turn_id="turn-1")
    appended, stored = await pipeline(kzg)._write_turn(
        PAIR,
        common_pb2.BEOBACHTER_USER,
        "Ich war wandern.",
        ANALYSIS,
        turn,
        AS_OF,
        "pipeline.observe",
        timing,
    )
    return appended, stored, timing


async def test_the_session_turn_goes_with_the_kzg_write() -> None:
    kzg = FakeKzg(knows_session_turn=True)
    appended, stored, timing = await _write(kzg)
    assert [name for name, _ in kzg.calls] == ["StoreEntry"]
    request = kzg.calls[0][1]
    assert request.session_turn.role == "user" and request.session_turn.text == "Ich war wandern."
    assert request.session_turn.intention == "information_teilen" and request.session_turn.emotion == "freude"
    assert list(request.embedding) == [1.0, 0.0, 0.0, 0.0] and timing.model_ms > 0.0
    assert appended.turn_count == 4 and stored.kzg_key == "kzg:meister:nova:x"


async def test_a_kzg_without_session_results_gets_the_turn_appended_separately() -> None:
    kzg = FakeKzg(knows_session_turn=False)
    appended, _, _ = await _write(kzg)
    assert [name for name, _ in kzg.calls] == ["StoreEntry", "AppendSessionTurn"]
    assert kzg.calls[1][1].turn == kzg.calls[0][1].session_turn
    assert appended.turn_count == 7
