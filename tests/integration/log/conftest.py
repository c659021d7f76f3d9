"""Fixtures of the log store tests: a LogStore on a fresh database (schema ``log`` migrated)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime

import pytest

from services.log.domain import NewRow
from services.log.store import LogStore


@pytest.fixture
async def log_store(pg_url: str) -> AsyncIterator[LogStore]:
    store = await LogStore.open(pg_url, max_size=4)
    try:
        yield store
    finally:
        await store.close()


def row(
    erstellt_am: datetime,
    turn_id: str = "t",
    art: str = "eingang",
    inhalt_json: str = '{"text": "x"}',
    *,
    node: str = "responder",
    quelle: str = "System",
    span_id: str | None = None,
    pair: tuple[str, str] | None = None,
    trace_id: str | None = None,
) -> NewRow:
    user_id, character_id = pair if pair else (None, None)
    return (erstellt_am, turn_id, span_id, quelle, node, art, inhalt_json, user_id, character_id, trace_id)


async def batches(*groups: Iterable[NewRow]) -> AsyncIterator[list[NewRow]]:
    for group in groups:
        yield list(group)
