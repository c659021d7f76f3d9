"""A person's rights over their memories in the KZG: erase, export, import, forget, correct, requeue.

The operations live in ``services/kzg/app/`` (``erasure``, ``portability``, ``forgetting``,
``promotion_queue``), their Redis commands in ``services/kzg/store/rights.py``; this facade offers
them under one name over a :class:`~services.kzg.memory.KzgMemory`'s context. Records of these
operations in the pipeline log never name an erased pair (docs/decisions.md "Erasure").
"""

from __future__ import annotations

from services.kzg.app.context import RIGHTS_NODE
from services.kzg.app.erasure import Erasure
from services.kzg.app.forgetting import Forgetting
from services.kzg.app.portability import Portability
from services.kzg.memory import KzgMemory
from services.kzg.store import glob_escape
from services.kzg.types import EraseCounts, ImportCounts

__all__ = [
    "ERASURE_NODE",
    "EraseCounts",
    "ImportCounts",
    "KzgRights",
    "glob_escape",
]

ERASURE_NODE = RIGHTS_NODE
"""Pipeline-log node of the rights operations."""


class KzgRights:
    """Erase, export, import, forget, correct and requeue over one :class:`KzgMemory`."""

    def __init__(self, memory: KzgMemory) -> None:
        self.memory = memory
        self.store = memory.store
        erasure = Erasure(memory.context)
        self.erase = erasure.erase
        portability = Portability(memory.context)
        self.export = portability.export
        self.is_empty = portability.is_empty
        self.import_pair = portability.import_pair
        forgetting = Forgetting(memory.context)
        self.forget = forgetting.forget
        self.correct = forgetting.correct
        self.enqueue = memory.promotion_queue.enqueue
