"""The shared service entry point as real processes (``novaberg_core.server.run_service``): SIGTERM
stops gracefully and runs the shutdown steps, a config error exits 2 naming the variable, the event
loop is the configured one (STYLE rule 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SERVICE = "novaberg.test.v1.EchoService"
REPO_ROOT = Path(__file__).resolve().parents[2]


_ENTRY_POINT = textwrap.dedent(
    f"""
    import logging
    from novaberg_core.config import CommonConfig
    from novaberg_core.server import run_server, run_service

    async def closed() -> None:
        logging.getLogger("echo").info("pool closed")

    async def main() -> None:
        cfg = CommonConfig.from_env("echo")
        await run_server(cfg, lambda server: None, [{SERVICE!r}], on_shutdown=[closed])

    run_service(main)
    """
)


def _python(code: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_sigterm_stops_gracefully_and_runs_shutdown_steps() -> None:
    proc = _python(
        _ENTRY_POINT, {"NOVABERG_ECHO_PORT": "0", "NOVABERG_ECHO_GRACE_SECONDS": "1", "NOVABERG_TLS_MODE": "plaintext"}
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "echo: serving" in line or not line:
            break
    assert any("echo: serving" in line for line in lines), lines
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    log = "".join(lines) + out
    assert proc.returncode == 0, log
    assert "SIGTERM received" in log and "pool closed" in log and "echo: stopped" in log
    assert log.index("pool closed") < log.index("echo: stopped")


def test_config_error_exits_2_naming_the_variable() -> None:
    proc = _python(_ENTRY_POINT, {"NOVABERG_ECHO_PORT": "abc"})
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2, out
    assert "NOVABERG_ECHO_PORT must be an integer, got 'abc'" in out
    assert "Traceback" not in out


def test_a_store_that_refuses_to_open_exits_1_with_its_message_alone(tmp_path: Path) -> None:
    script = tmp_path / "refused.py"
    script.write_text(
        "from novaberg_core.errors import MigrationMismatch\n"
        "from novaberg_core.server import run_service\n"
        "async def main():\n"
        "    raise MigrationMismatch('schema lzg was migrated by other files than this build')\n"
        "run_service(main)\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "cannot start: schema lzg was migrated by other files than this build" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_service_process_runs_on_the_configured_event_loop(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(
        "import asyncio\n"
        "from novaberg_core.server import run_service\n"
        "async def main():\n"
        "    print(type(asyncio.get_running_loop()).__module__)\n"
        "run_service(main)\n",
        encoding="utf-8",
    )
    for choice, module in (("uvloop", "uvloop"), ("asyncio", "asyncio.unix_events"), (None, "uvloop")):
        env = {k: v for k, v in os.environ.items() if k != "NOVABERG_EVENT_LOOP"}
        if choice is not None:
            env["NOVABERG_EVENT_LOOP"] = choice
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == module
    env = {**os.environ, "NOVABERG_EVENT_LOOP": "trio"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "NOVABERG_EVENT_LOOP must be one of uvloop, asyncio" in done.stderr
