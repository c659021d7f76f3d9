"""Pure rules of the offline analyzer: themes, name mentions, emotions, intentions, a salience heuristic.

Everything here is deterministic text work without I/O (the analyzer resolves names and dates
through the LZG registry afterwards). The rules are deliberately simple and written down, so a
reader can predict the result of every turn:

Themes
    Words (letters only) of at least 3 characters that are no stopword (German + English list in
    ``data/stopwords.txt``) and no date word, lower-cased, ranked by frequency, ties by first
    occurrence; at most :data:`MAX_THEMEN`. An English clitic counts as its host word
    (:func:`word_of`: "I'm" → "i", "it's" → "it", "Oliver's" → "oliver"; "can't" is no word at
    all), here and in the salience cues. In German text (more German than English function
    words) only the capitalised words — the nouns — count, when there is one.

Name mentions (entity candidates)
    A capitalised word is a *mention*. It is a *name candidate* (an entity may be created for it)
    unless it is a stopword, a date word, listed in ``data/not_entities.txt``, or a German common
    noun by its article: directly after a determiner (``der``, ``meine``, ``beim``, ``the``, …), or
    after a determiner plus one lower-case inflected adjective (``der neue Zahnarzt``). Adjacent
    candidates form one name (``Anna Müller``). A sentence-initial word counts like any other.

Dated mention
    :mod:`services.pipeline.dates`; words are split by :mod:`services.pipeline.tokens`.

Salience (raw score in 0..1, :func:`salience_heuristic`)
    No theme word at all → 0.1 (below the 0.3 gate: not stored). Otherwise
    ``0.3 + 0.25·personal + 0.2·emotional + 0.15·entity + 0.15·dated + 0.2·importance
    + 0.15·detailed + 0.4·answer``, capped at 1.0 and rounded to two decimals; each cue counts once
    (see :data:`SALIENCE_WEIGHTS`). A first-person turn with one more cue reaches the HIGH gate (0.7):
    what a person tells of their own life, with a name, a feeling, a date, a plea to remember it or in
    detail, is what a companion keeps; an answer to the other speaker's question reaches it by itself,
    as what was asked for is kept (docs/decisions.md "Personal disclosures are kept", "Detailed accounts
    are kept", "Answers are kept", "An answer is kept by itself").
    personal: a first-person word; emotional: a word of ``data/emotion_lexicon.txt``; entity: a
    name candidate, or a mention the pair registered as an entity (the analyzer decides the
    latter after its lookup); dated: a dated mention; importance: ``wichtig``, ``merk dir``,
    ``vergiss nicht``, ``important``, ``remember`` …; detailed: at least :data:`DETAIL_WORDS`
    distinct content words (the themes' rule, German verbs and adjectives included) outside the
    turn's questions — an account, not a reaction or a question; answer: the turn follows the other
    speaker's question — a turn of which any sentence ends in "?" (:func:`asks`; the analyzer's
    caller knows the session: ``answers``), so it tells what was asked for.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache

from services.pipeline.dates import DATE_WORDS, DatedMention, find_dated_mention
from services.pipeline.tokens import DATA_DIR, Token, looks_german, stopwords, tokenize, word_list

__all__ = [
    "DETAIL_WORDS",
    "MAX_THEMEN",
    "SALIENCE_WEIGHTS",
    "TextFindings",
    "analyze_text",
    "answered_question",
    "asks",
    "extract_themes",
    "find_mentions",
    "salience_heuristic",
    "told_words",
    "word_of",
]

MAX_THEMEN = 5
"""At most this many themes per turn."""

DEFAULT_DIMENSION = "allgemein"
"""``dimension`` of a turn no keyword assigns to a life area (the pipeline requires one: salience dimension 5)."""

SALIENCE_BASE = 0.3
SALIENCE_NO_CONTENT = 0.1
SALIENCE_WEIGHTS: dict[str, float] = {
    "personal": 0.25,
    "emotional": 0.2,
    "entity": 0.15,
    "dated": 0.15,
    "importance": 0.2,
    "detailed": 0.15,
    "answer": 0.4,
}
"""Additive cues of the salience heuristic (module docstring)."""

DETAIL_WORDS = 10
"""Distinct content words a turn tells, outside its questions, for the ``detailed`` cue."""

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
_SENTENCE = re.compile(r"[^.!?\n]+[.!?\n]*|[.!?\n]+")
"""A sentence with the marks that end it (each match starts where the last ended: linear in the text)."""
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


_CONTRACTED_IS = frozenset("it that what here there who how where when let life he she".split())
"""Words whose ``'s`` is "is"/"us"/"has", not a possessive."""


_APOSTROPHE = re.compile(r"['’]")
_CLITICS = frozenset({"m", "re", "ve", "ll", "d", "s"})
"""What follows the apostrophe of an English clitic: I'm, we're, I've, we'll, I'd, it's, Oliver's."""


def word_of(token: Token) -> str:
    """The word a token stands for in themes and cues, lower-cased: a clitic's host ("I'm" → "i",
    "it's" → "it", "Oliver's" → "oliver"), "" for a negated auxiliary ("can't", "isn't", "don't" —
    function words); any other token as it is."""
    lower = token.lower
    if "'" not in lower and "’" not in lower:
        return lower
    base, suffix = _APOSTROPHE.split(lower, maxsplit=1)
    if suffix == "t" and base.endswith("n"):
        return ""
    return base if suffix in _CLITICS else lower


def _content_word(token: Token) -> str:
    """The token's word (:func:`word_of`) when it is a content word (module docstring), else ""."""
    word = word_of(token)
    return word if len(word) >= 3 and word not in stopwords() and word not in DATE_WORDS else ""


def told_words(text: str, tokens: Sequence[Token]) -> int:
    """Distinct content words of ``text`` outside its questions (sentences ending in "?"; the ``detailed`` cue).

    One walk over the sentences and the tokens, both in text order."""
    questions = (m.span() for m in _SENTENCE.finditer(text) if "?" in m.group())
    question = next(questions, None)
    told: set[str] = set()
    for token in tokens:
        while question is not None and question[1] <= token.start:
            question = next(questions, None)
        if question is not None and question[0] <= token.start:
            continue  # a word of a question
        if word := _content_word(token):
            told.add(word)
    return len(told)


def extract_themes(tokens: Sequence[Token], limit: int = MAX_THEMEN) -> list[str]:
    """Content words, lower-cased, by frequency then first occurrence (module docstring).

    In German text, where nouns are capitalised, only capitalised words are themes when there is
    at least one (verbs and adjectives make poor themes and would reinforce unrelated entries).
    """
    content = [(token, word) for token in tokens if (word := _content_word(token))]
    if looks_german(tokens) and any(token.capitalised for token, _ in content):
        content = [(token, word) for token, word in content if token.capitalised]
    words = [word for _, word in content]
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
    not_entities = word_list("not_entities.txt")
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
        if not token.capitalised or len(token.text) < 2 or token.lower in stop or token.lower in DATE_WORDS:
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


# --- emotion, intentions, salience ------------------------------------------------------------


def emotion_hits(tokens: Iterable[Token]) -> Counter[str]:
    """Plutchik sector → number of cue words (``data/emotion_lexicon.txt``)."""
    hits: Counter[str] = Counter()
    for token in tokens:
        word = word_of(token)
        if not word:
            continue
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


_ASKED = re.compile(r"\?(?=[?!\s\"'’”»)\]]|$)")
"""A question mark that ends a sentence ("?", "?!", "?\"", "?)"), not one inside a word or a link (``?a=1``)."""


def asks(text: str) -> bool:
    """Whether a turn asks the other speaker something: one of its sentences ends in "?" — the last
    ("How was it?", as :func:`novaberg_core.fusion.is_question` reads it) or another ("What are their
    names? Pets bring such joy!")."""
    return _ASKED.search(text) is not None


def answered_question(before_role: str, before_text: str, role: str) -> str:
    """The question a turn of ``role`` answers: the session's turn right before it, when the other
    speaker asked in it (:func:`asks`); "" otherwise (the ``answer`` cue)."""
    if not before_text or before_role == role or not asks(before_text):
        return ""
    return before_text


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


def analyze_text(text: str, as_of: datetime, *, answers: bool = False) -> TextFindings:
    """Apply every rule of this module to one turn's text; ``answers``: it follows the other speaker's question."""
    tokens = tokenize(text)
    themen = extract_themes(tokens)
    mentions = find_mentions(text, tokens)
    dated = find_dated_mention(text, as_of)
    hits = emotion_hits(tokens)
    words = {word_of(t) for t in tokens}
    cues = {
        "personal": bool(words & _PERSONAL),
        "emotional": bool(hits),
        "entity": bool(mentions.candidates),
        "dated": dated is not None,
        "importance": bool(_IMPORTANCE.search(text)),
        "detailed": told_words(text, tokens) >= DETAIL_WORDS,
        "answer": answers,
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
