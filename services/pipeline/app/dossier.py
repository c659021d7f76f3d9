"""BuildDossier: what the memory holds for the question, for the answer to come (SPEC §6, §7, §11).

The steps: check the whole request and the models; read the previous turn's cluster and the pair's
profile, embed the question and resolve the names it mentions, all at once; shift the query by
gravitation (SPEC §6); then ask the KZG (``Retrieve``) and the LZG (``SpreadingRead``, which also
renders the memory blocks) at once with the shifted vector; weigh the KZG hits by perspective,
merge both into the recall list, remember the served node ids for Dispatch, and log what it chose (the
reads themselves are logged by the KZG and the LZG, where they happen).
The dossier is on the answer's critical path: one round trip per peer, no copy of a vector more
than the protos need.
"""

from __future__ import annotations

import asyncio

import numpy as np

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.embedding import query_embed_text
from novaberg_core.errors import Unavailable
from novaberg_core.fusion import RECALL_DEPTH
from novaberg_core.timeutil import to_timestamp
from services.pipeline.app.context import TRACER, PipelineContext, Timing, turn_time
from services.pipeline.dates import find_dated_mention
from services.pipeline.deadline import DOING_WITHOUT, answer_or_none
from services.pipeline.dossier import weigh_hits
from services.pipeline.gravitation import Goal, gravitation_factor, shift_query
from services.pipeline.recall import merge_recall, named_entity_ids, query_terms_of
from services.pipeline.records import NODE_ENRICHER, step_records
from services.pipeline.text_rules import find_mentions, has_subject
from services.pipeline.validation import check_build_dossier

__all__ = ["MAX_SERVED", "Dossier"]

MAX_SERVED = 64
"""Served node ids a dossier hands to Dispatch at most (the request contract's bound)."""


class Dossier:
    """SPEC §7 "build the dossier" over the shared context."""

    def __init__(self, ctx: PipelineContext) -> None:
        self.ctx = ctx

    async def build_dossier(
        self, request: pipeline_pb2.BuildDossierRequest
    ) -> tuple[pipeline_pb2.BuildDossierResponse, Timing]:
        """Shift once, KZG retrieval (weighted) and LZG spreading read in parallel, memory blocks (SPEC §7).

        A layer that is out or silent past its share of the call's time left
        (:mod:`services.pipeline.deadline`) is named in ``fehler`` and the dossier built from the other.
        """
        ctx = self.ctx
        timing = Timing()
        missing: list[str] = []
        DOING_WITHOUT.set(missing)  # names the registry cannot resolve now stay unresolved (deadline.py)
        readers = check_build_dossier(request, ctx.provider.dimension)
        pair = request.pair
        await ctx.begin(request.turn_id, pair)
        as_of = turn_time(request)
        recall_k = request.recall_k or ctx.recall_k
        # The previous-turn cluster and the profile (Redis) and the names the question mentions (the
        # LZG registry, mostly remembered) are read while the model embeds the query.
        (stored, profile), query, mentioned = await asyncio.gather(
            ctx.clusters.get_with_profile(pair),
            ctx.embed(query_embed_text(request.query_text), timing),
            self._mentioned_entities(pair, request.query_text),
        )
        names = (request.user_name or profile.user_name, request.character_name or profile.character_name)
        question_entities = named_entity_ids(mentioned, names)
        # A question without a subject (no content word, no name: "And then what happened?") searches by
        # meaning alone — the seeds' rule that anaphoric questions get no anchors (SPEC §11).
        lexical_text = request.query_text if has_subject(request.query_text) else ""
        dated = find_dated_mention(request.query_text, as_of.astimezone(profile.zone))
        zeitfenster = (
            [lzg_pb2.Zeitfenster(zeitpunkt=to_timestamp(dated.zeitpunkt), praezision=dated.praezision)] if dated else []
        )
        kzg_zeitfenster = [common_pb2.Zeitfenster(zeitpunkt=z.zeitpunkt, praezision=z.praezision) for z in zeitfenster]
        cluster = stored.cluster if stored is not None else ctx.cluster_table.default_cluster
        decision = gravitation_factor(
            cluster, list(request.intentionen), ctx.cluster_table.gravitation_faktor_by_cluster
        )
        # The shift is refused (an overflow, goals cancelling the query) before anything is logged.
        goals = [Goal(np.asarray(g.embedding, dtype=np.float32), g.aktivierungs_staerke) for g in request.goals]
        with TRACER.start_as_current_span("pipeline.gravitation"):
            search = shift_query(query, goals, decision.faktor)
        search_values = search.tolist()
        async with step_records(ctx.log, NODE_ENRICHER, request.turn_id, pair, as_of) as records:
            turn = records.turn
            records.received(
                {"query_text": request.query_text, "intentionen": list(request.intentionen),
                 "ziele": len(request.goals), "nova_emotion": request.nova_emotion, "leser": readers,
                 "datum": dated.record() if dated else None},
                quelle=pair.user_id,
            )  # fmt: skip
            records.decided(
                "gravitation", decision.faktor,
                {"cluster": cluster, "cluster_gespeichert": stored is not None, "anweisung": decision.override,
                 "ziele": len(request.goals)},
                {"cluster_faktor": decision.cluster_faktor, "anweisung_faktor": 0.0},
            )  # fmt: skip
            # KZG retrieval runs while the LZG reads and renders the blocks in the same call (SPEC §7:
            # both with the shifted vector).
            answered_kzg, answered_lzg = await asyncio.gather(
                answer_or_none("KZG", "Retrieve", lambda: ctx.kzg.retrieve(kzg_pb2.RetrieveRequest(
                    pair=pair, query_vector=kzg_pb2.QueryVector(values=search_values, model_id=ctx.provider.model_id),
                    top_k=max(ctx.kzg_top_k, recall_k, RECALL_DEPTH), full_entries=ctx.kzg_top_k,
                    turn=turn, as_of=to_timestamp(as_of),
                    lexical_text=lexical_text, sprache=profile.sprache,
                    question_entity_ids=question_entities, zeitfenster=kzg_zeitfenster,
                )), missing, ctx.silent_peers),
                answer_or_none("LZG", "SpreadingRead", lambda: ctx.lzg.spreading_read(lzg_pb2.SpreadingReadRequest(
                    pair=pair, query_vector=lzg_pb2.QueryVector(values=search_values, model_id=ctx.provider.model_id),
                    cluster=cluster,
                    nova_emotion=request.nova_emotion, turn=turn, readers=readers,
                    user_name=names[0], character_name=names[1],
                    as_of=to_timestamp(as_of), lexical_text=lexical_text, sprache=profile.sprache,
                    question_entity_ids=question_entities, zeitfenster=zeitfenster,
                    recall_k=max(recall_k, RECALL_DEPTH),
                )), missing, ctx.silent_peers),
            )  # fmt: skip
            if answered_kzg is None and answered_lzg is None:
                raise Unavailable(f"neither memory layer answered: {'; '.join(missing)}")
            retrieved = answered_kzg or kzg_pb2.RetrieveResponse()
            spread = answered_lzg or lzg_pb2.SpreadingReadResponse(memory_blocks=dict.fromkeys(readers, ""))
            for failure in missing:
                records.failed("ohne_antwort", failure)
            resonanz = spread.lzg_resonanz
            missing_blocks = [reader for reader in readers if reader not in spread.memory_blocks]
            if missing_blocks:
                raise Unavailable(
                    f"LZG SpreadingRead rendered no memory block for {missing_blocks}; it predates the readers field"
                )
            # The seeds' KZG hits (SPEC §4.5, §7): the kzg_top_k found by meaning above the threshold, whole;
            # the other sources and the deeper candidates serve the recall list only and come brief.
            dense_hits = [h for h in retrieved.hits if "dense" in h.quellen and not h.brief][: ctx.kzg_top_k]
            order = weigh_hits([(h.entry.beobachter, h.similarity) for h in dense_hits], ctx.weights)
            kzg_hits = [
                pipeline_pb2.WeightedKzgHit(hit=dense_hits[w.index], weight=w.weight, score=w.score) for w in order
            ]
            recall = merge_recall(
                retrieved.hits, spread.recall, query_terms_of(spread), profile.sprache, recall_k, names,
            )  # fmt: skip
            served = list(dict.fromkeys(
                [e.knoten_id for e in resonanz.erinnerungen] + [r.knoten_id for r in recall if r.knoten_id]
            ))[:MAX_SERVED]  # fmt: skip
            ctx.known_nodes.add(pair, served)
            # The reads themselves are logged where they happen: the KZG's retrieval (node ``kzg``: hits,
            # threshold, sources) and the LZG's spreading read (``enricher`` ``db_read``: anchors, pool,
            # hops); the pipeline logs what it chose from both answers.
            records.answered({
                "lzg_resonanz_ids": served, "kzg_keys": [h.hit.entry.kzg_key for h in kzg_hits], "cluster": cluster,
                "gravitation_faktor": decision.faktor,
            })  # fmt: skip
        response = pipeline_pb2.BuildDossierResponse(
            cluster=cluster,
            gravitation_faktor=decision.faktor,
            kzg_hits=kzg_hits,
            lzg_resonanz=resonanz,
            memory_blocks={reader: spread.memory_blocks[reader] for reader in readers},
            served_node_ids=served,
            model_ms=timing.model_ms,
            recall=recall,
            fehler=missing,
        )
        if request.include_vectors:
            response.query_vector.extend(query.tolist())
            response.search_vector.extend(search_values)
        response.memory_ms = timing.memory_ms()
        return response, timing

    async def _mentioned_entities(self, pair: common_pb2.Pair, text: str) -> dict[str, int]:
        """Registry ids of the names ``text`` mentions (0 = not an entity of the pair); nothing is created."""
        registry = self.ctx.registry
        if registry is None:
            return {}
        names = list(find_mentions(text).mentions)
        if not names:
            return {}
        ids = await registry.resolve_entities(pair, names, create_missing=False)
        return dict(zip(names, ids, strict=True))
