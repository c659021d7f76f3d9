"""Domain errors, mapped to gRPC status codes in exactly one place (STYLE rule 5).

Services raise these inside their domain and store code; the server bootstrap's error
interceptor (``novaberg_core.server``) turns them into a status with the message as given,
so the message must tell the caller what to change.
"""

from __future__ import annotations

import grpc


class NovabergError(Exception):
    """Base of every expected failure; the status code is a property of the class."""

    status_code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidArgument(NovabergError):
    """The request itself is wrong (bad field, out of range, unknown enum); nothing was changed."""

    status_code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(NovabergError):
    """A referenced record does not exist (in this pair)."""

    status_code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(NovabergError):
    """A create collided with an existing record."""

    status_code = grpc.StatusCode.ALREADY_EXISTS


class Unauthenticated(NovabergError):
    """The caller has no identity this service accepts (its certificate names none)."""

    status_code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(NovabergError):
    """The caller's identity may not call this RPC (the authorisation policy, novaberg_core.authz)."""

    status_code = grpc.StatusCode.PERMISSION_DENIED


class FailedPrecondition(NovabergError):
    """The system is not in a state that allows the call (e.g. a store filled by another model)."""

    status_code = grpc.StatusCode.FAILED_PRECONDITION


class ModelMismatch(FailedPrecondition):
    """A store was filled by another embedding model than the one configured (SPEC §2)."""


class MigrationMismatch(FailedPrecondition):
    """A store's applied migrations differ from this build's files (novaberg_core.migrations): a file
    was changed, renamed or removed after it was applied. The store does not open."""


class Unavailable(NovabergError):
    """A dependency (store, other service, model server) cannot be reached; the call may be retried."""

    status_code = grpc.StatusCode.UNAVAILABLE


class Aborted(NovabergError):
    """A store rolled back a transaction of the call in a conflict with a concurrent one (a deadlock,
    a serialization failure): nothing of that transaction was written; the call may be retried."""

    status_code = grpc.StatusCode.ABORTED


class DeadlineExceeded(NovabergError):
    """A dependency answered too late."""

    status_code = grpc.StatusCode.DEADLINE_EXCEEDED


def status_code_for(error: BaseException) -> grpc.StatusCode:
    """The gRPC status for an exception: a domain error's own code, anything else INTERNAL."""
    if isinstance(error, NovabergError):
        return error.status_code
    return grpc.StatusCode.INTERNAL
