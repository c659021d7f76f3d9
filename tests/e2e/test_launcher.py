"""``novaberg up`` and its services live and die together (issue 16): killed or interrupted under
``make run | tee``, the launcher leaves no service process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_gone(pids: list[int], within: float) -> list[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [pid for pid in pids if _alive(pid)]
        if not left:
            return []
        time.sleep(0.2)
    return [pid for pid in pids if _alive(pid)]


class Up:
    """A ``novaberg up --no-demo`` in a data dir of its own, its stdout a pipe (``| tee``)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOVABERG_")}
        env["NOVABERG_EMBEDDING"] = "minilm"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "novaberg_dev.cli", "up", "--no-demo", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip

    def service_pids(self, within: float = 150.0) -> dict[str, int]:
        """The service pids from the stack file, once every service serves."""
        path = self.data_dir / "stack.json"
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"novaberg up exited {self.process.returncode}"
            if path.exists():
                pids = json.loads(path.read_text())["services"]
                return {str(name): int(pid) for name, pid in pids.items()}
            time.sleep(0.2)
        raise AssertionError("novaberg up did not write its stack file")

    def stop_stores(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "novaberg_dev.embedded", "down", "--data-dir",
             str(self.data_dir / "stores")],
            capture_output=True, timeout=120,
        )  # fmt: skip


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    launched = Up(tmp_path / "novaberg")
    try:
        yield launched
    finally:
        if launched.process.poll() is None:
            launched.process.kill()
            launched.process.wait()
        launched.stop_stores()


def test_killing_the_launcher_takes_its_services_with_it(up: Up) -> None:
    pids = up.service_pids()
    assert set(pids) == {"log", "kzg", "lzg", "pixie", "pipeline"} and all(map(_alive, pids.values()))
    up.process.kill()  # SIGKILL: no finally, no stop — the kernel tells the services (PDEATHSIG)
    up.process.wait()
    assert _wait_gone(list(pids.values()), within=30.0) == []


def test_ctrl_c_under_a_tee_that_died_stops_everything(up: Up) -> None:
    pids = up.service_pids()
    assert up.process.stdout is not None
    up.process.stdout.close()  # `make run | tee`: Ctrl-C ends tee first, the pipe has no reader
    up.process.send_signal(signal.SIGINT)
    assert up.process.wait(timeout=90) == 0
    assert _wait_gone(list(pids.values()), within=5.0) == []
    assert not (up.data_dir / "stack.json").exists()
