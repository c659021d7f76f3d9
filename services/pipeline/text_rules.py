"""Pure rules of the offline analyzer: themes, name mentions, a dated mention, a salience heuristic.

Everything here is deterministic text work without I/O (the analyzer resolves names and dates
through the LZG registry afterwards). The rules are deliberately simple and written down, so a
reader can predict the result of every turn:

Themes
    Words (letters only) of at least 3 characters that are no stopword (German + English list in
    ``data/stopwords.txt``) and no date word, lower-cased, ranked by frequency, ties by first
    occurrence; at most :data:`MAX_THEMEN`. In German text (more German than English function
    words) only the capitalised words — the nouns — count, when there is one.

Name mentions (entity candidates)
    A capitalised word is a *mention*. It is a *name candidate* (an entity may be created for it)
    unless it is a stopword, a date word, listed in ``data/not_entities.txt``, or a German common
    noun by its article: directly after a determiner (``der``, ``meine``, ``beim``, ``the``, …), or
    after a determiner plus one lower-case inflected adjective (``der neue Zahnarzt``). Adjacent
    candidates form one name (``Anna Müller``). A sentence-initial word counts like any other.

Dated mention
    The first of: ISO date, ``12.03.2026`` / ``12.3.``, ``12. März [2026]``, ``March 12`` /
    ``12 March``, ``heute``/``morgen``/``übermorgen``/``gestern``/``vorgestern`` (and English),
    ``in N Tagen`` / ``vor N Tagen`` / ``N days ago``, a weekday (``am Freitag``: the next one;
    ``letzten Freitag``: the last one), ``letzte/nächste/diese Woche``, ``letzten/nächsten Monat``,
    ``im März [2026]``, ``letztes/nächstes Jahr``, ``im Jahr 2019``. Resolved against ``as_of``
    to the start of its day / ISO week (Monday) / month / year in UTC, with that ``praezision``.

Salience (raw score in 0..1, :func:`salience_heuristic`)
    No theme word at all → 0.1 (below the 0.3 gate: not stored). Otherwise
    ``0.3 + 0.1·personal + 0.2·emotional + 0.15·entity + 0.15·dated + 0.2·importance``, capped at
    1.0 and rounded to two decimals; each cue counts once (see :data:`SALIENCE_WEIGHTS`).
    personal: a first-person word; emotional: a word of ``data/emotion_lexicon.txt``; entity: a
    name candidate, or a mention the pair registered as an entity (the analyzer decides the
    latter after its lookup); dated: a dated mention; importance: ``wichtig``, ``merk dir``,
    ``vergiss nicht``, ``important``, ``remember`` …
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

__all__ = [
    "MAX_THEMEN",
    "SALIENCE_WEIGHTS",
    "DatedMention",
    "TextFindings",
    "analyze_text",
    "extract_themes",
    "find_dated_mention",
    "find_mentions",
    "salience_heuristic",
]

DATA_DIR = Path(__file__).resolve().parent / "data"

MAX_THEMEN = 5
"""At most this many themes per turn."""

DEFAULT_DIMENSION = "allgemein"
"""``dimension`` of a turn no keyword assigns to a life area (the pipeline requires one: salience dimension 5)."""

SALIENCE_BASE = 0.3
SALIENCE_NO_CONTENT = 0.1
SALIENCE_WEIGHTS: dict[str, float] = {
    "personal": 0.1,
    "emotional": 0.2,
    "entity": 0.15,
    "dated": 0.15,
    "importance": 0.2,
}
"""Additive cues of the salience heuristic (module docstring)."""

_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")

_PERSONAL = frozenset(
    "ich mein meine meinem meinen meiner meines mir mich wir uns unser unsere unserem unseren unserer "
    "i my me mine myself we us our ours".split()
)
_IMPORTANCE = re.compile(
    r"\b(wichtig|merk\s+dir|merke\s+dir|vergiss\s+(?:das\s+)?nicht|nie\s+vergessen|important|remember|"
    r"don'?t\s+forget|never\s+forget)\b",
    re.IGNORECASE,
)
_IMPERATIVE_START = frozenset(
    "merk merke erinnere erinner such suche schreib schreibe mach mache zeig zeige sag sage nenn nenne hilf "
    "erstelle erstell leg lege trag trage plane plan bitte notier notiere "
    "remember remind find search write make show tell list create add schedule note please".split()
)
_PROCEDURAL = re.compile(r"\b(wie\s+man|so\s+geht|anleitung|schritt\s+für\s+schritt|how\s+to|step\s+by\s+step)\b",
                         re.IGNORECASE)

_DIMENSIONS: tuple[tuple[str, frozenset[str]], ...] = (
    ("beziehungen", frozenset(
        "schwester bruder mutter mama vater papa eltern freund freundin freunde familie partner partnerin "
        "frau mann kind kinder tochter sohn oma opa tante onkel cousin cousine nachbar nachbarin kollege "
        "kollegin sister brother mother mom father dad parents friend friends family wife husband child "
        "children daughter son grandma grandpa aunt uncle neighbour neighbor colleague".split())),
    ("gesundheit", frozenset(
        "arzt ärztin zahnarzt zahnärztin krank krankheit schmerz schmerzen gesund gesundheit fieber "
        "krankenhaus therapie medikament doctor dentist sick ill pain health hospital therapy medicine".split())),
    ("arbeit", frozenset(
        "arbeit job chef chefin büro projekt firma kunde kunden meeting besprechung gehalt work boss office "
        "project company customer salary".split())),
)

_DETERMINERS = frozenset(
    "der die das den dem des ein eine einen einem einer eines mein meine meinen meinem meiner meines "
    "dein deine deinen deinem deiner deines sein seine seinen seinem seiner seines ihr ihre ihren ihrem "
    "ihrer ihres unser unsere unseren unserem unserer euer eure euren eurem eurer kein keine keinen "
    "keinem keiner keines im am beim zum zur vom ins dieser diese dieses diesen diesem jeder jede jedes "
    "jeden jedem welche welcher welches einige viele alle "
    "the a an this that these those my your his her its our their some any no every".split()
)
_GERMAN_DETERMINERS = frozenset(d for d in _DETERMINERS if d not in {
    "the", "a", "an", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their",
    "some", "any", "no", "every"})
_ADJECTIVE_ENDINGS = ("e", "en", "er", "es", "em")

_MONTHS: dict[str, int] = {
    "januar": 1, "jänner": 1, "january": 1, "jan": 1, "februar": 2, "february": 2, "feb": 2,
    "märz": 3, "maerz": 3, "march": 3, "april": 4, "apr": 4, "mai": 5, "may": 5, "juni": 6, "june": 6,
    "juli": 7, "july": 7, "august": 8, "aug": 8, "september": 9, "sept": 9, "sep": 9, "oktober": 10,
    "october": 10, "okt": 10, "oct": 10, "november": 11, "nov": 11, "dezember": 12, "december": 12,
    "dez": 12, "dec": 12,
}
_WEEKDAYS: dict[str, int] = {
    "montag": 0, "monday": 0, "dienstag": 1, "tuesday": 1, "mittwoch": 2, "wednesday": 2,
    "donnerstag": 3, "thursday": 3, "freitag": 4, "friday": 4, "samstag": 5, "sonnabend": 5,
    "saturday": 5, "sonntag": 6, "sunday": 6,
}
_DATE_WORDS = frozenset(
    [*_MONTHS, *_WEEKDAYS, "heute", "morgen", "übermorgen", "gestern", "vorgestern", "woche", "monat",
     "jahr", "today", "tomorrow", "yesterday", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat",
     "sun"]
)

_MONTH_ALT = "|".join(sorted((re.escape(m) for m in _MONTHS), key=len, reverse=True))
_WEEKDAY_ALT = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))


@cache
def _word_list(name: str) -> frozenset[str]:
    words: set[str] = set()
    for line in (DATA_DIR / name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            words.update(line.lower().split())
    return frozenset(words)


@cache
def _emotion_lexicon() -> tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]:
    """(sector, exact words, prefixes) per line of ``data/emotion_lexicon.txt``."""
    sectors = []
    for line in (DATA_DIR / "emotion_lexicon.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        sector, _, words = line.partition(":")
        tokens = words.split()
        exact = frozenset(w for w in tokens if not w.endswith("*"))
        prefixes = tuple(w[:-1] for w in tokens if w.endswith("*"))
        sectors.append((sector.strip(), exact, prefixes))
    return tuple(sectors)


def stopwords() -> frozenset[str]:
    """The German + English stopword list (lower case)."""
    return _word_list("stopwords.txt")


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


def _sentence_initial(text: str, start: int) -> bool:
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
        Token(m.group(), m.start(), m.end(), _sentence_initial(text, m.start())) for m in _WORD.finditer(text)
    ]


_CONTRACTED_IS = frozenset("it that what here there who how where when let life he she".split())
"""Words whose ``'s`` is "is"/"us"/"has", not a possessive."""

_GERMAN_MARKERS = frozenset("der die das und ist ich nicht ein eine zu mit war hat habe bin sind wir auch".split())
_ENGLISH_MARKERS = frozenset("the and is i not a to with was has have am are we of it".split())


def looks_german(tokens: Sequence[Token]) -> bool:
    """More German than English function words (ties count as German, the seeds' language)."""
    words = [t.lower for t in tokens]
    german = sum(w in _GERMAN_MARKERS for w in words)
    english = sum(w in _ENGLISH_MARKERS for w in words)
    return german >= english and german > 0


def extract_themes(tokens: Sequence[Token], limit: int = MAX_THEMEN) -> list[str]:
    """Content words, lower-cased, by frequency then first occurrence (module docstring).

    In German text, where nouns are capitalised, only capitalised words are themes when there is
    at least one (verbs and adjectives make poor themes and would reinforce unrelated entries).
    """
    stop = stopwords()
    content = [t for t in tokens if len(t.text) >= 3 and t.lower not in stop and t.lower not in _DATE_WORDS]
    if looks_german(tokens) and any(t.capitalised for t in content):
        content = [t for t in content if t.capitalised]
    words = [t.lower for t in content]
    counts = Counter(words)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(counts, key=lambda w: (-counts[w], first[w]))[:limit]


@dataclass(frozen=True, slots=True)
class Mentions:
    """Capitalised mentions in order of first appearance; ``candidates`` may become new entities."""

    mentions: tuple[str, ...]
    candidates: frozenset[str]


def _is_common_noun(tokens: Sequence[Token], index: int) -> bool:
    if index == 0:
        return False
    prev = tokens[index - 1]
    if prev.lower in _DETERMINERS:
        return True
    if index >= 2 and not prev.capitalised and prev.lower.endswith(_ADJECTIVE_ENDINGS):
        return tokens[index - 2].lower in _GERMAN_DETERMINERS
    return False


_APOSTROPHE = re.compile(r"['’]")


def _possessive_base(token: Token) -> Token | None:
    """A possessive's name ("Oliver's" → "Oliver"), None for a contraction ("I'm", "that's", "can't")."""
    base, suffix = _APOSTROPHE.split(token.text, maxsplit=1)
    if suffix.lower() != "s" or base.lower() in stopwords() or base.lower() in _CONTRACTED_IS:
        return None
    return Token(base, token.start, token.start + len(base), token.sentence_initial)


def find_mentions(text: str, tokens: Sequence[Token] | None = None) -> Mentions:
    """Capitalised words (adjacent name candidates joined) and which of them are name candidates."""
    toks = tokenize(text) if tokens is None else list(tokens)
    stop = stopwords()
    not_entities = _word_list("not_entities.txt")
    ordered: list[str] = []
    candidates: set[str] = set()
    run: list[Token] = []

    def close_run() -> None:
        if run:
            name = text[run[0].start : run[-1].end]
            if name not in ordered:
                ordered.append(name)
            candidates.add(name)
            run.clear()

    english = not looks_german(toks)
    mid_sentence = {t.text for t in toks if t.capitalised and not t.sentence_initial} if english else set()
    for index, word in enumerate(toks):
        token: Token | None = word
        if english and _APOSTROPHE.search(word.text):
            token = _possessive_base(word)  # "Oliver's" → "Oliver"; "I'm", "It's", "can't" → nothing
        if token is None:
            close_run()
            continue
        if not token.capitalised or len(token.text) < 2 or token.lower in stop or token.lower in _DATE_WORDS:
            close_run()
            continue
        is_candidate = token.lower not in not_entities and not _is_common_noun(toks, index)
        if english and token.sentence_initial and token.text not in mid_sentence:
            # English capitalises every sentence's first word ("Wow", "Glad", "Painting"): such a word
            # is looked up (a known name stays a mention) but never becomes a new entity by itself.
            is_candidate = False
        if is_candidate:
            adjacent = run and text[run[-1].end : token.start] == " "
            if not adjacent:
                close_run()
            run.append(token)
            continue
        close_run()
        if token.text not in ordered:
            ordered.append(token.text)
    close_run()
    return Mentions(mentions=tuple(ordered), candidates=frozenset(candidates))


# --- dates ----------------------------------------------------------------------------------

PRAEZISIONEN = ("minute", "stunde", "tag", "woche", "monat", "quartal", "jahr")


@dataclass(frozen=True, slots=True)
class DatedMention:
    """A date the text refers to, normalised to the start of its unit (UTC)."""

    zeitpunkt: datetime
    praezision: str
    phrase: str


def _day(dt: datetime) -> datetime:
    return datetime(dt.year, dt.month, dt.day, tzinfo=UTC)


def _week(dt: datetime) -> datetime:
    day = _day(dt)
    return day - timedelta(days=day.weekday())


def _month(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _add_months(dt: datetime, months: int) -> datetime:
    index = dt.year * 12 + (dt.month - 1) + months
    return _month(index // 12, index % 12 + 1)


def _safe_date(year: int, month: int, day: int) -> datetime | None:
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    return datetime(year, month, day, tzinfo=UTC)


def _year(raw: str | None, as_of: datetime) -> int:
    if raw is None:
        return as_of.year
    value = int(raw)
    return value + 2000 if value < 100 else value


_RELATIVE_DAYS = {
    "heute": 0, "today": 0, "morgen": 1, "tomorrow": 1, "übermorgen": 2, "uebermorgen": 2,
    "gestern": -1, "yesterday": -1, "vorgestern": -2,
}

_COUNT_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "a few": 3, "a couple of": 2, "einem": 1, "einer": 1, "zwei": 2, "drei": 3, "vier": 4,
    "fünf": 5, "fuenf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "ein paar": 3,
}  # fmt: skip
_COUNT_ALT = r"\d{1,3}|" + "|".join(sorted((re.escape(w) for w in _COUNT_WORDS), key=len, reverse=True))

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("numeric", re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})?(?!\d)")),
    ("day_month", re.compile(rf"\b(\d{{1,2}})\.?\s+({_MONTH_ALT})\.?(?:\s+(\d{{4}}))?\b", re.IGNORECASE)),
    ("month_day", re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b",
                             re.IGNORECASE)),
    ("relative_day", re.compile(r"(?<![\w])(übermorgen|uebermorgen|vorgestern|heute|morgen|gestern|today|"
                                r"tomorrow|yesterday)(?![\w])", re.IGNORECASE)),
    ("ago", re.compile(rf"\b(?:({_COUNT_ALT})\s+(days?|weeks?|months?|years?)\s+ago|vor\s+({_COUNT_ALT})\s+"
                       r"(tag(?:en)?|woche(?:n)?|monat(?:en)?|jahr(?:en)?))\b", re.IGNORECASE)),
    ("ahead", re.compile(rf"\bin\s+({_COUNT_ALT})\s+(days?|weeks?|months?|years?|tag(?:en)?|woche(?:n)?|"
                         r"monat(?:en)?|jahr(?:en)?)\b", re.IGNORECASE)),
    ("weekend", re.compile(r"\b(letztes|letzten|vergangenes|nächstes|naechstes|kommendes|dieses|last|next|this)\s+"
                           r"(wochenende|weekend)\b", re.IGNORECASE)),
    ("weekday", re.compile(rf"\b(?:(letzten|letzter|vergangenen|last)\s+)?(?:am\s+|on\s+|diesen\s+|this\s+)?"
                           rf"({_WEEKDAY_ALT})\b", re.IGNORECASE)),
    ("week", re.compile(r"\b(letzte|letzten|vergangene|vergangenen|nächste|nächsten|naechste|naechsten|"
                        r"kommende|kommenden|diese|dieser|last|next|this)\s+(woche|week)\b", re.IGNORECASE)),
    ("month_rel", re.compile(r"\b(letzten|vergangenen|nächsten|naechsten|kommenden|diesen|last|next|this)\s+"
                             r"(monat|month)\b", re.IGNORECASE)),
    ("month_name", re.compile(rf"\b(?:im|in|seit|bis)\s+({_MONTH_ALT})(?:\s+(\d{{4}}))?\b", re.IGNORECASE)),
    ("year_rel", re.compile(r"\b(letztes|letzten|vergangenes|nächstes|naechstes|kommendes|dieses|last|next|this)\s+"
                            r"(jahr|year)\b", re.IGNORECASE)),
    ("year", re.compile(r"\b(?:im\s+jahr|in|seit)\s+((?:19|20)\d{2})\b", re.IGNORECASE)),
)

_PAST = ("letzt", "vergangen", "last")
_UNIT_PRAEZISION = {"day": "tag", "tag": "tag", "week": "woche", "woche": "woche", "month": "monat", "monat": "monat",
                    "year": "jahr", "jahr": "jahr"}  # fmt: skip
_NEXT = ("nächst", "naechst", "kommend", "next")


def _count(word: str) -> int:
    """A count written as digits or as an English/German number word."""
    lowered = word.lower()
    return int(lowered) if lowered.isdigit() else _COUNT_WORDS[lowered]


def _shifted(as_of: datetime, count: int, unit: str) -> tuple[datetime, str]:
    """``as_of`` moved by ``count`` units (negative: back), at the unit's own precision."""
    lowered = unit.lower()
    praezision = next(p for stem, p in _UNIT_PRAEZISION.items() if lowered.startswith(stem))
    if praezision == "tag":
        return _day(as_of) + timedelta(days=count), praezision
    if praezision == "woche":
        return _week(as_of) + timedelta(weeks=count), praezision
    if praezision == "monat":
        return _add_months(_month(as_of.year, as_of.month), count), praezision
    return datetime(as_of.year + count, 1, 1, tzinfo=UTC), praezision


def _sign(word: str) -> int:
    lowered = word.lower()
    if lowered.startswith(_PAST):
        return -1
    if lowered.startswith(_NEXT):
        return 1
    return 0


def _resolve(kind: str, m: re.Match[str], as_of: datetime, text: str) -> tuple[datetime, str] | None:
    g = m.groups()
    if kind == "iso":
        date = _safe_date(int(g[0]), int(g[1]), int(g[2]))
        return (date, "tag") if date else None
    if kind == "numeric":
        date = _safe_date(_year(g[2], as_of), int(g[1]), int(g[0]))
        return (date, "tag") if date else None
    if kind == "day_month":
        date = _safe_date(_year(g[2], as_of), _MONTHS[g[1].lower()], int(g[0]))
        return (date, "tag") if date else None
    if kind == "month_day":
        date = _safe_date(_year(g[2], as_of), _MONTHS[g[0].lower()], int(g[1]))
        return (date, "tag") if date else None
    if kind == "relative_day":
        if g[0] == "Morgen" and not _sentence_initial(text, m.start()):
            return None  # "guten Morgen", "am Morgen": the noun (morning), not "tomorrow"
        return _day(as_of) + timedelta(days=_RELATIVE_DAYS[g[0].lower()]), "tag"
    if kind in ("ago", "ahead"):
        if kind == "ago":
            count, unit, sign = (g[0], g[1], -1) if g[0] is not None else (g[2], g[3], -1)
        else:
            count, unit, sign = g[0], g[1], 1
        return _shifted(as_of, sign * _count(count), unit)
    if kind == "weekend":
        saturday = _week(as_of) + timedelta(days=5)
        return saturday + timedelta(weeks=_sign(g[0])), "tag"
    if kind == "weekday":
        target = _WEEKDAYS[g[1].lower()]
        today = _day(as_of)
        if g[0] is not None:  # the last such weekday strictly before today
            back = (today.weekday() - target) % 7 or 7
            return today - timedelta(days=back), "tag"
        ahead = (target - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead), "tag"
    if kind == "week":
        return _week(as_of) + timedelta(weeks=_sign(g[0])), "woche"
    if kind == "month_rel":
        return _add_months(_month(as_of.year, as_of.month), _sign(g[0])), "monat"
    if kind == "month_name":
        return _month(_year(g[1], as_of), _MONTHS[g[0].lower()]), "monat"
    if kind == "year_rel":
        return datetime(as_of.year + _sign(g[0]), 1, 1, tzinfo=UTC), "jahr"
    if kind == "year":
        return datetime(int(g[0]), 1, 1, tzinfo=UTC), "jahr"
    raise AssertionError(kind)  # pragma: no cover


def find_dated_mention(text: str, as_of: datetime) -> DatedMention | None:
    """The earliest dated mention in ``text`` resolved against ``as_of`` (module docstring), or None."""
    if as_of.tzinfo is None:
        raise ValueError("as_of must be timezone-aware")
    as_of = as_of.astimezone(UTC)
    best: tuple[int, int, DatedMention] | None = None
    for priority, (kind, pattern) in enumerate(_PATTERNS):
        for match in pattern.finditer(text):
            resolved = _resolve(kind, match, as_of, text)
            if resolved is None:
                continue
            key = (match.start(), priority)
            if best is None or key < best[:2]:
                best = (match.start(), priority, DatedMention(resolved[0], resolved[1], match.group().strip()))
            break  # later matches of the same pattern start later
    return best[2] if best else None


# --- emotion, intentions, salience ------------------------------------------------------------


def emotion_hits(tokens: Iterable[Token]) -> Counter[str]:
    """Plutchik sector → number of cue words (``data/emotion_lexicon.txt``)."""
    hits: Counter[str] = Counter()
    for token in tokens:
        word = token.lower
        for sector, exact, prefixes in _emotion_lexicon():
            if word in exact or word.startswith(prefixes):
                hits[sector] += 1
                break
    return hits


def intentions(text: str, tokens: Sequence[Token]) -> list[str]:
    """``anweisung`` for an imperative sentence start, else ``information_teilen`` (a statement).

    A question carries no canon intention of its own, so it gets none.
    """
    starts = [t.lower for t in tokens if t.sentence_initial]
    if any(word in _IMPERATIVE_START for word in starts):
        return ["anweisung"]
    if "?" in text:
        return []
    return ["information_teilen"]


def salience_heuristic(*, has_content: bool, cues: dict[str, bool]) -> float:
    """Raw salience 0..1 from the cue flags (module docstring); unknown cue names are an error."""
    unknown = set(cues) - set(SALIENCE_WEIGHTS)
    if unknown:
        raise ValueError(f"unknown salience cues {sorted(unknown)}")
    if not has_content:
        return SALIENCE_NO_CONTENT
    score = SALIENCE_BASE + sum(SALIENCE_WEIGHTS[name] for name, fired in cues.items() if fired)
    return round(min(score, 1.0), 2)


@dataclass(frozen=True, slots=True)
class TextFindings:
    """Everything the offline rules read from one turn, before names and dates are resolved."""

    themen: list[str]
    mentions: Mentions
    dated: DatedMention | None
    salienz: float
    cues: dict[str, bool]
    emotion: str
    arousal: float
    intentionen: list[str]
    gedaechtnistyp: str
    dimension: str
    emotion_hits: dict[str, int] = field(default_factory=dict)


def has_subject(text: str) -> bool:
    """Whether a question names something: a content word or a name (not "And then what happened?")."""
    tokens = tokenize(text)
    return bool(extract_themes(tokens) or find_mentions(text, tokens).mentions)


def analyze_text(text: str, as_of: datetime) -> TextFindings:
    """Apply every rule of this module to one turn's text."""
    tokens = tokenize(text)
    themen = extract_themes(tokens)
    mentions = find_mentions(text, tokens)
    dated = find_dated_mention(text, as_of)
    hits = emotion_hits(tokens)
    words = {t.lower for t in tokens}
    cues = {
        "personal": bool(words & _PERSONAL),
        "emotional": bool(hits),
        "entity": bool(mentions.candidates),
        "dated": dated is not None,
        "importance": bool(_IMPORTANCE.search(text)),
    }
    salienz = salience_heuristic(has_content=bool(themen), cues=cues)  # entity cue final after resolution
    emotion = max(hits, key=lambda s: (hits[s], -list(hits).index(s))) if hits else "neutral"
    arousal = round(min(1.0, 0.2 + 0.2 * sum(hits.values()) + 0.1 * text.count("!")), 2)
    if _PROCEDURAL.search(text):
        gedaechtnistyp = "prozedural"
    elif dated is not None or cues["personal"]:
        gedaechtnistyp = "episodisch"
    else:
        gedaechtnistyp = "semantisch"
    dimension = next((name for name, vocab in _DIMENSIONS if words & vocab), DEFAULT_DIMENSION)
    return TextFindings(
        themen=themen,
        mentions=mentions,
        dated=dated,
        salienz=salienz,
        cues=cues,
        emotion=emotion,
        arousal=arousal,
        intentionen=intentions(text, tokens),
        gedaechtnistyp=gedaechtnistyp,
        dimension=dimension,
        emotion_hits=dict(hits),
    )
