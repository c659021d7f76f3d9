"""Session summarisers (SPEC §3): pluggable; a model call in production, extractive by default."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from services.kzg.types import SessionTurnRecord

__all__ = ["SUMMARY_MAX_CHARS", "ExtractiveSummariser", "Summariser"]

SUMMARY_MAX_CHARS = 4_000
"""The extractive summary keeps at most this many characters (the newest lines win)."""


class Summariser(Protocol):
    """Folds the oldest turns into the running summary; raising means "failed" (→ trim to 20)."""

    async def __call__(self, previous_summary: str, turns: Sequence[SessionTurnRecord]) -> str: ...


class ExtractiveSummariser:
    """Keeps the first sentence of each turn as ``role: sentence`` lines after the previous summary."""

    def __init__(self, max_chars: int = SUMMARY_MAX_CHARS, sentence_chars: int = 200) -> None:
        self.max_chars = max_chars
        self.sentence_chars = sentence_chars

    async def __call__(self, previous_summary: str, turns: Sequence[SessionTurnRecord]) -> str:
        lines = [line for line in previous_summary.splitlines() if line.strip()]
        lines.extend(f"{turn.role}: {self._first_sentence(turn.text)}" for turn in turns if turn.text.strip())
        kept: list[str] = []
        size = 0
        for line in reversed(lines):
            size += len(line) + 1
            if size > self.max_chars:
                break
            kept.append(line)
        return "\n".join(reversed(kept))

    def _first_sentence(self, text: str) -> str:
        flat = " ".join(text.split())
        for index, char in enumerate(flat):
            if char in ".!?" and (index + 1 == len(flat) or flat[index + 1] == " "):
                flat = flat[: index + 1]
                break
        if len(flat) > self.sentence_chars:
            flat = flat[: self.sentence_chars - 1].rstrip() + "…"
        return flat
