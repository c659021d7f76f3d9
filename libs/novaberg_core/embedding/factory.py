"""Choosing and caching the process's embedding provider (SPEC §2).

``NOVABERG_EMBEDDING`` picks ``minilm``, ``use`` or ``ollama``; Ollama is configured by
``NOVABERG_OLLAMA_URL`` and ``NOVABERG_OLLAMA_MODEL``. A provider is built once per process and
its model loaded on first use — loading is the slow part, so every caller shares one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from novaberg_core.embedding.base import EmbeddingProvider

PROVIDER_NAMES = ("minilm", "use", "ollama")
DEFAULT_PROVIDER = "use"
"""Offline default: USE multilingual, chosen by bench/embedding_quality.py — MiniLM has the higher
LoCoMo (English) recall@10, 50.8 vs. 36.6, but answers only 6 of 16 German probe questions right
(16 of 16 in English); the companion speaks German."""

_providers: dict[tuple[str, tuple[tuple[str, Any], ...]], EmbeddingProvider] = {}
_providers_lock = threading.Lock()


def _build(name: str, options: dict[str, Any]) -> EmbeddingProvider:
    if name == "minilm":
        from novaberg_core.embedding.minilm import MiniLMProvider

        if options:
            raise ValueError(f"the minilm provider takes no options, got {sorted(options)}")
        return MiniLMProvider()
    if name == "use":
        from novaberg_core.embedding.use import USEProvider

        if options:
            raise ValueError(f"the use provider takes no options, got {sorted(options)}")
        return USEProvider()
    if name == "ollama":
        from novaberg_core.embedding.ollama_provider import OllamaProvider

        return OllamaProvider(**options)
    raise ValueError(f"unknown embedding provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}")


def make_provider(name: str, **options: Any) -> EmbeddingProvider:
    """The process-wide provider ``name`` (``minilm``, ``use``, ``ollama``) with ``options``.

    Ollama options: ``host``, ``model``, ``dimension``, ``timeout_s``, ``batch_size``.
    The same name and options give the same instance.
    """
    key = (name, tuple(sorted(options.items())))
    with _providers_lock:
        provider = _providers.get(key)
        if provider is None:
            provider = _build(name, options)
            _providers[key] = provider
        return provider


def provider_from_env(environ: Mapping[str, str] | None = None) -> EmbeddingProvider:
    """The provider the environment configures; fails fast on an unknown ``NOVABERG_EMBEDDING``."""
    env = os.environ if environ is None else environ
    name = env.get("NOVABERG_EMBEDDING", "").strip().lower() or DEFAULT_PROVIDER
    if name not in PROVIDER_NAMES:
        raise ValueError(
            f"NOVABERG_EMBEDDING={name!r} is not a provider; choose one of {', '.join(PROVIDER_NAMES)}"
        )
    if name == "ollama":
        from novaberg_core.embedding.ollama_provider import DEFAULT_MODEL, DEFAULT_URL

        return make_provider(
            "ollama",
            host=env.get("NOVABERG_OLLAMA_URL", "").strip() or DEFAULT_URL,
            model=env.get("NOVABERG_OLLAMA_MODEL", "").strip() or DEFAULT_MODEL,
        )
    return make_provider(name)
