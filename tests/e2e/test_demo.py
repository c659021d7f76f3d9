"""The demo of ``make run`` against the real stack: five service processes on fresh stores.

One module-scoped run of the shipped demo on stores of its own; the tests assert its key outcomes (SPEC §5.3 promotion,
§5.7 decay, §5.8 associations with their paths, §5.6 usage reinforcement) and then drive the
``novaberg`` CLI as a user would, against the same running stack.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.timeutil import days_between, from_timestamp
from novaberg_dev.clients import DevClients
from novaberg_dev.demo import DemoResult, load_script, run_demo
from novaberg_dev.embedded import start_stores, stop_stores
from novaberg_dev.graph_explorer import payload_from_html
from novaberg_dev.stack import Stack, start_stack
from tests.e2e.attack import changed
from tests.e2e.pair_fingerprint import pair_postgres_fingerprint, pair_redis_fingerprint

DEMO_ENV = {
    # The shipped demo is written for the default offline model (its anchor and usage thresholds).
    "NOVABERG_EMBEDDING": "use",
    "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN": "0.2",
}
DECAY_RATE = 0.0015  # SPEC §5.7
REINFORCEMENT_BOOST = 0.1  # SPEC §5.6


IMPORTED = common_pb2.Pair(user_id="imported-user", character_id="nova")
IMPORTED_TURNS = (
    "Meine Tochter Lea hat gestern ihre Fahrprüfung bestanden.",
    "Wir fahren im Mai mit dem Zug nach Wien.",
    "Mein Chef hat mir endlich die Beförderung gegeben.",
)


@dataclass
class PairPrints:
    """The imported pair's keys and rows before and after the demo (issue 16)."""

    redis_before: dict[bytes, str]
    redis_after: dict[bytes, str]
    postgres_before: dict[str, str]
    postgres_after: dict[str, str]


@dataclass
class DemoRun:
    stack: Stack
    result: DemoResult
    output: list[str]
    imported: PairPrints


async def _import_another_pair(clients: DevClients) -> int:
    """A few HIGH turns of another pair, observed and promoted on the real clock; returns its node count."""
    for i, text in enumerate(IMPORTED_TURNS):
        request = pipeline_pb2.ObserveTurnRequest(
            pair=IMPORTED, turn_id=f"imported-{i}", text=text, beobachter=common_pb2.BEOBACHTER_USER
        )
        analysis = request.analysis
        analysis.salience.salienz = 0.9
        analysis.salience.themen.append(f"thema{i}")
        analysis.salience.gedaechtnistyp = "episodisch"
        analysis.salience.dimension = "allgemein"
        analysis.ei.emotion = "freude"
        analysis.ei.modus = "alltag"
        analysis.inhalt = text
        await clients.call("pipeline", "ObserveTurn", request)
    await clients.call("pixie", "TriggerTask", pixie_pb2.TriggerTaskRequest(task="synapsen_promotion"))
    for _ in range(100):  # the continuous worker may hold a job for a moment
        queue = await clients.call(
            "kzg", "InspectPromotionQueue", kzg_pb2.InspectPromotionQueueRequest(limit=10)
        )
        if queue.length == 0 and queue.pending == 0:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)  # every service's pipeline-log writer flushes (0.2 s) before the print
    stats = await clients.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=IMPORTED))
    return int(stats.nodes_active)


def _pair_prints(stack: Stack) -> tuple[dict[bytes, str], dict[str, str]]:
    client = redis.Redis.from_url(stack.urls.redis_url)
    try:
        keys = pair_redis_fingerprint(client, IMPORTED.user_id, IMPORTED.character_id)
    finally:
        client.close()
    return keys, pair_postgres_fingerprint(stack.urls.postgres_url, IMPORTED.user_id, IMPORTED.character_id)


@pytest.fixture(scope="module")
async def demo_run(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DemoRun]:
    """The demo on stores of its own (its Pixie pauses the promotion worker), after an import of
    another pair whose keys and rows are fingerprinted before and after the demo."""
    data_dir = tmp_path_factory.mktemp("demo")
    urls = await asyncio.to_thread(start_stores, data_dir / "stores", ephemeral=True)
    try:
        stack = await start_stack(data_dir, urls=urls, extra_env=DEMO_ENV)
        try:
            output: list[str] = []
            async with DevClients(stack.addresses, tls=stack.client_tls) as clients:
                assert await _import_another_pair(clients) >= 2
                redis_before, postgres_before = await asyncio.to_thread(_pair_prints, stack)
                result = await run_demo(clients, load_script(), out=output.append)
                await asyncio.sleep(1.5)  # the demo's last log rows flush
                redis_after, postgres_after = await asyncio.to_thread(_pair_prints, stack)
            prints = PairPrints(redis_before, redis_after, postgres_before, postgres_after)
            yield DemoRun(stack, result, output, prints)
        finally:
            await stack.stop()
    finally:
        await asyncio.to_thread(stop_stores, data_dir / "stores")


async def test_the_demo_leaves_another_pair_byte_identical(demo_run: DemoRun) -> None:
    """Issue 16: the demo's simulated clock (decay and log retention months ahead) stays in its pair."""
    prints = demo_run.imported
    assert any(key.startswith(b"session:") for key in prints.redis_before), prints.redis_before
    assert prints.postgres_before['"lzg"."lzg_knoten"'].endswith(f":{len(IMPORTED_TURNS)}")
    assert int(prints.postgres_before['"log"."pipeline_log"'].rsplit(":", 1)[1]) > 0
    assert changed(prints.redis_before, prints.redis_after) == []
    assert changed(prints.postgres_before, prints.postgres_after) == []
    decay = demo_run.result.decay_run
    assert decay is not None and [(p.user_id, p.character_id) for p in decay.pairs] == [
        (demo_run.result.pair.user_id, demo_run.result.pair.character_id)
    ]
    assert all(len(run.pairs) == 1 for run in demo_run.result.promotion_runs)


async def test_high_turns_are_promoted_into_the_graph(demo_run: DemoRun) -> None:
    result = demo_run.result
    by_inhalt = {n.inhalt: n for n in result.nodes_before_decay}
    turn = next(t for t in result.turns if t.spec.analysis and t.spec.analysis.inhalt.startswith("Anna hat mir damals"))
    assert turn.observed.kzg.tier == kzg_pb2.TIER_HIGH and turn.observed.kzg.queued_for_promotion
    node = by_inhalt["Anna hat mir damals immer Schokolade gegeben"]
    assert node.aktiv and node.magnets.entitaet_ids
    assert result.entity_names[node.magnets.entitaet_ids[0]] == "Anna"
    # Every scripted HIGH user turn arrived (or was a duplicate of one that did).
    high = [t for t in result.turns if t.spec.analysis and t.spec.analysis.salienz >= 0.7]
    assert result.promoted_total() >= len(high) - 2
    assert all(run.outcome == "ok" for run in result.promotion_runs)
    # Nova's own promise became a self-memory (beobachter assistant).
    assert any(n.beobachter == common_pb2.BEOBACHTER_ASSISTANT for n in result.nodes_before_decay)
    # Turns below the gate stayed out: the questions were not stored.
    assert all(q.observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE for q in result.questions)


async def test_decay_months_later_follows_the_formula(demo_run: DemoRun) -> None:
    result = demo_run.result
    run = result.decay_run
    assert run is not None and run.outcome == "ok", run
    assert run.counts["nodes_decayed"] >= len([n for n in result.nodes_before_decay if n.aktiv])
    as_of = result.questions[0].when.replace(hour=3, minute=30)
    after = {n.id: n for n in result.nodes_after_decay}
    for before in result.nodes_before_decay:
        days = days_between(from_timestamp(before.decay_am), as_of)
        expected = before.gewicht_decay * math.exp(-DECAY_RATE * days)
        assert after[before.id].gewicht_decay == pytest.approx(expected, rel=1e-6), before.inhalt
        assert after[before.id].gewicht_absolut == pytest.approx(before.gewicht_absolut)  # never touched by decay


async def test_a_question_dossier_shows_an_association_through_anna(demo_run: DemoRun) -> None:
    result = demo_run.result
    anna = next(i for i, name in result.entity_names.items() if name == "Anna")
    direct = [e for q in result.questions for e in q.dossier.lzg_resonanz.erinnerungen if e.schale == 0]
    assert direct, "no direct hit in any question's dossier"
    via_anna = [
        (q, e) for q, e in result.associations()
        if any("entitaet" in step.verbindungs_gruende and anna in step.geteilte_entitaet_ids for step in e.pfad)
    ]
    assert via_anna, "\n".join(demo_run.output)
    question, memory = via_anna[0]
    assert len(memory.pfad) == memory.schale
    assert f'"{memory.inhalt}"' in question.dossier.memory_blocks["analysis"]
    printed = "\n".join(demo_run.output)
    assert "came to mind via: shared entity Anna" in printed


async def test_the_answer_that_uses_a_memory_reinforces_it(demo_run: DemoRun) -> None:
    result = demo_run.result
    used = [(q, node_id) for q in result.questions for node_id in q.dispatched.protokoll.verwendet]
    assert used, "\n".join(demo_run.output)
    question, node_id = used[0]
    protokoll = question.dispatched.protokoll
    assert lzg_pb2.VerwendungAusgang.Name(protokoll.ausgang) == "VERWENDUNG_AUSGANG_GERECHNET"
    assert node_id in question.dossier.served_node_ids
    before = {n.id: n for n in result.nodes_after_decay}[node_id]
    async with DevClients(demo_run.stack.addresses, tls=demo_run.stack.client_tls) as clients:
        now = (await clients.call("lzg", "GetNode", lzg_pb2.GetNodeRequest(pair=result.pair, node_id=node_id))).node
    assert now.gewicht_roh >= before.gewicht_roh + REINFORCEMENT_BOOST - 1e-9
    assert now.haeufigkeit > before.haeufigkeit
    assert now.gewicht_decay == pytest.approx(now.gewicht_absolut)


async def test_a_replayed_turn_tells_its_story_at_its_simulated_time(demo_run: DemoRun) -> None:
    """Every service logs a replayed turn at the turn's ``as_of``, so ``novaberg log`` reads in order."""
    question = demo_run.result.questions[0]
    expected = {"observe", "kzg_speicher", "session", "kzg", "enricher", "dispatcher", "verwendung"}
    async with DevClients(demo_run.stack.addresses, tls=demo_run.stack.client_tls) as clients:
        records: list[log_pb2.LogRecord] = []
        for _ in range(50):  # each service's writer flushes every 0.2 s
            records = list((await clients.call("log", "Query", log_pb2.QueryRequest(turn_id=question.turn_id))).records)
            if expected <= {r.node for r in records}:
                break
            await asyncio.sleep(0.1)
    nodes = {r.node for r in records}
    assert expected <= nodes, nodes
    times = {(r.node, r.art): from_timestamp(r.erstellt_am) for r in records}
    late = {key: t for key, t in times.items() if not question.when <= t <= question.when + timedelta(hours=1)}
    assert not late, f"records outside the turn's simulated hour {question.when}: {late}"


def test_the_cli_reads_the_same_stack(demo_run: DemoRun, tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update({f"NOVABERG_{s.upper()}_ADDR": a for s, a in demo_run.stack.addresses.items()})
    env.update(demo_run.stack.client_tls.as_env())  # the operator's certificate, as in a shell
    pair = ["--user", demo_run.result.pair.user_id, "--character", demo_run.result.pair.character_id]

    def novaberg(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "novaberg_dev.cli", *args], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip

    recall = novaberg("recall", "Was weißt du noch über Anna?", *pair)
    assert recall.returncode == 0, recall.stderr
    assert "lzg_resonanz" in recall.stdout and "Anna" in recall.stdout
    inspect = novaberg("inspect", *pair)
    assert inspect.returncode == 0, inspect.stderr
    assert "strongest" in inspect.stdout
    graph = novaberg("graph", "--include-inactive", "-o", str(tmp_path / "graph.html"), *pair)
    assert graph.returncode == 0, graph.stderr
    shown = payload_from_html((tmp_path / "graph.html").read_text())["nodes"]["id"]
    assert sorted(shown) == sorted(n.id for n in demo_run.result.nodes_after_decay)
    picture = novaberg("graph", "-o", str(tmp_path / "graph.png"), *pair)
    assert picture.returncode == 0 and (tmp_path / "graph.png").read_bytes()[:4] == b"\x89PNG", picture.stderr
    wrong = novaberg("graph", "-o", str(tmp_path / "graph.jpg"), *pair)
    assert wrong.returncode == 1 and "use one of .html, .png, .svg" in wrong.stderr
    assert not (tmp_path / "graph.jpg").exists()
    runs = novaberg("pixie", "runs", "--task", "synapsen_decay")
    assert runs.returncode == 0 and "synapsen_decay" in runs.stdout
    bad = novaberg("recall", "x", "--user", "", "--character", "nova")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: pipeline.BuildDossier: INVALID_ARGUMENT:") and bad.stderr.count("\n") == 1


def test_up_once_replays_the_demo_and_exits_0(tmp_path: Path) -> None:
    """What ``make run ONCE=1`` runs: start everything, print the demo with its dossiers, stop, exit 0."""
    data_dir = tmp_path / "novaberg"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOVABERG_")} | DEMO_ENV
    try:
        done = subprocess.run(
            [sys.executable, "-m", "novaberg_dev.cli", "up", "--data-dir", str(data_dir), "--once"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        subprocess.run(
            [sys.executable, "-m", "novaberg_dev.embedded", "down", "--data-dir", str(data_dir / "stores")],
            env=env, capture_output=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    for heading in ("--- The conversations", "--- Long-term memory after 7 weeks", "--- Three months later",
                    "--- Question 1", "--- Summary ---"):  # fmt: skip
        assert heading in out, heading
    assert "memory block (reader analysis):" in out and "came to mind via:" in out
    assert "used → reinforced" in out
    assert "serving" not in out  # --once: no serving hint
    assert not (data_dir / "stack.json").exists()  # removed when the stack stops
    # mTLS by default: fresh certificates, every service required client certificates, none was plaintext.
    assert f"mTLS      certificates of a throwaway CA in {data_dir.resolve() / 'tls'}" in out
    assert sorted(p.name for p in (data_dir / "tls").glob("*.crt")) == sorted(
        f"{name}.crt" for name in ("ca", "kzg", "lzg", "log", "pixie", "pipeline", "operator")
    )
    for service in ("kzg", "lzg", "log", "pixie", "pipeline"):
        service_log = (data_dir / "logs" / f"{service}.log").read_text()
        assert f"{service}: mTLS: client certificates required" in service_log, service
        assert "PLAINTEXT" not in service_log and "PERMISSION_DENIED" not in service_log, service
    assert len(payload_from_html((data_dir / "graph-meister-nova.html").read_text())["nodes"]["id"]) >= 10
