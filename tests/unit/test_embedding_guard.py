"""Store-model guard (SPEC §2): no turn ever sees vectors of two models."""

from __future__ import annotations

import grpc
import pytest

from novaberg_core.embedding import LEGACY_RECIPE, ModelStamp, check_store_model, make_provider
from novaberg_core.errors import ModelMismatch

MINILM = ModelStamp("all-minilm-l6-v2-int8", 384)
NOMIC = ModelStamp("ollama:nomic-embed-text-v2-moe", 768)


def test_empty_store_is_accepted() -> None:
    check_store_model(None, MINILM)


def test_same_model_is_accepted() -> None:
    check_store_model(ModelStamp("all-minilm-l6-v2-int8", 384), MINILM)


def test_other_model_is_refused_naming_both_and_the_re_embed() -> None:
    with pytest.raises(ModelMismatch) as raised:
        check_store_model(NOMIC, MINILM)
    message = str(raised.value)
    assert "ollama:nomic-embed-text-v2-moe (768-d, texts sprecher/1)" in message
    assert "all-minilm-l6-v2-int8 (384-d, texts sprecher/1)" in message
    assert "novaberg reembed" in message.lower()
    assert raised.value.status_code == grpc.StatusCode.FAILED_PRECONDITION


def test_same_model_with_another_dimension_is_refused() -> None:
    with pytest.raises(ModelMismatch, match="256-d"):
        check_store_model(ModelStamp("all-minilm-l6-v2-int8", 256), MINILM)


def test_same_model_with_another_text_recipe_is_refused() -> None:
    """SPEC §11: a store embedded without the speaker counts as another model until re-embedded."""
    with pytest.raises(ModelMismatch, match=r"texts inhalt/0"):
        check_store_model(ModelStamp("all-minilm-l6-v2-int8", 384, LEGACY_RECIPE), MINILM)


def test_provider_stamp_is_its_model_and_dimension() -> None:
    assert make_provider("minilm").stamp == MINILM
