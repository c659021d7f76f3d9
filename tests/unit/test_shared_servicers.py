"""The handlers and start-up steps several services share (``novaberg_core.servicers``,
``novaberg_core.messages``, ``novaberg_core.bootstrap``): GetModel, the vector-model check, the
rights use case built once, Erase, a record as a message, the provider checked against its profile."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.bootstrap import profiled_provider
from novaberg_core.embedding import EmbeddingProvider, ModelStamp, Vectors, profile_for
from novaberg_core.errors import InvalidArgument, ModelMismatch
from novaberg_core.messages import from_message, to_message
from novaberg_core.servicers import EraseServicer, ModelServicer

STAMP = ModelStamp("test-model", 4)


@dataclasses.dataclass(frozen=True)
class _Counts:
    rows: int
    turn_roh: int
    unpaired_rows: int


class _Rights:
    """Records each erasure's target and answers fixed counts."""

    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.targets: list[tuple[Any, str | None]] = []

    async def erase(self, pair: Any, user_id: str | None) -> _Counts:
        self.targets.append((pair, user_id))
        return _Counts(rows=3, turn_roh=1, unpaired_rows=2)


class _Servicer(ModelServicer, EraseServicer[_Rights]):
    erase_response = log_pb2.EraseResponse

    def make_rights(self) -> _Rights:
        return _Rights()


async def test_get_model_answers_the_stamp_the_servicer_was_given() -> None:
    info = await _Servicer(STAMP).GetModel(common_pb2.GetModelRequest(), None)  # type: ignore[arg-type]
    assert (info.model_id, info.dimension, info.recipe) == (STAMP.model_id, STAMP.dimension, STAMP.recipe)


def test_a_vector_of_another_model_is_refused_and_an_unnamed_one_accepted() -> None:
    servicer = _Servicer(STAMP)
    servicer.check_model("query_vector", "test-model")
    servicer.check_model("query_vector", "")
    with pytest.raises(ModelMismatch, match="query_vector was embedded with 'other'"):
        servicer.check_model("query_vector", "other")


async def test_erase_reads_the_target_erases_once_and_answers_the_counts_field_for_field() -> None:
    servicer = _Servicer(STAMP)
    built = _Rights.built
    by_pair = log_pb2.EraseRequest(target=common_pb2.ErasureTarget(pair=common_pb2.Pair(user_id="u", character_id="c")))
    by_user = log_pb2.EraseRequest(target=common_pb2.ErasureTarget(user_id="u"))
    first = await servicer.Erase(by_pair, None)  # type: ignore[arg-type]
    await servicer.Erase(by_user, None)  # type: ignore[arg-type]
    assert first == log_pb2.EraseResponse(rows=3, turn_roh=1, unpaired_rows=2)
    assert servicer.rights.targets == [(("u", "c"), None), (None, "u")]
    assert _Rights.built == built + 1  # the use case is built once per servicer


async def test_erase_without_a_target_is_invalid_and_erases_nothing() -> None:
    servicer = _Servicer(STAMP)
    with pytest.raises(InvalidArgument, match="target must name a pair or a user_id"):
        await servicer.Erase(log_pb2.EraseRequest(), None)  # type: ignore[arg-type]
    assert servicer.rights.targets == []


@dataclasses.dataclass(frozen=True)
class _Row:
    id: int
    erstellt_am: datetime
    turn_id: str
    span_id: str | None
    not_in_the_message: str


def test_a_record_becomes_the_message_of_its_field_names() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    message = to_message(log_pb2.LogRecord, _Row(7, at, "t1", None, "x"), node="given")
    assert message.id == 7 and message.turn_id == "t1" and message.node == "given"
    assert message.erstellt_am.ToDatetime(tzinfo=UTC) == at
    assert not message.span_id  # None is left unset


@dataclasses.dataclass(frozen=True)
class _Edge:
    id: int
    erstellt_am: datetime | None
    geteilte_themen: tuple[str, ...]
    timeline_naehe_tage: int | None
    embedding_cosine_initial: float | None
    not_in_the_message: str = "default"


def test_a_message_becomes_the_record_of_its_field_names_and_back() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    edge = _Edge(3, at, ("Garten", "Anna"), 4, None)
    message = to_message(lzg_pb2.Edge, edge)
    assert not message.HasField("embedding_cosine_initial")  # None left unset …
    assert from_message(_Edge, message) == edge  # … and read back as None; repeated as a tuple
    unset = from_message(_Edge, lzg_pb2.Edge(id=4), not_in_the_message="given")
    assert unset == _Edge(4, None, (), None, None, "given")  # an unset time and optional are None


class _Provider(EmbeddingProvider):
    def __init__(self, model_id: str, dimension: int) -> None:
        self.model_id, self.dimension = model_id, dimension

    async def _embed(self, texts: list[str]) -> Vectors:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)


def test_the_provider_comes_with_its_measured_profile() -> None:
    profile = profile_for("ollama:nomic-embed-text-v2-moe")
    provider = _Provider(profile.model_id, profile.dimension)
    assert profiled_provider(provider) == (provider, profile)


def test_a_profile_of_another_dimension_refuses_to_start() -> None:
    profile = profile_for("ollama:nomic-embed-text-v2-moe")
    with pytest.raises(ValueError, match=f"says {profile.dimension}-d, the provider gives 3-d"):
        profiled_provider(_Provider(profile.model_id, 3), profile)
