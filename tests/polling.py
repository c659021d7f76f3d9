"""Waiting for a condition in any tier's tests: poll until it holds, fail with the last answer."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

_T = TypeVar("_T")


@overload
async def eventually(
    probe: Callable[[], Awaitable[_T]],
    done: Callable[[_T], bool],
    *,
    within: float = ...,
    what: str | Callable[[], str] = ...,
    every: float = ...,
) -> _T: ...


@overload
async def eventually(
    probe: Callable[[], _T],
    done: Callable[[_T], bool],
    *,
    within: float = ...,
    what: str | Callable[[], str] = ...,
    every: float = ...,
) -> _T: ...


async def eventually(
    probe: Callable[[], Any],
    done: Callable[[Any], bool],
    *,
    within: float = 20.0,
    what: str | Callable[[], str] = "",
    every: float = 0.1,
) -> Any:
    """Poll ``probe`` (a coroutine function or a plain one) every ``every`` s until ``done(result)``;
    fail with the last result after ``within`` s.

    ``what`` names the condition in the failure; a callable is asked then (e.g. for a process's log).
    """
    deadline = time.monotonic() + within
    while True:
        result = probe()
        if inspect.isawaitable(result):
            result = await result
        if done(result):
            return result
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out waiting for {said or 'a condition'}; last: {result!r}")
        await asyncio.sleep(every)
