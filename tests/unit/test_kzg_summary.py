"""The default extractive session summariser (SPEC §3)."""

from __future__ import annotations

from services.kzg.summary import ExtractiveSummariser
from services.kzg.types import SessionTurnRecord


async def test_extractive_summary_keeps_first_sentences_after_the_previous_summary() -> None:
    turns = [
        SessionTurnRecord(role="user", text="Ich mag Schnittlauch. Und Petersilie auch!"),
        SessionTurnRecord(role="assistant", text="Schnittlauch   passt zu Eiern"),
        SessionTurnRecord(role="user", text="   "),
    ]
    summary = await ExtractiveSummariser()("user: Hallo.", turns)
    assert summary.splitlines() == ["user: Hallo.", "user: Ich mag Schnittlauch.", "assistant: Schnittlauch passt zu Eiern"]


async def test_extractive_summary_is_bounded_and_keeps_the_newest_lines() -> None:
    summariser = ExtractiveSummariser(max_chars=60, sentence_chars=20)
    turns = [SessionTurnRecord(role="user", text=f"Satz {i} " + "x" * 40) for i in range(5)]
    summary = await summariser("", turns)
    assert len(summary) <= 60
    assert summary.splitlines()[-1].startswith("user: Satz 4")
    assert all(len(line) <= len("user: ") + 20 for line in summary.splitlines())
