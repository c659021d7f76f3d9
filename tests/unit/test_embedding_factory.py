"""Choosing the provider from the environment (SPEC §2)."""

from __future__ import annotations

import pytest

from novaberg_core.embedding import DEFAULT_PROVIDER, make_provider, provider_from_env
from novaberg_core.embedding.ollama_provider import OllamaProvider


def test_default_is_the_measured_offline_model() -> None:
    assert DEFAULT_PROVIDER == "use"
    assert provider_from_env({}).model_id == "use-multilingual-v3"


@pytest.mark.parametrize(
    ("value", "model_id"),
    [
        ("minilm", "all-minilm-l6-v2-int8"),
        (" MiniLM ", "all-minilm-l6-v2-int8"),
        ("use", "use-multilingual-v3"),
        ("", "use-multilingual-v3"),
    ],
)
def test_local_provider_by_name(value: str, model_id: str) -> None:
    assert provider_from_env({"NOVABERG_EMBEDDING": value}).model_id == model_id


def test_ollama_from_env() -> None:
    provider = provider_from_env(
        {
            "NOVABERG_EMBEDDING": "ollama",
            "NOVABERG_OLLAMA_URL": "http://10.0.0.7:11434",
        }
    )
    assert isinstance(provider, OllamaProvider)
    assert provider.host == "http://10.0.0.7:11434"
    assert (provider.model_id, provider.dimension) == ("ollama:nomic-embed-text-v2-moe", 768)
    assert provider is make_provider("ollama", host="http://10.0.0.7:11434", model="nomic-embed-text-v2-moe")


def test_ollama_model_without_profile_needs_a_dimension() -> None:
    with pytest.raises(LookupError, match="ollama:all-minilm"):
        provider_from_env({"NOVABERG_EMBEDDING": "ollama", "NOVABERG_OLLAMA_MODEL": "all-minilm"})


def test_unknown_provider_fails_fast() -> None:
    with pytest.raises(ValueError, match=r"NOVABERG_EMBEDDING='bert'.*minilm, use, ollama"):
        provider_from_env({"NOVABERG_EMBEDDING": "bert"})
