"""The text that is embedded for each target (SPEC §2, §11); the live path and re-embedding both use these.

Since SPEC §11 the memory texts carry their speaker: a memory embedded without the speaker's name
matches questions about the other speaker ("Thanks, Evan!" is Jon's turn, not Evan's). Which
recipe filled a store is part of its model stamp (:data:`EMBED_RECIPE`), so a store embedded with
another recipe counts as another model and refuses to serve until ``novaberg reembed`` rewrote it.

Every text is cut to :data:`EMBED_MAX_CHARS` before the model sees it: the offline models read at
most 256–512 tokens anyway, and a long text would only cost time (a 1 MB query once kept a model
busy for 72 s). Stored text is not cut; the request contract bounds it (``TEXT_MAX_CHARS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from novaberg_core.errors import InvalidArgument

__all__ = [
    "DEFAULT_CHARACTER_NAME",
    "DEFAULT_USER_NAME",
    "EMBED_MAX_CHARS",
    "EMBED_RECIPE",
    "THEMEN_SEPARATOR",
    "clean_themen",
    "kzg_embed_text",
    "lzg_embed_text",
    "query_embed_text",
    "speaker_text",
]

EMBED_RECIPE = "sprecher/1"
"""The recipe of the memory texts below; recorded with the model in every store (SPEC §2, §11)."""
LEGACY_RECIPE = "inhalt/0"
"""The recipe of stores filled before speakers were embedded (bare ``inhalt``)."""
EMBED_MAX_CHARS = 2_000
DEFAULT_USER_NAME = "Nutzer"
"""The user's display name when the caller gave none (SPEC §5.9, §11)."""
DEFAULT_CHARACTER_NAME = "Nova"


def _cut(text: str) -> str:
    return text if len(text) <= EMBED_MAX_CHARS else text[:EMBED_MAX_CHARS]


def speaker_text(sprecher: str, inhalt: str) -> str:
    """``"{sprecher}: {inhalt}"`` — what a memory says and who said it."""
    return f"{sprecher}: {inhalt}" if sprecher else inhalt


def searched_text(sprecher: str, inhalt: str, antwort_auf: str = "") -> str:
    """What lexical search reads of a memory (SPEC §11): who said what, then the other speaker's question
    it answers, if any — an answer means little without its question ("Adoption agencies." after "What
    did you research?"), so a question asked alike finds it. Never the embedded text (SPEC §2 recipes)."""
    said = speaker_text(sprecher, inhalt)
    return f"{said}\n{antwort_auf}" if antwort_auf else said


THEMEN_SEPARATOR = "|"
"""Separator of the KZG's ``themen`` / ``themen_norm`` TAG fields; no theme may contain it."""


def clean_themen(themen: Iterable[str], field: str = "salience.themen") -> list[str]:
    """The themes as written, trimmed, empty ones dropped; a theme containing the separator is refused.

    What the KZG stores and re-embedding reads back, so the live path embeds these too (SPEC §2).
    """
    cleaned: list[str] = []
    for index, theme in enumerate(themen):
        stripped = theme.strip()
        if not stripped:
            continue
        if THEMEN_SEPARATOR in stripped or any(ord(ch) < 32 for ch in stripped):
            raise InvalidArgument(
                f"{field}[{index}] must not contain {THEMEN_SEPARATOR!r} or control characters: {theme!r}"
            )
        cleaned.append(stripped)
    return cleaned


def kzg_embed_text(themen: Sequence[str], inhalt: str, sprecher: str = "") -> str:
    """KZG entry: ``"{sprecher}: Thema: {themen joined by ', '}. Aussage: {inhalt}"`` (SPEC §2, §11, kzg §6)."""
    return _cut(speaker_text(sprecher, f"Thema: {', '.join(themen)}. Aussage: {inhalt}"))


def lzg_embed_text(inhalt: str, sprecher: str = "") -> str:
    """LZG node: ``"{sprecher}: {inhalt}"`` (SPEC §2, §11, kzg §3)."""
    return _cut(speaker_text(sprecher, inhalt))


def query_embed_text(text: str) -> str:
    """Query or answer: the text as given (SPEC §2)."""
    return _cut(text)
