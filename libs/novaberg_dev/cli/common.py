"""What every ``novaberg`` command shares: where the stack is (``<data-dir>/stack.json`` or
``NOVABERG_<SVC>_ADDR``), how the CLI connects, the user's errors, small formatting helpers and the
progress bar.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time as clock
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.env import ConfigError
from novaberg_core.model import Beobachter
from novaberg_core.timeutil import utc_now
from novaberg_core.tls import PLAINTEXT, TlsConfig
from novaberg_dev.clients import DevClients

__all__ = [
    "DEFAULT_CHARACTER",
    "DEFAULT_DATA_DIR",
    "DEFAULT_USER",
    "SERVICE_NAMES",
    "STACK_FILE",
    "CliError",
    "ProgressBar",
    "beobachter_name",
    "entity_names",
    "node_texts",
    "pair_of",
    "parse_as_of",
    "read_addresses",
    "read_client_tls",
    "require_services",
    "running_stack_pid",
    "shorten",
    "write_stack_file",
]


SERVICE_NAMES: tuple[str, ...] = ("log", "kzg", "lzg", "pixie", "pipeline")
DEFAULT_DATA_DIR = Path(".novaberg")
STACK_FILE = "stack.json"
DEFAULT_USER = "meister"
DEFAULT_CHARACTER = "nova"


class CliError(Exception):
    """A problem the user can fix (no stack found, bad file, bad option); printed as one line."""


# --------------------------------------------------------------------------- where the stack is


def write_stack_file(data_dir: Path, addresses: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> Path:
    """Writes ``<data_dir>/stack.json`` (addresses, pid, start time) for the other commands."""
    path = data_dir / STACK_FILE
    payload = {"addresses": dict(addresses), "pid": os.getpid(), "started_at": utc_now().isoformat(), **(extra or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_stack_pid(data_dir: Path) -> int | None:
    """The pid of a live ``novaberg up`` that wrote ``<data_dir>/stack.json``, else None."""
    try:
        pid = int(json.loads((data_dir / STACK_FILE).read_text(encoding="utf-8")).get("pid", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return pid if pid and pid != os.getpid() and _pid_alive(pid) else None


def read_addresses(data_dir: Path | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Service addresses: ``--data-dir``'s stack.json when given; else ``NOVABERG_<SVC>_ADDR`` over
    the default ``.novaberg/stack.json``. A missing or stale stack file is a :class:`CliError`."""
    env = os.environ if environ is None else environ
    explicit = data_dir is not None
    path = (data_dir if explicit else DEFAULT_DATA_DIR) / STACK_FILE  # type: ignore[operator]
    addresses: dict[str, str] = {}
    if path.exists():
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            addresses = {str(k): str(v) for k, v in payload["addresses"].items()}
            pid = int(payload.get("pid", 0))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise CliError(f"{path} is not a stack file ({error})") from None
        if pid and not _pid_alive(pid):
            if explicit or not any(env.get(f"NOVABERG_{s.upper()}_ADDR") for s in SERVICE_NAMES):
                raise CliError(f"{path} is stale: the stack that wrote it (pid {pid}) is not running; "
                               "start one with `novaberg up`")
            addresses = {}
    elif explicit:
        raise CliError(f"no running stack found: {path} does not exist (start one with `novaberg up --data-dir "
                       f"{data_dir}`)")
    if not explicit:
        for service in SERVICE_NAMES:
            value = env.get(f"NOVABERG_{service.upper()}_ADDR", "").strip()
            if value:
                addresses[service] = value
    if not addresses:
        raise CliError(f"no running stack found: {path} does not exist and no NOVABERG_<SVC>_ADDR is set "
                       "(start one with `novaberg up`)")
    return addresses


def read_client_tls(data_dir: Path | None, environ: Mapping[str, str] | None = None) -> TlsConfig:
    """How the CLI connects: the stack file's ``tls`` (the stack's operator certificate; a stack file
    without one is a plaintext stack) when the addresses come from it, else ``NOVABERG_TLS_*``."""
    env = os.environ if environ is None else environ
    from_env = data_dir is None and any(env.get(f"NOVABERG_{s.upper()}_ADDR", "").strip() for s in SERVICE_NAMES)
    try:
        if from_env:
            return TlsConfig.from_env(env)
        path = (data_dir or DEFAULT_DATA_DIR) / STACK_FILE
        try:
            entry = json.loads(path.read_text(encoding="utf-8")).get("tls")
        except (OSError, ValueError, AttributeError):
            return PLAINTEXT  # read_addresses reports a missing or broken stack file
        return TlsConfig.from_env({str(k): str(v) for k, v in entry.items()}) if isinstance(entry, dict) else PLAINTEXT
    except ConfigError as error:
        raise CliError(str(error)) from None


def require_services(addresses: Mapping[str, str], *services: str) -> None:
    for service in services:
        if not addresses.get(service):
            raise CliError(f"no address for the {service} service (set NOVABERG_{service.upper()}_ADDR or use "
                           "a stack started by `novaberg up`)")


# --------------------------------------------------------------------------- small helpers


def parse_as_of(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"--as-of must be an ISO date/time like 2026-11-29T10:00, got {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def pair_of(args: argparse.Namespace) -> common_pb2.Pair:
    return common_pb2.Pair(user_id=args.user, character_id=args.character)


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def beobachter_name(value: int) -> str:
    return Beobachter.name_of_proto(value, "?")


async def entity_names(clients: DevClients, pair: common_pb2.Pair) -> dict[int, str]:
    listed = await clients.call("lzg", "ListEntities", lzg_pb2.ListEntitiesRequest(pair=pair))
    return {e.id: e.name for e in listed.entities}


async def node_texts(clients: DevClients, pair: common_pb2.Pair) -> dict[int, str]:
    listed = await clients.call(
        "lzg", "ListNodes", lzg_pb2.ListNodesRequest(pair=pair, limit=1000, include_inactive=True)
    )
    return {n.id: n.inhalt for n in listed.nodes}


class ProgressBar:
    """Progress with rate and ETA: one line redrawn with ``\\r`` on a terminal, else a line every ``every_s``.

    ``live`` (default: whether ``stream`` is a terminal) chooses the redrawn line; a redirected
    stream (a log file, ``| tee``) gets plain lines instead of one frame per step.
    """

    def __init__(
        self,
        total: int,
        *,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        live: bool | None = None,
        every_s: float = 5.0,
    ) -> None:
        self.total = max(total, 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        isatty = getattr(self.stream, "isatty", None)
        self.live = live if live is not None else bool(isatty and isatty())
        self.every_s = every_s
        self.done = 0
        self.started = clock.monotonic()
        self._printed = -1
        self._printed_at = self.started

    def render(self) -> str:
        share = self.done / self.total if self.total else 1.0
        filled = round(share * self.width)
        elapsed = max(clock.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        remaining = max(self.total - self.done, 0)
        eta = _duration(remaining / rate) if rate > 0 else "--:--"
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} "
                f"{share * 100:5.1f}% {rate:6.1f}/s ETA {eta}")

    def advance(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total) if self.total else self.done + n
        if self.live:
            self.stream.write("\r" + self.render())
            self.stream.flush()
        elif clock.monotonic() - self._printed_at >= self.every_s:
            self._line()

    def note(self, message: str) -> None:
        """A line of its own above the progress: a live bar is cleared first and drawn again below it."""
        if self.live:
            self.stream.write("\r\x1b[K" + message + "\n" + self.render())
        else:
            self.stream.write(message + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\r" + self.render() + "\n")
            self.stream.flush()
        elif self._printed != self.done:
            self._line()

    def _line(self) -> None:
        self.stream.write(self.render() + "\n")
        self.stream.flush()
        self._printed, self._printed_at = self.done, clock.monotonic()


def _duration(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
