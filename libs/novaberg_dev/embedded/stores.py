"""Both stores of one data directory together: start (or reuse), stop, and report them."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from novaberg_dev.embedded.postgres import postgres_answers, reuse_postgres, start_postgres, stop_postgres
from novaberg_dev.embedded.state import (
    StoreProcess,
    StoresStatus,
    StoreUrls,
    locked,
    process_alive,
    read_state,
    record_entry,
    recorded_port,
    resolve_data_dir,
    write_state,
)
from novaberg_dev.embedded.valkey import redis_answers, reuse_redis, start_redis, stop_redis

__all__ = ["start_stores", "stop_stores", "stores_status"]


_logger = logging.getLogger("novaberg.embedded")

def start_stores(data_dir: Path | str, *, ephemeral: bool = False, timeout: float = 30.0) -> StoreUrls:
    """Start (or reuse) PostgreSQL and Redis for ``data_dir``; returns their URLs.

    Idempotent: a server recorded in ``stores.json`` whose pid is alive and which answers is
    reused with the same port. ``ephemeral=True`` (tests) trades durability for speed:
    PostgreSQL without fsync, Redis without RDB/AOF. Otherwise Redis keeps an append-only file
    in ``<data_dir>/redis`` and PostgreSQL is fully durable. The mode applies when a server is
    (re)started, not to a reused one.
    """
    root = resolve_data_dir(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with locked(root):
        state = read_state(root)
        postgres = reuse_postgres(root, state.get("postgres"))
        if postgres is None:
            postgres = start_postgres(root, recorded_port(state, "postgres"), ephemeral, timeout)
        record_entry(state, "postgres", postgres)
        write_state(root, state)
        redis_entry = reuse_redis(root, state.get("redis"))
        if redis_entry is None:
            redis_entry = start_redis(root, recorded_port(state, "redis"), ephemeral, timeout)
        record_entry(state, "redis", redis_entry)
        write_state(root, state)
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
    root = resolve_data_dir(data_dir)
    if not root.exists():
        return
    with locked(root):
        state = read_state(root)
        stop_redis(root, state.get("redis"), timeout)
        state.pop("redis", None)
        write_state(root, state)
        stop_postgres(root, state.get("postgres"), timeout)
        state.pop("postgres", None)
        write_state(root, state)


def stores_status(data_dir: Path | str) -> StoresStatus:
    """Report the recorded servers of ``data_dir`` and whether each is alive and answering."""
    root = resolve_data_dir(data_dir)
    state = read_state(root) if root.exists() else {}
    found: dict[str, StoreProcess | None] = {}
    for name, probe in (("postgres", postgres_answers), ("redis", redis_answers)):
        entry = state.get(name)
        if entry is None:
            found[name] = None
            continue
        pid, port, url = int(entry["pid"]), int(entry["port"]), str(entry["url"])
        running = process_alive(pid) and probe(url)
        found[name] = StoreProcess(name, pid, port, url, Path(str(entry["log"])), running)
    return StoresStatus(data_dir=root, postgres=found["postgres"], redis=found["redis"])
