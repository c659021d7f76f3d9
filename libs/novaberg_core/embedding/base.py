"""The one embedding interface every service uses (SPEC §2).

A provider turns texts into L2-normalised float32 rows, one per text, the same rows for the
same texts every time. Local models do their CPU work on one shared worker thread, so a
service's event loop keeps answering while a batch is embedded, and two models in one
process never fight over the two cores.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from novaberg_core.embedding.guard import ModelStamp
from novaberg_core.errors import InvalidArgument

Vectors = npt.NDArray[np.float32]
"""Shape (n, dimension), float32, every row of norm 1."""

_CPU_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="novaberg-embed")


class EmbeddingProvider(ABC):
    """A text embedding model (SPEC §2); ``model_id`` and ``dimension`` are what stores record."""

    model_id: str
    """Stable name of the model, e.g. ``all-minilm-l6-v2-int8`` or ``ollama:nomic-embed-text-v2-moe``."""
    dimension: int
    """Length of every vector this provider returns."""

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` into an (n, dimension) float32 matrix of L2-normalised rows, in order."""
        batch = checked_texts(texts)
        return await self._embed(batch) if batch else self.no_vectors()

    @abstractmethod
    async def _embed(self, texts: list[str]) -> Vectors:
        """:meth:`embed` of a checked, non-empty list of texts."""

    def no_vectors(self) -> Vectors:
        """The (0, dimension) matrix of an empty batch."""
        return np.zeros((0, self.dimension), dtype=np.float32)

    async def embed_one(self, text: str) -> Vectors:
        """Embed one text into a (dimension,) vector of norm 1."""
        return (await self.embed([text]))[0]

    @property
    def stamp(self) -> ModelStamp:
        """What a store records about the model that filled it (SPEC §2)."""
        return ModelStamp(self.model_id, self.dimension)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, dimension={self.dimension})"


def checked_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list; a bare string is refused, it would embed each of its characters."""
    if isinstance(texts, str):
        raise InvalidArgument("embed() takes a sequence of texts; use embed_one() for a single text")
    batch = list(texts)
    for index, text in enumerate(batch):
        if not isinstance(text, str):
            raise InvalidArgument(f"text {index} to embed is a {type(text).__name__}, not a str")
    return batch


def l2_normalize(matrix: npt.ArrayLike) -> Vectors:
    """Rows scaled to norm 1 (computed in float64, returned as float32); a zero row stays zero."""
    rows = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0.0, norms, 1.0)).astype(np.float32)


class LocalEmbeddingProvider(EmbeddingProvider):
    """A model that runs in this process on the CPU, off the event loop."""

    async def _embed(self, texts: list[str]) -> Vectors:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_CPU_EXECUTOR, self._embed_sync, texts)

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """The same as :meth:`embed`, blocking; for tools and benchmarks outside an event loop."""
        batch = checked_texts(texts)
        return self._embed_sync(batch) if batch else self.no_vectors()

    def _embed_sync(self, batch: list[str]) -> Vectors:
        vectors = l2_normalize(self._encode(batch))
        if vectors.shape != (len(batch), self.dimension):
            raise RuntimeError(
                f"{self.model_id} returned shape {vectors.shape} for {len(batch)} texts, "
                f"expected ({len(batch)}, {self.dimension})"
            )
        return vectors

    @abstractmethod
    def _encode(self, texts: list[str]) -> npt.NDArray[np.floating]:
        """Raw (not necessarily normalised) vectors for a non-empty list; runs on the worker thread."""
