"""End-to-end fixtures: all five services as separate processes over gRPC, on real stores.

One stack per test module (``libs/novaberg_dev/stack.py``), on the session's embedded stores
with a database of its own and a flushed Redis. Tests use their own pairs, so they do not see
each other's memories; the pipeline-log writers flush every 0.2 s so log records can be read.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
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


@pytest.fixture(scope="module")
async def stack(store_urls: StoreUrls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """The five services as processes on a database of their own (dropped afterwards), one stack per module."""
    name = f"e2e_{os.getpid()}"
    drop_database(store_urls.postgres_url, name)
    url = create_database(store_urls.postgres_url, name)
    ensure_vector_extension(url)
    reset_redis(store_urls.redis_url)
    data_dir: Path = tmp_path_factory.mktemp("e2e-stack")
    # Pixie starts once its peers serve: a promotion attempt that meets a peer still starting is
    # retried only after the worker's backoff (tens of seconds), longer than these tests wait.
    running = await start_stack(
        data_dir,
        urls=StoreUrls(postgres_url=url, redis_url=store_urls.redis_url),
        services=[s for s in SERVICES if s != "pixie"],
        extra_env=E2E_ENV,
    )
    try:
        running.start_service("pixie")
        await running.wait_serving("pixie")
        yield running
    finally:
        await running.stop()
        drop_database(store_urls.postgres_url, name)


@pytest.fixture
async def clients(stack: Stack) -> AsyncIterator[Clients]:
    connected = Clients.connect(stack.addresses, stack.client_tls)
    try:
        yield connected
    finally:
        await connected.close()
