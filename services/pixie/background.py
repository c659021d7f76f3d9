"""Pixie's background loops (the daily scheduler, the erasure resumer, the promotion worker's
back-off): a step every interval until stopped; a failing step is logged and retried, never fatal."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> None:
    """Sleeps ``seconds``, or less when ``stop`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def every(
    stop: asyncio.Event,
    interval_s: float,
    step: Callable[[], Awaitable[object]],
    *,
    log: logging.Logger,
    failure: str,
) -> None:
    """Runs ``step`` now and every ``interval_s`` until ``stop``; an error is logged as ``failure``."""
    while not stop.is_set():
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(failure)
        await wait_or_stop(stop, interval_s)
