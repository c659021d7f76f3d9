"""How the CLI finds a running stack: ``up`` writes ``<data-dir>/stack.json``; the other commands
read it (``--data-dir`` or the default ``.novaberg``), with ``NOVABERG_<SVC>_ADDR`` overriding it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from novaberg_dev.cli import STACK_FILE, CliError, main, read_addresses, running_stack_pid, write_stack_file

ADDRESSES = {"log": "127.0.0.1:5001", "kzg": "127.0.0.1:5002", "lzg": "127.0.0.1:5003",
             "pixie": "127.0.0.1:5004", "pipeline": "127.0.0.1:5005"}  # fmt: skip


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_written_stack_file_is_read_back_from_an_explicit_data_dir(tmp_path: Path) -> None:
    path = write_stack_file(tmp_path / "stack", ADDRESSES, {"redis_url": "redis://x"})
    assert path == tmp_path / "stack" / STACK_FILE
    payload = json.loads(path.read_text())
    assert payload["pid"] == os.getpid() and payload["redis_url"] == "redis://x"
    # An explicit --data-dir ignores the environment.
    env = {"NOVABERG_PIPELINE_ADDR": "10.0.0.1:1"}
    assert read_addresses(tmp_path / "stack", env) == ADDRESSES


def test_default_data_dir_and_environment_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_stack_file(Path(".novaberg"), ADDRESSES)
    assert read_addresses(None, {}) == ADDRESSES
    merged = read_addresses(None, {"NOVABERG_PIPELINE_ADDR": "10.0.0.1:7000"})
    assert merged["pipeline"] == "10.0.0.1:7000" and merged["lzg"] == ADDRESSES["lzg"]


def test_environment_alone_is_enough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert read_addresses(None, {"NOVABERG_LOG_ADDR": "h:1"}) == {"log": "h:1"}


def test_no_stack_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CliError, match=r"no running stack found: .novaberg/stack.json does not exist"):
        read_addresses(None, {})
    with pytest.raises(CliError, match=r"novaberg up --data-dir"):
        read_addresses(tmp_path / "elsewhere", {})


def test_a_stale_stack_file_is_refused(tmp_path: Path) -> None:
    path = write_stack_file(tmp_path, ADDRESSES)
    payload = json.loads(path.read_text())
    payload["pid"] = dead_pid()
    path.write_text(json.dumps(payload))
    with pytest.raises(CliError, match=r"is stale: the stack that wrote it \(pid \d+\) is not running"):
        read_addresses(tmp_path, {})


def test_a_broken_stack_file_is_named(tmp_path: Path) -> None:
    (tmp_path / STACK_FILE).write_text("{not json")
    with pytest.raises(CliError, match=r"is not a stack file"):
        read_addresses(tmp_path, {})


def test_a_live_stack_is_found_and_a_stale_one_is_not(tmp_path: Path) -> None:
    assert running_stack_pid(tmp_path) is None  # no file
    path = write_stack_file(tmp_path, ADDRESSES)
    assert running_stack_pid(tmp_path) is None  # written by this very process
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        payload = json.loads(path.read_text())
        payload["pid"] = sleeper.pid
        path.write_text(json.dumps(payload))
        assert running_stack_pid(tmp_path) == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
    assert running_stack_pid(tmp_path) is None


def test_up_refuses_a_data_dir_whose_stack_is_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        path = write_stack_file(tmp_path, ADDRESSES)
        payload = json.loads(path.read_text())
        payload["pid"] = sleeper.pid
        path.write_text(json.dumps(payload))
        assert main(["up", "--data-dir", str(tmp_path), "--once"]) == 1
    finally:
        sleeper.kill()
        sleeper.wait()
    err = capsys.readouterr().err
    assert err == (f"error: a stack started from {tmp_path} is already running (pid {sleeper.pid}); stop it first "
                   "(Ctrl-C in its terminal) or use another --data-dir\n")
    assert not (tmp_path / "stores").exists()  # nothing was started
