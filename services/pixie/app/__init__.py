"""Pixie's use cases, one module per RPC family, each reading as the spec's steps (SPEC §9).

``promotion`` (the worker's batches, pairs and runs, SPEC §4.6, §5.3) with one job's steps in
``promotion_job``; ``erasure`` (a person's erasure across the stores, crash-safe); ``rights`` (export,
import, correction, the parked jobs). The scheduler that runs them lives in ``scheduler.py`` and
``tasks.py``, their SQL in ``store.py``, the peers' calls in ``novaberg_core.peers``.
"""
