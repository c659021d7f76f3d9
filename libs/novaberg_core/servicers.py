"""The RPC handlers several services serve alike, written once (STYLE rule 9).

``GetModel`` of the services that embed (SPEC §2), and the skeleton of the stores' rights RPCs
(SPEC §8): the rights use case built once per servicer, and ``Erase`` — the request's target
read, erased by the use case, its counts answered field for field. Each is a mixin placed before
the generated ``…Servicer`` base, so its handler is the one served.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import grpc
from google.protobuf.message import Message

from novaberg.common.v1 import common_pb2
from novaberg_core.embedding import ModelStamp, check_vector_model
from novaberg_core.messages import to_message
from novaberg_core.model import model_info
from novaberg_core.rights import erasure_target_of, pair_ids

__all__ = ["EraseServicer", "ModelServicer", "RightsServicer"]


class ModelServicer:
    """``GetModel`` and the check of a caller's vectors: the embedding model this service embeds
    with (SPEC §2)."""

    def __init__(self, model: ModelStamp) -> None:
        self.model_stamp = model
        """The stamp of the service's embedding provider."""

    def check_model(self, field: str, given: str) -> None:
        """A caller's vector (``field``, made by ``given``) must come from this service's model."""
        check_vector_model(field, given, self.model_stamp)

    async def GetModel(
        self, request: common_pb2.GetModelRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.ModelInfo:
        return model_info(self.model_stamp)


_R = TypeVar("_R")


class RightsServicer(abc.ABC, Generic[_R]):
    """The rights RPCs' use case (``self.rights``), built on first use and kept by the servicer."""

    @abc.abstractmethod
    def make_rights(self) -> _R:
        """The service's rights use case over the servicer's own dependencies."""

    @cached_property
    def rights(self) -> _R:
        return self.make_rights()


class _Erasing(Protocol):
    def erase(self, pair: Any, user_id: str | None, /) -> Awaitable[Any]: ...


_E = TypeVar("_E", bound=_Erasing)


class EraseServicer(RightsServicer[_E]):
    """``Erase`` of a store (SPEC §8): the target (a pair or every pair of a user) erased by the
    rights use case, the counts it returns answered as ``erase_response``."""

    erase_response: ClassVar[type[Message]]
    """The service's ``EraseResponse``; its fields carry the names of the counts' fields."""

    def erase_pair(self, pair: common_pb2.Pair) -> Any:
        """The target's pair as the use case takes it; (user_id, character_id) unless overridden."""
        return pair_ids(pair)

    def erase_answer(self, counts: Any) -> Message:
        """The counts as the response, field for field (override where a field needs converting)."""
        return to_message(self.erase_response, counts)

    async def Erase(self, request: Any, context: grpc.aio.ServicerContext) -> Message:
        counts = await self.rights.erase(*erasure_target_of(request.target, self.erase_pair))
        return self.erase_answer(counts)
