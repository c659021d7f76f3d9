"""Store fixtures shared by every test tier: real PostgreSQL + pgvector and real Redis + RediSearch.

By default the project's embedded stores (``novaberg_dev.embedded``) are started once per test
session in a temporary directory and stopped at its end. To run against stores you started
yourself, set both ``NOVABERG_TEST_POSTGRES_URL`` (a role that may create databases) and
``NOVABERG_TEST_REDIS_URL`` (a server with the search module; it is flushed before every test).

Tier-specific fixtures belong in ``tests/<tier>/conftest.py``.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from novaberg_dev.embedded import (
    StoreUrls,
    create_database,
    drop_database,
    ensure_vector_extension,
    reset_redis,
    start_stores,
    stop_stores,
)

TEST_TEMPLATE_DATABASE = "novaberg_test_template"
"""Empty database with the ``vector`` extension; every ``pg_url`` database is a copy of it."""

_database_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def store_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreUrls]:
    """Admin URLs of the session's stores: external ones from the environment, else embedded ones."""
    postgres_url = os.environ.get("NOVABERG_TEST_POSTGRES_URL")
    redis_url = os.environ.get("NOVABERG_TEST_REDIS_URL")
    if postgres_url and redis_url:
        yield StoreUrls(postgres_url=postgres_url, redis_url=redis_url)
        return
    if postgres_url or redis_url:
        raise pytest.UsageError("set both NOVABERG_TEST_POSTGRES_URL and NOVABERG_TEST_REDIS_URL, or neither")
    # Not under pytest's basetemp: a concurrent pytest session (another checkout on this machine)
    # prunes old basetemp directories, and a store whose data directory vanished dies mid-test.
    data_dir = Path(tempfile.mkdtemp(prefix="novaberg-test-stores-"))
    try:
        yield start_stores(data_dir, ephemeral=True)
    finally:
        stop_stores(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_template_database(store_urls: StoreUrls) -> str:
    """Name of the session's template database (empty, with ``vector``), rebuilt once per session."""
    drop_database(store_urls.postgres_url, TEST_TEMPLATE_DATABASE)
    ensure_vector_extension(create_database(store_urls.postgres_url, TEST_TEMPLATE_DATABASE))
    return TEST_TEMPLATE_DATABASE


@pytest.fixture
def pg_url(store_urls: StoreUrls, pg_template_database: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a fresh, empty database with the ``vector`` extension, dropped after the test."""
    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")
    name = f"t{os.getpid()}_{next(_database_numbers)}_{slug}"[:63]
    drop_database(store_urls.postgres_url, name)  # a leftover of a crashed run with the same pid
    url = create_database(store_urls.postgres_url, name, template=pg_template_database)
    try:
        yield url
    finally:
        drop_database(store_urls.postgres_url, name)


@pytest.fixture
def redis_url(store_urls: StoreUrls) -> str:
    """URL of the session's Redis after dropping every search index and ``FLUSHALL``."""
    reset_redis(store_urls.redis_url)
    return store_urls.redis_url
