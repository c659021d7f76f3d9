"""An embedding provider for tests that must see what a service embeds: the shared model, keeping the
texts it was given."""

from __future__ import annotations

from novaberg_core.embedding import EmbeddingProvider, Vectors


class RecordingProvider(EmbeddingProvider):
    """The shared model, keeping the texts it embeds (in order, every call)."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.texts: list[str] = []

    async def _embed(self, texts: list[str]) -> Vectors:
        self.texts.extend(texts)
        return await self.inner.embed(texts)
