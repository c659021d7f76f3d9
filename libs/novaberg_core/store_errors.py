"""Store outages as UNAVAILABLE and transaction conflicts as ABORTED, for every service alike (STYLE rule 5).

While Redis or PostgreSQL restarts, a call fails with the client library's connection error; when
PostgreSQL rolls a transaction back in a conflict with a concurrent one (SQLSTATE class 40: a
deadlock, a serialization failure), it fails with that error. Either way the caller should retry,
not report a bug. The server bootstrap passes every escaping exception through :func:`store_error`
before mapping it to a status, so no service names these errors.
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
    asyncpg.exceptions.TooManyConnectionsError,
)


def is_redis_outage(error: BaseException) -> bool:
    """Redis cannot be reached or is still loading its data (the call may be retried)."""
    return isinstance(error, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError)


def is_postgres_outage(error: BaseException) -> bool:
    """PostgreSQL cannot be reached, closed the connection, or is shutting down / starting up."""
    if isinstance(error, _POSTGRES_OUTAGES):
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
            return Unavailable(f"Redis is unavailable, retry later ({type(candidate).__name__}: {candidate})")
        if is_postgres_outage(candidate):
            return Unavailable(f"PostgreSQL is unavailable, retry later ({type(candidate).__name__}: {candidate})")
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

