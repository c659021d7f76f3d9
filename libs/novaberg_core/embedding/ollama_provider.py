"""Embeddings from an Ollama server — production uses ``nomic-embed-text-v2-moe``, 768-d (SPEC §2).

Every failure to get vectors (server down, model not pulled, bad answer) becomes
:class:`novaberg_core.errors.Unavailable` with the server and model in the message; vectors of
another length than the profile's become :class:`novaberg_core.errors.ModelMismatch`.
"""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import ollama

from novaberg_core.embedding.base import EmbeddingProvider, Vectors, l2_normalize
from novaberg_core.errors import ModelMismatch, Unavailable

DEFAULT_MODEL = "nomic-embed-text-v2-moe"
DEFAULT_URL = "http://127.0.0.1:11434"
MODEL_ID_PREFIX = "ollama:"


class OllamaProvider(EmbeddingProvider):
    """Calls ``POST /api/embed`` through ``ollama.AsyncClient``; rows normalised here, not trusted."""

    def __init__(
        self,
        host: str = DEFAULT_URL,
        model: str = DEFAULT_MODEL,
        dimension: int | None = None,
        timeout_s: float = 30.0,
        batch_size: int = 64,
    ) -> None:
        """``dimension`` defaults to the model's profile; pass it for a model without one."""
        self.host = host
        self.model = model
        self.model_id = MODEL_ID_PREFIX + model
        if dimension is None:
            from novaberg_core.embedding.profiles import profile_for

            dimension = profile_for(self.model_id).dimension
        self.dimension = dimension
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self._client: ollama.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _client_for_running_loop(self) -> ollama.AsyncClient:
        # httpx connection pools belong to one event loop; a provider cached per process may
        # be used from another loop (tests, tools), so the client follows the loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = ollama.AsyncClient(host=self.host, timeout=self.timeout_s)
            self._client_loop = loop
        return self._client

    async def _embed(self, texts: list[str]) -> Vectors:
        client = self._client_for_running_loop()
        parts = [
            await self._embed_batch(client, texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts)

    async def _embed_batch(self, client: ollama.AsyncClient, texts: list[str]) -> Vectors:
        where = f"Ollama at {self.host} (model {self.model!r})"
        try:
            response = await client.embed(model=self.model, input=texts)
        except ollama.ResponseError as error:
            hint = f"; is it pulled? run `ollama pull {self.model}`" if error.status_code == 404 else ""
            raise Unavailable(
                f"{where} refused to embed: HTTP {error.status_code} {error.error}{hint}"
            ) from error
        except httpx.TimeoutException as error:
            raise Unavailable(f"{where} did not answer within {self.timeout_s} s: {error!r}") from error
        except (ConnectionError, httpx.HTTPError, ollama.RequestError) as error:
            raise Unavailable(f"{where} cannot be reached: {error}") from error
        except ValueError as error:  # undecodable JSON, or JSON that is not an embed response
            raise Unavailable(
                f"{where} answered with something that is not an embed response: {error}"
            ) from error
        rows = np.asarray(response.embeddings, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] != len(texts):
            raise Unavailable(
                f"{where} returned {rows.shape[0] if rows.ndim else 0} vectors for {len(texts)} texts"
            )
        if rows.shape[1] != self.dimension:
            raise ModelMismatch(
                f"{where} returned {rows.shape[1]}-d vectors, but {self.model_id} is configured "
                f"as {self.dimension}-d; check NOVABERG_OLLAMA_MODEL and the model profile"
            )
        if not np.all(np.isfinite(rows)) or np.any(np.linalg.norm(rows, axis=1) == 0.0):
            raise Unavailable(f"{where} returned a zero or non-finite vector")
        return l2_normalize(rows)
