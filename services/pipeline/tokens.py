"""Words of a turn: the tokenizer, the word lists in ``data/`` and the language guess.

The shared ground of the offline analyzer's rules (:mod:`services.pipeline.text_rules`,
:mod:`services.pipeline.dates`): pure text work, no I/O beyond reading the word lists once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["DATA_DIR", "Token", "looks_german", "sentence_initial", "stopwords", "tokenize", "word_list"]

DATA_DIR = Path(__file__).resolve().parent / "data"

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


@cache
def word_list(name: str) -> frozenset[str]:
    """The lower-cased words of ``data/<name>`` (lines starting with ``#`` are comments)."""
    words: set[str] = set()
    for line in (DATA_DIR / name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            words.update(line.lower().split())
    return frozenset(words)


def stopwords() -> frozenset[str]:
    """The German + English stopword list (lower case)."""
    return word_list("stopwords.txt")


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    start: int
    end: int
    sentence_initial: bool

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper()


def sentence_initial(text: str, start: int) -> bool:
    """Whether position ``start`` begins a sentence: text start, or after ``!``/``?``/``:``/a non-ordinal ``.``."""
    before = text[:start].rstrip(" \t\r\"'„“”‚‘’»«(")
    return (
        not before
        or before[-1] in "!?\n:"
        or (before[-1] == "." and not (len(before) > 1 and before[-2].isdigit()))
    )


def tokenize(text: str) -> list[Token]:
    """Words with positions and whether each starts a sentence."""
    return [
        Token(m.group(), m.start(), m.end(), sentence_initial(text, m.start())) for m in _WORD.finditer(text)
    ]


_GERMAN_MARKERS = frozenset("der die das und ist ich nicht ein eine zu mit war hat habe bin sind wir auch".split())
_ENGLISH_MARKERS = frozenset("the and is i not a to with was has have am are we of it".split())


def looks_german(tokens: Sequence[Token]) -> bool:
    """More German than English function words (ties count as German, the seeds' language)."""
    words = [t.lower for t in tokens]
    german = sum(w in _GERMAN_MARKERS for w in words)
    english = sum(w in _ENGLISH_MARKERS for w in words)
    return german >= english and german > 0

