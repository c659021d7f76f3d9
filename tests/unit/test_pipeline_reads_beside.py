"""A read the pipeline starts beside a step's work (``services.pipeline.app.context.beside``): the pair's
profile is read while a turn is analysed, and nothing of it outlives the step."""

from __future__ import annotations

import asyncio
import gc

import pytest

from services.pipeline.app.context import beside


async def test_the_read_runs_while_the_block_works_and_gives_its_result() -> None:
    order: list[str] = []

    async def read() -> str:
        order.append("read started")
        await asyncio.sleep(0)
        order.append("read done")
        return "profile"

    async with beside(read()) as profile:
        order.append("block works")
        await asyncio.sleep(0)
        order.append("block needs the read")
        assert await profile == "profile"
        assert await profile == "profile"  # awaited again where another part needs it
    assert order == ["block works", "read started", "block needs the read", "read done"]


async def test_a_block_that_fails_first_cancels_the_read() -> None:
    released = asyncio.Event()

    async def slow_read() -> str:
        try:
            await asyncio.sleep(10)
        finally:
            released.set()
        return "never"

    with pytest.raises(ValueError, match="bad turn"):
        async with beside(slow_read()) as profile:
            await asyncio.sleep(0)
            raise ValueError("bad turn")
    await asyncio.wait_for(released.wait(), 1)
    assert profile.cancelled()


async def test_a_failed_read_behind_a_failed_block_is_not_reported_again(caplog: pytest.LogCaptureFixture) -> None:
    async def failing_read() -> str:
        raise ConnectionError("redis down")

    with pytest.raises(ValueError, match="bad turn"):
        async with beside(failing_read()):
            await asyncio.sleep(0.01)  # the read has failed meanwhile
            raise ValueError("bad turn")
    gc.collect()
    await asyncio.sleep(0)
    assert "exception was never retrieved" not in caplog.text


async def test_a_failed_read_the_block_awaits_is_the_error() -> None:
    async def failing_read() -> str:
        raise ConnectionError("redis down")

    with pytest.raises(ConnectionError, match="redis down"):
        async with beside(failing_read()) as profile:
            await profile
