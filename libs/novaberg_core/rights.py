"""What the person's-rights RPCs of every service share (SPEC §8; docs/decisions.md "Erasure").

Erase, export, import, forget and correct are served by the KZG, the LZG, the log and Pixie; the
pieces they all need are written here once: the reading of a request's ``oneof`` target (an
erasure's pair or user), the checked erasure target, the KZG key prefix a target's texts may
quote, the one ``db_write`` record of a rights operation, the pair a client stream names, and the
chunking of a streamed export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Protocol, TypeVar

from google.protobuf.message import Message

from novaberg.common.v1 import common_pb2
from novaberg_core.contract import check_pair
from novaberg_core.errors import InvalidArgument

__all__ = [
    "RIGHTS_NODE",
    "StreamPair",
    "check_erasure_target",
    "chunks",
    "erasure_scope",
    "erasure_target_of",
    "erasure_written",
    "kzg_key",
    "kzg_key_prefix",
    "named_target",
    "pair_ids",
    "rights_write",
]

RIGHTS_NODE: Final = "loeschung"
"""Pipeline-log node of the rights operations (erase, export, import, forget, correct)."""

_T = TypeVar("_T")
_P = TypeVar("_P")


class _DbWriter(Protocol):
    def db_write(self, *, turn_id: str, node: str, tabelle: str, operation: str, **details: Any) -> None: ...


def named_target(request: Message, missing: str, oneof: str = "target") -> dict[str, Any]:
    """What a request names by its ``oneof`` (``target``), as {field: value}; none named is
    InvalidArgument(``missing``)."""
    which = request.WhichOneof(oneof)
    if which is None:
        raise InvalidArgument(missing)
    return {which: getattr(request, which)}


def pair_ids(message: common_pb2.Pair) -> tuple[str, str]:
    """A ``Pair`` message as (user_id, character_id)."""
    return message.user_id, message.character_id


def erasure_target_of(
    target: common_pb2.ErasureTarget, pair_of: Callable[[common_pb2.Pair], _P]
) -> tuple[_P | None, str | None]:
    """An ``ErasureTarget`` as (pair, user_id), the pair converted by ``pair_of``: exactly one of
    them set; neither named is InvalidArgument."""
    named = named_target(target, "target must name a pair or a user_id")
    pair: common_pb2.Pair | None = named.get("pair")
    return pair_of(pair) if pair is not None else None, named.get("user_id")


def check_erasure_target(
    pair: tuple[str, str] | None,
    user_id: str | None,
    *,
    pair_field: str = "target.pair",
    user_field: str = "target",
) -> tuple[str, str | None]:
    """The checked target of an erasure as (user, character); character None: every character
    of the user. Exactly one of ``pair`` and ``user_id`` must be given; the ids follow the pair
    rule (errors name ``<pair_field>.user_id`` … or ``<user_field>.user_id``)."""
    if (pair is None) == (user_id is None):
        raise InvalidArgument("target must name either a pair or a user_id")
    if pair is not None:
        check_pair(*pair, pair_field)
        return pair
    assert user_id is not None
    check_pair(user_id, "-", user_field)
    return user_id, None


def erasure_scope(character_id: str | None) -> str:
    """The ``umfang`` an erasure's record names: one pair (``paar``) or every pair of a user (``nutzer``)."""
    return "paar" if character_id is not None else "nutzer"


def kzg_key_prefix(user_id: str, character_id: str | None) -> str:
    """The KZG key prefix of a pair (``kzg:<u>:<c>:``) or of every pair of a user (``kzg:<u>:``)
    (SPEC §4.1), as the KZG writes its keys and other texts may quote them."""
    return f"kzg:{user_id}:" if character_id is None else f"kzg:{user_id}:{character_id}:"


def kzg_key(user_id: str, character_id: str, entry_id: str) -> str:
    """``kzg:{user_id}:{character_id}:{entry_id}`` (SPEC §4.1)."""
    return kzg_key_prefix(user_id, character_id) + entry_id


def rights_write(log: _DbWriter, *, turn_id: str, operation: str, tabelle: str, **details: Any) -> None:
    """The one ``db_write`` record of a rights operation (erase, import, forget, correct)."""
    log.db_write(turn_id=turn_id, node=RIGHTS_NODE, tabelle=tabelle, operation=operation, **details)


def erasure_written(
    log: _DbWriter, *, turn_id: str, tabelle: str, character_id: str | None, **counts: int
) -> None:
    """The record of one erasure: what it removed (``counts``) and its ``umfang``; it names no
    pair (docs/decisions.md "Erasure")."""
    rights_write(
        log, turn_id=turn_id, operation="erase", tabelle=tabelle, umfang=erasure_scope(character_id), **counts
    )


class StreamPair:
    """The pair an ImportPair client stream names: the first message must name it, a later one
    may repeat it but name no other."""

    def __init__(self) -> None:
        self.pair: common_pb2.Pair | None = None
        """The pair the first message named (None before it)."""

    def check(self, message: Any) -> common_pb2.Pair:
        """The stream's pair after ``message`` (InvalidArgument if it breaks the rule)."""
        named = message.HasField("pair")
        if self.pair is None:
            if not named:
                raise InvalidArgument("the first message of ImportPair must name the pair")
            self.pair = message.pair
        elif named and pair_ids(message.pair) != pair_ids(self.pair):
            raise InvalidArgument("every message of one ImportPair must name the same pair")
        return self.pair


def chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    """``items`` in consecutive slices of at most ``size`` (none for no items)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
