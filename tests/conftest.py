"""Store fixtures shared by every test tier: real PostgreSQL + pgvector and real Redis + RediSearch.

By default the project's embedded stores (``novaberg_dev.embedded``) are started once per test
session in a temporary directory and stopped at its end. To run against stores you started
yourself, set both ``NOVABERG_TEST_POSTGRES_URL`` (a role that may create databases) and
``NOVABERG_TEST_REDIS_URL`` (a server with the search module; it is flushed before every test).

Tier-specific fixtures belong in ``tests/<tier>/conftest.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
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
"""Empty database with the ``vector`` extension; every ``pg_url`` database is a copy of it or of a
migrated template made from it (:func:`migrated_template`)."""

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


MigrateDatabase = Callable[[str], Awaitable[object]]
"""Migrates the database at a URL and closes its connections (a template in use cannot be copied)."""


@pytest.fixture(scope="session")
def migrated_template(
    store_urls: StoreUrls, pg_template_database: str
) -> Callable[[str, MigrateDatabase], Awaitable[str]]:
    """Makes a template database: a copy of the empty template, migrated once, named by its key.

    For a session-scoped override of :func:`pg_url_template`, so a folder's tests each get a copy
    of a schema migrated once per session instead of migrating their own (procrastinate's way)::

        @pytest.fixture(scope="session")
        async def pg_url_template(migrated_template):
            return await migrated_template("lzg_8", migrate_lzg)
    """

    async def make(key: str, migrate: MigrateDatabase) -> str:
        name = f"{TEST_TEMPLATE_DATABASE}_{key}"
        drop_database(store_urls.postgres_url, name)
        await migrate(create_database(store_urls.postgres_url, name, template=pg_template_database))
        return name

    return make


@pytest.fixture(scope="session")
def pg_url_template(pg_template_database: str) -> str:
    """The template a ``pg_url`` database copies: the empty one, unless a conftest overrides this
    fixture with one made by :func:`migrated_template`."""
    return pg_template_database


@contextlib.contextmanager
def _database_copy(store_urls: StoreUrls, template: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a fresh copy of ``template`` named after the test, dropped afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")
    name = f"t{os.getpid()}_{next(_database_numbers)}_{slug}"[:63]
    drop_database(store_urls.postgres_url, name)  # a leftover of a crashed run with the same pid
    url = create_database(store_urls.postgres_url, name, template=template)
    try:
        yield url
    finally:
        drop_database(store_urls.postgres_url, name)


@pytest.fixture
def pg_url(store_urls: StoreUrls, pg_url_template: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a fresh database, a copy of :func:`pg_url_template` (by default empty, with the
    ``vector`` extension), dropped after the test."""
    with _database_copy(store_urls, pg_url_template, request) as url:
        yield url


@pytest.fixture
def empty_pg_url(store_urls: StoreUrls, pg_template_database: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """URL of a fresh, empty database with the ``vector`` extension even where :func:`pg_url_template`
    is a migrated one: for a test that runs migrations from the start itself."""
    with _database_copy(store_urls, pg_template_database, request) as url:
        yield url


@pytest.fixture
def redis_url(store_urls: StoreUrls) -> str:
    """URL of the session's Redis after dropping every search index and ``FLUSHALL``."""
    reset_redis(store_urls.redis_url)
    return store_urls.redis_url
