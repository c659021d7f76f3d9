"""The text that is embedded for each target (SPEC §2); the live path and re-embedding both use these."""

from __future__ import annotations

from collections.abc import Sequence


def kzg_embed_text(themen: Sequence[str], inhalt: str) -> str:
    """KZG entry: ``"Thema: {themen joined by ', '}. Aussage: {inhalt}"`` (SPEC §2, kzg §6)."""
    return f"Thema: {', '.join(themen)}. Aussage: {inhalt}"


def lzg_embed_text(inhalt: str) -> str:
    """LZG node: the bare ``inhalt`` (SPEC §2, kzg §3)."""
    return inhalt


def query_embed_text(text: str) -> str:
    """Query or answer: the text as given (SPEC §2)."""
    return text
