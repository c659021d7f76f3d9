"""``novaberg up`` (embedded stores, the five services, the demo, serving until a signal) and ``novaberg
demo``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from novaberg_dev.cli.common import (
    DEFAULT_DATA_DIR,
    DEFAULT_USER,
    STACK_FILE,
    CliError,
    running_stack_pid,
    write_stack_file,
)
from novaberg_dev.cli.graph import write_graph
from novaberg_dev.clients import DevClients

__all__ = ["cli_command", "cmd_demo", "run_up"]


async def cmd_demo(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from novaberg_dev.demo import load_script, run_demo

    script = load_script(args.demo_file) if args.demo_file else load_script()
    await run_demo(clients, script, out=out)
    return 0




def cli_command(data_dir: Path | None = None) -> str:
    """How to run ``novaberg`` from this shell: ``novaberg`` when it is on PATH, else the venv's
    script (``.venv/bin/novaberg``), else ``python -m novaberg_dev.cli``; plus ``--data-dir``
    when it is not the default."""
    script = Path(sys.executable).parent / "novaberg"
    found = shutil.which("novaberg")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        command = "novaberg"
    elif script.exists():
        try:
            command = str(script.absolute().relative_to(Path.cwd()))
        except ValueError:
            command = str(script.absolute())
    else:
        command = f"{sys.executable} -m novaberg_dev.cli"
    if data_dir is not None and data_dir != DEFAULT_DATA_DIR:
        command += f" --data-dir {data_dir}"
    return command


class _Launcher:
    """What ``up`` needs to end cleanly: SIGINT, SIGTERM and SIGHUP cancel the main task once (its
    ``finally`` stops the services), and output to a reader that left (``make run | tee`` after
    Ctrl-C: SIGPIPE, seen as BrokenPipeError) is dropped and ends the stack the same way."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.task = asyncio.current_task()
        self.reason: str | None = None
        self.exit_code = 0
        self.stopping = False
        """Set while the services stop: further signals are noted, not acted on (the stop is bounded)."""
        loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            loop.add_signal_handler(sig, self.end, sig.name, 128 + sig.value)

    def end(self, reason: str, exit_code: int) -> None:
        """Cancels the main task (once; a later signal changes nothing, the stop is under way)."""
        if self.stopping or self.reason is not None:
            if reason.startswith("SIG") and not reason.startswith("SIGPIPE"):
                self.say(f"{reason}: stopping already (each service gets at most 10 s), please wait")
            return
        if self.task is not None:
            self.reason, self.exit_code = reason, exit_code
            self.task.cancel()

    def say(self, line: str) -> None:
        """Print a line; when the reader has gone, drop output from now on and end the stack."""
        try:
            print(line, flush=True)
        except BrokenPipeError:
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            self.end("SIGPIPE (the output's reader has gone)", 141)

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            loop.remove_signal_handler(sig)


async def run_up(data_dir: Path, once: bool, demo: bool = True, demo_file: Path | None = None) -> int:
    from novaberg_dev.demo import load_script, run_demo
    from novaberg_dev.stack import SERVICES, Stack, start_stack

    script = load_script(demo_file) if demo_file else (load_script() if demo else None)
    running = running_stack_pid(data_dir)
    if running is not None:
        raise CliError(f"a stack started from {data_dir} is already running (pid {running}); stop it first "
                       "(Ctrl-C in its terminal) or use another --data-dir")
    launcher = _Launcher()
    say = launcher.say
    stack: Stack | None = None
    stack_file = data_dir / STACK_FILE
    serving = False
    try:
        say(f"starting embedded stores and {len(SERVICES)} services in {data_dir} …")
        stack = await start_stack(data_dir)
        say(f"postgres  {stack.urls.postgres_url}")
        say(f"redis     {stack.urls.redis_url}")
        for service in SERVICES:
            say(f"{service:9} {stack.addresses[service]}  SERVING  (log: {stack.log_path(service)}; "
                f"metrics: {stack.metrics_url(service)})")
        if stack.client_tls.enabled:
            say(f"mTLS      certificates of a throwaway CA in {stack.data_dir / 'tls'} (the CLI: operator)")
        stack_file = write_stack_file(
            data_dir, stack.addresses,
            {"postgres_url": stack.urls.postgres_url, "redis_url": stack.urls.redis_url,
             "tls": stack.client_tls.as_env(), "services": stack.pids,
             "metrics": {s: stack.metrics_url(s) for s in stack.metrics_ports}},
        )  # fmt: skip
        say(f"stack file {stack_file} (other novaberg commands find the services through it)")
        demo_user: str | None = None
        if script is not None:
            say("")
            async with DevClients(stack.addresses, tls=stack.client_tls) as clients:
                result = await run_demo(clients, script, out=say)
                graph = await write_graph(
                    clients, result.pair, data_dir / f"graph-{result.pair.user_id}-{result.pair.character_id}.html",
                    include_inactive=True,  # the demo's decay leaves inactive nodes: show them
                )
            say(f"\nthe memory graph of {result.pair.user_id} · {result.pair.character_id}: {graph}")
            demo_user = result.pair.user_id
        if once:
            return 0
        command = cli_command(data_dir)
        if demo_user is None:
            say(f"serving; try `{command} inspect` — Ctrl-C stops everything")
        else:
            user = "" if demo_user == DEFAULT_USER else f" --user {demo_user}"
            say(f"serving; try `{command} recall \"Was weißt du noch über Anna?\"{user}` — "
                "Ctrl-C stops everything")
        serving = True
        await asyncio.Event().wait()  # until a signal (or a gone reader) cancels this task
        return 0
    except asyncio.CancelledError:
        if launcher.reason is None:
            raise
        if not serving:
            say(f"interrupted by {launcher.reason}")
        return 0 if serving else launcher.exit_code
    finally:
        launcher.stopping = True
        try:
            if stack is not None:
                say("stopping services …")
                with contextlib.suppress(OSError):
                    stack_file.unlink()
                await stack.stop()
        finally:
            launcher.close()
