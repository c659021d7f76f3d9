"""Per-RPC authorisation as data: which caller identity may call which method (issue 13).

The policy (``data/authz_policy.yaml``, or the file ``NOVABERG_AUTHZ_POLICY_FILE`` names) is read
once at start and checked on every call by :class:`AuthzInterceptor`, which the server bootstrap
puts in front of the request contract and the handler. The caller is the identity of its verified
client certificate (:func:`novaberg_core.tls.identity_from_auth_context`):

* no usable identity → UNAUTHENTICATED (a missing or untrusted certificate never gets this far:
  the TLS handshake fails and the client sees UNAVAILABLE);
* an identity the policy does not allow for the method → PERMISSION_DENIED;

both logged with the identity, the method and the peer address. Health and reflection are open
to every authenticated caller. Under ``NOVABERG_TLS_MODE=plaintext`` there is no identity and no
authorisation (the bootstrap logs that loudly).
"""

from __future__ import annotations

import contextvars
import fnmatch
import inspect
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

import grpc
import grpc.aio
import yaml

from novaberg_core.env import ConfigError
from novaberg_core.errors import NovabergError, PermissionDenied, Unauthenticated, status_code_for
from novaberg_core.method_handlers import WrappingInterceptor, rewrap
from novaberg_core.tls import (
    ENV_AUTHZ_POLICY_FILE,
    CertificateFiles,
    TlsConfig,
    check_files,
    identity_from_auth_context,
    server_credentials,
)

__all__ = [
    "DEFAULT_POLICY",
    "AuthzInterceptor",
    "Policy",
    "PolicyError",
    "Rule",
    "ServerSecurity",
    "caller_identity",
    "load_policy",
    "parse_policy",
    "server_security",
]

_LOG = logging.getLogger(__name__)

DEFAULT_POLICY: Final = "authz_policy.yaml"
"""The shipped policy, a data file of ``novaberg_core``."""

_IDENTITY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_METHOD = re.compile(r"^[A-Za-z0-9_.*?\[\]!-]+/[A-Za-z0-9_*?\[\]!-]+$")

_caller: contextvars.ContextVar[str | None] = contextvars.ContextVar("novaberg_caller", default=None)


def caller_identity() -> str | None:
    """The verified identity of the caller of the RPC being handled (None in plaintext mode)."""
    return _caller.get()


class PolicyError(ValueError):
    """The policy document is malformed; the message says where."""


@dataclass(frozen=True, slots=True)
class Rule:
    """``callers`` may call the methods matching ``methods`` (globs over ``package.Service/Method``)."""

    name: str
    callers: frozenset[str]
    methods: tuple[str, ...]
    admin: bool = False

    def matches(self, method: str) -> bool:
        return any(fnmatch.fnmatchcase(method, pattern) for pattern in self.methods)


class Policy:
    """A parsed policy: rules plus the methods open to every authenticated caller."""

    _CACHE_MAX: Final = 4096

    def __init__(self, rules: tuple[Rule, ...], open_methods: tuple[str, ...], source: str) -> None:
        self.rules = rules
        self.open = open_methods
        self.source = source
        # Decisions per (identity, method): both come from small sets (the CA's certificates, the
        # registered methods; unknown methods never reach the check), so this stays small.
        self._decisions: dict[tuple[str, str], bool] = {}

    def allows(self, identity: str, method: str) -> bool:
        """Whether ``identity`` may call ``method`` (``package.Service/Method``, no leading slash)."""
        key = (identity, method)
        decision = self._decisions.get(key)
        if decision is None:
            decision = any(fnmatch.fnmatchcase(method, pattern) for pattern in self.open) or any(
                identity in rule.callers and rule.matches(method) for rule in self.rules
            )
            if len(self._decisions) >= self._CACHE_MAX:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def identities_for(self, method: str) -> list[str]:
        """The identities named by rules that match ``method``, in policy order (each once)."""
        found: list[str] = []
        for rule in self.rules:
            if rule.matches(method):
                found.extend(sorted(c for c in rule.callers if c not in found))
        return found

    @property
    def identities(self) -> frozenset[str]:
        """Every identity some rule names."""
        return frozenset(c for rule in self.rules for c in rule.callers)

    @property
    def admin_rules(self) -> tuple[Rule, ...]:
        """The rules marked ``admin: true``."""
        return tuple(rule for rule in self.rules if rule.admin)


def _strings(value: Any, where: str, check: re.Pattern[str], what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise PolicyError(f"{where}: must be a non-empty list of {what}s")
    for item in value:
        if not isinstance(item, str) or not check.match(item):
            raise PolicyError(f"{where}: {item!r} is not a valid {what}")
    return tuple(value)


def parse_policy(text: str, source: str) -> Policy:
    """A :class:`Policy` from the YAML document ``text``; :class:`PolicyError` says what is wrong."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PolicyError(f"{source}: not YAML: {error}") from None
    if not isinstance(document, dict):
        raise PolicyError(f"{source}: must be a mapping with version, open, rules")
    unknown = set(document) - {"version", "open", "rules"}
    if unknown:
        raise PolicyError(f"{source}: unknown keys {sorted(unknown)}")
    if document.get("version") != 1:
        raise PolicyError(f"{source}: version must be 1, got {document.get('version')!r}")
    open_methods = _strings(document.get("open") or ["grpc.health.v1.Health/*"], f"{source}: open", _METHOD, "method")
    raw_rules = document.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise PolicyError(f"{source}: rules must be a non-empty list")
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules):
        where = f"{source}: rules[{index}]"
        if not isinstance(raw, dict):
            raise PolicyError(f"{where}: must be a mapping with name, callers, methods")
        unknown = set(raw) - {"name", "callers", "methods", "admin"}
        if unknown:
            raise PolicyError(f"{where}: unknown keys {sorted(unknown)}")
        name = raw.get("name", f"rule {index}")
        admin = raw.get("admin", False)
        if not isinstance(name, str) or not isinstance(admin, bool):
            raise PolicyError(f"{where}: name must be a string and admin a boolean")
        callers = _strings(raw.get("callers"), f"{where} ({name}) callers", _IDENTITY, "identity")
        methods = _strings(raw.get("methods"), f"{where} ({name}) methods", _METHOD, "method")
        rules.append(Rule(name=name, callers=frozenset(callers), methods=methods, admin=admin))
    return Policy(tuple(rules), open_methods, source)


def load_policy(path: str = "") -> Policy:
    """The policy at ``path``, or the shipped one when empty.

    A file that cannot be read or parsed is a :class:`~novaberg_core.env.ConfigError` naming
    ``NOVABERG_AUTHZ_POLICY_FILE`` (the service exits 2 at start).
    """
    if not path:
        text = resources.files("novaberg_core").joinpath("data", DEFAULT_POLICY).read_text(encoding="utf-8")
        return parse_policy(text, f"novaberg_core/data/{DEFAULT_POLICY}")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        return parse_policy(text, path)
    except (OSError, PolicyError) as error:
        raise ConfigError(ENV_AUTHZ_POLICY_FILE, f"{ENV_AUTHZ_POLICY_FILE}: {error}") from None


# --- the interceptor ----------------------------------------------------------------------------


def _authorize(policy: Policy, context: grpc.aio.ServicerContext, method: str, service_name: str) -> str:
    """The caller's identity when it may call ``method``; else raises the refusal (and logs it)."""
    identity = identity_from_auth_context(context.auth_context())
    if identity is None:
        auth = context.auth_context()
        _LOG.warning(
            "%s: UNAUTHENTICATED call of %s from %s: certificate without a usable identity (SAN %s, CN %s)",
            service_name, method, context.peer(), _show(auth.get("x509_subject_alternative_name")),
            _show(auth.get("x509_common_name")),
        )  # fmt: skip
        raise Unauthenticated(
            "the client certificate names no identity (URI SAN spiffe://novaberg/<name> or, without one, CN)"
        )
    if not policy.allows(identity, method):
        _LOG.warning(
            "%s: PERMISSION_DENIED: %s may not call %s (peer %s, policy %s)",
            service_name, identity, method, context.peer(), policy.source,
        )  # fmt: skip
        raise PermissionDenied(f"caller {identity!r} may not call {method} (authorisation policy)")
    return identity


def _show(values: object) -> str:
    if not isinstance(values, (list, tuple)):
        return "-"
    return ",".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values) or "-"


async def _refuse(error: NovabergError, context: grpc.aio.ServicerContext) -> None:
    await context.abort(status_code_for(error), str(error))


def _wrap_unary_response(behavior: Callable[..., Any], policy: Policy, method: str, service: str) -> Callable[..., Awaitable[Any]]:
    async def call(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            identity = _authorize(policy, context, method, service)
        except (PermissionDenied, Unauthenticated) as error:
            await _refuse(error, context)
            return None
        token = _caller.set(identity)
        try:
            result = behavior(request_or_iterator, context)
            if inspect.isawaitable(result):
                result = await result
            return result
        finally:
            _caller.reset(token)

    return call


def _wrap_stream_response(behavior: Callable[..., Any], policy: Policy, method: str, service: str) -> Callable[..., AsyncIterator[Any]]:
    async def call(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        try:
            identity = _authorize(policy, context, method, service)
        except (PermissionDenied, Unauthenticated) as error:
            await _refuse(error, context)
            return
        token = _caller.set(identity)
        try:
            result = behavior(request_or_iterator, context)
            if hasattr(result, "__aiter__"):
                async for response in result:
                    yield response
            elif inspect.isawaitable(result):
                await result
            elif result is not None:
                for response in result:
                    yield response
        finally:
            _caller.reset(token)

    return call


class AuthzInterceptor(WrappingInterceptor):
    """Checks every call's caller against the policy before anything else of the call runs.

    Installed by :func:`novaberg_core.server.create_server` under mTLS, outside the error mapping,
    so a refused caller's request is neither contract-checked nor handled. Unknown methods pass
    through to gRPC's UNIMPLEMENTED.
    """

    def __init__(self, policy: Policy, service_name: str) -> None:
        self.policy = policy
        self.service_name = service_name

    def wrap(self, handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        args = (self.policy, method.lstrip("/"), self.service_name)
        return rewrap(
            handler,
            unary=lambda behavior: _wrap_unary_response(behavior, *args),
            streaming=lambda behavior: _wrap_stream_response(behavior, *args),
        )



# --- what a server needs ------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerSecurity:
    """A server's transport credentials and authorisation interceptor (none of either in plaintext)."""

    credentials: grpc.ServerCredentials | None
    interceptors: tuple[grpc.aio.ServerInterceptor, ...]
    files: CertificateFiles | None = None
    policy: Policy | None = None


def server_security(service_name: str, tls: TlsConfig) -> ServerSecurity:
    """mTLS credentials (reloading) plus the policy's interceptor, or plaintext with a loud warning.

    Bad certificate files or a bad policy are a :class:`~novaberg_core.env.ConfigError` naming the
    variable, so the service stops at start instead of failing every handshake.
    """
    if not tls.enabled:
        _LOG.warning(
            "%s: PLAINTEXT (NOVABERG_TLS_MODE=plaintext): no transport security, callers are not "
            "authenticated and the authorisation policy is OFF. Never run a deployment like this.",
            service_name,
        )
        return ServerSecurity(None, ())
    check_files(tls)
    policy = load_policy(tls.authz_policy_file)
    credentials, files = server_credentials(tls)
    _LOG.info(
        "%s: mTLS: client certificates required (CA %s), certificate %s reloaded on change; "
        "authorisation policy %s (%d rules)",
        service_name, tls.ca_file, tls.cert_file, policy.source, len(policy.rules),
    )  # fmt: skip
    return ServerSecurity(credentials, (AuthzInterceptor(policy, service_name),), files, policy)
