"""Request checks of the pipeline RPCs (SPEC §10: bad input → a clear error, nothing changed).

Every check runs before the first call to another service, so a refused request writes nothing:
no session turn, no KZG entry, no entity, no log record. The rules mirror what the peers
enforce (KZG keys, the log table's column widths), so a request that passes here is not
refused downstream for its shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.clusters import ClusterTable
from novaberg_core.errors import InvalidArgument
from novaberg_core.limits import (  # re-exported for callers
    BATCH_MAX_TURNS,
    PAIR_ID_MAX_LEN,
    TURN_ID_MAX_LEN,
)
from novaberg_core.model import (
    READERS,
    Beobachter,
    Magnets,
    Pair,
    Profile,
    check_reader,
    check_unit_interval,
    check_vector,
)

__all__ = [
    "PAIR_ID_MAX_LEN",
    "TURN_ID_MAX_LEN",
    "check_analysis",
    "check_build_dossier",
    "check_dispatch",
    "check_observe",
    "check_observe_batch",
    "check_pair",
]


def check_pair(pair: common_pb2.Pair, has_pair: bool) -> None:
    """A pair is required and follows the shared pair rule (novaberg_core.contract)."""
    if not has_pair:
        raise InvalidArgument("pair is required")
    Pair.from_proto(pair)


def check_turn_id(turn_id: str) -> None:
    if not turn_id.strip():
        raise InvalidArgument("turn_id must not be empty")


def check_analysis(analysis: pipeline_pb2.TurnAnalysis, field: str) -> None:
    """A caller's analysis: salienz in 0..1, clean themes, a dimension, arousal in 0..1, magnet ids > 0.

    Whether the magnet ids exist in the pair's registry is checked by the pipeline against the
    LZG before anything is written.
    """
    if analysis.inhalt and not analysis.inhalt.strip():
        raise InvalidArgument(f"{field}.inhalt must not be blank (leave it empty to use the turn text)")
    if not analysis.HasField("salience"):
        raise InvalidArgument(f"{field}.salience is required when {field} is given")
    check_unit_interval(f"{field}.salience.salienz", analysis.salience.salienz)
    if not analysis.salience.dimension.strip():
        raise InvalidArgument(
            f"{field}.salience.dimension must not be empty (salience dimension 5; the offline analyzer uses 'allgemein')"
        )
    check_unit_interval(f"{field}.ei.arousal", analysis.ei.arousal)
    Magnets.from_proto(analysis.magnets).check(f"{field}.magnets")


def _check_observed(turn: pipeline_pb2.ObserveTurnRequest | pipeline_pb2.ObservedTurn, prefix: str) -> None:
    if not turn.turn_id.strip():
        raise InvalidArgument(f"{prefix}turn_id must not be empty")
    Beobachter.from_proto(turn.beobachter, f"{prefix}beobachter")
    if not turn.text.strip():
        raise InvalidArgument(f"{prefix}text must not be empty")
    if turn.HasField("analysis"):
        check_analysis(turn.analysis, f"{prefix}analysis")


def check_observe(request: pipeline_pb2.ObserveTurnRequest) -> None:
    check_pair(request.pair, request.HasField("pair"))
    Profile.check_proto(request.profile)
    _check_observed(request, "")


def check_observe_batch(request: pipeline_pb2.ObserveTurnsRequest) -> None:
    """The whole batch: a pair, 1 to BATCH_MAX_TURNS turns, each as ObserveTurn checks it (``turns[i].…``),
    each turn_id once per beobachter (a turn_id names one turn; its entry id is the turn's)."""
    check_pair(request.pair, request.HasField("pair"))
    Profile.check_proto(request.profile)
    if not request.turns:
        raise InvalidArgument("turns must hold at least one turn")
    if len(request.turns) > BATCH_MAX_TURNS:
        raise InvalidArgument(f"turns may hold at most {BATCH_MAX_TURNS} turns, got {len(request.turns)}")
    first: dict[tuple[str, int], int] = {}
    for index, turn in enumerate(request.turns):
        _check_observed(turn, f"turns[{index}].")
        seen = first.setdefault((turn.turn_id, turn.beobachter), index)
        if seen != index:
            raise InvalidArgument(
                f"turns[{index}].turn_id {turn.turn_id!r} with this beobachter is turns[{seen}]'s already; "
                "a turn_id names one turn"
            )


def check_readers(readers: Sequence[str]) -> list[str]:
    """The requested readers, each once in request order; empty → both (SPEC §5.9)."""
    if not readers:
        return list(READERS)
    chosen: list[str] = []
    for reader in readers:
        if check_reader(reader) not in chosen:
            chosen.append(reader)
    return chosen


def check_build_dossier(request: pipeline_pb2.BuildDossierRequest, dimension: int) -> list[str]:
    """Checks the request; returns the readers to render."""
    check_pair(request.pair, request.HasField("pair"))
    check_turn_id(request.turn_id)
    if not request.query_text.strip():
        raise InvalidArgument("query_text must not be empty")
    for index, goal in enumerate(request.goals):
        check_vector(goal.embedding, dimension, f"goals[{index}].embedding")
        strength = goal.aktivierungs_staerke
        if not math.isfinite(strength) or strength < 0.0:
            raise InvalidArgument(f"goals[{index}].aktivierungs_staerke must be a finite number >= 0, got {strength!r}")
    return check_readers(request.readers)


def _check_json_object(name: str, raw: str) -> None:
    if not raw:
        return
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise InvalidArgument(f"{name} is not JSON: {error.msg} at {error.pos}") from None
    if not isinstance(value, dict):
        raise InvalidArgument(f"{name} must be a JSON object, got {type(value).__name__}")


def check_dispatch(request: pipeline_pb2.DispatchRequest, clusters: ClusterTable) -> str:
    """Checks the request; returns the cluster in the table's spelling."""
    check_pair(request.pair, request.HasField("pair"))
    check_turn_id(request.turn_id)
    if not request.answer_text.strip():
        raise InvalidArgument("answer_text must not be empty")
    cluster = clusters.canonical(request.cluster, "cluster")
    ids = list(request.served_node_ids)
    if any(i <= 0 for i in ids):
        raise InvalidArgument(f"served_node_ids must be positive node ids, got {ids}")
    if request.HasField("answer_analysis"):
        check_analysis(request.answer_analysis, "answer_analysis")
    _check_json_object("user_emotion_json", request.user_emotion_json)
    _check_json_object("nova_emotion_json", request.nova_emotion_json)
    return cluster
