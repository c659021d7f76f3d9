"""Embeddings (SPEC §2): providers, embed texts, per-model threshold profiles, store-model guard.

Typical use: ``provider = provider_from_env()`` (``NOVABERG_EMBEDDING=minilm|use|ollama``), then
``await provider.embed([kzg_embed_text(themen, inhalt)])`` gives a (1, D) float32 matrix of
norm-1 rows, ``profile_for(provider.model_id)`` the model's thresholds, and
``check_store_model(recorded, provider.stamp)`` refuses a store another model filled.
"""

from __future__ import annotations

from novaberg_core.embedding.base import EmbeddingProvider, LocalEmbeddingProvider, Vectors, l2_normalize
from novaberg_core.embedding.factory import DEFAULT_PROVIDER, PROVIDER_NAMES, make_provider, provider_from_env
from novaberg_core.embedding.guard import ModelStamp, check_store_model, check_vector_model
from novaberg_core.embedding.profiles import (
    THRESHOLDS,
    ModelProfile,
    ThresholdSources,
    UnknownModelError,
    load_profiles,
    profile_for,
)
from novaberg_core.embedding.texts import (
    DEFAULT_CHARACTER_NAME,
    DEFAULT_USER_NAME,
    EMBED_RECIPE,
    LEGACY_RECIPE,
    THEMEN_SEPARATOR,
    clean_themen,
    kzg_embed_text,
    lzg_embed_text,
    query_embed_text,
    searched_text,
    speaker_text,
)

__all__ = [
    "DEFAULT_CHARACTER_NAME",
    "DEFAULT_PROVIDER",
    "DEFAULT_USER_NAME",
    "EMBED_RECIPE",
    "LEGACY_RECIPE",
    "PROVIDER_NAMES",
    "THEMEN_SEPARATOR",
    "THRESHOLDS",
    "EmbeddingProvider",
    "LocalEmbeddingProvider",
    "ModelProfile",
    "ModelStamp",
    "ThresholdSources",
    "UnknownModelError",
    "Vectors",
    "check_store_model",
    "check_vector_model",
    "clean_themen",
    "kzg_embed_text",
    "l2_normalize",
    "load_profiles",
    "lzg_embed_text",
    "make_provider",
    "profile_for",
    "provider_from_env",
    "query_embed_text",
    "searched_text",
    "speaker_text",
]
