"""Store outages as UNAVAILABLE and transaction conflicts as ABORTED, for every service alike (STYLE rule 5).

While Redis or PostgreSQL restarts, a call fails with the client library's connection error; while a
store cannot take writes — Redis at its memory limit (``maxmemory`` without eviction) or a read-only
replica during a failover, PostgreSQL with a full disk, out of memory or out of connections, or a
standby during a failover — it fails with the store's refusal; when PostgreSQL rolls a transaction
back in a conflict with a concurrent one (SQLSTATE class 40: a deadlock, a serialization failure),
it fails with that error. Either way the caller should retry later, not report a bug. The server
bootstrap passes every escaping exception through :func:`store_error` before mapping it to a status,
so no service names these errors.
"""

from __future__ import annotations

import asyncpg
import redis.exceptions

from novaberg_core.errors import Aborted, NovabergError, Unavailable

__all__ = ["is_postgres_outage", "is_redis_outage", "store_error", "store_outage"]

_POSTGRES_OUTAGES: tuple[type[BaseException], ...] = (
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08: the connection is gone or was refused
    asyncpg.exceptions.AdminShutdownError,  # 57P01 the server is shutting down
    asyncpg.exceptions.CrashShutdownError,  # 57P02
    asyncpg.exceptions.CannotConnectNowError,  # 57P03 the server is starting up
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.TooManyConnectionsError,  # 53300
)

_REFUSALS: tuple[tuple[type[BaseException], str], ...] = (
    (redis.exceptions.OutOfMemoryError, "Redis is at its memory limit (maxmemory)"),
    (redis.exceptions.ReadOnlyError, "Redis is a read-only replica (a failover?)"),
    (redis.exceptions.ClusterDownError, "Redis cannot serve the data now (its master or cluster is down)"),
    (redis.exceptions.TryAgainError, "Redis is moving the data (resharding)"),
    (asyncpg.exceptions.DiskFullError, "PostgreSQL's disk is full"),  # 53100
    (asyncpg.exceptions.OutOfMemoryError, "PostgreSQL is out of memory"),  # 53200
    (asyncpg.exceptions.ReadOnlySQLTransactionError, "PostgreSQL takes no writes (a standby: a failover?)"),  # 25006
)
"""A store's refusals of work it may take later, and what each says of the store."""


def _refusal(error: BaseException) -> str | None:
    for kind, description in _REFUSALS:
        if isinstance(error, kind):
            return description
    return None


def _silence(error: BaseException) -> str | None:
    """What a command left unanswered says (:mod:`novaberg_core.redis_client` does not retry it)."""
    if isinstance(error, redis.exceptions.TimeoutError) and "connecting" not in str(error):
        return "Redis did not answer in time (paused or overloaded?); a write may have taken effect"
    return None


def is_redis_outage(error: BaseException) -> bool:
    """Redis cannot be reached, is still loading its data, or cannot take writes now (the call may be retried)."""
    if isinstance(error, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return True
    return isinstance(error, redis.exceptions.RedisError) and _refusal(error) is not None


def is_postgres_outage(error: BaseException) -> bool:
    """PostgreSQL cannot be reached, closed the connection, is shutting down / starting up, or cannot
    take the work now (disk, memory or connections exhausted, a standby)."""
    if isinstance(error, _POSTGRES_OUTAGES):
        return True
    if isinstance(error, asyncpg.PostgresError) and _refusal(error) is not None:
        return True
    if isinstance(error, asyncpg.InterfaceError) and "connection" in str(error).lower():
        return True  # "connection is closed" / "cannot perform operation: connection is closed"
    return isinstance(error, ConnectionError) and _raised_by(error, "asyncpg")


def _raised_by(error: BaseException, package: str) -> bool:
    """Whether ``error`` passed through ``package`` on its way up (a frame of its traceback lies there)."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith(package):
            return True
        tb = tb.tb_next
    return False


def store_outage(error: BaseException) -> Unavailable | None:
    """The :class:`Unavailable` a store outage becomes (naming the store), or None for other errors."""
    for candidate in (error, error.__cause__, error.__context__):
        if candidate is None:
            continue
        if is_redis_outage(candidate):
            what = _refusal(candidate) or _silence(candidate) or "Redis is unavailable"
            return Unavailable(f"{what}, retry later ({type(candidate).__name__}: {candidate})")
        if is_postgres_outage(candidate):
            what = _refusal(candidate) or "PostgreSQL is unavailable"
            return Unavailable(f"{what}, retry later ({type(candidate).__name__}: {candidate})")
    return None


def store_error(error: BaseException) -> NovabergError | None:
    """The domain error a store's failure becomes: an outage (:func:`store_outage`), or a transaction
    PostgreSQL rolled back in a conflict (:class:`Aborted`, naming the SQLSTATE); None for others."""
    outage = store_outage(error)
    if outage is not None:
        return outage
    for candidate in (error, error.__cause__, error.__context__):
        if isinstance(candidate, asyncpg.exceptions.TransactionRollbackError):
            return Aborted(
                f"PostgreSQL rolled back a transaction in a conflict with a concurrent one, retry "
                f"(SQLSTATE {candidate.sqlstate}: {type(candidate).__name__})"
            )
    return None

