"""The session of a pair in Redis (SPEC §3): a list of JSON turns and a running summary, 4 h TTL."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from redis.exceptions import WatchError

from novaberg_core.limits import SESSION_TTL
from services.kzg.domain import (
    SESSION_MAX_TURNS,
    SESSION_SUMMARIZE_AT,
    SESSION_SUMMARIZE_OLDEST,
    SESSION_TAKEN_KEPT,
)
from services.kzg.store.base import StoreBase
from services.kzg.store.codec import decode_turn, encode_turn, taken_member, text
from services.kzg.store.keys import session_summary_key, session_taken_key, session_turns_key
from services.kzg.types import Appended, Pair, SessionState, SessionTurnRecord

__all__ = ["SessionStore"]

_LOG = logging.getLogger("services.kzg.store")


class SessionStore(StoreBase):
    """``session:{user}:{character}:turns`` and ``…:summary``."""

    async def session_append(self, pair: Pair, turn: SessionTurnRecord, *, resend_safe: bool = False) -> Appended:
        """RPUSH the turn and refresh the 4 h inactivity TTL of list and summary (:meth:`session_append_many`)."""
        (appended,) = await self.session_append_many(pair, [turn], [resend_safe])
        return appended

    async def session_append_many(
        self, pair: Pair, turns: Sequence[SessionTurnRecord], resend_safe: Sequence[bool]
    ) -> list[Appended]:
        """RPUSH each turn in order and refresh the TTLs, in one atomic script; per turn the list's length
        after it, and whether it was left out as a repeat (``resend_safe``, and the session had taken its
        turn_id and role: in the list, or folded into the summary since). A turn made over SESSION_TTL after
        the list's newest clears list and summary first (SPEC §3, §11: they had expired); the taken set stays."""
        args: list[str | int] = [SESSION_TTL, SESSION_TAKEN_KEPT]
        for turn, once in zip(turns, resend_safe, strict=True):
            args += [encode_turn(turn), taken_member(turn), int(once)]
        keys = [session_turns_key(pair), session_summary_key(pair), session_taken_key(pair)]
        results = await self._append_session(keys=keys, args=args)
        return [Appended(int(length), bool(repeated)) for length, repeated in results]

    async def session_length(self, pair: Pair) -> int:
        return int(await self.redis.llen(session_turns_key(pair)))

    async def session_fold(
        self,
        pair: Pair,
        summarise: Callable[[str, list[SessionTurnRecord]], Awaitable[str]],
    ) -> tuple[bool, bool]:
        """Above SESSION_SUMMARIZE_AT turns: fold the oldest 10 into the summary, or on failure keep
        the newest SESSION_MAX_TURNS. Optimistic (WATCH): a concurrent append retries. → (summarized, trimmed)
        """
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        summarized = trimmed = False
        for _ in range(5):
            try:
                async with self.redis.pipeline(transaction=True) as pipe:
                    await pipe.watch(turns_key, summary_key)
                    if int(await pipe.llen(turns_key)) <= SESSION_SUMMARIZE_AT:
                        return summarized, trimmed
                    oldest = [decode_turn(raw) for raw in await pipe.lrange(turns_key, 0, SESSION_SUMMARIZE_OLDEST - 1)]
                    previous = text(await pipe.get(summary_key))
                    try:
                        summary: str | None = await summarise(previous, oldest)
                    except Exception:
                        _LOG.exception("kzg: session summariser failed for %s; keeping the newest %d turns",
                                       turns_key, SESSION_MAX_TURNS)
                        summary = None
                    pipe.multi()
                    if summary is not None:
                        pipe.ltrim(turns_key, SESSION_SUMMARIZE_OLDEST, -1)
                        pipe.set(summary_key, summary, ex=SESSION_TTL)
                    else:
                        pipe.ltrim(turns_key, -SESSION_MAX_TURNS, -1)
                    pipe.expire(turns_key, SESSION_TTL)
                    await pipe.execute()
                    summarized, trimmed = summarized or summary is not None, trimmed or summary is None
            except WatchError:
                continue
        return summarized, trimmed

    async def session_read(self, pair: Pair) -> SessionState:
        turns_key, summary_key = session_turns_key(pair), session_summary_key(pair)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lrange(turns_key, 0, -1)
            pipe.get(summary_key)
            pipe.ttl(turns_key)
            items, summary, ttl = await pipe.execute()
        return SessionState(
            turns=tuple(decode_turn(raw) for raw in items), summary=text(summary), ttl_seconds=max(int(ttl), 0)
        )

    async def session_exists(self, pair: Pair) -> bool:
        """Whether the pair has a session list or summary."""
        return int(await self.redis.exists(session_turns_key(pair), session_summary_key(pair))) > 0

    async def forget_session_turn(self, pair: Pair, turn_id: str) -> int:
        """Removes the items of ``turn_id`` from the session list; how many went."""
        return int(await self._forget_session(keys=[session_turns_key(pair), session_taken_key(pair)], args=[turn_id]))

    async def delete_session_summary(self, pair: Pair) -> int:
        return int(await self.redis.delete(session_summary_key(pair)))
