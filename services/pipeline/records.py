"""The pipeline's own pipeline-log records (SPEC §8, syn §10.4): each step of a turn (observe, dossier,
dispatch) writes them through one :class:`StepRecords`, which carries where they belong — the turn, the
step's span, the pair and the turn's time — so a use case names only what a record says."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from google.protobuf.json_format import MessageToDict

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.pipeline_log import LogScope, PipelineLog
from novaberg_core.pipeline_log.nodes import NODE_ENRICHER, NODE_VERWENDUNG

__all__ = ["NODE_DISPATCHER", "NODE_ENRICHER", "NODE_OBSERVE", "NODE_SALIENCE", "StepRecords", "step_records"]

NODE_OBSERVE: Final = "observe"
"""ObserveTurn's records (a turn taken in)."""
NODE_SALIENCE: Final = "salience"
"""The analysis of a turn: its salience, themes and emotional fields (SPEC §7)."""
NODE_DISPATCHER: Final = "dispatcher"
"""Dispatch's records (after the answer)."""
# NODE_ENRICHER, BuildDossier's, is shared with the LZG, whose spreading read logs under it.


@contextlib.asynccontextmanager
async def step_records(
    log: PipelineLog, node: str, turn_id: str, pair: common_pb2.Pair, as_of: datetime
) -> AsyncIterator[StepRecords]:
    """The step's span (``span_start`` … ``span_end``, syn §10.2) and the records written within it."""
    async with log.span(
        turn_id=turn_id, node=node, erstellt_am=as_of, user_id=pair.user_id, character_id=pair.character_id
    ) as span_id:
        yield StepRecords(log, node, LogScope.of_pair(turn_id, pair, span_id, as_of))


@dataclass(frozen=True, slots=True)
class StepRecords:
    """The records of one step of one turn, written by ``node`` within the step's span."""

    log: PipelineLog
    node: str
    where: LogScope

    @property
    def turn(self) -> common_pb2.TurnContext:
        """The step's turn and span as the peers' requests carry them (their records join the span)."""
        return common_pb2.TurnContext(turn_id=self.where.turn_id, span_id=self.where.span_id or "")

    def received(self, inhalt: dict[str, Any], quelle: str | None = None) -> None:
        """What the step was given (``eingang``); ``quelle`` the speaker, where a speaker gave it."""
        self.log.write(node=self.node, art="eingang", inhalt=inhalt, quelle=quelle, **self.where)

    def decided(self, weiche: str, ausgang: Any, eingang: Any, massstab: Any) -> None:
        """A decision of the step (``switch``), ``<node>.<weiche>``: its outcome, inputs and scale."""
        self.log.decision(
            node=self.node,
            entscheidung=weiche,
            ausgang=ausgang,
            eingang=eingang,
            massstab=massstab,
            **self.where,
        )

    def wrote(self, tabelle: str, operation: str, **details: Any) -> None:
        """A write of the step's own (``db_write``)."""
        self.log.db_write(node=self.node, tabelle=tabelle, operation=operation, **details, **self.where)

    def failed(self, typ: str, message: str) -> None:
        """A part of the step that failed or a peer that did not answer (``fehler``); the step goes on."""
        self.log.error(node=self.node, typ=typ, message=message, **self.where)

    def answered(self, inhalt: dict[str, Any], quelle: str | None = None) -> None:
        """What the step gave back (``ausgabe``); ``quelle`` the character, where the output is its answer."""
        self.log.write(node=self.node, art="ausgabe", inhalt=inhalt, quelle=quelle, **self.where)

    def usage_without_lzg(self, protokoll: lzg_pb2.VerwendungsProtokoll) -> None:
        """The turn's usage record (SPEC §5.6) where the LZG, which writes it otherwise, did not answer."""
        inhalt = MessageToDict(
            protokoll, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        self.log.write(node=NODE_VERWENDUNG, art="berechnung", inhalt=inhalt, **self.where)

    def turn_roh(self, inhalt: dict[str, Any]) -> None:
        """The whole exchange as it happened (``turn_roh``, syn §10.4 "last answers")."""
        self.log.turn_roh(node=self.node, inhalt=inhalt, **self.where)
