"""The one way a service connects to Redis (STYLE rule 9): fail fast, retry a stale connection once.

redis-py's default retries a failed command three times with a backoff of up to seconds, so during
an outage every call hung for seconds before failing, and callers could not tell a slow store
from a dead one. Here a command is retried once, at once (a pooled connection that the server
closed while restarting is replaced), and then fails with a connection error, which the server
bootstrap answers as UNAVAILABLE naming Redis (:mod:`novaberg_core.store_errors`); the caller's
own retry policy decides how long to keep trying.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["CONNECT_TIMEOUT_S", "connect"]

CONNECT_TIMEOUT_S = 2.0
"""How long a new connection may take; an unreachable server answers sooner (refused)."""


def connect(url: str, *, decode_responses: bool, protocol: int = 3) -> aioredis.Redis:
    """A client for ``url``: one immediate retry on a broken connection, then the error."""
    return aioredis.Redis.from_url(
        url,
        protocol=protocol,
        decode_responses=decode_responses,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        retry=Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), retries=1),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
        health_check_interval=0,
    )
