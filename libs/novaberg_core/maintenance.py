"""The scope of a maintenance run: all pairs (the daily run on the real clock) or a list of pairs.

Decay (SPEC §5.7), log retention (SPEC §8) and Pixie's runs with an explicit ``as_of`` accept a
list of pairs. A replay such as the demo runs on a simulated clock months ahead; scoped to its own
pair it cannot age anyone else's memories or delete their log rows. A run over all pairs with an
``as_of`` in the future is refused: it would age every pair by time that has not passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from novaberg_core.contract import NamesPair, check_pair
from novaberg_core.errors import InvalidArgument
from novaberg_core.timeutil import utc_now

__all__ = [
    "FUTURE_TOLERANCE",
    "TASKS",
    "TASK_DECAY",
    "TASK_PROMOTION",
    "PairKey",
    "check_scope",
    "describe_scope",
    "scope_pairs",
]

TASK_PROMOTION: Final = "synapsen_promotion"
"""Pixie's continuous task: the KZG promotion queue (SPEC §5.3, §9); a name of its API."""
TASK_DECAY: Final = "synapsen_decay"
"""Pixie's daily task: LZG decay, then log retention (SPEC §5.7, §8, §9); a name of its API."""
TASKS: Final = (TASK_PROMOTION, TASK_DECAY)

FUTURE_TOLERANCE: Final = timedelta(minutes=1)
"""How far an all-pairs ``as_of`` may lie ahead of this host's clock (clock skew between hosts)."""

PairKey = tuple[str, str]
"""``(user_id, character_id)``."""


def scope_pairs(pairs: Iterable[NamesPair], field: str = "pairs") -> tuple[PairKey, ...]:
    """The request's pairs, each checked (SPEC §0), duplicates dropped in order; () means all pairs."""
    keys: dict[PairKey, None] = {}
    for index, pair in enumerate(pairs):
        check_pair(pair.user_id, pair.character_id, f"{field}[{index}]")
        keys[(pair.user_id, pair.character_id)] = None
    return tuple(keys)


def check_scope(
    as_of: datetime | None, pairs: Sequence[PairKey], *, what: str, now: datetime | None = None
) -> None:
    """Refuses an all-pairs run whose ``as_of`` lies in the future (:class:`InvalidArgument`).

    ``what`` names the operation in the message (e.g. ``"RunDecay"``).
    """
    if pairs or as_of is None:
        return
    current = now or utc_now()
    if as_of > current + FUTURE_TOLERANCE:
        raise InvalidArgument(
            f"{what} over all pairs with as_of {as_of.isoformat()} in the future (now "
            f"{current.replace(microsecond=0).isoformat()}) is refused: it would age every pair by time "
            "that has not passed; give the pairs of the replay (pairs) or an as_of not after now"
        )


def describe_scope(pairs: Sequence[PairKey]) -> str:
    """``all pairs`` or ``meister · nova, anna · nova`` (for messages and run lines)."""
    if not pairs:
        return "all pairs"
    return ", ".join(f"{user} · {character}" for user, character in pairs)
