"""The ``novaberg`` CLI against the running five-process stack (``observe``, ``import``, ``log``).

The CLI finds the stack the way a user's shell does: through ``<data-dir>/stack.json``
(written here with :func:`novaberg_dev.cli.write_stack_file`, as ``novaberg up`` writes it).
``main`` runs its own event loop, so each command runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg_core.timeutil import from_timestamp, utc_now
from novaberg_dev import cli
from novaberg_dev.stack import Stack
from tests.e2e.helpers import Clients
from tests.polling import eventually

USER, ASSISTANT = common_pb2.BEOBACHTER_USER, common_pb2.BEOBACHTER_ASSISTANT
OBSERVER = common_pb2.Pair(user_id="cli-meister", character_id="nova")
OBSERVED_TEXT = "I practise the cello every evening."

LOCOMO_START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023"
LOCOMO = [
    {
        "sample_id": "cli-conv",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds brave, Caroline. How was it?"},
                {"speaker": "Caroline", "dia_id": "D1:3", "text": "It was powerful.", "blip_caption": "a sign"},
                {"speaker": "Melanie", "dia_id": "D1:4", "text": "I painted a lake sunrise last week."},
            ],
        },
    }
]  # fmt: skip
# Pair of an imported LoCoMo sample: <sample_id>-<speaker_a> / <speaker_b>, slugged.
IMPORTED = common_pb2.Pair(user_id="cli-conv-caroline", character_id="melanie")


@pytest.fixture(scope="module")
def data_dir(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir whose stack.json names the running stack (pid: this live process)."""
    directory = tmp_path_factory.mktemp("cli-data")
    cli.write_stack_file(directory, stack.addresses, {"tls": stack.client_tls.as_env()})
    return directory


async def _novaberg(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> tuple[int, str]:
    """``novaberg <args> --data-dir <data_dir>``: exit code and what it printed on stdout."""
    capsys.readouterr()
    code = await asyncio.to_thread(cli.main, [*args, "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    assert code == 0, f"novaberg {' '.join(args)} exited {code}: {captured.err}"
    return code, captured.out


async def test_observe_writes_the_turn_into_session_and_kzg(
    clients: Clients, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    as_of = (utc_now() - timedelta(hours=1)).replace(second=0, microsecond=0)  # recent: inside the KZG TTL
    _, out = await _novaberg(
        capsys, data_dir, "observe", OBSERVED_TEXT, "--user", OBSERVER.user_id, "--character", OBSERVER.character_id,
        "--turn-id", "cli-observe-1", "--as-of", as_of.strftime("%Y-%m-%dT%H:%M"), "--salienz", "0.55",
        "--themen", "cello,evening",
    )  # fmt: skip
    match = re.search(r"turn cli-observe-1: KZG MID, .*\((kzg:[^)]+)\)", out)
    assert match, out
    entry = (await clients.kzg.GetEntry(kzg_pb2.GetEntryRequest(pair=OBSERVER, kzg_key=match.group(1)))).entry
    assert (entry.turn_id, entry.inhalt, entry.beobachter) == ("cli-observe-1", OBSERVED_TEXT, USER)
    assert list(entry.themen) == ["cello", "evening"] and from_timestamp(entry.erstellt_am) == as_of
    assert entry.dimension == "allgemein"  # the CLI's default life area (the pipeline refuses an empty one)
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=OBSERVER))
    assert [(t.turn_id, t.role, t.text) for t in session.turns] == [("cli-observe-1", "user", OBSERVED_TEXT)]


async def test_import_observes_every_locomo_turn_in_order(
    clients: Clients, data_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    _, out = await _novaberg(capsys, data_dir, "import", str(path))
    assert f"pair {IMPORTED.user_id} · {IMPORTED.character_id}: 4 turns observed" in out
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=IMPORTED))
    assert [(t.turn_id, t.role, t.text, from_timestamp(t.created_at)) for t in session.turns] == [
        ("cli-conv:D1:1", "user", "Hey Mel! I went to a support group yesterday.", LOCOMO_START),
        ("cli-conv:D1:2", "assistant", "That sounds brave, Caroline. How was it?", LOCOMO_START + timedelta(seconds=30)),
        ("cli-conv:D1:3", "user", "It was powerful. [image: a sign]", LOCOMO_START + timedelta(seconds=60)),
        ("cli-conv:D1:4", "assistant", "I painted a lake sunrise last week.", LOCOMO_START + timedelta(seconds=90)),
    ]  # fmt: skip
    # Run again (as after a failed run): every turn is there already, none is written twice.
    _, again = await _novaberg(capsys, data_dir, "import", str(path))
    assert f"pair {IMPORTED.user_id} · {IMPORTED.character_id}: 4 turns observed, 4 of them there already" in again
    assert "KZG: nothing new; 0 queued for promotion" in again
    resent = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=IMPORTED))
    assert list(resent.turns) == list(session.turns)


async def test_log_prints_the_rows_of_a_turn(
    clients: Clients, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _novaberg(
        capsys, data_dir, "observe", "Anna bakes bread on Sundays.", "--user", OBSERVER.user_id,
        "--turn-id", "cli-log-1", "--salienz", "0.4",
    )  # fmt: skip
    query = log_pb2.QueryRequest(turn_id="cli-log-1")
    await eventually(
        lambda: clients.log.Query(query),
        lambda answer: {("observe", "span_end"), ("session", "db_write")} <= {(r.node, r.art) for r in answer.records},
        what="the observe span of cli-log-1 and the KZG's session append in the pipeline log",
    )
    await asyncio.sleep(1.0)  # the KZG's rows of the turn flush on their own 0.2 s beat
    rows = await clients.log.Query(query)
    _, out = await _novaberg(capsys, data_dir, "log", "cli-log-1")
    lines = out.splitlines()
    assert lines[0] == f"turn cli-log-1: {len(rows.records)} rows"
    assert [line.split()[2] for line in lines[1:]] == [f"{r.node}/{r.art}" for r in rows.records]
    assert "observe/eingang" in out and "Anna bakes bread on Sundays." in out
    # The session append is logged once, by the KZG, where it happens.
    assert "session/db_write" in out and "observe/db_write" not in out
