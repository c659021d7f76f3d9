"""Replays a :class:`~novaberg_dev.demo.script.DemoScript` through the running services day by day and
collects a :class:`DemoResult`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import Any

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.maintenance import TASK_DECAY, TASK_PROMOTION
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.clients import DevClients
from novaberg_dev.demo.report import describe_path, format_dossier, format_protokoll, quote, run_counts
from novaberg_dev.demo.script import AnalysisSpec, DemoScript, TurnSpec, load_script, simulated_start

__all__ = ["DemoResult", "DemoRunner", "QuestionOutcome", "TurnOutcome", "run_demo"]

DECAY_TIME = time(3, 30)
"""Time of day of the demo's decay run (Pixie's default ``NOVABERG_PIXIE_DECAY_AT``)."""

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
TIER_NAMES = {
    kzg_pb2.TIER_MINIMUM: "MINIMUM (7 d)",
    kzg_pb2.TIER_MID: "MID (14 d)",
    kzg_pb2.TIER_HIGH: "HIGH (30 d)",
}

Out = Callable[[str], None]




@dataclass
class TurnOutcome:
    """What the services answered for one exchange."""

    when: datetime
    spec: TurnSpec
    turn_id: str
    observed: pipeline_pb2.ObserveTurnResponse
    dossier: pipeline_pb2.BuildDossierResponse
    dispatched: pipeline_pb2.DispatchResponse


@dataclass
class QuestionOutcome(TurnOutcome):
    """A question at the end, with what the dossier showed."""


@dataclass
class DemoResult:
    """Everything the demo did, for printing and for the end-to-end test."""

    pair: common_pb2.Pair
    start: datetime
    turns: list[TurnOutcome] = field(default_factory=list)
    promotion_runs: list[pixie_pb2.Run] = field(default_factory=list)
    decay_run: pixie_pb2.Run | None = None
    nodes_before_decay: list[lzg_pb2.Node] = field(default_factory=list)
    nodes_after_decay: list[lzg_pb2.Node] = field(default_factory=list)
    questions: list[QuestionOutcome] = field(default_factory=list)
    entity_names: dict[int, str] = field(default_factory=dict)

    def promoted_total(self) -> int:
        return sum(run.counts.get("promoted_new", 0) for run in self.promotion_runs)

    def associations(self) -> list[tuple[QuestionOutcome, lzg_pb2.Erinnerung]]:
        """Memories of the questions' dossiers that came by a path (shell ≥ 1)."""
        return [
            (q, e) for q in self.questions for e in q.dossier.lzg_resonanz.erinnerungen if e.schale > 0 and e.pfad
        ]

    def verwendet(self) -> list[int]:
        """Node ids reinforced by usage after the questions' answers."""
        return [node_id for q in self.questions for node_id in q.dispatched.protokoll.verwendet]


# --------------------------------------------------------------------------- the runner


class DemoRunner:
    """Replays a :class:`DemoScript` against running services and prints what happens."""

    def __init__(
        self,
        clients: DevClients,
        script: DemoScript,
        *,
        out: Out = print,
        start: datetime | None = None,
        user_id: str | None = None,
    ) -> None:
        self.clients = clients
        self.script = script
        self.out = out
        self.start = start or simulated_start(script.last_day)
        self.pair = common_pb2.Pair(user_id=user_id or script.user_id, character_id=script.character_id)
        self.entity_ids: dict[str, int] = {}
        self.timeline_ids: dict[str, int] = {}
        self.node_texts: dict[int, str] = {}
        self.entity_names: dict[int, str] = {}

    # ---- helpers

    def moment(self, day: int, at: time) -> datetime:
        return self.start + timedelta(days=day, hours=at.hour, minutes=at.minute)

    def day_label(self, when: datetime) -> str:
        week = (when - self.start).days // 7 + 1
        return f"week {week} · {WEEKDAYS[when.weekday()]} {when:%Y-%m-%d}"

    def label(self, when: datetime) -> str:
        return f"{self.day_label(when)} {when:%H:%M}"

    async def call(self, service: str, rpc: str, request: Any) -> Any:
        return await self.clients.call(service, rpc, request)

    async def _entity_ids(self, names: Sequence[str]) -> list[int]:
        ids: list[int] = []
        for name in names:
            if name not in self.entity_ids:
                resolved = await self.call(
                    "lzg",
                    "ResolveEntities",
                    lzg_pb2.ResolveEntitiesRequest(
                        pair=self.pair, names=[name], create_missing=True,
                        typ_for_new=self.script.entities.get(name, "unbekannt"),
                    ),
                )  # fmt: skip
                self.entity_ids[name] = resolved.entitaet_ids[0]
            if self.entity_ids[name] not in ids:
                ids.append(self.entity_ids[name])
        return ids

    async def _timeline_id(self, key: str) -> int:
        if key not in self.timeline_ids:
            spec = self.script.timelines[key]
            made = await self.call(
                "lzg",
                "UpsertTimeline",
                lzg_pb2.UpsertTimelineRequest(
                    pair=self.pair,
                    timeline=lzg_pb2.Timeline(
                        zeitpunkt=to_timestamp(self.moment(spec.day, spec.at)), praezision=spec.praezision,
                        titel=spec.titel, themen=list(spec.themen),
                    ),
                ),
            )  # fmt: skip
            self.timeline_ids[key] = made.timeline.id
        return self.timeline_ids[key]

    async def analysis(self, spec: AnalysisSpec | None) -> pipeline_pb2.TurnAnalysis | None:
        """The scripted analysis as a proto, names resolved through the LZG registry."""
        if spec is None:
            return None
        magnets = common_pb2.Magnets(entitaet_ids=await self._entity_ids(spec.entitaeten))
        if spec.timeline is not None:
            magnets.timeline_id = await self._timeline_id(spec.timeline)
        return pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(
                salienz=spec.salienz, themen=list(spec.themen), gedaechtnistyp=spec.gedaechtnistyp,
                dimension=spec.dimension,
            ),
            ei=common_pb2.EiFields(
                emotion=spec.emotion, modus=spec.modus, arousal=spec.arousal, intentionen=list(spec.intentionen),
            ),
            magnets=magnets,
            inhalt=spec.inhalt,
        )  # fmt: skip

    async def refresh_names(self) -> None:
        entities = await self.call("lzg", "ListEntities", lzg_pb2.ListEntitiesRequest(pair=self.pair))
        self.entity_names = {e.id: e.name for e in entities.entities}
        nodes = await self.list_nodes()
        self.node_texts.update({n.id: n.inhalt for n in nodes})

    async def list_nodes(self) -> list[lzg_pb2.Node]:
        listed = await self.call(
            "lzg", "ListNodes", lzg_pb2.ListNodesRequest(pair=self.pair, limit=500, include_inactive=True)
        )
        return list(listed.nodes)

    async def promote(self, when: datetime, result: DemoResult) -> None:
        triggered = await self.call(
            "pixie", "TriggerTask",
            pixie_pb2.TriggerTaskRequest(
                task=TASK_PROMOTION, as_of=to_timestamp(when), force=True, pairs=[self.pair]
            ),
        )  # fmt: skip
        run = triggered.run
        result.promotion_runs.append(run)
        if run.counts.get("jobs") or run.outcome != "ok":
            detail = run_counts(run, ("promoted_new", "duplicates", "half_reactivations", "expired", "parked", "failed"))
            self.out(f"    ⤷ Pixie {TASK_PROMOTION}: {detail}{' — ' + run.error if run.error else ''}")

    # ---- one exchange

    async def exchange(self, spec: TurnSpec, when: datetime, *, verbose: bool) -> TurnOutcome:
        turn_id = str(uuid.uuid4())
        as_of = to_timestamp(when)
        analysis = await self.analysis(spec.analysis)
        observe = pipeline_pb2.ObserveTurnRequest(
            pair=self.pair, turn_id=turn_id, beobachter=common_pb2.BEOBACHTER_USER, text=spec.user, as_of=as_of
        )
        if analysis is not None:
            observe.analysis.CopyFrom(analysis)
        observed = await self.call("pipeline", "ObserveTurn", observe)
        nova_emotion = spec.nova_emotion or self.script.nova_emotion
        dossier = await self.call(
            "pipeline", "BuildDossier",
            pipeline_pb2.BuildDossierRequest(
                pair=self.pair, turn_id=turn_id, query_text=spec.user,
                intentionen=list(observed.analysis.ei.intentionen), nova_emotion=nova_emotion,
                readers=["analysis", "composer"], user_name=self.script.user_name,
                character_name=self.script.character_name, as_of=as_of,
            ),
        )  # fmt: skip
        answer_analysis = await self.analysis(spec.nova_analysis)
        answer_when = when + timedelta(seconds=40)
        dispatch = pipeline_pb2.DispatchRequest(
            pair=self.pair, turn_id=turn_id, user_prompt=spec.user, answer_text=spec.nova, cluster=spec.cluster,
            served_node_ids=list(dossier.served_node_ids),
            user_emotion_json=json.dumps({"emotion": observed.analysis.ei.emotion,
                                          "arousal": round(observed.analysis.ei.arousal, 3)}),
            nova_emotion_json=json.dumps({"emotion": nova_emotion}),
            as_of=to_timestamp(answer_when),
        )  # fmt: skip
        if answer_analysis is not None:
            dispatch.answer_analysis.CopyFrom(answer_analysis)
        dispatched = await self.call("pipeline", "Dispatch", dispatch)
        if verbose:
            self._print_exchange(spec, when, observed, dossier, dispatched)
        return TurnOutcome(when, spec, turn_id, observed, dossier, dispatched)

    def _store_line(self, stored: kzg_pb2.StoreEntryResponse, analyzed: bool | None) -> str:
        if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE:
            text = "KZG: not stored (below the 0.3 gate)"
        else:
            text = f"KZG: {TIER_NAMES.get(stored.tier, '?')}, salienz {stored.salienz:.3f}"
            if stored.queued_for_promotion:
                text += " → promotion queue"
            if stored.reinforced_count:
                text += f"; {stored.reinforced_count} reinforced by theme"
                if stored.reinforced_queued_count:
                    text += f" ({stored.reinforced_queued_count} of them now queued)"
        if analyzed is not None:
            text += " · analysis: " + ("the service's analyzer" if analyzed else "scripted")
        return text

    def _print_exchange(
        self,
        spec: TurnSpec,
        when: datetime,
        observed: pipeline_pb2.ObserveTurnResponse,
        dossier: pipeline_pb2.BuildDossierResponse,
        dispatched: pipeline_pb2.DispatchResponse,
    ) -> None:
        self.out(f"  {when:%H:%M} {self.script.user_name}: {quote(spec.user, 110)}")
        self.out(f"        {self._store_line(observed.kzg, observed.analyzed_by_service)}")
        memories = len(dossier.lzg_resonanz.erinnerungen)
        if memories or dossier.kzg_hits:
            self.out(
                f"        dossier: {len(dossier.kzg_hits)} KZG hits, {memories} LZG memories "
                f"(cluster {dossier.cluster})"
            )
        self.out(f"        {self.script.character_name}: {quote(spec.nova, 110)}")
        analyzed = None if spec.nova_analysis is not None else True
        self.out(f"        {self._store_line(dispatched.kzg, analyzed)}")
        if dispatched.protokoll.verwendet:
            self.out(f"        usage: nodes {list(dispatched.protokoll.verwendet)} reinforced")

    # ---- the whole demo

    async def run(self) -> DemoResult:
        script = self.script
        await self._fresh_pair()
        result = DemoResult(pair=self.pair, start=self.start)
        self.out(f"=== {script.title} ===")
        self.out(
            f"pair {self.pair.user_id} · {self.pair.character_id}; {len(script.turns)} exchanges over "
            f"{script.last_day // 7 + 1} simulated weeks from {self.start:%Y-%m-%d}; every request carries "
            "its simulated moment as as_of, and every Pixie run is limited to this pair."
        )
        tasks = await self.call("pixie", "ListTasks", pixie_pb2.ListTasksRequest())
        was_paused = any(t.name == TASK_PROMOTION and t.paused for t in tasks.tasks)
        if not was_paused:
            await self.call("pixie", "PauseTask", pixie_pb2.PauseTaskRequest(task=TASK_PROMOTION))
        try:
            await self._replay(result)
            await self._decay(result)
            await self._questions(result)
        finally:
            if not was_paused:
                await self.call("pixie", "ResumeTask", pixie_pb2.ResumeTaskRequest(task=TASK_PROMOTION))
        self._summary(result)
        return result

    async def _fresh_pair(self) -> None:
        """A replay into stores that already hold the demo pair continues as ``<user_id>-2`` (…-3, …)."""
        base = self.pair.user_id
        for n in range(1, 1000):
            candidate = common_pb2.Pair(
                user_id=base if n == 1 else f"{base}-{n}", character_id=self.pair.character_id
            )
            stats = await self.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=candidate))
            session = await self.call("kzg", "GetSession", kzg_pb2.GetSessionRequest(pair=candidate))
            if not (stats.nodes_active or stats.nodes_inactive or stats.entities or session.turns):
                if n > 1:
                    self.out(f"(pair {base} already has memories in these stores; the demo runs as "
                             f"{candidate.user_id})")
                self.pair = candidate
                return

    async def _replay(self, result: DemoResult) -> None:
        self.out("")
        self.out("--- The conversations (promotion after each simulated day) ---")
        turns = self.script.turns
        for i, spec in enumerate(turns):
            when = self.moment(spec.day, spec.at)
            if i == 0 or spec.day != turns[i - 1].day:
                self.out(self.day_label(when))
            result.turns.append(await self.exchange(spec, when, verbose=True))
            if i + 1 == len(turns) or turns[i + 1].day != spec.day:
                await self.promote(self.moment(spec.day, time(23, 59)), result)
        await self.refresh_names()
        result.entity_names = dict(self.entity_names)
        stats = await self.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=self.pair))
        result.nodes_before_decay = await self.list_nodes()
        self.out("")
        self.out(
            f"--- Long-term memory after {self.script.last_day // 7 + 1} weeks: "
            f"{stats.nodes_active} active nodes, "
            f"{stats.edges} edges, {stats.entities} entities, {stats.timelines} timeline refs "
            f"(model {stats.model_id}) ---"
        )
        for node in sorted(result.nodes_before_decay, key=lambda n: (-n.gewicht_decay, n.id)):
            who = "user" if node.beobachter == common_pb2.BEOBACHTER_USER else self.script.character_name
            self.out(f"  #{node.id:<3} {node.gewicht_decay:5.3f}  {quote(node.inhalt, 80)} ({who})")

    async def _decay(self, result: DemoResult) -> None:
        when = self.moment(self.script.last_day + self.script.pause_days, DECAY_TIME)
        self.out("")
        self.out(f"--- {self.script.pause_label} ({when:%Y-%m-%d}): Pixie {TASK_DECAY} for this pair ---")
        triggered = await self.call(
            "pixie", "TriggerTask",
            pixie_pb2.TriggerTaskRequest(
                task=TASK_DECAY, as_of=to_timestamp(when), force=True, pairs=[self.pair]
            ),
        )  # fmt: skip
        result.decay_run = triggered.run
        run = triggered.run
        self.out(
            f"  run {run.id}: {run.outcome}; "
            f"{run_counts(run, ('nodes_decayed', 'nodes_deactivated', 'log_rows_deleted', 'kept_turn_roh'))}"
            f"{' — ' + run.error if run.error else ''}"
        )
        result.nodes_after_decay = await self.list_nodes()
        before = {n.id: n for n in result.nodes_before_decay}
        for node in sorted(result.nodes_after_decay, key=lambda n: (-n.gewicht_decay, n.id))[:3]:
            old = before.get(node.id)
            if old is not None:
                self.out(
                    f"  #{node.id:<3} gewicht_decay {old.gewicht_decay:.3f} → {node.gewicht_decay:.3f}  "
                    f"{quote(node.inhalt, 60)}"
                )

    async def _questions(self, result: DemoResult) -> None:
        day = self.script.last_day + self.script.pause_days
        for i, spec in enumerate(self.script.questions):
            when = self.moment(day, time(10, 0)) + timedelta(minutes=7 * i)
            outcome = await self.exchange(spec, when, verbose=False)
            await self.refresh_names()
            question = QuestionOutcome(**outcome.__dict__)
            result.questions.append(question)
            self.out("")
            self.out(f"--- Question {i + 1} ({self.label(when)}) ---")
            self.out(f"{self.script.user_name}: {quote(spec.user, 120)}")
            self.out(f"  {self._store_line(outcome.observed.kzg, None)}")
            for line in format_dossier(outcome.dossier, self.entity_names, self.node_texts):
                self.out(f"  {line}")
            self.out(f"{self.script.character_name}: {quote(spec.nova, 160)}")
            for line in format_protokoll(outcome.dispatched.protokoll, self.node_texts):
                self.out(f"  {line}")
        result.entity_names = dict(self.entity_names)

    def _summary(self, result: DemoResult) -> None:
        associations = result.associations()
        self.out("")
        self.out("--- Summary ---")
        self.out(
            f"  {len(result.turns)} exchanges observed; {result.promoted_total()} nodes promoted "
            f"({len(result.nodes_before_decay)} in the LZG); decay: "
            f"{result.decay_run.counts.get('nodes_decayed', 0) if result.decay_run else 0} nodes aged"
        )
        self.out(f"  {len(associations)} associations with a path in the questions' dossiers")
        for question, memory in associations:
            self.out(
                f"    {quote(question.spec.user, 40)} → {quote(memory.inhalt, 50)} "
                f"came to mind via: {describe_path(memory.pfad, result.entity_names)}"
            )
        self.out(f"  reinforced by usage: {result.verwendet() or 'nothing'}")


async def run_demo(
    clients: DevClients,
    script: DemoScript | None = None,
    *,
    out: Out = print,
    start: datetime | None = None,
    user_id: str | None = None,
) -> DemoResult:
    """Replays ``script`` (default: the shipped demo) through the services and prints it to ``out``."""
    runner = DemoRunner(clients, script or load_script(), out=out, start=start, user_id=user_id)
    return await runner.run()
