"""One turn through the memory core: observe, build the dossier, dispatch (SPEC §6, §7, mem §13.3).

The orchestration of the pipeline service. Each method checks its request completely first
(:mod:`services.pipeline.validation`), so a refused request changes nothing anywhere; then it
calls the KZG and LZG services with one ``turn_id`` (and the step's ``span_id``) and writes its
pipeline-log records under that ``turn_id``.

Time split: ``model_ms`` is the time spent in the embedding model inside this service (the query,
the KZG embed texts, which are computed here and handed to the KZG so its write stays a pure
store operation, and the answer, handed to the LZG's usage reinforcement); ``memory_ms`` is
everything else the call spent. One call runs one model batch at a time, so no model time is
counted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import grpc
import numpy as np
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.clusters import ClusterTable
from novaberg_core.embedding import EmbeddingProvider, kzg_embed_text, query_embed_text
from novaberg_core.errors import (
    InvalidArgument,
    NotFound,
    NovabergError,
    Unavailable,
)
from novaberg_core.fusion import RECALL_DEPTH
from novaberg_core.peers import call_peer, peer_error
from novaberg_core.pipeline_log import PipelineLog
from novaberg_core.telemetry import set_turn_attributes, tracer
from novaberg_core.timeutil import as_of_or_now, to_timestamp
from services.pipeline import dates, text_rules
from services.pipeline.analyzer import STORE_GATE_RAW, AnalyzedTurn, Analyzer, EntityRegistry
from services.pipeline.dossier import PerspectiveWeights, weigh_hits
from services.pipeline.gravitation import Goal, gravitation_factor, shift_query
from services.pipeline.model_guard import ModelGuard
from services.pipeline.recall import merge_recall, named_entity_ids, query_terms_of
from services.pipeline.store import ClusterStore, Profile
from services.pipeline.text_rules import has_subject
from services.pipeline.validation import (
    check_build_dossier,
    check_dispatch,
    check_observe,
    check_observe_batch,
)

__all__ = ["Timing", "TurnPipeline"]

_T = TypeVar("_T")
_TRACER = tracer(__name__)

NODE_OBSERVE = "observe"
NODE_SALIENCE = "salience"
NODE_ENRICHER = "enricher"
NODE_DISPATCHER = "dispatcher"
NODE_VERWENDUNG = "verwendung"

_ROLE = {common_pb2.BEOBACHTER_USER: "user", common_pb2.BEOBACHTER_ASSISTANT: "assistant"}
WRITE_CHUNK = 64
"""Turns of an ObserveTurns batch embedded and written together: the next chunk is analysed while one is
embedded and written. Large enough for the model to sort its runs by length (little padding)."""
MAX_SERVED = 64
"""Served node ids a dossier hands to Dispatch at most (the request contract's bound)."""



@dataclass(slots=True)
class Timing:
    """Where one call's time went: the embedding model in this service, and everything else."""

    started: float = field(default_factory=time.perf_counter)
    model_ms: float = 0.0
    model_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while this call's batch runs: two steps of one call never overlap in the model's time."""

    def memory_ms(self) -> float:
        return max((time.perf_counter() - self.started) * 1000.0 - self.model_ms, 0.0)


_peer = call_peer


def kzg_entry_text(analysis: pipeline_pb2.TurnAnalysis, sprecher: str) -> str | None:
    """The KZG embed text of a turn (SPEC §2, §11); None below the store gate, where the KZG writes nothing."""
    if analysis.salience.salienz < STORE_GATE_RAW:
        return None
    return kzg_embed_text(list(analysis.salience.themen), analysis.inhalt, sprecher)


def _session_turn(
    beobachter: common_pb2.Beobachter,
    text: str,
    analysis: pipeline_pb2.TurnAnalysis,
    turn: common_pb2.TurnContext,
    as_of: datetime,
) -> kzg_pb2.SessionTurn:
    """A turn as the session keeps it (SPEC §3)."""
    ei = analysis.ei
    return kzg_pb2.SessionTurn(
        role=_ROLE[beobachter], text=text, turn_id=turn.turn_id, created_at=to_timestamp(as_of),
        intention=ei.intentionen[0] if ei.intentionen else "", emotion=ei.emotion, modus=ei.modus,
        arousal=ei.arousal, emotions_vektor=ei.emotions_vektor,
    )  # fmt: skip


class PairNodeCache:
    """Node ids known to belong to a pair, learnt from the dossiers this process served.

    A node never changes its pair and is never hard-deleted (SPEC §5.7, §10), so a node once
    served to a pair belongs to it for good: Dispatch checks only ids it has not seen (another
    replica's dossier, or a caller's guess) against the LZG. Bounded: least recently used pairs
    are forgotten first, and a pair keeps at most ``max_ids`` ids.
    """

    def __init__(self, max_pairs: int = 10_000, max_ids: int = 1_000) -> None:
        self.max_pairs = max_pairs
        self.max_ids = max_ids
        self._ids: OrderedDict[tuple[str, str], set[int]] = OrderedDict()

    def add(self, pair: common_pb2.Pair, node_ids: list[int]) -> None:
        key = (pair.user_id, pair.character_id)
        known = self._ids.pop(key, set())
        if len(known) + len(node_ids) > self.max_ids:
            known = set()
        known.update(node_ids)
        self._ids[key] = known
        while len(self._ids) > self.max_pairs:
            self._ids.popitem(last=False)

    def unknown(self, pair: common_pb2.Pair, node_ids: list[int]) -> list[int]:
        known = self._ids.get((pair.user_id, pair.character_id), set())
        return [node_id for node_id in node_ids if node_id not in known]


class TurnPipeline:
    """Observe, build the dossier, dispatch — the three steps of a turn (SPEC §7)."""

    def __init__(
        self,
        *,
        kzg: kzg_pb2_grpc.KzgServiceStub,
        lzg: lzg_pb2_grpc.LzgServiceStub,
        clusters: ClusterStore,
        cluster_table: ClusterTable,
        analyzer: Analyzer,
        provider: EmbeddingProvider,
        log: PipelineLog,
        weights: PerspectiveWeights | None = None,
        kzg_top_k: int = 10,
        recall_k: int = 10,
        registry: EntityRegistry | None = None,
        peer_timeout_s: float = 10.0,
    ) -> None:
        self.kzg = kzg
        self.lzg = lzg
        self.clusters = clusters
        self.cluster_table = cluster_table
        self.analyzer = analyzer
        self.provider = provider
        self.log = log
        self.weights = weights or PerspectiveWeights()
        self.kzg_top_k = kzg_top_k
        self.recall_k = recall_k
        self.registry = registry
        """Resolves the names a question mentions (SPEC §11: entity candidates); None → no entity source."""
        self.timeout = peer_timeout_s
        self.known_nodes = PairNodeCache()
        request = common_pb2.GetModelRequest()
        self.models = ModelGuard(provider.stamp, {
            "KZG service": lambda: _peer("KZG", "GetModel", self.kzg.GetModel(request, timeout=self.timeout, wait_for_ready=True)),
            "LZG service": lambda: _peer("LZG", "GetModel", self.lzg.GetModel(request, timeout=self.timeout, wait_for_ready=True)),
        })  # fmt: skip

    # ------------------------------------------------------------------ helpers

    async def _embed_texts(self, texts: list[str], timing: Timing) -> np.ndarray:
        """One batch through the model, counted as model time."""
        async with timing.model_turn:
            started = time.perf_counter()
            with _TRACER.start_as_current_span("pipeline.embed") as span:
                span.set_attribute("novaberg.texts", len(texts))
                vectors = await self.provider.embed(texts)
            timing.model_ms += (time.perf_counter() - started) * 1000.0
        return vectors

    async def _embed(self, text: str, timing: Timing) -> np.ndarray:
        return (await self._embed_texts([text], timing))[0]

    async def _check_magnets(self, pair: common_pb2.Pair, magnets: common_pb2.Magnets, field: str) -> None:
        """A caller's magnet ids must be entities / a timeline ref of this very pair (SPEC §10)."""
        ids = list(magnets.entitaet_ids)
        if len(set(ids)) != len(ids):
            raise InvalidArgument(f"{field}.magnets.entitaet_ids must name each id at most once, got {ids}")
        if ids:
            listed = await _peer(
                "LZG", "ListEntities",
                self.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=pair, ids=ids), timeout=self.timeout, wait_for_ready=True),
            )  # fmt: skip
            missing = sorted(set(ids) - {e.id for e in listed.entities})
            if missing:
                raise InvalidArgument(f"{field}.magnets.entitaet_ids {missing} are not entities of this pair")
        if magnets.HasField("timeline_id"):
            timelines = await _peer(
                "LZG", "ListTimelines",
                self.lzg.ListTimelines(
                    lzg_pb2.ListTimelinesRequest(pair=pair, ids=[magnets.timeline_id]), timeout=self.timeout,
                    wait_for_ready=True,
                ),
            )  # fmt: skip
            if magnets.timeline_id not in {t.id for t in timelines.timelines}:
                raise InvalidArgument(
                    f"{field}.magnets.timeline_id {magnets.timeline_id} is not a timeline ref of this pair"
                )

    async def _check_served(self, pair: common_pb2.Pair, served: list[int]) -> None:
        """Served node ids must be nodes of this very pair; checked in one call before Dispatch writes anything."""
        node_ids = self.known_nodes.unknown(pair, served)
        if not node_ids:
            return
        checked = await _peer("LZG", "CheckNodes", self.lzg.CheckNodes(
            lzg_pb2.CheckNodesRequest(pair=pair, node_ids=node_ids), timeout=self.timeout, wait_for_ready=True))  # fmt: skip
        if checked.missing:
            raise NotFound(f"served_node_ids {list(checked.missing)} are not nodes of this pair")
        self.known_nodes.add(pair, node_ids)

    async def _analyze(
        self,
        text: str,
        pair: common_pb2.Pair,
        beobachter: common_pb2.Beobachter,
        as_of: datetime,
        turn: common_pb2.TurnContext,
    ) -> AnalyzedTurn:
        with _TRACER.start_as_current_span("pipeline.analyze") as span:
            set_turn_attributes(span, turn.turn_id, pair.user_id, pair.character_id)
            span.set_attribute("novaberg.analyzer", self.analyzer.name)
            try:
                result = await self.analyzer.analyze(text, pair, beobachter, as_of)
            except grpc.aio.AioRpcError as error:  # the registry (LZG) refused or failed
                mapped = peer_error(f"analyzer {self.analyzer.name}: LZG registry", "ResolveEntities", error)
                self.log.error(
                    turn_id=turn.turn_id, node=NODE_SALIENCE, typ=type(error).__name__, message=str(error.details()),
                    span_id=turn.span_id, user_id=pair.user_id, character_id=pair.character_id, erstellt_am=as_of,
                )  # fmt: skip
                raise (mapped or Unavailable(f"analyzer {self.analyzer.name}: LZG registry: {error.details()}")) from error
            except NovabergError as error:
                self.log.error(
                    turn_id=turn.turn_id, node=NODE_SALIENCE, typ=type(error).__name__, message=str(error),
                    span_id=turn.span_id, user_id=pair.user_id, character_id=pair.character_id, erstellt_am=as_of,
                )  # fmt: skip
                raise
        if not result.analysis.inhalt:
            result.analysis.inhalt = text
        self.log.write(
            turn_id=turn.turn_id, node=NODE_SALIENCE, art="berechnung", span_id=turn.span_id,
            inhalt={
                "analyzer": result.herkunft,
                "beobachter": _ROLE[beobachter],
                "analyse": MessageToDict(result.analysis, preserving_proto_field_name=True),
                **result.details,
            },
            user_id=pair.user_id, character_id=pair.character_id, erstellt_am=as_of,
        )  # fmt: skip
        tokens_in = result.details.get("input_tokens")
        if isinstance(tokens_in, int) and tokens_in > 0:
            self.log.token(
                turn_id=turn.turn_id, node=NODE_SALIENCE, modell=str(result.details.get("modell", "")),
                input_tokens=tokens_in, output_tokens=int(result.details.get("output_tokens", 0)), kosten_usd=0.0,
                span_id=turn.span_id, user_id=pair.user_id, character_id=pair.character_id, erstellt_am=as_of,
            )  # fmt: skip
        return result

    async def _write_turn(
        self,
        pair: common_pb2.Pair,
        beobachter: common_pb2.Beobachter,
        text: str,
        analysis: pipeline_pb2.TurnAnalysis,
        turn: common_pb2.TurnContext,
        as_of: datetime,
        writer: str,
        timing: Timing,
        profile: Profile,
        vector: Awaitable[np.ndarray | None] | None = None,
    ) -> tuple[kzg_pb2.AppendSessionTurnResponse, kzg_pb2.StoreEntryResponse]:
        """Session append and KZG write of one turn (SPEC §3, §4), the KZG embed text computed here.

        ``vector``: the embedding of :func:`kzg_entry_text` when the caller computes it (awaited only
        by the KZG write, so the session append does not wait for the model).
        """
        session_turn = _session_turn(beobachter, text, analysis, turn, as_of)

        async def store() -> kzg_pb2.StoreEntryResponse:
            embedding: list[float] = []
            given = await vector if vector is not None else None
            text_to_embed = kzg_entry_text(analysis, profile.speaker(beobachter))
            if text_to_embed is not None and given is not None:
                embedding = given.tolist()
            elif text_to_embed is not None and vector is None:
                embedding = (await self._embed(text_to_embed, timing)).tolist()
            # else: the caller's batch could not embed it (the model failed): the KZG embeds the same text.
            request = self._store_request(pair, beobachter, analysis, turn, as_of, writer, profile, embedding)
            return await _peer("KZG", "StoreEntry", self.kzg.StoreEntry(request, timeout=self.timeout, wait_for_ready=True))

        # The session append runs while the model embeds the entry.
        appended, stored = await asyncio.gather(
            _peer(
                "KZG", "AppendSessionTurn",
                self.kzg.AppendSessionTurn(
                    kzg_pb2.AppendSessionTurnRequest(pair=pair, turn=session_turn, as_of=to_timestamp(as_of)),
                    timeout=self.timeout, wait_for_ready=True,
                ),
            ),
            store(),
        )  # fmt: skip
        self._log_written(pair, beobachter, turn, as_of, writer, appended, stored)
        return appended, stored

    def _store_request(
        self,
        pair: common_pb2.Pair,
        beobachter: common_pb2.Beobachter,
        analysis: pipeline_pb2.TurnAnalysis,
        turn: common_pb2.TurnContext,
        as_of: datetime,
        writer: str,
        profile: Profile,
        embedding: list[float],
    ) -> kzg_pb2.StoreEntryRequest:
        """The KZG write of one turn; an empty ``embedding`` leaves the embedding to the KZG."""
        return kzg_pb2.StoreEntryRequest(
            pair=pair, beobachter=beobachter, inhalt=analysis.inhalt, salience=analysis.salience, ei=analysis.ei,
            magnets=analysis.magnets, turn=turn, embedding=embedding, as_of=to_timestamp(as_of), writer=writer,
            sprecher=profile.speaker(beobachter), sprache=profile.sprache,
            embedding_model_id=self.provider.model_id if embedding else "",
        )  # fmt: skip

    def _log_written(
        self,
        pair: common_pb2.Pair,
        beobachter: common_pb2.Beobachter,
        turn: common_pb2.TurnContext,
        as_of: datetime,
        writer: str,
        appended: kzg_pb2.AppendSessionTurnResponse,
        stored: kzg_pb2.StoreEntryResponse,
    ) -> None:
        """The pipeline's record of one turn's session append and KZG write."""
        self.log.db_write(
            turn_id=turn.turn_id, node=writer.split(".")[-1], tabelle="kzg", operation="store_entry",
            beobachter=_ROLE[beobachter], ergebnis=kzg_pb2.StoreOutcome.Name(stored.outcome),
            kzg_key=stored.kzg_key, stufe=kzg_pb2.Tier.Name(stored.tier), salienz=stored.salienz,
            ttl=stored.ttl_seconds, promotion_queue=stored.queued_for_promotion,
            kanon_verworfen=list(stored.canon_rejections), session_laenge=appended.turn_count,
            span_id=turn.span_id, user_id=pair.user_id, character_id=pair.character_id, erstellt_am=as_of,
        )  # fmt: skip

    # ------------------------------------------------------------------ observe

    async def observe(self, request: pipeline_pb2.ObserveTurnRequest) -> tuple[pipeline_pb2.ObserveTurnResponse, Timing]:
        """Session append, KZG write with the turn's ``beobachter`` and salience result (SPEC §7)."""
        timing = Timing()
        check_observe(request)
        await self.models.check()
        pair = request.pair
        as_of = as_of_or_now(request.as_of if request.HasField("as_of") else None)
        set_turn_attributes(trace.get_current_span(), request.turn_id, pair.user_id, pair.character_id)
        if request.HasField("analysis"):
            await self._check_magnets(pair, request.analysis.magnets, "analysis")
        profile = await self.clusters.profile(pair)
        if request.HasField("profile"):
            updated = profile.merged(request.profile)
            if updated != profile:
                await self.clusters.put_profile(pair, updated)
            profile = updated
        quelle = pair.user_id if request.beobachter == common_pb2.BEOBACHTER_USER else pair.character_id
        pair_kwargs: dict[str, Any] = {"user_id": pair.user_id, "character_id": pair.character_id}
        async with self.log.span(turn_id=request.turn_id, node=NODE_OBSERVE, erstellt_am=as_of, **pair_kwargs) as span_id:
            turn = common_pb2.TurnContext(turn_id=request.turn_id, span_id=span_id)
            self.log.write(
                turn_id=request.turn_id, node=NODE_OBSERVE, art="eingang", quelle=quelle, span_id=span_id,
                inhalt={"text": request.text, "beobachter": _ROLE[request.beobachter], "as_of": as_of.isoformat()},
                erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            if request.HasField("analysis"):
                analysis = pipeline_pb2.TurnAnalysis()
                analysis.CopyFrom(request.analysis)
                if not analysis.inhalt:
                    analysis.inhalt = request.text
                by_service = False
            else:
                analysis = (await self._analyze(request.text, pair, request.beobachter, as_of, turn)).analysis
                by_service = True
            appended, stored = await self._write_turn(
                pair, request.beobachter, request.text, analysis, turn, as_of, "pipeline.observe", timing, profile
            )
        response = pipeline_pb2.ObserveTurnResponse(
            kzg=stored, analysis=analysis, analyzed_by_service=by_service, session_turn_count=appended.turn_count
        )
        return response, timing

    async def observe_batch(
        self, request: pipeline_pb2.ObserveTurnsRequest
    ) -> tuple[pipeline_pb2.ObserveTurnsResponse, Timing]:
        """Many turns of one pair in order, each with the result and log records of :meth:`observe`.

        The batch is checked as a whole before anything is written. Then each turn is analysed in
        order (a turn may name someone an earlier turn registered); every WRITE_CHUNK turns go
        through the model in one run and to the KZG in one call each for the session appends and the
        entries, which the KZG applies in order (SPEC §3, §4.4), one chunk strictly after the other —
        so the stored result is the one ObserveTurn gives turn after turn. A failed chunk stops the
        batch: the chunks before it are written, the analysis goes no further than the chunk at hand.
        """
        timing = Timing()
        check_observe_batch(request)
        await self.models.check()
        pair = request.pair
        turns = list(request.turns)
        for index, observed in enumerate(turns):
            if observed.HasField("analysis"):
                await self._check_magnets(pair, observed.analysis.magnets, f"turns[{index}].analysis")
        as_ofs = [as_of_or_now(t.as_of if t.HasField("as_of") else None) for t in turns]
        set_turn_attributes(trace.get_current_span(), turns[0].turn_id, pair.user_id, pair.character_id)
        trace.get_current_span().set_attribute("novaberg.turns", len(turns))
        profile = await self.clusters.profile(pair)
        if request.HasField("profile"):
            updated = profile.merged(request.profile)
            if updated != profile:
                await self.clusters.put_profile(pair, updated)
            profile = updated
        pair_kwargs: dict[str, Any] = {"user_id": pair.user_id, "character_id": pair.character_id}
        results: list[pipeline_pb2.ObserveTurnResponse] = []
        async with contextlib.AsyncExitStack() as spans:
            contexts: list[common_pb2.TurnContext] = []
            analyses: list[pipeline_pb2.TurnAnalysis] = []
            # Each chunk's turns are written as soon as they are analysed and embedded, while the
            # next chunk is analysed; the writes run strictly one chunk after the other.
            writes: list[asyncio.Future[list[tuple[kzg_pb2.AppendSessionTurnResponse, kzg_pb2.StoreEntryResponse]]]] = []
            try:
                for start in range(0, len(turns), WRITE_CHUNK):
                    if writes and writes[-1].done():
                        await writes[-1]  # a failed write ends the batch before more names are registered
                    chunk = slice(start, start + WRITE_CHUNK)
                    for observed, as_of in zip(turns[chunk], as_ofs[chunk], strict=True):
                        span_id = await spans.enter_async_context(
                            self.log.span(turn_id=observed.turn_id, node=NODE_OBSERVE, erstellt_am=as_of, **pair_kwargs)
                        )
                        turn = common_pb2.TurnContext(turn_id=observed.turn_id, span_id=span_id)
                        quelle = pair.user_id if observed.beobachter == common_pb2.BEOBACHTER_USER else pair.character_id
                        self.log.write(
                            turn_id=observed.turn_id, node=NODE_OBSERVE, art="eingang", quelle=quelle, span_id=span_id,
                            inhalt={"text": observed.text, "beobachter": _ROLE[observed.beobachter],
                                    "as_of": as_of.isoformat()},
                            erstellt_am=as_of, **pair_kwargs,
                        )  # fmt: skip
                        if observed.HasField("analysis"):
                            analysis = pipeline_pb2.TurnAnalysis()
                            analysis.CopyFrom(observed.analysis)
                            if not analysis.inhalt:
                                analysis.inhalt = observed.text
                        else:
                            analysis = (await self._analyze(observed.text, pair, observed.beobachter, as_of, turn)).analysis
                        contexts.append(turn)
                        analyses.append(analysis)
                    writes.append(asyncio.ensure_future(self._write_turns(
                        pair, turns[chunk], analyses[chunk], contexts[chunk], as_ofs[chunk], timing, profile,
                        after=writes[-1] if writes else None,
                    )))  # fmt: skip
                written = [one for write in writes for one in await write]
            except BaseException:
                # The chunks handed over before the failure are earlier turns, complete in themselves: they
                # finish (or fail) before the error is answered, as ObserveTurn calls sent before it would.
                await asyncio.gather(*writes, return_exceptions=True)
                raise
            for observed, analysis, (appended, stored) in zip(turns, analyses, written, strict=True):
                results.append(pipeline_pb2.ObserveTurnResponse(
                    kzg=stored, analysis=analysis, analyzed_by_service=not observed.HasField("analysis"),
                    session_turn_count=appended.turn_count,
                ))  # fmt: skip
        return pipeline_pb2.ObserveTurnsResponse(results=results), timing

    async def _write_turns(
        self,
        pair: common_pb2.Pair,
        turns: list[pipeline_pb2.ObservedTurn],
        analyses: list[pipeline_pb2.TurnAnalysis],
        contexts: list[common_pb2.TurnContext],
        as_ofs: list[datetime],
        timing: Timing,
        profile: Profile,
        after: Awaitable[object] | None = None,
    ) -> list[tuple[kzg_pb2.AppendSessionTurnResponse, kzg_pb2.StoreEntryResponse]]:
        """:meth:`_write_turn` for a chunk of turns: one model batch, one KZG call for the appends, one
        for the entries — sent once ``after`` (the previous chunk's write) has succeeded."""
        writer = "pipeline.observe"
        # A batch takes the KZG longer than one turn: the deadline grows with it.
        timeout = self.timeout * (1.0 + len(turns) / 16)
        appends = kzg_pb2.AppendSessionTurnsRequest(appends=[
            kzg_pb2.AppendSessionTurnRequest(
                pair=pair, turn=_session_turn(t.beobachter, t.text, a, c, as_of), as_of=to_timestamp(as_of)
            )
            for t, a, c, as_of in zip(turns, analyses, contexts, as_ofs, strict=True)
        ])  # fmt: skip

        texts = [kzg_entry_text(a, profile.speaker(t.beobachter)) for t, a in zip(turns, analyses, strict=True)]
        wanted = [index for index, text in enumerate(texts) if text is not None]
        embeddings: list[list[float]] = [[] for _ in turns]
        if wanted:  # while the previous chunk is written
            vectors = await self._embed_texts([texts[index] or "" for index in wanted], timing)
            for index, vector in zip(wanted, vectors, strict=True):
                embeddings[index] = vector.tolist()
        entries = kzg_pb2.StoreEntriesRequest(entries=[
            self._store_request(pair, t.beobachter, a, c, as_of, writer, profile, embedding)
            for t, a, c, as_of, embedding in zip(turns, analyses, contexts, as_ofs, embeddings, strict=True)
        ])  # fmt: skip
        if after is not None:
            await after
        appended, stored = await asyncio.gather(
            _peer("KZG", "AppendSessionTurns", self.kzg.AppendSessionTurns(appends, timeout=timeout, wait_for_ready=True)),
            _peer("KZG", "StoreEntries", self.kzg.StoreEntries(entries, timeout=timeout, wait_for_ready=True)),
        )  # fmt: skip
        written = list(zip(appended.results, stored.results, strict=True))
        for t, c, as_of, (one_appended, one_stored) in zip(turns, contexts, as_ofs, written, strict=True):
            self._log_written(pair, t.beobachter, c, as_of, writer, one_appended, one_stored)
        return written

    # ------------------------------------------------------------------ dossier

    async def build_dossier(
        self, request: pipeline_pb2.BuildDossierRequest
    ) -> tuple[pipeline_pb2.BuildDossierResponse, Timing]:
        """Shift once, KZG retrieval (weighted) and LZG spreading read in parallel, memory blocks (SPEC §7)."""
        timing = Timing()
        readers = check_build_dossier(request, self.provider.dimension)
        await self.models.check()
        pair = request.pair
        pair_kwargs: dict[str, Any] = {"user_id": pair.user_id, "character_id": pair.character_id}
        set_turn_attributes(trace.get_current_span(), request.turn_id, pair.user_id, pair.character_id)
        as_of = as_of_or_now(request.as_of if request.HasField("as_of") else None)
        recall_k = request.recall_k or self.recall_k
        # The previous-turn cluster and the profile (Redis) and the names the question mentions (the
        # LZG registry, mostly remembered) are read while the model embeds the query.
        (stored, profile), query, mentioned = await asyncio.gather(
            self.clusters.get_with_profile(pair),
            self._embed(query_embed_text(request.query_text), timing),
            self._mentioned_entities(pair, request.query_text),
        )
        question_entities = named_entity_ids(mentioned, (profile.user_name, profile.character_name))
        # A question without a subject (no content word, no name: "And then what happened?") searches by
        # meaning alone — the seeds' rule that anaphoric questions get no anchors (SPEC §11).
        lexical_text = request.query_text if has_subject(request.query_text) else ""
        dated = dates.find_dated_mention(request.query_text, as_of)
        zeitfenster = (
            [lzg_pb2.Zeitfenster(zeitpunkt=to_timestamp(dated.zeitpunkt), praezision=dated.praezision)] if dated else []
        )
        cluster = stored.cluster if stored is not None else self.cluster_table.default_cluster
        decision = gravitation_factor(
            cluster, list(request.intentionen), self.cluster_table.gravitation_faktor_by_cluster
        )
        async with self.log.span(turn_id=request.turn_id, node=NODE_ENRICHER, erstellt_am=as_of, **pair_kwargs) as span_id:
            turn = common_pb2.TurnContext(turn_id=request.turn_id, span_id=span_id)
            self.log.write(
                turn_id=request.turn_id, node=NODE_ENRICHER, art="eingang", quelle=pair.user_id, span_id=span_id,
                inhalt={"query_text": request.query_text, "intentionen": list(request.intentionen),
                        "ziele": len(request.goals), "nova_emotion": request.nova_emotion, "leser": readers},
                erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            self.log.decision(
                turn_id=request.turn_id, node=NODE_ENRICHER, entscheidung="enricher.gravitation",
                ausgang=decision.faktor,
                eingang={"cluster": cluster, "cluster_gespeichert": stored is not None,
                         "anweisung": decision.override, "ziele": len(request.goals)},
                massstab={"cluster_faktor": decision.cluster_faktor, "anweisung_faktor": 0.0},
                span_id=span_id, erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            goals = [Goal(np.asarray(g.embedding, dtype=np.float32), g.aktivierungs_staerke) for g in request.goals]
            with _TRACER.start_as_current_span("pipeline.gravitation"):
                search = shift_query(query, goals, decision.faktor)
            search_values = search.tolist()
            # KZG retrieval runs while the LZG reads and renders the blocks in the same call (SPEC §7:
            # both with the shifted vector).
            retrieved, spread = await asyncio.gather(
                _peer("KZG", "Retrieve", self.kzg.Retrieve(
                    kzg_pb2.RetrieveRequest(
                        pair=pair, query_vector=kzg_pb2.QueryVector(values=search_values, model_id=self.provider.model_id),
                        top_k=max(self.kzg_top_k, recall_k, RECALL_DEPTH), turn=turn, as_of=to_timestamp(as_of),
                        lexical_text=lexical_text, sprache=profile.sprache,
                        question_entity_ids=question_entities,
                    ),
                    timeout=self.timeout, wait_for_ready=True,
                )),
                _peer("LZG", "SpreadingRead", self.lzg.SpreadingRead(
                    lzg_pb2.SpreadingReadRequest(
                        pair=pair, query_vector=lzg_pb2.QueryVector(values=search_values, model_id=self.provider.model_id),
                        cluster=cluster,
                        nova_emotion=request.nova_emotion, turn=turn, readers=readers,
                        user_name=request.user_name or profile.user_name,
                        character_name=request.character_name or profile.character_name,
                        as_of=to_timestamp(as_of), lexical_text=lexical_text, sprache=profile.sprache,
                        question_entity_ids=question_entities, zeitfenster=zeitfenster,
                        recall_k=max(recall_k, RECALL_DEPTH),
                    ),
                    timeout=self.timeout, wait_for_ready=True,
                )),
            )  # fmt: skip
            resonanz = spread.lzg_resonanz
            missing_blocks = [reader for reader in readers if reader not in spread.memory_blocks]
            if missing_blocks:
                raise Unavailable(
                    f"LZG SpreadingRead rendered no memory block for {missing_blocks}; it predates the readers field"
                )
            # The seeds' KZG hits (SPEC §4.5, §7): the kzg_top_k found by meaning above the threshold; the
            # other sources and the deeper candidates serve the recall list only.
            dense_hits = [h for h in retrieved.hits if "dense" in h.quellen][: self.kzg_top_k]
            order = weigh_hits([(h.entry.beobachter, h.similarity) for h in dense_hits], self.weights)
            kzg_hits = [
                pipeline_pb2.WeightedKzgHit(hit=dense_hits[w.index], weight=w.weight, score=w.score) for w in order
            ]
            recall = merge_recall(
                retrieved.hits, spread.recall, query_terms_of(spread), profile.sprache, recall_k,
                (profile.user_name, profile.character_name),
            )  # fmt: skip
            served = list(dict.fromkeys(
                [e.knoten_id for e in resonanz.erinnerungen] + [r.knoten_id for r in recall if r.knoten_id]
            ))[:MAX_SERVED]  # fmt: skip
            self.known_nodes.add(pair, served)
            self.log.db_read(
                turn_id=request.turn_id, node=NODE_ENRICHER, tabelle="kzg", treffer=len(kzg_hits),
                schwelle=retrieved.threshold, unter_schwelle=retrieved.dropped_below_threshold,
                kzg_keys=[h.hit.entry.kzg_key for h in kzg_hits], span_id=span_id, erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            self.log.db_read(
                turn_id=request.turn_id, node=NODE_ENRICHER, tabelle="lzg_knoten", treffer=len(served),
                pool=spread.pool_size, anker=resonanz.anker_anzahl, sprung_tiefe=resonanz.sprung_tiefe,
                span_id=span_id, erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            self.log.write(
                turn_id=request.turn_id, node=NODE_ENRICHER, art="ausgabe", span_id=span_id,
                inhalt={"lzg_resonanz_ids": served, "kzg_keys": [h.hit.entry.kzg_key for h in kzg_hits],
                        "cluster": cluster, "gravitation_faktor": decision.faktor},
                erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
        response = pipeline_pb2.BuildDossierResponse(
            cluster=cluster,
            gravitation_faktor=decision.faktor,
            kzg_hits=kzg_hits,
            lzg_resonanz=resonanz,
            memory_blocks={reader: spread.memory_blocks[reader] for reader in readers},
            served_node_ids=served,
            model_ms=timing.model_ms,
            recall=recall,
        )
        if request.include_vectors:
            response.query_vector.extend(query.tolist())
            response.search_vector.extend(search_values)
        response.memory_ms = timing.memory_ms()
        return response, timing

    async def _mentioned_entities(self, pair: common_pb2.Pair, text: str) -> dict[str, int]:
        """Registry ids of the names ``text`` mentions (0 = not an entity of the pair); nothing is created."""
        if self.registry is None:
            return {}
        names = list(text_rules.find_mentions(text).mentions)
        if not names:
            return {}
        try:
            ids = await self.registry.resolve_entities(pair, names, create_missing=False)
        except grpc.aio.AioRpcError as error:
            raise (peer_error("LZG", "ResolveEntities", error) or error) from error
        return dict(zip(names, ids, strict=True))

    # ------------------------------------------------------------------ dispatch

    async def dispatch(self, request: pipeline_pb2.DispatchRequest) -> tuple[pipeline_pb2.DispatchResponse, Timing]:
        """Usage reinforcement, the character's own KZG entry, this turn's cluster, ``turn_roh`` (SPEC §7)."""
        timing = Timing()
        cluster = check_dispatch(request, self.cluster_table)
        await self.models.check()
        pair = request.pair
        pair_kwargs: dict[str, Any] = {"user_id": pair.user_id, "character_id": pair.character_id}
        set_turn_attributes(trace.get_current_span(), request.turn_id, pair.user_id, pair.character_id)
        as_of = as_of_or_now(request.as_of if request.HasField("as_of") else None)
        if request.HasField("answer_analysis"):
            await self._check_magnets(pair, request.answer_analysis.magnets, "answer_analysis")
        served = list(dict.fromkeys(request.served_node_ids))
        await self._check_served(pair, served)
        profile = await self.clusters.profile(pair)
        assistant = common_pb2.BEOBACHTER_ASSISTANT
        async with self.log.span(turn_id=request.turn_id, node=NODE_DISPATCHER, erstellt_am=as_of, **pair_kwargs) as span_id:
            turn = common_pb2.TurnContext(turn_id=request.turn_id, span_id=span_id)
            self.log.write(
                turn_id=request.turn_id, node=NODE_DISPATCHER, art="eingang", span_id=span_id,
                inhalt={"cluster": cluster, "lzg_resonanz_ids": served, "user_prompt": request.user_prompt},
                erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            # The character's answer as its own output (syn §10.4 "last answers" reads these).
            self.log.write(
                turn_id=request.turn_id, node=NODE_DISPATCHER, art="ausgabe", quelle=pair.character_id,
                span_id=span_id, inhalt={"text": request.answer_text}, erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip

            async def analyse_answer() -> pipeline_pb2.TurnAnalysis:
                if request.HasField("answer_analysis"):
                    analysis = pipeline_pb2.TurnAnalysis()
                    analysis.CopyFrom(request.answer_analysis)
                    if not analysis.inhalt:
                        analysis.inhalt = request.answer_text
                    return analysis
                return (await self._analyze(request.answer_text, pair, assistant, as_of, turn)).analysis

            async def embed_answer() -> tuple[np.ndarray | None, np.ndarray | None]:
                """One model batch: the answer (for the usage reinforcement, when a served node can be
                compared with it) and the character's KZG entry text (when the entry passes the gate)."""
                texts = [query_embed_text(request.answer_text)] if served else []
                entry_text = kzg_entry_text(await analysed, profile.character_name)
                if entry_text is not None:
                    texts.append(entry_text)
                if not texts:
                    return None, None
                try:
                    vectors = await self._embed_texts(texts, timing)
                except NovabergError as error:
                    # The model is down: the LZG records the usage outcome (embedding itself, or
                    # `embed_fehler`), the KZG embeds the entry itself; the turn is recorded either way.
                    failed.append(f"embedding model: {error}")
                    return None, None
                return (vectors[0] if served else None), (vectors[-1] if entry_text is not None else None)

            failed: list[str] = []
            analysed = asyncio.ensure_future(analyse_answer())
            embedded = asyncio.ensure_future(embed_answer())

            async def entry_vector() -> np.ndarray | None:
                return (await embedded)[1]

            async def reinforce() -> lzg_pb2.ReinforceUsedResponse:
                """Usage reinforcement with the answer vector embedded here (SPEC §5.6)."""
                answer, _ = await embedded
                reinforce_request = lzg_pb2.ReinforceUsedRequest(
                    pair=pair, answer_text=request.answer_text, served_node_ids=served, turn=turn,
                    as_of=to_timestamp(as_of),
                )  # fmt: skip
                if answer is not None:
                    reinforce_request.answer_vector.values.extend(answer.tolist())
                    reinforce_request.answer_vector.model_id = self.provider.model_id
                return await _peer(
                    "LZG", "ReinforceUsed",
                    self.lzg.ReinforceUsed(reinforce_request, timeout=self.timeout, wait_for_ready=True),
                )  # fmt: skip

            async def own_entry() -> kzg_pb2.StoreEntryResponse:
                """The character's own session turn (sent once analysed) and KZG entry (beobachter = assistant)."""
                _, stored = await self._write_turn(
                    pair, assistant, request.answer_text, await analysed, turn, as_of, "pipeline.dispatcher", timing,
                    profile, entry_vector(),
                )  # fmt: skip
                return stored

            async def persist_cluster() -> None:
                previous = await self.clusters.put(pair, cluster, turn_id=request.turn_id, as_of=as_of)
                self.log.decision(
                    turn_id=request.turn_id, node=NODE_DISPATCHER, entscheidung=f"{NODE_DISPATCHER}.cluster",
                    ausgang=cluster, eingang={"vorher": previous.cluster if previous else None},
                    massstab={"tabelle": list(self.cluster_table.known)},
                    span_id=span_id, erstellt_am=as_of, **pair_kwargs,
                )  # fmt: skip
                self.log.db_write(
                    turn_id=request.turn_id, node=NODE_DISPATCHER, tabelle="pipeline:cluster", operation="set",
                    cluster=cluster, span_id=span_id, erstellt_am=as_of, **pair_kwargs,
                )  # fmt: skip

            # The three writes are independent of each other; the request was checked in full above.
            # Whatever fails of them, the turn is recorded (SPEC §5.6, §7, §8): its usage record,
            # `turn_roh`, and a `fehler` record per failed part, named in the response.
            outcomes = await asyncio.gather(reinforce(), own_entry(), persist_cluster(), return_exceptions=True)
            for part, outcome in zip(("usage reinforcement", "own KZG entry", "cluster"), outcomes, strict=True):
                if isinstance(outcome, NovabergError | grpc.aio.AioRpcError):
                    failed.append(f"{part}: {outcome}")
                    self.log.error(
                        turn_id=request.turn_id, node=NODE_DISPATCHER, typ=type(outcome).__name__,
                        message=f"{part}: {outcome}", span_id=span_id, erstellt_am=as_of, **pair_kwargs,
                    )  # fmt: skip
                elif isinstance(outcome, BaseException):
                    unexpected = outcome
                    break
            else:
                unexpected = None
            reinforced, stored = outcomes[0], outcomes[1]
            protokoll = reinforced.protokoll if isinstance(reinforced, lzg_pb2.ReinforceUsedResponse) else (
                lzg_pb2.VerwendungsProtokoll(ausgang=lzg_pb2.VERWENDUNG_AUSGANG_DB_FEHLER, error=failed[-1])
            )  # fmt: skip
            self.log.write(
                turn_id=request.turn_id, node=NODE_VERWENDUNG, art="berechnung", span_id=span_id,
                inhalt=MessageToDict(protokoll, preserving_proto_field_name=True, always_print_fields_with_no_presence=True),
                erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
            self.log.turn_roh(
                turn_id=request.turn_id, node=NODE_DISPATCHER,
                inhalt={
                    "user_prompt": request.user_prompt,
                    "response": request.answer_text,
                    "user_emotion": json.loads(request.user_emotion_json) if request.user_emotion_json else None,
                    "nova_emotion": json.loads(request.nova_emotion_json) if request.nova_emotion_json else None,
                    "herkunft": "pipeline.dispatch",
                },
                span_id=span_id, erstellt_am=as_of, **pair_kwargs,
            )  # fmt: skip
        if unexpected is not None:
            raise unexpected
        response = pipeline_pb2.DispatchResponse(
            protokoll=protokoll, kzg=stored if isinstance(stored, kzg_pb2.StoreEntryResponse) else None,
            cluster_persisted="" if isinstance(outcomes[2], BaseException) else cluster, fehler=failed,
        )
        return response, timing
