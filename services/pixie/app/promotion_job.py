"""One promotion job's steps (SPEC §5.3): read the entry fresh from the KZG, let the LZG promote it,
mark the pair's ``hash_dirty`` and, after a new node, delete the KZG key; a failing job is
counted, backed off or parked. The batches and runs around them: :mod:`services.pixie.app.promotion`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.errors import NotFound
from novaberg_core.model import PromotionOutcome
from novaberg_core.peers import PEER_FAILURES, KzgPeer, LzgPeer, describe, peer_is_down
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.pipeline_log.nodes import DECISION_PROMOTION_OUTCOME
from novaberg_core.telemetry import link_to, tracer
from novaberg_core.timeutil import from_timestamp, optional_timestamp, utc_now
from services.pixie.config import PixieConfig
from services.pixie.store import JobRef, PixieStore
from services.pixie.tasks import next_attempt_at, should_park
from services.pixie.types import NODE, JobFailed, StepHook, Tally

# The worker's logger and tracer, as before the split (operators and tests filter on the name).
_LOG = logging.getLogger("services.pixie.app.promotion")
_TRACER = tracer("services.pixie.app.promotion")

_OUTCOME_COUNT = {
    common_pb2.PROMOTION_OUTCOME_DUPLICATE: ("duplicates", PromotionOutcome.DUPLICATE.value),
    common_pb2.PROMOTION_OUTCOME_HALF_REACTIVATION: ("half_reactivations", PromotionOutcome.HALF_REACTIVATION.value),
    common_pb2.PROMOTION_OUTCOME_ERASED: ("erased", PromotionOutcome.ERASED.value),
}


def _job_ref(job: kzg_pb2.PromotionJob) -> JobRef:
    return JobRef(
        job_id=job.job_id,
        kzg_key=job.kzg_key,
        ausloeser_turn_id=job.ausloeser_turn_id,
        user_id=job.pair.user_id,
        character_id=job.pair.character_id,
    )


@dataclass(kw_only=True, eq=False)
class PromotionSteps:
    """The steps of one job against the KZG, the LZG and the store; the worker
    (:class:`~services.pixie.app.promotion.PromotionWorker`) runs them for its batches."""

    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    store: PixieStore
    plog: PipelineLog
    replica_id: str
    settings: PixieConfig
    """The worker's knobs: batch size, block, reclaim, concurrency, attempts, backoff, window, timeouts."""
    clock: Callable[[], datetime] = utc_now
    step_hook: StepHook | None = None

    @property
    def kzg_peer(self) -> KzgPeer:
        """The KZG's calls with the worker's deadline; an unreachable KZG fails a call at once (an outage)."""
        return KzgPeer(self.kzg, self.settings.rpc_timeout_s, wait_for_ready=None)

    @property
    def lzg_peer(self) -> LzgPeer:
        """The LZG's calls with the worker's deadline; an unreachable LZG fails a call at once (an outage)."""
        return LzgPeer(self.lzg, self.settings.rpc_timeout_s, wait_for_ready=None)

    async def _ack(self, job_ids: list[str], tally: Tally) -> None:
        response = await self.kzg_peer.ack_promotion_jobs(kzg_pb2.AckPromotionJobsRequest(job_ids=job_ids))
        tally["acked"] += response.acked

    # --- one job ------------------------------------------------------------------------

    async def _promote_one(self, job: kzg_pb2.PromotionJob, tally: Tally, as_of: datetime | None) -> str:
        """The job's steps (SPEC §5.3); returns the count key of its outcome."""
        pair = job.pair
        turn_id = job.ausloeser_turn_id or f"pixie-job-{job.job_id}"
        where: dict[str, Any] = {"user_id": pair.user_id, "character_id": pair.character_id}
        if as_of is None and job.HasField("ausgeloest_am"):
            as_of = from_timestamp(job.ausgeloest_am)  # SPEC §11: promoted in the entry's own time
        if as_of is not None:
            where["erstellt_am"] = as_of  # the log rows of a replay sit at its simulated time
        async with self.plog.span(turn_id=turn_id, node=NODE, **where) as span_id:
            logged = {"span_id": span_id, **where}
            job_info = {"job_id": job.job_id, "kzg_key": job.kzg_key, "delivery_count": job.delivery_count}
            entry = await self._read_entry(job, common_pb2.TurnContext(turn_id=turn_id, span_id=span_id), as_of)
            if entry is None:
                self.plog.decision(
                    turn_id=turn_id, node=NODE, entscheidung=DECISION_PROMOTION_OUTCOME, ausgang="verfallen",
                    eingang=job_info, massstab="KZG-Eintrag beim frischen Lesen nicht mehr vorhanden",
                    **logged,
                )
                return "expired"
            if self.step_hook is not None:
                await self.step_hook("read", job)
            # The promotion joins the trace of the turn that wrote the entry (a span link).
            with _TRACER.start_as_current_span("pixie.promote", links=link_to(entry.traceparent)):
                try:
                    promoted = await self.lzg_peer.promote(
                        lzg_pb2.PromoteRequest(
                            entry=entry,
                            turn=common_pb2.TurnContext(turn_id=turn_id, span_id=span_id),
                            ausloeser_turn_id=job.ausloeser_turn_id,
                            as_of=optional_timestamp(as_of),
                        )
                    )
                except PEER_FAILURES as error:
                    raise JobFailed(f"LZG Promote: {describe(error)}") from error
            if self.step_hook is not None:
                await self.step_hook("promoted", job)
            massstab = {
                "node_id": promoted.node_id, "best_cosine": promoted.best_cosine,
                "edges_created": promoted.edges_created, "candidates": promoted.candidates,
                "already_promoted": promoted.already_promoted, "salienz": entry.salienz,
            }
            if promoted.outcome == common_pb2.PROMOTION_OUTCOME_NEW_NODE:
                # A replay after a crash finds the node already there (already_promoted) and still
                # owes the delete; the LZG allows it for a new node only (SPEC §5.3 step 6).
                if promoted.kzg_delete_allowed or promoted.already_promoted:
                    await self._retire_entry(job, turn_id, span_id, promoted.node_id, tally, as_of)
                key, ausgang = ("already_promoted", "bereits_befoerdert") if promoted.already_promoted \
                    else ("promoted_new", "neuer_knoten")
            elif promoted.outcome in _OUTCOME_COUNT:
                key, ausgang = _OUTCOME_COUNT[promoted.outcome]
                # SPEC §5.3 step 6: hash_dirty after every promotion; only the DEL is for new nodes.
                await self._mark_hash_dirty(job, turn_id, ausgang, promoted.node_id, as_of)
            else:
                raise JobFailed(f"LZG Promote answered an unknown outcome {promoted.outcome}")
            self.plog.decision(
                turn_id=turn_id, node=NODE, entscheidung=DECISION_PROMOTION_OUTCOME, ausgang=ausgang,
                eingang=job_info, massstab=massstab, **logged,
            )
            return key

    async def _mark_hash_dirty(
        self, job: kzg_pb2.PromotionJob, turn_id: str, ausgang: str, node_id: int, as_of: datetime | None
    ) -> None:
        """The pair's hash_dirty marker after a duplicate or half-reactivation (the entry stays in the KZG)."""
        try:
            await self.kzg_peer.mark_hash_dirty(
                kzg_pb2.MarkHashDirtyRequest(
                    pair=job.pair, reason=f"promotion {job.kzg_key} -> {ausgang} node {node_id}",
                    as_of=optional_timestamp(as_of),
                )
            )
        except PEER_FAILURES as error:
            raise JobFailed(f"KZG MarkHashDirty after {ausgang} of node {node_id}: {describe(error)}") from error

    async def _read_entry(
        self, job: kzg_pb2.PromotionJob, turn: common_pb2.TurnContext, as_of: datetime | None
    ) -> common_pb2.KzgEntry | None:
        """The entry read fresh (SPEC §5.3 step 1); the KZG logs the read under the job's turn and span."""
        request = kzg_pb2.GetEntryRequest(
            pair=job.pair, kzg_key=job.kzg_key, turn=turn, as_of=optional_timestamp(as_of)
        )
        try:
            response = await self.kzg_peer.get_entry(request)
        except NotFound:
            return None
        except PEER_FAILURES as error:
            raise JobFailed(f"KZG GetEntry: {describe(error)}") from error
        return response.entry

    async def _retire_entry(
        self, job: kzg_pb2.PromotionJob, turn_id: str, span_id: str, node_id: int, tally: Tally,
        as_of: datetime | None,
    ) -> None:
        """hash_dirty, then DEL the KZG key verified by EXISTS (SPEC §5.3 step 6), in one KZG call.

        A failing or unverified DEL is logged loudly and counted (``kzg_delete_failed``), not
        raised: the job is still acked. Only an unreachable KZG keeps the job pending (outage).
        """
        turn = common_pb2.TurnContext(turn_id=turn_id, span_id=span_id)
        logged: dict[str, Any] = {"span_id": span_id, "user_id": job.pair.user_id, "character_id": job.pair.character_id}
        if as_of is not None:
            logged["erstellt_am"] = as_of
        failure = ""
        try:
            deleted = await self.kzg_peer.delete_entry(
                kzg_pb2.DeleteEntryRequest(
                    pair=job.pair, kzg_key=job.kzg_key, turn=turn,
                    hash_dirty_reason=f"promotion {job.kzg_key} -> node {node_id}",
                    as_of=optional_timestamp(as_of),
                )
            )
        except PEER_FAILURES as error:
            if peer_is_down(error):
                # The KZG is unreachable (its ack would fail too): an outage, the job stays pending
                # and its replay (already_promoted) marks and deletes again.
                raise JobFailed(f"KZG DeleteEntry after new node {node_id}: {describe(error)}") from error
            failure = f"DEL (with the hash_dirty marker) failed: {describe(error)}"
        else:
            if not deleted.verified_gone:
                failure = "still exists after DEL (EXISTS answered 1)"
        if failure:
            # SPEC §5.3 step 6: logged loudly, not raised. The node exists and promotion is
            # idempotent on kzg_quell_key, so the job is acked; the entry leaves by its TTL.
            message = f"KZG entry {job.kzg_key} not deleted after new node {node_id}: {failure}"
            _LOG.error("promotion: %s", message)
            self.plog.write(
                turn_id=turn_id, node=NODE, art="fehler",
                inhalt={"typ": "kzg_delete", "message": message, "kzg_key": job.kzg_key, "lzg_id": node_id},
                **logged,
            )
            tally["kzg_delete_failed"] += 1
            return
        # The KZG logged the DEL and its verification under this turn and span (each event once).
        tally["kzg_deleted"] += 1
        if self.step_hook is not None:
            await self.step_hook("deleted", job)

    async def _on_failure(self, job: kzg_pb2.PromotionJob, error: Exception, tally: Tally) -> None:
        """Counts the attempt; backs off, or parks and acks the job after ``max_attempts``."""
        message = describe(error)
        tally.last_error = f"{job.job_id}: {message}"
        ref = _job_ref(job)
        now = self.clock()
        s = self.settings
        attempts = await self.store.record_failure(
            ref, message, now=now,
            retry_at=lambda n: next_attempt_at(now, n, s.backoff_base_s, s.backoff_max_s),
        )
        turn_id = job.ausloeser_turn_id or f"pixie-job-{job.job_id}"
        where = {"user_id": job.pair.user_id, "character_id": job.pair.character_id}
        self.plog.error(turn_id=turn_id, node=NODE, typ="promotion_job",
                        message=f"job {job.job_id} ({job.kzg_key}) attempt {attempts}: {message}", **where)
        if should_park(attempts, s.max_attempts):
            await self.store.park_job(ref, attempts=attempts, error=message, now=now, replica=self.replica_id)
            await self._ack([job.job_id], tally)
            tally["parked"] += 1
            self.plog.decision(
                turn_id=turn_id, node=NODE, entscheidung=DECISION_PROMOTION_OUTCOME, ausgang="geparkt",
                eingang={"job_id": job.job_id, "kzg_key": job.kzg_key},
                massstab={"attempts": attempts, "max_attempts": s.max_attempts, "error": message}, **where,
            )
            _LOG.error("promotion: parked job %s (%s) after %d attempts: %s",
                       job.job_id, job.kzg_key, attempts, message)
        else:
            tally["failed"] += 1
            _LOG.warning("promotion: job %s attempt %d failed: %s", job.job_id, attempts, message)
