"""Shared fixtures for unit tests: the local embedding models, loaded once per session."""

from __future__ import annotations

import pytest

from novaberg_core.embedding import EmbeddingProvider, make_provider


@pytest.fixture(scope="session")
def minilm_provider() -> EmbeddingProvider:
    """all-MiniLM-L6-v2 int8 (384-d), the process-wide instance."""
    return make_provider("minilm")


@pytest.fixture(scope="session")
def use_provider() -> EmbeddingProvider:
    """USE multilingual v3 (512-d), the process-wide instance."""
    return make_provider("use")
