"""Request checks the KZG's use cases share: a KZG key of a pair, a batch of one pair (vectors: ``novaberg_core.model``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from novaberg_core.contract import BATCH_MAX_TURNS
from novaberg_core.errors import InvalidArgument
from services.kzg.store import pair_prefix
from services.kzg.types import Pair

__all__ = ["batch_item", "check_batch", "check_key"]


def check_key(pair: Pair, key: str) -> None:
    """``key`` is ``kzg:{user}:{character}:{entry_id}`` of a valid ``pair``."""
    pair.check()
    prefix = pair_prefix(pair)
    if not key.startswith(prefix) or ":" in key[len(prefix) :] or len(key) == len(prefix):
        raise InvalidArgument(f"kzg_key {key!r} is not a KZG key of the pair (expected {prefix}<entry_id>)")


def check_batch(field: str, pairs: Sequence[Pair]) -> None:
    """A bulk write: 1 to BATCH_MAX_TURNS items, all of the first item's pair."""
    if not pairs:
        raise InvalidArgument(f"{field} must not be empty")
    if len(pairs) > BATCH_MAX_TURNS:
        raise InvalidArgument(f"{field} may hold at most {BATCH_MAX_TURNS} items, got {len(pairs)}")
    for index, pair in enumerate(pairs):
        if pair != pairs[0]:
            raise InvalidArgument(
                f"{field}[{index}].pair is {pair.user_id}:{pair.character_id}, not the batch's pair "
                f"{pairs[0].user_id}:{pairs[0].character_id}; a batch is one pair's"
            )


@contextlib.contextmanager
def batch_item(field: str, index: int) -> Iterator[None]:
    """An item's refusal names the item: ``entries[3].inhalt must not be empty``."""
    try:
        yield
    except InvalidArgument as error:
        raise InvalidArgument(f"{field}[{index}].{error}") from None
