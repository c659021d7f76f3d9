"""Whether the clause a date stands in is told in the past — pure text work for :mod:`services.pipeline.dates`.

SPEC §11 resolves a turn's dates against the turn's own time; a date without its year or a bare
weekday ("Am Freitag war ich im Kino") names the past one when its clause says so. Only clear cues
count, so a clause without one keeps the forward reading: the past forms of *sein*, *haben* and
*werden*, a German perfect (an auxiliary, then a participle ``ge…t``/``ge…en``), and English
``was``/``were``/``went``/``did``/``had``.
"""

from __future__ import annotations

import re

__all__ = ["told_in_the_past"]

_CLAUSE_END = re.compile(r"[!?;:\n,]|(?<!\d)\.")
"""What ends a clause: sentence marks and commas; a dot after a digit is an ordinal (``12. März``)."""
_COMMA_AFTER = re.compile(r"\s*,")
_PAST_FORMS = re.compile(
    r"\b(?:war|warst|waren|wart|hatte|hattest|hatten|hattet|wurde|wurdest|wurden|wurdet"
    r"|was|were|went|did|had)(?:n['’]t)?\b",
    re.IGNORECASE,
)
_PERFECT_AUXILIARY = re.compile(r"\b(?:habe|hab|hast|hat|haben|habt|bin|bist|ist|sind|seid)\b", re.IGNORECASE)
_PARTICIPLE = re.compile(r"\bge\w+(?:t|en)\b")
"""A German past participle (``gegangen``, ``gemacht``); lower case, so no noun (``Geburtstag``)."""
_NO_PARTICIPLES = frozenset({"gegen", "gehen", "geht", "geben", "gebt", "genießen", "gewinnen"})


def _clause(text: str, start: int, end: int) -> str:
    """The clause around ``text[start:end]`` without it; a comma right after it ("On Friday, I went")
    does not end the clause."""
    left = max((m.end() for m in _CLAUSE_END.finditer(text, 0, start)), default=0)
    comma = _COMMA_AFTER.match(text, end)
    rest = comma.end() if comma else end
    right = _CLAUSE_END.search(text, rest)
    return f"{text[left:start]} {text[rest : right.start() if right else len(text)]}"


def told_in_the_past(text: str, start: int, end: int) -> bool:
    """Whether the clause of the phrase at ``text[start:end]`` has a clear past-tense cue (module docstring)."""
    clause = _clause(text, start, end)
    if _PAST_FORMS.search(clause):
        return True
    auxiliary = _PERFECT_AUXILIARY.search(clause)
    return auxiliary is not None and any(
        m.group() not in _NO_PARTICIPLES for m in _PARTICIPLE.finditer(clause, auxiliary.end())
    )
