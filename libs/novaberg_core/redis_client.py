"""The one way a service connects to Redis (STYLE rule 9): fail fast, retry a broken connection once,
never a command that went unanswered.

redis-py's default retries a failed command three times with a backoff of up to seconds, so during
an outage every call hung for seconds before failing, and callers could not tell a slow store
from a dead one. Here a command is retried once, at once, only when its connection broke (a pooled
connection that the server closed while restarting is replaced), and then fails with a connection
error, which the server bootstrap answers as UNAVAILABLE naming Redis
(:mod:`novaberg_core.store_errors`); the caller's own retry policy decides how long to keep trying.

A command that Redis does not answer within :data:`READ_TIMEOUT_S` fails with a timeout and is
**not** retried: Redis may have run it all the same (a server paused by a slow disk or a fork reads
the command from its socket once it wakes), and a second attempt of a write that is not idempotent
would run it twice — measured: an ``RPUSH`` sent while Redis was paused for 7 s came back once and
stood twice in the list. A command that blocks on purpose (``XREADGROUP … BLOCK``) must block for
less than the read timeout (:func:`read_timeout_s`).
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

__all__ = ["CONNECT_TIMEOUT_S", "READ_TIMEOUT_S", "connect", "read_timeout_s"]

CONNECT_TIMEOUT_S = 2.0
"""How long a new connection may take; an unreachable server answers sooner (refused)."""

READ_TIMEOUT_S = 5.0
"""How long Redis may take to answer one command (redis-py's default, named here): the services'
commands take milliseconds; a Redis that takes seconds is paused or overloaded."""


def connect(url: str, *, decode_responses: bool, protocol: int = 3, read_timeout: float = READ_TIMEOUT_S) -> aioredis.Redis:
    """A client for ``url``: one immediate retry on a broken connection, none on an unanswered command."""
    return aioredis.Redis.from_url(
        url,
        protocol=protocol,
        decode_responses=decode_responses,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=read_timeout,
        retry=Retry(
            ExponentialWithJitterBackoff(base=0.01, cap=0.05), retries=1, supported_errors=(RedisConnectionError,)
        ),
        retry_on_error=[RedisConnectionError],
        health_check_interval=0,
    )


def read_timeout_s(client: aioredis.Redis) -> float | None:
    """How long ``client`` waits for an answer (None: without limit)."""
    timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
    return None if timeout is None else float(timeout)
