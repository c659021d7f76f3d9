"""Canon value lists of the salience fields (SPEC §4.1, kzg §2): data in ``data/canon.json``, not code.

``modus`` must be one of ``MODUS_KANON`` and every ``intentionen`` value one of ``INTENT_KANON``;
the match is exact — another spelling of a canon value (``"Alltag"``) counts as foreign
(kzg §2, ``KZG-KANON-SCHREIBWEISE-GEHT-LEER``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["DEFAULT_CANON_PATH", "Canon", "default_canon", "load_canon"]

DEFAULT_CANON_PATH = Path(__file__).resolve().parent / "data" / "canon.json"
"""The canon file shipped with the libs."""


@dataclass(frozen=True)
class Canon:
    """The allowed values of ``modus`` and ``intentionen``."""

    modus: frozenset[str]
    """``MODUS_KANON``."""
    intentionen: frozenset[str]
    """``INTENT_KANON``."""


def load_canon(path: Path | str = DEFAULT_CANON_PATH) -> Canon:
    """Read a canon file (keys ``MODUS_KANON`` and ``INTENT_KANON``, each a list of strings)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    lists: dict[str, frozenset[str]] = {}
    for key in ("MODUS_KANON", "INTENT_KANON"):
        values = raw.get(key)
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"{path}: {key} must be a list of non-empty strings")
        lists[key] = frozenset(values)
    return Canon(modus=lists["MODUS_KANON"], intentionen=lists["INTENT_KANON"])


@lru_cache(maxsize=1)
def default_canon() -> Canon:
    """The shipped canon, read once per process."""
    return load_canon()
