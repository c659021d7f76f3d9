"""Embed texts, one per target (SPEC §2)."""

from __future__ import annotations

from novaberg_core.embedding import kzg_embed_text, lzg_embed_text, query_embed_text


def test_kzg_embed_text_joins_themes_and_statement() -> None:
    assert (
        kzg_embed_text(["Musik", "Gitarre"], "Der Meister übt jeden Abend Gitarre.")
        == "Thema: Musik, Gitarre. Aussage: Der Meister übt jeden Abend Gitarre."
    )


def test_kzg_embed_text_with_one_theme() -> None:
    assert (
        kzg_embed_text(["Arbeit"], "Neue Stelle ab März.") == "Thema: Arbeit. Aussage: Neue Stelle ab März."
    )


def test_lzg_embed_text_is_the_bare_inhalt() -> None:
    assert lzg_embed_text("Der Meister übt jeden Abend Gitarre.") == "Der Meister übt jeden Abend Gitarre."


def test_query_embed_text_is_the_text_as_given() -> None:
    assert query_embed_text("  Und wie hängt das zusammen? ") == "  Und wie hängt das zusammen? "
