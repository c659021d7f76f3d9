"""Usage reinforcement (SPEC §5.6) and Trigger 2 (SPEC §5.5): the served nodes the answer used.

Steps: validate (pair, served ids) → the served nodes of the pair (foreign ids: NotFound) → the
answer's vector → cosine per served node → select under the threshold and cap (``usage``) →
reinforce them and run Trigger 2 in one round trip, once per turn (a resent turn's call finds the
turn's mark and changes nothing: ``wiederholt``, migration 014) → one protocol record in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

import asyncpg
import numpy as np
import numpy.typing as npt

from novaberg_core.embedding import query_embed_text
from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.model import Pair
from novaberg_core.pipeline_log import LogScope
from novaberg_core.pipeline_log.nodes import NODE_VERWENDUNG
from services.lzg.app.context import NO_TURN, UseCase
from services.lzg.store import PairTx
from services.lzg.usage import VERWENDUNG_MAX_JE_TURN, Ausgang, Verwendungsprotokoll, select_used
from services.lzg.weights import LZG_KNOTEN_REINFORCEMENT_BOOST

__all__ = ["Usage"]

_LOG = logging.getLogger(__name__)


class Usage(UseCase):
    """SPEC §5.6 and Trigger 2 over the shared context."""

    async def reinforce_used(
        self,
        pair: Pair,
        answer_text: str,
        served_node_ids: Sequence[int],
        *,
        as_of: datetime,
        turn: LogScope = NO_TURN,
        answer_vector: npt.NDArray[np.float32] | None = None,
    ) -> Verwendungsprotokoll:
        """Reinforce the served nodes the answer used, then Trigger 2 for each; one protocol record,
        written when ``turn`` names a turn.

        ``answer_vector`` is the caller's embedding of ``answer_text`` (already checked); without it
        the answer is embedded here.
        """
        pair.check()
        served = list(dict.fromkeys(served_node_ids))
        if any(i <= 0 for i in served):
            raise InvalidArgument("served_node_ids must be positive node ids")
        schwelle = self.profile.usage
        record = Verwendungsprotokoll(
            schwelle=schwelle, deckel=VERWENDUNG_MAX_JE_TURN, ausgang=Ausgang.GERECHNET
        )
        record.geprueft = len(served)
        try:
            await self._reinforce(pair, answer_text, served, as_of, record, answer_vector, turn.turn_id)
        except (asyncpg.PostgresError, OSError) as exc:
            record.ausgang = Ausgang.DB_FEHLER
            record.error = f"{type(exc).__name__}: {exc}"
        if turn.turn_id:
            where = LogScope.of_pair(turn.turn_id, pair, turn.span_id, as_of)
            self.log.decision(
                **where,
                node=NODE_VERWENDUNG,
                entscheidung="verwendung.verstaerken",
                ausgang=record.ausgang.value,
                eingang=record.as_log(),
                massstab={"schwelle": schwelle, "deckel": record.deckel},
            )
            if record.error:
                self.log.error(**where, node=NODE_VERWENDUNG, typ=record.ausgang.value, message=record.error)
        return record

    async def _reinforce(
        self,
        pair: Pair,
        answer_text: str,
        served: list[int],
        as_of: datetime,
        record: Verwendungsprotokoll,
        answer_vector: npt.NDArray[np.float32] | None = None,
        turn_id: str = "",
    ) -> None:
        # Foreign ids are an error of the call, checked before anything else happens; the same
        # read brings the served nodes' vectors.
        vectors = await self.store.served_vectors(served, pair.user_id, pair.character_id) if served else {}
        missing = sorted(set(served) - vectors.keys())
        if missing:
            raise NotFound(f"served_node_ids {missing} are not nodes of this pair")
        if not answer_text.strip():
            record.ausgang = Ausgang.ANTWORT_LEER
            return
        if not served:
            record.ausgang = Ausgang.OHNE_KANDIDAT
            return
        try:
            if answer_vector is not None:
                answer = answer_vector
            else:
                answer = await self.provider.embed_one(query_embed_text(answer_text))
        except Exception as exc:  # any model failure is an outcome of the record, not a call error
            record.ausgang = Ausgang.EMBED_FEHLER
            record.error = f"{type(exc).__name__}: {exc}"
            return
        answer_norm = float(np.linalg.norm(answer))
        usable = {i: v for i, v in vectors.items() if v is not None and float(np.linalg.norm(v)) > 0.0}
        if answer_norm == 0.0 or not usable:
            record.ausgang = Ausgang.VEKTOR_LEER
            record.error = "answer vector is empty" if answer_norm == 0.0 else "served nodes have no vectors"
            return
        naehen = {
            i: float(np.dot(v.astype(np.float64), answer.astype(np.float64))) for i, v in usable.items()
        }
        selection = select_used(naehen, record.schwelle, record.deckel)
        record.naehen_alle = list(selection.naehen_alle)
        record.verwendet = list(selection.verwendet)
        record.knappster_verworfener = selection.knappster_verworfener
        if not selection.verwendet:
            return
        # The nodes (roh += boost, SPEC §5.6) and Trigger 2 of all of them in one round trip; a
        # failing Trigger 2 rolls back alone and leaves the edges on their old weight (syn §7.9.2).
        written = await self.store.reinforce_used(
            pair.user_id, pair.character_id, selection.verwendet, LZG_KNOTEN_REINFORCEMENT_BOOST, as_of,
            self.profile.embedding_layer, turn_id,
        )  # fmt: skip
        record.wiederholt = written.repeated
        record.kanten_neu = written.edges_updated
        record.kanten_dauer_ms = written.edges_ms
        if written.edges_skipped:
            _LOG.error(
                "trigger 2 for nodes %s skipped edges without a layer: %s",
                written.reinforced,
                written.edges_skipped,
            )
        if written.error is not None:
            record.kanten_fehler = len(written.reinforced)
            record.kanten_fehler_knoten = list(written.reinforced)
            record.error = f"trigger 2 for nodes {written.reinforced}: {written.error}"

    async def trigger2(self, tx: PairTx, node_ids: int | Sequence[int]) -> tuple[int, list[int]]:
        """Trigger 2 (SPEC §5.5): every edge from or to the nodes from frozen layers and current anchors.

        One set-based statement in ``tx``; returns (directed edges updated, edges skipped because
        their winning layer cannot be reconstructed — they keep their weight, syn §7.9.2).
        """
        ids = [node_ids] if isinstance(node_ids, int) else list(node_ids)
        return await tx.trigger2(ids, self.profile.embedding_layer)
