"""Turns at the first and the last instant a request may name, with dates relative to them (SPEC §7, §10, §11).

"Next year" said on 9999-12-30 names a year no datetime holds, "the day after tomorrow" one past the latest
instant the stores accept: such a date is no date to search for or to register. The turn is observed and
its dossier built and the answer dispatched as any other — OK, not INTERNAL (the date resolution raised there, found by trying the
ends of the accepted range after tests/e2e/test_attacks.py found the LZG's decay failing at them).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.contract import TIME_MAX, TIME_MIN
from novaberg_core.timeutil import to_timestamp
from tests.service.pipeline.conftest import PipelineUnderTest

PAIR = common_pb2.Pair(user_id="ende", character_id="nova")
TEXTS = (
    "Next year Anna and I go hiking again.",
    "The day after tomorrow we start the long hike.",
    "Nächstes Jahr wandern Anna und ich wieder.",
    "Next weekend we bake bread with Anna.",
    "Last year Anna showed me the mountains.",
)


@pytest.mark.parametrize("as_of", [TIME_MAX, TIME_MIN], ids=["last", "first"])
async def test_turns_and_dossiers_at_the_ends_of_time(service: PipelineUnderTest, as_of: datetime) -> None:
    for number, text in enumerate(TEXTS):
        turn_id = f"end-{as_of.year}-{number}"
        observed = await service.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
            pair=PAIR, turn_id=turn_id, beobachter=common_pb2.BEOBACHTER_USER, text=text, as_of=to_timestamp(as_of),
        ))  # fmt: skip
        assert observed.session_turn_count == 2 * number + 1  # the answers are turns of the session too
        dossier = await service.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
            pair=PAIR, turn_id=turn_id, query_text=text, as_of=to_timestamp(as_of),
        ))  # fmt: skip
        assert dossier.cluster
        dispatched = await service.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
            pair=PAIR, turn_id=turn_id, user_prompt=text, answer_text=f"Oh, tell me more! ({text})", cluster="bier",
            served_node_ids=dossier.served_node_ids, as_of=to_timestamp(as_of),
        ))  # fmt: skip
        assert list(dispatched.fehler) == []
    # Every date the analyzer registered lies within what the stores accept.
    timelines = await service.lzg.ListTimelines(lzg_pb2.ListTimelinesRequest(pair=PAIR))
    years = {t.zeitpunkt.ToDatetime(tzinfo=UTC).year for t in timelines.timelines}
    assert all(1 <= year <= TIME_MAX.year for year in years), years
