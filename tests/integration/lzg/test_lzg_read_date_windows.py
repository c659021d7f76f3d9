"""A date a question names finds the memories within its §5.4 tolerance, counted in whole calendar units
(SPEC §11 ``timeline`` source; ``layers.timeline_window``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from novaberg_core.model import Pair
from services.lzg.engine import LzgEngine
from services.lzg.types import Timeline

from .conftest import PAIR, TableProvider, promote, unit

pytestmark = pytest.mark.integration

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
"""The month a question names: ± 6 months is September 2025 to September 2026, each whole."""
SECOND = timedelta(seconds=1)


async def test_a_named_month_finds_the_memories_six_whole_months_either_side(
    engine: LzgEngine, provider: TableProvider
) -> None:
    made = {
        "first in": datetime(2025, 9, 1, tzinfo=UTC),
        "before": datetime(2025, 9, 1, tzinfo=UTC) - SECOND,
        "last in": datetime(2026, 10, 1, tzinfo=UTC) - SECOND,
        "after": datetime(2026, 10, 1, tzinfo=UTC),
    }
    ids = {}
    for axis, (name, when) in enumerate(made.items(), start=1):
        ids[name] = (
            await promote(engine, provider, f"turn {name}", unit(*[0.0] * axis, 1.0), erstellt_am=when)
        ).node_id
    # A memory made long before, dated by its timeline ref (a month) into the window's last month.
    ref = (
        await engine.upsert_timeline(
            Pair(*PAIR), Timeline(0, Pair("", ""), datetime(2026, 9, 1, tzinfo=UTC), "monat", "", ())
        )
    )[0]
    ids["dated"] = (await promote(engine, provider, "turn dated", unit(*[0.0] * 5, 1.0),
                                  erstellt_am=datetime(2020, 1, 1, tzinfo=UTC), timeline_id=ref.id)).node_id  # fmt: skip

    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        recall_k=10, zeitfenster=[(MARCH, "monat")], as_of=datetime(2027, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    dated = {c.knoten_id for c in result.recall if "timeline" in c.quellen}
    assert dated == {ids["first in"], ids["last in"], ids["dated"]}


async def test_a_named_year_near_the_end_of_time_reads_to_its_last_instant(
    engine: LzgEngine, provider: TableProvider
) -> None:
    """9998 ± 2 years ends past what a datetime holds: the window is held at its last instant."""
    last = datetime(9999, 12, 30, tzinfo=UTC)
    node = await promote(engine, provider, "the last turn", unit(0, 1), erstellt_am=last, as_of=last)
    result = await engine.spreading_read(
        Pair(*PAIR), query_values=unit(1).tolist(), query_text=None, cluster="werkstatt", nova_emotion="",
        recall_k=10, zeitfenster=[(datetime(9998, 1, 1, tzinfo=UTC), "jahr")], as_of=last,
    )  # fmt: skip
    assert [c.knoten_id for c in result.recall if "timeline" in c.quellen] == [node.node_id]
