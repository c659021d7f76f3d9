"""End-to-end fixtures: all five services as separate processes over gRPC, on real stores.

One stack per test module (``libs/novaberg_dev/stack.py``), on the session's embedded stores
with a database of its own and a flushed Redis. Tests use their own pairs, so they do not see
each other's memories; the pipeline-log writers flush every 0.2 s so log records can be read.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest

from novaberg_dev.embedded import (
    StoreUrls,
    create_database,
    drop_database,
    ensure_vector_extension,
    reset_redis,
)
from novaberg_dev.stack import SERVICES, Stack, start_stack
from tests.e2e.helpers import Clients

E2E_ENV = {
    "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN": "0.2",
    "NOVABERG_EMBEDDING": "minilm",
    "NOVABERG_LOG_LEVEL": "INFO",
}


@contextlib.asynccontextmanager
async def stack_of_its_own(
    store_urls: StoreUrls, data_dir: Path, name: str, services: Sequence[str], env: Mapping[str, str]
) -> AsyncIterator[Stack]:
    """``services`` as processes on a database ``name`` of their own (dropped afterwards) and a flushed Redis."""
    database = f"{name}_{os.getpid()}"
    drop_database(store_urls.postgres_url, database)
    url = create_database(store_urls.postgres_url, database)
    ensure_vector_extension(url)
    reset_redis(store_urls.redis_url)
    running = await start_stack(
        data_dir, urls=StoreUrls(postgres_url=url, redis_url=store_urls.redis_url), services=list(services),
        extra_env=dict(env),
    )  # fmt: skip
    try:
        yield running
    finally:
        await running.stop()
        drop_database(store_urls.postgres_url, database)


@pytest.fixture(scope="module")
async def stack(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """The five services as processes on a database of their own (dropped afterwards), one stack per module."""
    # Pixie starts once its peers serve: a promotion attempt that meets a peer still starting is
    # retried only after the worker's backoff (tens of seconds), longer than these tests wait.
    peers = [s for s in SERVICES if s != "pixie"]
    async with stack_of_its_own(store_urls, tmp_path_factory.mktemp("e2e-stack"), "e2e", peers, E2E_ENV) as running:
        running.start_service("pixie")
        await running.wait_serving("pixie")
        yield running


@pytest.fixture
async def clients(stack: Stack) -> AsyncIterator[Clients]:
    connected = Clients.connect(stack.addresses, stack.client_tls)
    try:
        yield connected
    finally:
        await connected.close()
