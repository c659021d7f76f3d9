"""What both embedded servers share: the data directory's state file (``stores.json``) and its lock,
the records of the servers, free ports, and waiting for or signalling a process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import random
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil

__all__ = [
    "DEFAULT_DATA_DIR",
    "HOST",
    "PORT_ATTEMPTS",
    "EmbeddedStoreError",
    "StoreProcess",
    "StoreUrls",
    "StoresStatus",
    "candidate_ports",
    "free_port",
    "free_ports",
    "kill",
    "kill_unless_exited",
    "locked",
    "log_tail",
    "process_alive",
    "read_state",
    "record_entry",
    "recorded_port",
    "recorded_server_serves",
    "resolve_data_dir",
    "send_signal",
    "server_pid",
    "start_on_a_free_port",
    "state_entry",
    "stop_server",
    "wait_for_exit",
    "write_state",
]


_logger = logging.getLogger("novaberg.embedded")
_T = TypeVar("_T")

DEFAULT_DATA_DIR = Path(".novaberg/stores")
"""Data directory of ``make run`` (relative to the repository root) when none is given."""

HOST = "127.0.0.1"
_STATE_FILE = "stores.json"
_LOCK_FILE = ".stores.lock"
PORT_ATTEMPTS = 3


class EmbeddedStoreError(RuntimeError):
    """A store could not be started, reached or stopped; the message names the log to read."""


@dataclass(frozen=True)
class StoreUrls:
    """Connection URLs of the two stores."""

    postgres_url: str
    """``postgresql://postgres@127.0.0.1:<port>/novaberg`` (superuser; may create databases)."""
    redis_url: str
    """``redis://127.0.0.1:<port>/0`` (Valkey with the RediSearch module)."""


@dataclass(frozen=True)
class StoreProcess:
    """One server process as recorded in the state file, and whether it is alive and answers."""

    name: str
    """``postgres`` or ``redis``."""
    pid: int
    port: int
    url: str
    log_path: Path
    running: bool
    """The pid is alive and the server answered ``SELECT 1`` / ``PING`` just now."""


@dataclass(frozen=True)
class StoresStatus:
    """What ``stores_status`` found in a data directory."""

    data_dir: Path
    postgres: StoreProcess | None
    """None when no state was recorded (never started, or stopped)."""
    redis: StoreProcess | None

    @property
    def running(self) -> bool:
        """Both servers are alive and answering."""
        return bool(self.postgres and self.postgres.running and self.redis and self.redis.running)

    @property
    def urls(self) -> StoreUrls | None:
        """The URLs when both servers run, else None."""
        if not self.running:
            return None
        assert self.postgres is not None and self.redis is not None
        return StoreUrls(postgres_url=self.postgres.url, redis_url=self.redis.url)



def resolve_data_dir(data_dir: Path | str) -> Path:
    return Path(data_dir).expanduser().resolve()


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Serialize start/stop of one data directory across processes."""
    with open(root / _LOCK_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_state(root: Path) -> dict[str, dict[str, Any]]:
    path = root / _STATE_FILE
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:
        _logger.warning("ignoring unreadable state file %s", path)
        return {}
    return loaded if isinstance(loaded, dict) else {}


def write_state(root: Path, state: dict[str, dict[str, Any]]) -> None:
    path = root / _STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def state_entry(pid: int, port: int, url: str, log: Path) -> dict[str, Any]:
    return {"pid": pid, "port": port, "url": url, "log": str(log)}


def recorded_port(state: dict[str, dict[str, Any]], name: str) -> int | None:
    """The port this data directory's server had last time (kept across ``stop_stores``)."""
    port = state.get("last_ports", {}).get(name)
    return int(port) if port is not None else None


def record_entry(state: dict[str, dict[str, Any]], name: str, entry: dict[str, Any]) -> None:
    state[name] = entry
    state.setdefault("last_ports", {})[name] = int(entry["port"])


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 10_000
"""Listening ports are drawn from here up to the kernel's ephemeral range."""


def free_port() -> int:
    """A TCP port free on ``HOST`` now, below the kernel's ephemeral range where the host allows.

    A port the kernel handed out by ``bind(0)`` comes from the ephemeral range, from which every
    outgoing connection (a database client, a gRPC channel) also draws its local port: between
    this check and the server's own bind, one of them may take it (seen: a service exiting with
    "cannot listen on 127.0.0.1:45745"). Below that range no connection draws a port, so only
    another listener could — the embedded stores retry for that (``start_on_a_free_port``).
    """
    try:
        low = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    if low > _LOWEST_PORT + 1000:
        for _ in range(100):
            port = random.randrange(_LOWEST_PORT, low)
            if _port_is_free(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports, each free on ``HOST`` now (``free_port``).

    Ports drawn one by one for servers that have not bound yet can repeat: nothing holds the first
    while the second is drawn (seen: a stack's pipeline exiting with "cannot listen on
    127.0.0.1:11051", the port drawn for another of its listeners too).
    """
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like both servers: a port whose old connections linger in TIME_WAIT is free to listen on.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def candidate_ports(previous: int | None) -> Iterator[int]:
    """The previous port first (stable URLs across restarts) when free, then fresh free ports."""
    if previous is not None and _port_is_free(previous):
        yield previous
    while True:
        yield free_port()



def start_on_a_free_port(
    name: str,
    where: Path,
    log: Path,
    previous_port: int | None,
    start: Callable[[int], _T | None],
    retry_on: tuple[type[BaseException], ...] = (),
) -> _T:
    """``start(port)`` on up to :data:`PORT_ATTEMPTS` candidate ports (the previous one first) until it
    returns what it started; None or an exception of ``retry_on`` means "not on this port"."""
    ports = candidate_ports(previous_port)
    failure: BaseException | None = None
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = next(ports)
        try:
            started = start(port)
        except retry_on as exc:
            started, failure = None, exc
        if started is not None:
            return started
        if attempt < PORT_ATTEMPTS:
            _logger.warning("%s did not start on port %s, retrying: %s", name, port, log_tail(log, 3))
    raise EmbeddedStoreError(f"{name} did not start in {where}; log {log}:\n{log_tail(log)}") from failure


def recorded_server_serves(entry: dict[str, Any] | None, answers: Callable[[str], bool], name: str) -> bool:
    """The server the state file records is alive and answers at its URL (so it is reused)."""
    if entry is not None and process_alive(int(entry["pid"])) and answers(str(entry["url"])):
        _logger.info("reusing %s pid %s on port %s", name, entry["pid"], entry["port"])
        return True
    return False


def process_alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its reaper counts as exited)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_for_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def send_signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def kill(pid: int) -> None:
    """SIGKILL ``pid`` and wait up to 5 s for it to go."""
    send_signal(pid, signal.SIGKILL)
    wait_for_exit(pid, 5.0)


def kill_unless_exited(pid: int, timeout: float, name: str) -> None:
    """Wait up to ``timeout`` s for ``pid`` (a ``name`` server asked to stop) to exit; kill a survivor."""
    if not wait_for_exit(pid, timeout):
        _logger.warning("%s pid %s still alive after %.0fs; killing it", name, pid, timeout)
        kill(pid)


def server_pid(found: int | None, entry: dict[str, Any] | None) -> int | None:
    """The pid to stop: ``found`` (the server's own pid file), else the state entry's while it is alive."""
    if found is None and entry is not None and process_alive(int(entry["pid"])):
        return int(entry["pid"])
    return found


def stop_server(
    name: str, found: int | None, entry: dict[str, Any] | None, timeout: float, ask: Callable[[int], None]
) -> None:
    """Stop a ``name`` server (:func:`server_pid` picks its pid): ``ask(pid)`` to shut down, then wait up to
    ``timeout`` s and kill a survivor. Nothing to do when no server runs."""
    pid = server_pid(found, entry)
    if pid is not None:
        ask(pid)
        kill_unless_exited(pid, timeout, name)


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
