"""``novaberg up`` and its services live and die together (issue 16): killed or interrupted under
``make run | tee``, the launcher leaves no service process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import eventually


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def _gone(pids: list[int], within: float) -> None:
    """Every one of ``pids`` has ended within ``within`` s."""
    await eventually(
        lambda: [pid for pid in pids if _alive(pid)], lambda left: not left, within=within, every=0.2,
        what="the service processes to end",
    )  # fmt: skip


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

    async def service_pids(self, within: float = 150.0) -> dict[str, int]:
        """The service pids from the stack file, once every service serves."""
        path = self.data_dir / "stack.json"

        def written() -> bool:
            assert self.process.poll() is None, f"novaberg up exited {self.process.returncode}"
            return path.exists()

        await eventually(written, bool, within=within, every=0.2, what="novaberg up's stack file")
        pids = json.loads(path.read_text())["services"]
        return {str(name): int(pid) for name, pid in pids.items()}

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


async def test_killing_the_launcher_takes_its_services_with_it(up: Up) -> None:
    pids = await up.service_pids()
    assert set(pids) == {"log", "kzg", "lzg", "pixie", "pipeline"} and all(map(_alive, pids.values()))
    up.process.kill()  # SIGKILL: no finally, no stop — the kernel tells the services (PDEATHSIG)
    up.process.wait()
    await _gone(list(pids.values()), within=30.0)


async def test_ctrl_c_under_a_tee_that_died_stops_everything(up: Up) -> None:
    pids = await up.service_pids()
    assert up.process.stdout is not None
    up.process.stdout.close()  # `make run | tee`: Ctrl-C ends tee first, the pipe has no reader
    up.process.send_signal(signal.SIGINT)
    assert up.process.wait(timeout=90) == 0
    await _gone(list(pids.values()), within=5.0)
    assert not (up.data_dir / "stack.json").exists()
