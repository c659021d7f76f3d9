"""The ``novaberg`` commands against fake services on a real gRPC port: what they send, what they
print, and that a service error is one line ``error: <service>.<Rpc>: <CODE>: <details>`` with exit 1."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from concurrent import futures
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.lzg.v1 import lzg_pb2, lzg_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli import conversation, main
from novaberg_dev.graph_explorer import payload_from_html

ANNA, SCHOKOLADE_NODE, SCHWESTER_NODE, LIEBE_NODE, METZGER_NODE = 12, 247, 89, 412, 500
BLOCK = 'Drei Erinnerungen sind Nova gerade da.\n----- Erinnerung 1 -----\n"Ich liebe ja Schokolade"'


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, Any]] = []

    def add(self, name: str, request: Any) -> None:
        with self.lock:
            self.calls.append((name, request))

    def of(self, name: str) -> list[Any]:
        return [request for called, request in self.calls if called == name]


def resonanz() -> lzg_pb2.LzgResonanz:
    """The seed's example (syn §8.4.2): a direct hit and a two-step association."""
    return lzg_pb2.LzgResonanz(
        anker_anzahl=1, sprung_tiefe=2, cluster="bier", nova_sektor="freude",
        erinnerungen=[
            lzg_pb2.Erinnerung(rang=1, knoten_id=SCHWESTER_NODE, inhalt="Anna ist meine Schwester", schale=0,
                               gewicht_decay=4.7, sortier_gewicht=4.7),
            lzg_pb2.Erinnerung(
                rang=2, knoten_id=LIEBE_NODE, inhalt="Ich liebe ja Schokolade", schale=2, gewicht_decay=3.9,
                sortier_gewicht=1.95,
                pfad=[
                    lzg_pb2.PfadSchritt(von_knoten_id=SCHWESTER_NODE, kante_id=1543,
                                        verbindungs_gruende=["entitaet", "themen"],
                                        geteilte_entitaet_ids=[ANNA], geteilte_themen=["Anna"]),
                    lzg_pb2.PfadSchritt(von_knoten_id=SCHOKOLADE_NODE, kante_id=1622, verbindungs_gruende=["themen"],
                                        geteilte_themen=["Schokolade"]),
                ],
            ),
        ],
    )  # fmt: skip


def nodes() -> list[lzg_pb2.Node]:
    made = []
    for node_id, text, weight in ((SCHWESTER_NODE, "Anna ist meine Schwester", 4.7),
                                  (SCHOKOLADE_NODE, "Anna hat mir damals immer Schokolade gegeben", 5.4),
                                  (LIEBE_NODE, "Ich liebe ja Schokolade", 3.9)):  # fmt: skip
        node = lzg_pb2.Node(id=node_id, inhalt=text, gewicht_decay=weight, gewicht_absolut=weight, aktiv=True,
                            beobachter=common_pb2.BEOBACHTER_USER, themen=["Anna"])  # fmt: skip
        node.erstellt_am.CopyFrom(to_timestamp(datetime(2026, 11, 1, tzinfo=UTC)))
        node.magnets.entitaet_ids.append(ANNA)
        made.append(node)
    return made


def inactive_nodes() -> list[lzg_pb2.Node]:
    """Below LZG_KNOTEN_MIN_GEWICHT after decay (SPEC §5.7): listed only with include_inactive."""
    node = lzg_pb2.Node(id=METZGER_NODE, inhalt="Der Metzger in Treuchtlingen hat die beste Bratwurst",
                        gewicht_decay=0.05, gewicht_absolut=2.1, aktiv=False, beobachter=common_pb2.BEOBACHTER_USER)
    return [node]


def edges() -> list[lzg_pb2.Edge]:
    return [
        lzg_pb2.Edge(id=1543, knoten_a_id=SCHWESTER_NODE, knoten_b_id=SCHOKOLADE_NODE, gewicht_absolut=3.1,
                     verbindungs_gruende=["entitaet", "themen"], geteilte_entitaet_ids=[ANNA], geteilte_themen=["Anna"]),
        lzg_pb2.Edge(id=1544, knoten_a_id=SCHOKOLADE_NODE, knoten_b_id=SCHWESTER_NODE, gewicht_absolut=3.3,
                     verbindungs_gruende=["entitaet", "themen"], geteilte_entitaet_ids=[ANNA], geteilte_themen=["Anna"]),
        lzg_pb2.Edge(id=1622, knoten_a_id=SCHOKOLADE_NODE, knoten_b_id=LIEBE_NODE, gewicht_absolut=2.2,
                     verbindungs_gruende=["themen"], geteilte_themen=["Schokolade"]),
        lzg_pb2.Edge(id=1701, knoten_a_id=LIEBE_NODE, knoten_b_id=METZGER_NODE, gewicht_absolut=0.9,
                     verbindungs_gruende=["timeline"]),
    ]  # fmt: skip


class FakePipeline(pipeline_pb2_grpc.PipelineServiceServicer):
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def ObserveTurn(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("ObserveTurn", request)
        return self._observed(request, context)

    def _observed(self, request: Any, context: grpc.ServicerContext) -> Any:
        if request.text == "bitte scheitern":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "analysis.salience.salienz must be in 0..1,\n got 7")
        stored = kzg_pb2.StoreEntryResponse(
            outcome=kzg_pb2.STORE_OUTCOME_STORED, tier=kzg_pb2.TIER_HIGH, salienz=0.88078, ttl_seconds=30 * 86400,
            queued_for_promotion=True, kzg_key="kzg:meister:nova:abc",
        )  # fmt: skip
        return pipeline_pb2.ObserveTurnResponse(
            kzg=stored, analysis=request.analysis, analyzed_by_service=not request.HasField("analysis")
        )

    def ObserveTurns(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("ObserveTurns", request)
        first = request.turns[0].text if request.turns else ""
        if first.startswith("ausfall "):  # "ausfall N …": the first N calls of this batch find the pipeline out
            sent = sum(r.turns[0].text == first for r in self.rec.of("ObserveTurns"))
            if sent <= int(first.split()[1]):
                context.abort(grpc.StatusCode.UNAVAILABLE, "the pipeline restarts")
        results = []
        for turn in request.turns:
            one = pipeline_pb2.ObserveTurnRequest(
                pair=request.pair, turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text
            )
            results.append(self._observed(one, context))
        return pipeline_pb2.ObserveTurnsResponse(results=results)

    def BuildDossier(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("BuildDossier", request)
        if request.query_text == "disco":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown cluster 'disco'; known: werkstatt, foyer")
        return pipeline_pb2.BuildDossierResponse(
            cluster="bier", gravitation_faktor=0.2, lzg_resonanz=resonanz(), memory_blocks={"analysis": BLOCK},
            served_node_ids=[SCHWESTER_NODE, LIEBE_NODE],
        )  # fmt: skip


class FakeLzg(lzg_pb2_grpc.LzgServiceServicer):
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def ListEntities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return lzg_pb2.ListEntitiesResponse(entities=[lzg_pb2.Entity(id=ANNA, name="Anna", typ="person")])

    def ResolveEntities(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("ResolveEntities", request)
        return lzg_pb2.ResolveEntitiesResponse(entitaet_ids=[ANNA if n == "Anna" else 99 for n in request.names])

    def ListNodes(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("ListNodes", request)
        pool = nodes() + (inactive_nodes() if request.include_inactive else [])
        return lzg_pb2.ListNodesResponse(nodes=sorted(pool, key=lambda n: -n.gewicht_decay)[: request.limit or 50])

    def ListEdges(self, request: Any, context: grpc.ServicerContext) -> Any:
        picked = [e for e in edges() if request.node_id in (0, e.knoten_a_id, e.knoten_b_id)]
        return lzg_pb2.ListEdgesResponse(edges=picked)

    def GetNode(self, request: Any, context: grpc.ServicerContext) -> Any:
        for node in nodes():
            if node.id == request.node_id:
                return lzg_pb2.GetNodeResponse(node=node)
        context.abort(grpc.StatusCode.NOT_FOUND, f"node {request.node_id} of this pair does not exist")

    def GetPairStats(self, request: Any, context: grpc.ServicerContext) -> Any:
        return lzg_pb2.GetPairStatsResponse(nodes_active=3, nodes_inactive=1, edges=4, entities=1,
                                            model_id="all-minilm-l6-v2-int8")  # fmt: skip


class FakeKzg(kzg_pb2_grpc.KzgServiceServicer):
    def GetSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        return kzg_pb2.GetSessionResponse(turns=[kzg_pb2.SessionTurn(role="user", text="Hallo")])


class FakeLog(log_pb2_grpc.LogServiceServicer):
    def Query(self, request: Any, context: grpc.ServicerContext) -> Any:
        def row(art: str, node: str, inhalt: Any, second: int) -> log_pb2.LogRecord:
            record = log_pb2.LogRecord(turn_id=request.turn_id or "t-1", node=node, art=art, quelle="meister",
                                       inhalt_json=json.dumps(inhalt))  # fmt: skip
            record.erstellt_am.CopyFrom(to_timestamp(datetime(2026, 11, 1, 10, 0, second, tzinfo=UTC)))
            return record

        if request.art == "turn_roh":
            return log_pb2.QueryResponse(records=[row("turn_roh", "dispatcher", {"user_prompt": "Hallo Nova"}, 9)])
        return log_pb2.QueryResponse(records=[
            row("span_start", "observe", None, 0),
            row("eingang", "observe", {"text": "Anna hat Geburtstag"}, 1),
            row("span_end", "observe", None, 2),
        ])  # fmt: skip


class FakePixie(pixie_pb2_grpc.PixieServiceServicer):
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec

    def TriggerTask(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.rec.add("TriggerTask", request)
        if request.task == "synapsen_promotion":
            run = pixie_pb2.Run(id=8, task=request.task, outcome="ok",
                                counts={"jobs": 250, "deferred_locked": 210, "promoted_new": 40, "acked": 40})
        elif not request.force and not request.pairs:
            run = pixie_pb2.Run(id=9, task=request.task, outcome="skipped", run_day="2026-12-01",
                                error="synapsen_decay already ran for 2026-12-01 (run 3, ok, replica p); "
                                      "trigger it with force to run it again")
        else:
            run = pixie_pb2.Run(id=7, task=request.task, outcome="ok", counts={"nodes_decayed": 13},
                                run_day="2027-03-01")
        return pixie_pb2.TriggerTaskResponse(run=run)

    def ListTasks(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pixie_pb2.ListTasksResponse(tasks=[
            pixie_pb2.Task(name="synapsen_promotion", schedule="continuous", priority=0.9, paused=True),
            pixie_pb2.Task(name="synapsen_decay", schedule="daily 03:30", priority=0.5),
        ])  # fmt: skip


@pytest.fixture(scope="module")
def fake_stack() -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pipeline_pb2_grpc.add_PipelineServiceServicer_to_server(FakePipeline(rec), server)
    lzg_pb2_grpc.add_LzgServiceServicer_to_server(FakeLzg(rec), server)
    kzg_pb2_grpc.add_KzgServiceServicer_to_server(FakeKzg(), server)
    log_pb2_grpc.add_LogServiceServicer_to_server(FakeLog(), server)
    pixie_pb2_grpc.add_PixieServiceServicer_to_server(FakePixie(rec), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", rec
    finally:
        server.stop(None)


@pytest.fixture
def cli(fake_stack: tuple[str, Recorder], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Every NOVABERG_<SVC>_ADDR points at the fakes; no stack.json in the working directory."""
    address, rec = fake_stack
    monkeypatch.chdir(tmp_path)
    for service in ("log", "kzg", "lzg", "pixie", "pipeline"):
        monkeypatch.setenv(f"NOVABERG_{service.upper()}_ADDR", address)
    monkeypatch.setenv("NOVABERG_TLS_MODE", "plaintext")  # the fakes speak plaintext; without it: mTLS
    with rec.lock:
        rec.calls.clear()
    return rec


def test_recall_prints_the_memory_block_and_the_full_path(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "Was weißt du noch über Anna?", "--nova-emotion", "freude"]) == 0
    out = capsys.readouterr().out
    assert "came to mind via: shared entity Anna, shared theme Anna → shared theme Schokolade" in out
    assert ("path: #89 “Anna ist meine Schwester” → #247 “Anna hat mir damals immer Schokolade "
            "gegeben” → #412") in out
    assert "direct hit (schale 0)" in out
    assert "  | Drei Erinnerungen sind Nova gerade da." in out
    assert "served node ids: [89, 412]" in out
    (request,) = cli.of("BuildDossier")
    assert request.query_text == "Was weißt du noch über Anna?"
    assert request.nova_emotion == "freude" and list(request.readers) == ["analysis"]
    assert (request.pair.user_id, request.pair.character_id) == ("meister", "nova")


def test_a_service_error_is_one_line_and_exit_1(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "disco"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "error: pipeline.BuildDossier: INVALID_ARGUMENT: unknown cluster 'disco'; known: werkstatt, foyer\n"
    assert main(["observe", "bitte scheitern"]) == 1
    err = capsys.readouterr().err
    assert err == "error: pipeline.ObserveTurn: INVALID_ARGUMENT: analysis.salience.salienz must be in 0..1, got 7\n"
    assert main(["inspect", "--node", "99999"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "error: lzg.GetNode: NOT_FOUND: node 99999 of this pair does not exist\n"
    assert captured.out == ""  # no pair header before the error


def test_an_unreachable_service_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOVABERG_PIPELINE_ADDR", "127.0.0.1:1")
    monkeypatch.setenv("NOVABERG_TLS_MODE", "plaintext")
    assert main(["observe", "Hallo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: pipeline.ObserveTurn: UNAVAILABLE: ")
    assert err.count("\n") == 1


def test_observe_with_a_given_analysis_resolves_entities(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["observe", "Anna hat heute Geburtstag", "--salienz", "0.8", "--themen", "Anna, Geburtstag",
                 "--entity", "Anna", "--emotion", "freude", "--as-of", "2026-11-01T10:00"])  # fmt: skip
    assert code == 0
    (request,) = cli.of("ObserveTurn")
    assert request.analysis.salience.salienz == pytest.approx(0.8)
    assert list(request.analysis.salience.themen) == ["Anna", "Geburtstag"]
    assert list(request.analysis.magnets.entitaet_ids) == [ANNA]
    assert request.as_of.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    out = capsys.readouterr().out
    assert "KZG HIGH, salienz 0.881, TTL 30 d, queued for promotion" in out
    assert "analysis (given)" in out and "entities Anna" in out and f"#{ANNA}" not in out


def test_observe_refuses_analysis_fields_without_salience(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["observe", "Hallo", "--themen", "Anna"]) == 1
    assert capsys.readouterr().err == (
        "error: --themen/--entity/--emotion/--inhalt describe a given analysis and need --salienz\n"
    )
    assert cli.of("ObserveTurn") == []


def test_import_observes_every_turn_in_order_with_a_progress_bar(
    cli: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "turns.json"
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "text": f"Satz {i}",
              "as_of": f"2026-11-01T10:{i:02d}:00"} for i in range(6)]  # fmt: skip
    path.write_text(json.dumps({"turns": turns}))
    assert main(["import", str(path), "--user", "meister", "--promote"]) == 0
    (batch,) = cli.of("ObserveTurns")  # one pair's turns in one batch
    assert batch.pair == common_pb2.Pair(user_id="meister", character_id="nova")
    requests = list(batch.turns)
    assert [r.text for r in requests] == [f"Satz {i}" for i in range(6)]
    assert [r.beobachter for r in requests] == [common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT] * 3
    assert all(not r.HasField("analysis") for r in requests)  # the analyzer runs on imported turns
    assert requests[5].as_of.ToDatetime(tzinfo=UTC) == datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
    assert cli.of("ObserveTurn") == []
    captured = capsys.readouterr()
    # Not a terminal: the progress is plain lines (here the final one), never \r frames.
    assert "\r" not in captured.err and "6/6 100.0%" in captured.err and "ETA 0:00" in captured.err
    assert "pair meister · nova: 6 turns observed" in captured.out
    assert "KZG: high 6; 6 queued for promotion" in captured.out
    (trigger,) = cli.of("TriggerTask")
    assert trigger.task == "synapsen_promotion"
    # Every count in words: what deferred_locked means, not just its number.
    assert "     210 deferred_locked: were left for later: another Pixie worker" in captured.out
    assert "      40 promoted_new: became new nodes in the LZG" in captured.out


def test_import_sends_a_batch_again_after_an_outage(
    cli: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ObserveTurns is safe to resend: a batch that met an outage goes again (twice at most), then the
    import stops saying what to do."""
    monkeypatch.setattr(conversation, "IMPORT_RETRY_PAUSES_S", (0.0, 0.0))
    path = tmp_path / "turns.json"
    path.write_text(json.dumps({"turns": [{"role": "user", "text": "ausfall 2 Satz"}, {"role": "user", "text": "zwei"}]}))
    assert main(["import", str(path)]) == 0
    assert len(cli.of("ObserveTurns")) == 3
    captured = capsys.readouterr()
    assert captured.err.count("UNAVAILABLE: the pipeline restarts; sending the batch again in 0 s") == 2
    assert "pair meister · nova: 2 turns observed" in captured.out

    path.write_text(json.dumps({"turns": [{"role": "user", "text": "ausfall 3 Satz"}]}))
    assert main(["import", str(path)]) == 1
    assert capsys.readouterr().err.endswith(
        "error: pipeline.ObserveTurns: UNAVAILABLE: the pipeline restarts — the turns that arrived are kept; "
        "run the same import again to add the rest\n"
    )


def test_import_of_a_missing_file_is_one_line(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "nope.json"]) == 1
    assert capsys.readouterr().err.startswith("error: cannot read nope.json")


def test_inspect_lists_strongest_nodes_and_a_nodes_edges(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect"]) == 0
    out = capsys.readouterr().out
    assert "pair meister · nova: 3 active / 1 inactive nodes, 4 edges, 1 entities" in out
    lines = [line for line in out.splitlines() if line.startswith("  #")]
    assert lines[0].startswith("  #247") and "{Anna}" in lines[0]
    assert main(["inspect", "--node", str(SCHOKOLADE_NODE)]) == 0
    out = capsys.readouterr().out
    assert "3 edges (directed rows), strongest first" in out
    assert "→ #89" in out and "← #89" in out and "entity Anna; theme Anna" in out
    assert "→ #412" in out and "[themen] theme Schokolade" in out


def test_graph_writes_the_explorer_page_and_pictures(
    cli: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph"]) == 0
    data = payload_from_html((tmp_path / ".novaberg" / "graph-meister-nova.html").read_text())
    assert data["nodes"]["id"] == [SCHWESTER_NODE, SCHOKOLADE_NODE, LIEBE_NODE]  # active only by default
    assert len(data["edges"]["a"]) == 2 and data["entityNames"] == {str(ANNA): "Anna"}
    (request,) = cli.of("ListNodes")
    assert not request.include_inactive and request.limit == 5000
    assert main(["graph", "-o", str(tmp_path / "g.svg")]) == 0
    assert ET.parse(tmp_path / "g.svg").getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert main(["graph", "-o", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert capsys.readouterr().out.count("wrote") == 3


def test_graph_include_inactive_adds_them_even_past_the_limit(cli: Recorder, tmp_path: Path) -> None:
    # The inactive node ranks last by gewicht_decay: one ranked list cut at 2 would never reach it.
    assert main(["graph", "--include-inactive", "--limit", "2", "-o", str(tmp_path / "g.html")]) == 0
    data = payload_from_html((tmp_path / "g.html").read_text())
    shown = dict(zip(data["nodes"]["id"], data["nodes"]["active"], strict=True))
    assert shown == {SCHWESTER_NODE: 1, SCHOKOLADE_NODE: 1, METZGER_NODE: 0}
    assert len(data["edges"]["a"]) == 1  # 412 is not among the two strongest, so its lines are not drawn


def test_graph_with_a_wrong_suffix_fails_before_any_call(
    cli: Recorder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "-o", str(tmp_path / "graph.pdf")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write a graph to ") and err.count("\n") == 1
    assert "unknown suffix '.pdf'; use one of .html, .png, .svg" in err
    assert not (tmp_path / "graph.pdf").exists() and not cli.calls


def test_log_tells_a_turn_and_lists_the_last_turns(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["log", "t-1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "turn t-1: 3 rows"
    assert lines[2].endswith('  observe/eingang  {"text": "Anna hat Geburtstag"}  (meister)')
    assert ".000 observe/span_start" in lines[1]
    assert ".000   observe/eingang" in lines[2]  # indented inside its span
    assert ".000 observe/span_end" in lines[3]
    assert main(["log"]) == 0  # rows of any art: an imported turn has no turn_roh row
    out = capsys.readouterr().out
    assert out.startswith("last 1 turns of meister · nova, newest first")
    assert "t-1  Anna hat Geburtstag  [eingang, span_end, span_start]" in out
    assert main(["log", "--art", "turn_roh"]) == 0
    out = capsys.readouterr().out
    assert "with art turn_roh rows" in out and "t-1  Hallo Nova  [turn_roh]" in out


def test_pixie_tasks_and_trigger(cli: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["pixie", "tasks"]) == 0
    out = capsys.readouterr().out
    assert "synapsen_promotion   continuous     priority 0.90  PAUSED" in out
    assert main(["pixie", "trigger", "synapsen_decay", "--as-of", "2027-03-01T03:30", "--force"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run 7     synapsen_decay       ok") and "day 2027-03-01  nodes_decayed 13" in out
    (trigger,) = cli.of("TriggerTask")
    assert trigger.force and trigger.as_of.ToDatetime(tzinfo=UTC) == datetime(2027, 3, 1, 3, 30, tzinfo=UTC)
    assert list(trigger.pairs) == []  # all pairs (the service refuses it for an as_of in the future)
    assert main(["pixie", "trigger", "synapsen_decay", "--as-of", "2027-03-01T03:30", "--pair", "meister:nova",
                 "--pair", "anna:nova"]) == 0  # fmt: skip
    scoped = cli.of("TriggerTask")[-1]
    assert [(p.user_id, p.character_id) for p in scoped.pairs] == [("meister", "nova"), ("anna", "nova")]
    assert main(["pixie", "trigger", "synapsen_decay", "--pair", "meister"]) == 1
    assert "--pair must be USER:CHARACTER" in capsys.readouterr().err
    assert main(["pixie", "trigger", "synapsen_decay"]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "`novaberg pixie trigger synapsen_decay --force` runs it anyway" in out
    assert "force=true" not in out
