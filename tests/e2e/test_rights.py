"""A person's rights over their memories through the five services as processes (issue 13 parts 3–6).

An erasure over a pair with data in every store — KZG entries, session, a queued and a parked
promotion job, the pipeline's cluster key, LZG nodes, edges, entities, timelines and provenance,
log rows with turn_roh — leaves no key, value or row that names the pair (every Redis key and value;
every row of every PostgreSQL schema, read as text), while another pair stays byte-identical. Then
the user's erasure takes the user's other character too. Export → erase → import restores the same
memories. Texts are English (the CI model is all-MiniLM-L6-v2).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.contract import pair_token, user_token
from novaberg_dev import cli
from novaberg_dev.cli import rights as cli_rights
from novaberg_dev.stack import Stack
from services.pixie.store import JobRef, PixieStore
from tests.e2e.helpers import Clients
from tests.polling import eventually
from tests.redis_values import as_bytes, bytes_stream

USER = common_pb2.BEOBACHTER_USER
ERASE = common_pb2.Pair(user_id="rights-u-7q2", character_id="rights-c-7q2")
ERASE_SECOND = common_pb2.Pair(user_id="rights-u-7q2", character_id="rights-luna-7q2")
KEEP = common_pb2.Pair(user_id="rights-keep-3k", character_id="nova")
ROUND_TRIP = common_pb2.Pair(user_id="rights-rt-9x", character_id="nova")
SCHEMAS = ("lzg", "log", "pixie")
TOMBSTONE_TABLES = {"lzg.loeschung", "lzg.paar_generation", "log.loeschung", "pixie.erasures"}
"""Where a one-way token of an erased pair or user stays (docs/decisions.md "Erasure")."""

A_TEXT = "My sister Anna celebrates her birthday on March 12."
B_TEXT = "Anna works as a nurse at the hospital in Hamburg."
QUESTION = "When is my sister's birthday?"
ANSWER = "Your sister's birthday is March 12, maybe bake a cake for it."


async def _nodes(clients: Clients, pair: common_pb2.Pair) -> list[lzg_pb2.Node]:
    return list((await clients.lzg.ListNodes(lzg_pb2.ListNodesRequest(pair=pair, include_inactive=True))).nodes)


async def _conversation(clients: Clients, pair: common_pb2.Pair) -> None:
    """Two memories that become nodes with an edge (shared entity), a dossier, a dispatched answer; the
    pair's profile (how its speakers are named) given with the first turn."""
    await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id=f"{pair.character_id}-a", beobachter=USER, text=A_TEXT,
        profile=common_pb2.PairProfile(user_name="Maria Eder", character_name="Nova", sprache="en")))  # fmt: skip
    first = await clients.lzg.ResolveEntities(lzg_pb2.ResolveEntitiesRequest(pair=pair, names=["Anna"]))
    await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id=f"{pair.character_id}-b", beobachter=USER, text=B_TEXT,
        analysis=pipeline_pb2.TurnAnalysis(
            salience=common_pb2.SalienceResult(salienz=0.8, themen=["anna", "nurse"], gedaechtnistyp="semantisch",
                                               dimension="beziehungen"),
            ei=common_pb2.EiFields(emotion="vertrauen", arousal=0.3),
            magnets=common_pb2.Magnets(entitaet_ids=list(first.entitaet_ids))),
    ))  # fmt: skip
    await eventually(lambda: _nodes(clients, pair), lambda nodes: len(nodes) >= 2, what=f"nodes of {pair}")
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=pair, turn_id=f"{pair.character_id}-q", query_text=QUESTION))  # fmt: skip
    # The answer's salience is given (MID): it stays a KZG entry, never queued, so the pair has memories in
    # both layers whatever Pixie does meanwhile (the offline rules would keep an answer at HIGH).
    await clients.pipeline.Dispatch(pipeline_pb2.DispatchRequest(
        pair=pair, turn_id=f"{pair.character_id}-q", user_prompt=QUESTION, answer_text=ANSWER, cluster="bier",
        served_node_ids=list(dossier.served_node_ids), user_emotion_json='{"emotion": "freude"}',
        answer_analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(
            salienz=0.6, themen=["birthday", "cake"], gedaechtnistyp="semantisch", dimension="beziehungen"))))  # fmt: skip
    await eventually(
        lambda: clients.log.Query(log_pb2.QueryRequest(pair=pair, art="turn_roh")), lambda r: len(r.records) == 1,
        what=f"turn_roh of {pair}",
    )


async def _queued_entry(clients: Clients, pair: common_pb2.Pair) -> str:
    observed = await clients.pipeline.ObserveTurn(pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id=f"{pair.character_id}-later", beobachter=USER, text="Anna plans a trip to Lisbon in May.",
        analysis=pipeline_pb2.TurnAnalysis(salience=common_pb2.SalienceResult(
            salienz=0.9, themen=["trip"], gedaechtnistyp="episodisch", dimension="reisen")),
    ))  # fmt: skip
    assert observed.kzg.queued_for_promotion
    return observed.kzg.kzg_key


async def _redis_texts(url: str) -> dict[str, str]:
    """Every key of Redis with its value as text (hash fields, list items, stream entries, strings)."""
    client = aioredis.from_url(url)
    out: dict[str, str] = {}
    try:
        async for raw in client.scan_iter(count=1000):
            key = raw.decode(errors="replace")
            kind = as_bytes(await client.type(raw)).decode()
            if kind == "hash":
                value: Any = await client.hgetall(raw)
            elif kind == "list":
                value = await client.lrange(raw, 0, -1)
            elif kind == "stream":
                value = (await client.xrange(raw), await client.xinfo_groups(raw))
            elif kind == "string":
                value = await client.get(raw)
            else:
                value = kind
            out[key] = repr(value)
    finally:
        await client.aclose()
    return out


async def _pg_rows(url: str) -> dict[str, list[str]]:
    """Every row of every table of the services' schemas as text (all columns, arrays and JSON included)."""
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema = ANY($1::text[]) "
            "AND table_type = 'BASE TABLE' ORDER BY 1, 2", list(SCHEMAS))  # fmt: skip
        out = {}
        for t in tables:
            name = f"{t['table_schema']}.{t['table_name']}"
            rows = await conn.fetch(f"SELECT x::text AS r FROM {name} x ORDER BY 1")
            out[name] = [r["r"] for r in rows]
        return out
    finally:
        await conn.close()


async def _pair_fingerprint(stack: Stack, pair: common_pb2.Pair) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every Redis key/value and every PostgreSQL row of ``pair`` (edges through its nodes)."""
    needle = f"{pair.user_id}"
    redis_part = {k: v for k, v in (await _redis_texts(stack.urls.redis_url)).items()
                  if needle in k and not k.startswith("kzg:promotion")}  # fmt: skip
    client = aioredis.from_url(stack.urls.redis_url)
    try:
        entries = bytes_stream(await client.xrange("kzg:promotion:queue"))
    finally:
        await client.aclose()
    redis_part["stream entries of the pair"] = repr([e for e in entries if e[1].get(b"user_id") == needle.encode()])
    conn = await asyncpg.connect(stack.urls.postgres_url)
    try:
        nodes = [r["id"] for r in await conn.fetch(
            "SELECT id FROM lzg.lzg_knoten WHERE user_id = $1 AND character_id = $2", pair.user_id, pair.character_id)]
        rows = {
            "lzg.lzg_kanten": await conn.fetch(
                "SELECT x::text AS r FROM lzg.lzg_kanten x WHERE knoten_a_id = ANY($1::int[]) ORDER BY 1", nodes),
            "lzg.lzg_kanten_rang": await conn.fetch(
                "SELECT x::text AS r FROM lzg.lzg_kanten_rang x WHERE knoten_x_id = ANY($1::int[]) ORDER BY 1", nodes),
        }  # fmt: skip
    finally:
        await conn.close()
    pg_part = {name: [r for r in table if needle in r] for name, table in (await _pg_rows(stack.urls.postgres_url)).items()}
    pg_part |= {name: [r["r"] for r in found] for name, found in rows.items()}
    return redis_part, pg_part


async def _settled(stack: Stack) -> None:
    """Buffered log records (flushed every 0.2 s) have landed: two equal reads of the log table."""
    previous = None
    for _ in range(50):
        current = (await _pg_rows(stack.urls.postgres_url))["log.pipeline_log"]
        if current == previous:
            return
        previous = current
        await asyncio.sleep(0.5)


def _diff(after: tuple[dict[str, Any], dict[str, Any]], before: tuple[dict[str, Any], dict[str, Any]]) -> list[str]:
    """What differs between two fingerprints of a pair: (store part, key or table, before, after)."""
    found = []
    for part, (now, then) in enumerate(zip(after, before, strict=True)):
        for name in sorted(set(now) | set(then)):
            if now.get(name) != then.get(name):
                found.append(f"{('redis', 'postgres')[part]} {name}: {str(then.get(name))[:300]} -> {str(now.get(name))[:300]}")
    return found


def _naming(texts: dict[str, Any], needle: str) -> list[str]:
    found = []
    for name, value in texts.items():
        items = value if isinstance(value, list) else [value]
        found += [f"{name}: {item[:120]}" for item in items if needle in item] + ([name] if needle in name else [])
    return found


@pytest.fixture(scope="module")
async def pixie_store(stack: Stack) -> AsyncIterator[PixieStore]:
    store = await PixieStore.open(stack.urls.postgres_url)
    try:
        yield store
    finally:
        await store.close()


Pause = Callable[..., Awaitable[None]]
"""``await pause("synapsen_promotion", …)``: the named Pixie tasks paused until the test ends."""


@pytest.fixture
async def pause(clients: Clients) -> AsyncIterator[Pause]:
    """Pauses Pixie's tasks for the test and resumes them after it, passed or failed (the stack is shared)."""
    paused: list[str] = []

    async def pause_tasks(*tasks: str) -> None:
        for task in tasks:
            await clients.pixie.PauseTask(pixie_pb2.PauseTaskRequest(task=task))
            paused.append(task)
        await asyncio.sleep(2.5)  # the worker sees the pause within a second, after its current read

    try:
        yield pause_tasks
    finally:
        for task in paused:
            await clients.pixie.ResumeTask(pixie_pb2.ResumeTaskRequest(task=task))


async def test_erasure_leaves_nothing_of_the_pair_in_any_store_and_the_other_pair_untouched(
    stack: Stack, clients: Clients, pixie_store: PixieStore, pause: Pause
) -> None:
    for pair in (ERASE, ERASE_SECOND, KEEP):
        await _conversation(clients, pair)
    await pause("synapsen_promotion", "synapsen_decay")  # nothing in the background moves the stores
    queued = {p.character_id: await _queued_entry(clients, p) for p in (ERASE, KEEP)}
    for pair in (ERASE, KEEP):  # a parked job and a failing one, as the worker records them
        ref = JobRef(f"1-{len(pair.user_id)}", queued[pair.character_id], "later", pair.user_id, pair.character_id)
        await pixie_store.park_job(ref, attempts=5, error=f"LZG Promote failed for {ref.kzg_key}",
                                   now=datetime.now(UTC), replica="e2e")  # fmt: skip
    await _settled(stack)
    redis_before, pg_before = await _redis_texts(stack.urls.redis_url), await _pg_rows(stack.urls.postgres_url)
    for needle in (ERASE.character_id, pair_token(ERASE.user_id, ERASE.character_id)):
        assert _naming(redis_before, needle), f"the test pair has no Redis data ({needle})"
    for table in ("lzg.lzg_knoten", "lzg.entitaet", "lzg.timeline", "lzg.verbindung", "log.pipeline_log",
                  "pixie.parked_jobs"):  # fmt: skip
        assert _naming({table: pg_before[table]}, ERASE.character_id), f"no rows of the pair in {table}"
    assert any('"turn_roh"' in r or ",turn_roh," in r for r in pg_before["log.pipeline_log"] if ERASE.character_id in r)
    for kind in ("cluster", "profile"):  # the pipeline's state of the pair, in the KZG's Redis
        assert any(f"pipeline:{kind}:{ERASE.user_id}:{ERASE.character_id}" == k for k in redis_before), kind
    keep_before = await _pair_fingerprint(stack, KEEP)

    receipt = await clients.pixie.ErasePair(pixie_pb2.ErasePairRequest(pair=ERASE, reason="Art. 17 GDPR request"))
    assert receipt.state == "done", receipt
    counts = dict(receipt.counts)
    assert counts["kzg.entries"] >= 2 and counts["kzg.session_keys"] == 2 and counts["kzg.cluster_keys"] == 1
    assert counts["kzg.queue_jobs"] == 1 and counts["kzg.hash_dirty"] == 1 and counts["kzg.profile_keys"] == 1
    assert counts["lzg.nodes"] >= 2 and counts["lzg.edges"] >= 2 and counts["lzg.entities"] >= 1
    assert counts["lzg.timelines"] >= 1 and counts["lzg.verbindungen"] >= 2
    assert counts["pixie.parked_jobs"] == 1 and counts["log.turn_roh"] == 1 and counts["log.rows"] > 10
    await asyncio.sleep(1.0)  # buffers of every writer flush (0.2 s) — records of the pair must not land
    await _settled(stack)

    redis_after, pg_after = await _redis_texts(stack.urls.redis_url), await _pg_rows(stack.urls.postgres_url)
    for needle in (ERASE.character_id, f"{ERASE.user_id}:{ERASE.character_id}"):
        assert _naming(redis_after, needle) == []
        assert _naming(pg_after, needle) == []
    token = pair_token(ERASE.user_id, ERASE.character_id)
    assert _naming(redis_after, token) == []
    assert {hit.split(":")[0] for hit in _naming(pg_after, token)} <= TOMBSTONE_TABLES
    assert _diff(await _pair_fingerprint(stack, KEEP), keep_before) == []

    # No RPC returns anything of the pair.
    assert await _nodes(clients, ERASE) == []
    stats = await clients.lzg.GetPairStats(lzg_pb2.GetPairStatsRequest(pair=ERASE))
    assert (stats.nodes_active, stats.nodes_inactive, stats.edges, stats.entities, stats.timelines) == (0, 0, 0, 0, 0)
    assert list((await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=ERASE))).turns) == []
    assert list((await clients.kzg.Retrieve(kzg_pb2.RetrieveRequest(pair=ERASE, query_text=A_TEXT))).hits) == []
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=ERASE, turn_id="after-erasure", query_text=QUESTION))  # fmt: skip
    assert list(dossier.lzg_resonanz.erinnerungen) == [] and list(dossier.kzg_hits) == [] and list(dossier.recall) == []
    assert list((await clients.log.Query(log_pb2.QueryRequest(pair=ERASE, art="turn_roh"))).records) == []
    parked = (await clients.pixie.ListParkedJobs(pixie_pb2.ListParkedJobsRequest(limit=100))).jobs
    assert [j.kzg_key for j in parked] == [queued[KEEP.character_id]]

    # The user's erasure takes the user's other character; the other pair still stays as it was.
    await _settled(stack)
    keep_before = await _pair_fingerprint(stack, KEEP)
    receipt = await clients.pixie.EraseUser(pixie_pb2.EraseUserRequest(user_id=ERASE.user_id, reason="account closed"))
    assert receipt.state == "done" and receipt.scope == "user" and receipt.counts["lzg.nodes"] >= 2
    await asyncio.sleep(1.0)
    await _settled(stack)
    redis_after, pg_after = await _redis_texts(stack.urls.redis_url), await _pg_rows(stack.urls.postgres_url)
    assert _naming(redis_after, ERASE.user_id) == [] and _naming(pg_after, ERASE.user_id) == []
    assert _naming(redis_after, user_token(ERASE.user_id)) == []
    assert {hit.split(":")[0] for hit in _naming(pg_after, user_token(ERASE.user_id))} <= TOMBSTONE_TABLES
    assert _diff(await _pair_fingerprint(stack, KEEP), keep_before) == []
    receipts = (await clients.pixie.ListErasures(pixie_pb2.ListErasuresRequest())).erasures
    assert [(r.scope, r.state) for r in receipts][:2] == [("user", "done"), ("pair", "done")]


async def _memories(clients: Clients, pair: common_pb2.Pair) -> dict[str, Any]:
    """A pair's memories without ids: nodes (content, weights), edges (by content, reasons), KZG, session,
    and the pipeline's profile of the pair (as the KZG's export carries it)."""
    nodes = await _nodes(clients, pair)
    text = {n.id: n.inhalt for n in nodes}
    edges = (await clients.lzg.ListEdges(lzg_pb2.ListEdgesRequest(pair=pair, limit=1000))).edges
    entities = {e.id: e.name for e in (await clients.lzg.ListEntities(lzg_pb2.ListEntitiesRequest(pair=pair))).entities}
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=pair))
    profiles = [c.profile for c in [c async for c in clients.kzg.ExportPair(kzg_pb2.ExportPairRequest(pair=pair))]
                if c.HasField("profile")]  # fmt: skip
    return {
        "nodes": sorted((n.inhalt, n.gewicht_roh, n.gewicht_absolut, n.gewicht_decay, n.aktiv, n.haeufigkeit,
                         tuple(n.themen), tuple(entities[i] for i in n.magnets.entitaet_ids), n.ei.emotion)
                        for n in nodes),
        "edges": sorted((text[e.knoten_a_id], text[e.knoten_b_id], e.gewicht_roh, e.gewicht_absolut,
                         tuple(e.verbindungs_gruende), tuple(entities[i] for i in e.geteilte_entitaet_ids),
                         tuple(e.geteilte_themen), e.anzahl_schichten) for e in edges),
        "entities": sorted(entities.values()),
        "session": [(t.role, t.text, t.turn_id) for t in session.turns],
        "profile": [(p.user_name, p.character_name, p.sprache) for p in profiles],
    }  # fmt: skip


async def test_export_erase_import_restores_the_same_memories(clients: Clients, pause: Pause) -> None:
    await _conversation(clients, ROUND_TRIP)
    await pause("synapsen_promotion")
    await _queued_entry(clients, ROUND_TRIP)
    before = await _memories(clients, ROUND_TRIP)
    assert len(before["nodes"]) >= 2 and len(before["edges"]) >= 2
    assert before["profile"] == [("Maria Eder", "Nova", "en")]
    lines = [line async for chunk in clients.pixie.ExportPair(pixie_pb2.ExportPairRequest(pair=ROUND_TRIP))
             for line in chunk.lines]  # fmt: skip
    header = json.loads(lines[0])
    assert header["schema"] == "novaberg.export/1" and header["counts"]["node"] == len(before["nodes"])
    assert {json.loads(line)["type"] for line in lines[1:]} == {"entity", "timeline", "node", "edge", "kzg_entry",
                                                                "session", "profile"}  # fmt: skip
    await clients.pixie.ErasePair(pixie_pb2.ErasePairRequest(pair=ROUND_TRIP, reason="round trip"))
    erased = await _memories(clients, ROUND_TRIP)
    assert erased["nodes"] == [] and erased["profile"] == []

    async def requests() -> AsyncIterator[pixie_pb2.ImportPairRequest]:
        yield pixie_pb2.ImportPairRequest(pair=ROUND_TRIP)
        for start in range(0, len(lines), 3):
            yield pixie_pb2.ImportPairRequest(lines=lines[start : start + 3])

    imported = await clients.pixie.ImportPair(requests())
    assert imported.counts["nodes"] == len(before["nodes"]) and imported.counts["kzg_queued"] == 1
    assert imported.counts["profile"] == 1
    assert await _memories(clients, ROUND_TRIP) == before
    # The restored memories work as before: the question finds the birthday.
    dossier = await clients.pipeline.BuildDossier(pipeline_pb2.BuildDossierRequest(
        pair=ROUND_TRIP, turn_id="rt-after", query_text=QUESTION))  # fmt: skip
    assert A_TEXT in [m.inhalt for m in dossier.lzg_resonanz.erinnerungen]


CLI_PAIR = common_pb2.Pair(user_id="rights-cli-4z", character_id="nova")


async def _novaberg(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> tuple[int, str, str]:
    """``novaberg <args> --data-dir <data_dir>`` in a thread (main runs its own loop): code, stdout, stderr."""
    capsys.readouterr()
    where = ["--data-dir", str(data_dir)]
    argv = [args[0], *where, *args[1:]] if args[0] == "pixie" else [*args, *where]  # before pixie's action
    code = await asyncio.to_thread(cli.main, argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_the_cli_exports_erases_with_confirmation_imports_forgets_corrects_and_requeues(
    stack: Stack, clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    cli.write_stack_file(tmp_path, stack.addresses, {"tls": stack.client_tls.as_env()})
    await _conversation(clients, CLI_PAIR)
    before = await _memories(clients, CLI_PAIR)
    pair_args = ("--user", CLI_PAIR.user_id, "--character", CLI_PAIR.character_id)
    export = tmp_path / "memories.jsonl"
    code, out, err = await _novaberg(capsys, tmp_path, "export", *pair_args, "-o", str(export))
    assert code == 0 and f"written to {export}" in out, err
    assert json.loads(export.read_text().splitlines()[0])["schema"] == "novaberg.export/1"

    monkeypatch.setattr(cli_rights, "ask", lambda prompt: "rights-cli-4z")  # not the pair's ids
    code, _, err = await _novaberg(capsys, tmp_path, "erase", *pair_args)
    assert code == 1 and "confirmation did not match" in err
    assert await _nodes(clients, CLI_PAIR) != []
    monkeypatch.setattr(cli_rights, "ask", lambda prompt: f"{CLI_PAIR.user_id} {CLI_PAIR.character_id}")
    code, out, _ = await _novaberg(capsys, tmp_path, "erase", *pair_args, "--reason", "cli test")
    assert code == 0 and "(pair): done" in out and "lzg" in out
    assert await _nodes(clients, CLI_PAIR) == []

    code, out, err = await _novaberg(capsys, tmp_path, "import-export", str(export))
    assert code == 0, err
    assert f"imported into {CLI_PAIR.user_id} · {CLI_PAIR.character_id}" in out
    assert await _memories(clients, CLI_PAIR) == before

    nodes = {n.inhalt: n.id for n in await _nodes(clients, CLI_PAIR)}
    code, out, err = await _novaberg(capsys, tmp_path, "correct", *pair_args, "--node", str(nodes[B_TEXT]),
                                     "--text", "Anna works as a doctor in Hamburg.", "--reason", "she graduated")
    assert code == 0 and f"corrected node {nodes[B_TEXT]}" in out, err
    code, out, err = await _novaberg(capsys, tmp_path, "forget", *pair_args, "--node", str(nodes[A_TEXT]),
                                     "--reason", "please forget")
    assert code == 0 and f"forgotten: nodes [{nodes[A_TEXT]}]" in out, err
    assert [n.inhalt for n in await _nodes(clients, CLI_PAIR)] == ["Anna works as a doctor in Hamburg."]
    code, out, _ = await _novaberg(capsys, tmp_path, "pixie", "requeue", "--all")
    assert code == 0 and out.startswith("requeued 0 parked jobs")
    code, out, _ = await _novaberg(capsys, tmp_path, "pixie", "erasures")
    assert code == 0 and "(pair): done" in out
