"""A person's rights over their memories, across the stores Pixie reaches: export, import, forget,
correct, requeue (the erasure is :mod:`services.pixie.app.erasure`).

The lines of an export and their format ``novaberg.export/1`` are :mod:`services.pixie.export_format`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg_core.contract import check_pair
from novaberg_core.errors import FailedPrecondition, InvalidArgument, NotFound
from novaberg_core.peers import call_peer
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.pipeline_log.nodes import NODE_PROMOTION
from services.pixie.export_format import ParsedExport, chunks, export_lines, parse_lines
from services.pixie.store import PixieStore

__all__ = [
    "CorrectOutcome",
    "ForgetOutcome",
    "PixieRights",
    "RequeueOutcome",
]

NODE_FORGET: Final = "vergessen"
NODE_CORRECT: Final = "korrektur"
_MAX_PARKED: Final = 100_000


@dataclass(frozen=True)
class ForgetOutcome:
    node_ids: list[int]
    kzg_keys: list[str]
    edges: int
    session_turns: int


@dataclass(frozen=True)
class CorrectOutcome:
    node_id: int
    kzg_key: str
    edges_removed: int
    edges_created: int
    previous_inhalt: str


@dataclass(frozen=True)
class RequeueOutcome:
    requeued: int
    gone: int
    job_ids: list[str]


@dataclass(kw_only=True, eq=False)
class PixieRights:
    """Export, import, forget, correct and requeue through the services' contracts."""

    store: PixieStore
    kzg: kzg_pb2_grpc.KzgServiceStub
    lzg: lzg_pb2_grpc.LzgServiceStub
    plog: PipelineLog
    timeout: float = 30.0
    """Deadline of each call to the KZG and the LZG (exports and imports get a multiple)."""

    # --- export / import ----------------------------------------------------------------

    async def export(self, pair: common_pb2.Pair) -> list[str]:
        """Every line of the pair's export (header first)."""
        check_pair(pair.user_id, pair.character_id)
        kzg_chunks = await call_peer(
            "KZG",
            "ExportPair",
            _collect(self.kzg.ExportPair(kzg_pb2.ExportPairRequest(pair=pair), timeout=self.timeout * 4)),
        )
        lzg_chunks = await call_peer(
            "LZG",
            "ExportPair",
            _collect(self.lzg.ExportPair(lzg_pb2.ExportPairRequest(pair=pair), timeout=self.timeout * 4)),
        )
        model_id = lzg_chunks[0].model_id if lzg_chunks else ""
        return export_lines(pair, model_id, lzg_chunks, kzg_chunks)

    async def import_lines(
        self, target: common_pb2.Pair | None, lines: Sequence[str]
    ) -> tuple[common_pb2.Pair, dict[str, int]]:
        """Writes an export into an empty pair (``target``, or the header's pair): LZG first, then KZG."""
        parsed = parse_lines(lines)
        if target is None:
            source = parsed.header.get("pair") or {}
            target = common_pb2.Pair(
                user_id=str(source.get("user_id", "")), character_id=str(source.get("character_id", ""))
            )
        check_pair(target.user_id, target.character_id)
        probe = await call_peer(
            "KZG",
            "ExportPair",
            _collect(self.kzg.ExportPair(kzg_pb2.ExportPairRequest(pair=target), timeout=self.timeout)),
        )
        if any(c.entries or c.session_turns or c.session_summary for c in probe):
            raise FailedPrecondition(
                f"pair {target.user_id} · {target.character_id} holds KZG entries or a session; "
                "import into an empty pair"
            )

        async def lzgchunks() -> AsyncIterator[lzg_pb2.ImportPairChunk]:
            yield lzg_pb2.ImportPairChunk(pair=target)
            for part in chunks(parsed.entities):
                yield lzg_pb2.ImportPairChunk(entities=part)
            for part in chunks(parsed.timelines):
                yield lzg_pb2.ImportPairChunk(timelines=part)
            for part in chunks(parsed.nodes):
                yield lzg_pb2.ImportPairChunk(nodes=part)
            for part in chunks(parsed.edges):
                yield lzg_pb2.ImportPairChunk(edges=part)

        # Whether the KZG would refuse its part is known before the LZG writes anything.
        await self._import_kzg(target, parsed, validate_only=True)
        imported = await call_peer(
            "LZG", "ImportPair", self.lzg.ImportPair(lzgchunks(), timeout=self.timeout * 20)
        )
        entity_ids = {m.old_id: m.new_id for m in imported.entity_ids}
        timeline_ids = {m.old_id: m.new_id for m in imported.timeline_ids}
        for exported in parsed.entries:
            magnets = exported.entry.magnets
            mapped = [entity_ids[i] for i in magnets.entitaet_ids if i in entity_ids]
            del magnets.entitaet_ids[:]
            magnets.entitaet_ids.extend(mapped)
            if magnets.HasField("timeline_id"):
                if magnets.timeline_id in timeline_ids:
                    magnets.timeline_id = timeline_ids[magnets.timeline_id]
                else:
                    magnets.ClearField("timeline_id")

        written = await self._import_kzg(target, parsed, validate_only=False)
        counts = {
            "entities": len(imported.entity_ids),
            "timelines": len(imported.timeline_ids),
            "nodes": len(imported.node_ids),
            "edges": imported.edges,
            "kzg_entries": written.entries,
            "kzg_queued": written.queued,
            "session_turns": written.session_turns,
            "kzg_skipped_expired": written.skipped_expired,
            "profile": written.profile,
        }
        return target, counts

    async def _import_kzg(
        self, target: common_pb2.Pair, parsed: ParsedExport, *, validate_only: bool
    ) -> kzg_pb2.ImportPairResponse:
        async def messages() -> AsyncIterator[kzg_pb2.ImportPairRequest]:
            yield kzg_pb2.ImportPairRequest(
                pair=target,
                session_turns=parsed.turns,
                session_summary=parsed.summary,
                validate_only=validate_only,
                profile=parsed.profile,
            )
            for part in chunks(parsed.entries):
                yield kzg_pb2.ImportPairRequest(pair=target, entries=part, validate_only=validate_only)

        answer: kzg_pb2.ImportPairResponse = await call_peer(
            "KZG", "ImportPair", self.kzg.ImportPair(messages(), timeout=self.timeout * 20)
        )
        return answer

    # --- forget / correct ---------------------------------------------------------------

    def _promotions_stopped(self, pair: common_pb2.Pair) -> contextlib.AbstractAsyncContextManager[None]:
        """No promotion of the pair in flight while a forget or correction changes both stores: a
        worker that read an entry before would write the node after, undoing it (as for an erasure)."""
        return self.store.promotions_stopped(pair.user_id, pair.character_id, wait_ms=int(self.timeout * 2000))

    async def forget(
        self, pair: common_pb2.Pair, node_id: int, source_turn_id: str, reason: str
    ) -> ForgetOutcome:
        """A node (or a source turn's nodes) with edges and provenance, its KZG entries and session turns."""
        check_pair(pair.user_id, pair.character_id)
        if not reason.strip():
            raise InvalidArgument("reason must not be empty: a forget is logged with its reason")
        if node_id <= 0 and not source_turn_id:
            raise InvalidArgument("name the memory by node_id or source_turn_id")
        turn = common_pb2.TurnContext(turn_id=f"vergessen-{source_turn_id or node_id}"[:100])
        async with self._promotions_stopped(pair):
            return await self._forget(pair, node_id, source_turn_id, reason, turn)

    async def _forget(
        self, pair: common_pb2.Pair, node_id: int, source_turn_id: str, reason: str, turn: common_pb2.TurnContext
    ) -> ForgetOutcome:
        forgotten = await call_peer(
            "LZG",
            "ForgetNodes",
            self.lzg.ForgetNodes(
                lzg_pb2.ForgetNodesRequest(
                    pair=pair,
                    node_ids=[node_id] if node_id > 0 else [],
                    source_turn_id=source_turn_id,
                    turn=turn,
                ),
                timeout=self.timeout,
            ),
        )
        keys = sorted({k for n in forgotten.nodes for k in (n.kzg_quell_key, *n.kzg_keys) if k})
        turns = sorted(
            {t for n in forgotten.nodes for t in n.turn_ids} | ({source_turn_id} if source_turn_id else set())
        )
        deleted: set[str] = set()
        session_turns = 0
        for index, source in enumerate(turns or [""]):
            names = keys if index == 0 else []
            if not names and not source:
                continue
            answer = await call_peer(
                "KZG",
                "ForgetEntries",
                self.kzg.ForgetEntries(
                    kzg_pb2.ForgetEntriesRequest(
                        pair=pair,
                        kzg_keys=names,
                        source_turn_id=source,
                        turn=turn,
                    ),
                    timeout=self.timeout,
                ),
            )
            deleted.update(answer.deleted_keys)
            session_turns += answer.session_turns_removed
        node_ids = [n.node_id for n in forgotten.nodes]
        if not node_ids and not deleted and not session_turns:
            what = f"node {node_id}" if node_id > 0 else f"turn {source_turn_id}"
            raise NotFound(f"{what} left no memory in this pair (nothing to forget)")
        self._changed(
            pair, turn, NODE_FORGET, "lzg_knoten,kzg,session", "forget", reason,
            knoten_ids=node_ids, kzg_keys=sorted(deleted), kanten=forgotten.edges, session_turns=session_turns,
            quell_turn_id=source_turn_id or None,
        )  # fmt: skip
        return ForgetOutcome(node_ids, sorted(deleted), forgotten.edges, session_turns)

    async def correct(
        self, pair: common_pb2.Pair, *, node_id: int, kzg_key: str, inhalt: str, reason: str
    ) -> CorrectOutcome:
        """New content for a node (and its KZG entry if it still exists), or for an entry (and its node)."""
        check_pair(pair.user_id, pair.character_id)
        if not inhalt.strip():
            raise InvalidArgument("inhalt must not be empty")
        if not reason.strip():
            raise InvalidArgument("reason must not be empty: a correction is logged with its reason")
        if node_id <= 0 and not kzg_key:
            raise InvalidArgument("name the memory by node_id or kzg_key")
        turn = common_pb2.TurnContext(
            turn_id=f"korrektur-{kzg_key.rsplit(':', 1)[-1] if kzg_key else node_id}"[:100]
        )
        async with self._promotions_stopped(pair):
            return await self._correct(pair, node_id, kzg_key, inhalt, reason, turn)

    async def _correct(
        self, pair: common_pb2.Pair, node_id: int, kzg_key: str, inhalt: str, reason: str, turn: common_pb2.TurnContext
    ) -> CorrectOutcome:
        previous = ""
        corrected_key = ""
        node: lzg_pb2.CorrectNodeResponse | None = None
        if kzg_key:
            try:
                entry = await call_peer(
                    "KZG",
                    "CorrectEntry",
                    self.kzg.CorrectEntry(
                        kzg_pb2.CorrectEntryRequest(pair=pair, kzg_key=kzg_key, inhalt=inhalt, turn=turn),
                        timeout=self.timeout,
                    ),
                )
                previous, corrected_key = entry.previous_inhalt, kzg_key
            except NotFound:
                pass
        request = lzg_pb2.CorrectNodeRequest(pair=pair, inhalt=inhalt, turn=turn)
        if node_id > 0:
            request.node_id = node_id
        else:
            request.kzg_quell_key = kzg_key
        try:
            node = await call_peer(
                "LZG", "CorrectNode", self.lzg.CorrectNode(request, timeout=self.timeout * 4)
            )
        except NotFound:
            if node_id > 0 or not corrected_key:
                raise
        if node is not None:
            previous = node.previous_inhalt or previous
            source = node.node.kzg_quell_key
            if not corrected_key and source:
                # NotFound: promoted as new, the entry left the KZG (SPEC §5.3 step 6); the node alone is corrected.
                with contextlib.suppress(NotFound):
                    await call_peer(
                        "KZG",
                        "CorrectEntry",
                        self.kzg.CorrectEntry(
                            kzg_pb2.CorrectEntryRequest(pair=pair, kzg_key=source, inhalt=inhalt, turn=turn),
                            timeout=self.timeout,
                        ),
                    )
                    corrected_key = source
        outcome = CorrectOutcome(
            node_id=node.node.id if node is not None else 0,
            kzg_key=corrected_key,
            edges_removed=node.edges_removed if node is not None else 0,
            edges_created=node.edges_created if node is not None else 0,
            previous_inhalt=previous,
        )
        self._changed(
            pair, turn, NODE_CORRECT, "lzg_knoten,kzg", "correct", reason,
            knoten_id=outcome.node_id or None, kzg_key=corrected_key or None, vorher=previous, nachher=inhalt,
            kanten_entfernt=outcome.edges_removed, kanten_neu=outcome.edges_created,
        )  # fmt: skip
        return outcome

    def _changed(
        self, pair: common_pb2.Pair, turn: common_pb2.TurnContext, node: str, tabelle: str, operation: str,
        reason: str, **details: Any,
    ) -> None:
        """The db_write record of a forget or a correction: what changed in the pair, and why."""
        self.plog.db_write(
            turn_id=turn.turn_id, node=node, tabelle=tabelle, operation=operation, grund=reason, **details,
            user_id=pair.user_id, character_id=pair.character_id,
        )  # fmt: skip

    # --- requeue ------------------------------------------------------------------------

    async def requeue(self, job_ids: Sequence[str], every: bool) -> RequeueOutcome:
        """Parked jobs back into the queue; those whose entry is gone leave the parked list too."""
        if every == bool(job_ids):
            raise InvalidArgument("name job_ids or set all (not both)")
        parked = await self.store.parked_jobs(None if every else job_ids, _MAX_PARKED)
        if not parked:
            return RequeueOutcome(0, 0, [])
        jobs = [
            kzg_pb2.PromotionJob(
                kzg_key=p.kzg_key,
                ausloeser_turn_id=p.ausloeser_turn_id,
                pair=common_pb2.Pair(user_id=p.user_id, character_id=p.character_id),
            )
            for p in parked
        ]
        new_ids: list[str] = []
        for part in chunks(jobs):
            answer = await call_peer(
                "KZG",
                "EnqueuePromotionJobs",
                self.kzg.EnqueuePromotionJobs(
                    kzg_pb2.EnqueuePromotionJobsRequest(jobs=part), timeout=self.timeout
                ),
            )
            new_ids += list(answer.job_ids)
        await self.store.unpark_jobs([p.job_id for p in parked])
        queued = [i for i in new_ids if i]
        self.plog.db_write(
            turn_id=f"requeue-{queued[0] if queued else 'weg'}",
            node=NODE_PROMOTION,
            tabelle="pixie.parked_jobs",
            operation="requeue",
            wieder_eingereiht=len(queued),
            weg=len(new_ids) - len(queued),
        )
        return RequeueOutcome(len(queued), len(new_ids) - len(queued), queued)


async def _collect(call: Any) -> list[Any]:
    """Every message of a server-streaming call (an AioRpcError propagates to :func:`call_peer`)."""
    return [message async for message in call]
