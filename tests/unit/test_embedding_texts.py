"""Embed texts, one per target (SPEC §2)."""

from __future__ import annotations

from novaberg_core.embedding import kzg_embed_text, lzg_embed_text, query_embed_text, searched_text


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


def test_searched_text_adds_the_question_answered_after_who_said_what() -> None:
    """SPEC §11: lexical search reads the question a memory answers after the speaker and the content."""
    assert searched_text("Melanie", "Adoption agencies.", "What did you research?") == (
        "Melanie: Adoption agencies.\nWhat did you research?"
    )
    assert searched_text("Melanie", "Adoption agencies.") == "Melanie: Adoption agencies."
    assert searched_text("", "Adoption agencies.", "") == "Adoption agencies."
