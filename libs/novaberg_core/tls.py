"""Transport security of every server and client: mTLS from mounted files, reloaded on change.

``NOVABERG_TLS_MODE`` is ``mtls`` (the default from the environment) or ``plaintext`` (only when set
so, and logged loudly at start). Under mTLS every service needs ``NOVABERG_TLS_CERT_FILE``,
``NOVABERG_TLS_KEY_FILE`` and ``NOVABERG_TLS_CA_FILE`` (cert-manager's ``tls.crt``, ``tls.key``,
``ca.crt`` of a mounted Secret): its certificate serves as server certificate and as client
certificate towards its peers, and only peers whose certificate chains to the CA get through the
handshake.

**Identity.** A caller is the service named by its certificate: the URI SAN
``spiffe://novaberg/<name>`` is authoritative; a certificate without any ``spiffe://`` URI SAN is
named by its subject CN instead. A SPIFFE ID of another trust domain, several SPIFFE IDs, or no
name at all leave the caller without identity (UNAUTHENTICATED). The CA is Novaberg's own, so both
fields are under the same issuer's control.

**Reloading.** Servers re-read the three files on the next handshake after any of them changed
(mtime, size or inode: a Secret volume swaps a symlink), so new connections get the new server
certificate and the new CA while open connections keep theirs until they end (at most
``NOVABERG_GRPC_MAX_CONNECTION_AGE_S``). Clients' channels check the files at most every
``client_reload_interval_s`` and move new calls to a fresh channel when they changed
(:mod:`novaberg_core.channels`).
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import grpc

from novaberg_core.env import ConfigError, env_choice, env_str

__all__ = [
    "ENV_AUTHZ_POLICY_FILE",
    "ENV_TLS_CA_FILE",
    "ENV_TLS_CERT_FILE",
    "ENV_TLS_KEY_FILE",
    "ENV_TLS_MODE",
    "PLAINTEXT",
    "SPIFFE_TRUST_DOMAIN",
    "TLS_MODES",
    "CertificateFiles",
    "TlsConfig",
    "channel_credentials",
    "check_files",
    "identity_from_auth_context",
    "server_credentials",
]

_LOG = logging.getLogger(__name__)

ENV_TLS_MODE: Final = "NOVABERG_TLS_MODE"
ENV_TLS_CERT_FILE: Final = "NOVABERG_TLS_CERT_FILE"
ENV_TLS_KEY_FILE: Final = "NOVABERG_TLS_KEY_FILE"
ENV_TLS_CA_FILE: Final = "NOVABERG_TLS_CA_FILE"
ENV_AUTHZ_POLICY_FILE: Final = "NOVABERG_AUTHZ_POLICY_FILE"

TLS_MODES: Final = ("mtls", "plaintext")
"""Accepted values of ``NOVABERG_TLS_MODE``."""

SPIFFE_TRUST_DOMAIN: Final = "novaberg"
"""Trust domain of the services' SPIFFE IDs: ``spiffe://novaberg/<service>``."""

_SPIFFE_SCHEME: Final = "spiffe://"


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """Transport security and authorisation settings of one process (server and clients alike).

    The dataclass default is ``plaintext`` so configs built in code (service tests) need no
    certificates; :meth:`from_env` defaults to ``mtls`` so a deployed service is never plaintext
    by omission (docs/decisions.md).
    """

    mode: str = "plaintext"
    """``mtls`` or ``plaintext`` (``NOVABERG_TLS_MODE``)."""

    cert_file: str = ""
    """PEM certificate (chain) of this process, server and client alike (``NOVABERG_TLS_CERT_FILE``)."""

    key_file: str = ""
    """PEM private key of ``cert_file`` (``NOVABERG_TLS_KEY_FILE``)."""

    ca_file: str = ""
    """PEM CA bundle that peers' certificates must chain to (``NOVABERG_TLS_CA_FILE``)."""

    authz_policy_file: str = ""
    """Per-RPC caller policy (``NOVABERG_AUTHZ_POLICY_FILE``); empty = the policy shipped in the repo."""

    client_reload_interval_s: float = 30.0
    """How often a client channel looks at the files for a renewed certificate."""

    @property
    def enabled(self) -> bool:
        """Whether connections are mutually authenticated TLS."""
        return self.mode == "mtls"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TlsConfig:
        """Read ``NOVABERG_TLS_*`` and ``NOVABERG_AUTHZ_POLICY_FILE``; mTLS unless told ``plaintext``.

        Under mTLS a missing variable or unreadable file is a :class:`ConfigError` naming it.
        """
        mode = env_choice(ENV_TLS_MODE, TLS_MODES, "mtls", env=env)
        policy = env_str(ENV_AUTHZ_POLICY_FILE, "", env=env)
        if policy:
            _require_file(ENV_AUTHZ_POLICY_FILE, policy)
        if mode == "plaintext":
            return cls(mode=mode, authz_policy_file=policy)
        paths: dict[str, str] = {}
        for variable in (ENV_TLS_CERT_FILE, ENV_TLS_KEY_FILE, ENV_TLS_CA_FILE):
            path = env_str(variable, "", env=env)
            if not path:
                raise ConfigError(
                    variable,
                    f"{variable} must be set ({ENV_TLS_MODE} is mtls, the default; "
                    f"{ENV_TLS_MODE}=plaintext runs without transport security)",
                )
            _require_file(variable, path)
            paths[variable] = path
        return cls(
            mode=mode,
            cert_file=paths[ENV_TLS_CERT_FILE],
            key_file=paths[ENV_TLS_KEY_FILE],
            ca_file=paths[ENV_TLS_CA_FILE],
            authz_policy_file=policy,
        )

    def as_env(self) -> dict[str, str]:
        """The variables that make :meth:`from_env` return this config (for child processes)."""
        env = {ENV_TLS_MODE: self.mode}
        if self.enabled:
            env |= {ENV_TLS_CERT_FILE: self.cert_file, ENV_TLS_KEY_FILE: self.key_file, ENV_TLS_CA_FILE: self.ca_file}
        if self.authz_policy_file:
            env[ENV_AUTHZ_POLICY_FILE] = self.authz_policy_file
        return env


PLAINTEXT: Final = TlsConfig()
"""No transport security: the dataclass default."""


def _require_file(variable: str, path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise ConfigError(variable, f"{variable}: cannot read {path} ({error.strerror or error})") from None


def _problem(cfg: TlsConfig) -> tuple[str, str] | None:
    """(variable, message) when the files do not make a usable certificate, key and CA; else None."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cfg.cert_file, cfg.key_file)
    except (OSError, ssl.SSLError) as error:
        return ENV_TLS_CERT_FILE, (
            f"{ENV_TLS_CERT_FILE}/{ENV_TLS_KEY_FILE}: {cfg.cert_file} and {cfg.key_file} are not a PEM "
            f"certificate with its private key ({error})"
        )
    try:
        context.load_verify_locations(cafile=cfg.ca_file)
    except (OSError, ssl.SSLError) as error:
        return ENV_TLS_CA_FILE, f"{ENV_TLS_CA_FILE}: {cfg.ca_file} is not a PEM CA bundle ({error})"
    return None


def check_files(cfg: TlsConfig) -> None:
    """:class:`ConfigError` naming the variable when the files are not a certificate, its key and a CA."""
    problem = _problem(cfg)
    if problem is not None:
        raise ConfigError(*problem)


_Stamp = tuple[tuple[int, int, int], ...]


class CertificateFiles:
    """The certificate, key and CA files of a :class:`TlsConfig`, read again when they change.

    A change is any difference in (mtime, size, inode) of a path as followed through symlinks, so
    a Kubernetes Secret update (an atomic ``..data`` symlink swap) and an in-place rewrite both count.
    """

    def __init__(self, cfg: TlsConfig) -> None:
        if not cfg.enabled:
            raise ValueError("CertificateFiles needs an mtls config")
        self.cfg = cfg
        self._paths = (cfg.cert_file, cfg.key_file, cfg.ca_file)
        self._lock = threading.Lock()
        self._stamp: _Stamp | None = None
        self._pems: tuple[bytes, bytes, bytes] | None = None
        self.reloads = 0
        """How often changed files were read again after the first read."""

    def _current_stamp(self) -> _Stamp:
        stamps = []
        for path in self._paths:
            st = os.stat(path)
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(stamps)

    def read(self) -> tuple[bytes, bytes, bytes]:
        """(certificate chain, private key, CA bundle) as PEM bytes, read now."""
        with self._lock:
            stamp = self._current_stamp()
            pems = self._read_all()
            self._stamp, self._pems = stamp, pems
            return pems

    def changed(self) -> tuple[bytes, bytes, bytes] | None:
        """The files' new contents when they changed since the last read, else None.

        Files that cannot be read or do not fit together (a rotation half done, a key without its
        certificate) count as unchanged: the last good contents stay in use, the problem is logged
        once, and the next change of any file is looked at again.
        """
        with self._lock:
            try:
                stamp = self._current_stamp()
                if stamp == self._stamp and self._pems is not None:
                    return None
                problem = _problem(self.cfg)
                pems = self._read_all() if problem is None else None
            except OSError as error:
                _LOG.warning("TLS files unreadable, keeping the loaded ones: %s", error)
                return None
            if pems is None:
                assert problem is not None
                self._stamp = stamp
                _LOG.warning("TLS files changed but are not usable, keeping the loaded ones: %s", problem[1])
                return None
            if pems == self._pems:
                self._stamp = stamp
                return None
            first = self._pems is None
            self._stamp, self._pems = stamp, pems
            if not first:
                self.reloads += 1
                _LOG.info("TLS files changed, loaded again: %s", ", ".join(self._paths))
            return pems

    def _read_all(self) -> tuple[bytes, bytes, bytes]:
        cert, key, ca = (_read(path) for path in self._paths)
        return cert, key, ca


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _server_configuration(pems: tuple[bytes, bytes, bytes]) -> grpc.ServerCertificateConfiguration:
    cert, key, ca = pems
    return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)


def server_credentials(cfg: TlsConfig) -> tuple[grpc.ServerCredentials, CertificateFiles]:
    """mTLS server credentials (client certificate required and verified against the CA) that pick
    up changed files at the next handshake (``grpc.dynamic_ssl_server_credentials``)."""
    files = CertificateFiles(cfg)
    initial = _server_configuration(files.read())

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        # Called by gRPC before each handshake; None keeps the current configuration.
        pems = files.changed()
        return None if pems is None else _server_configuration(pems)

    credentials = grpc.dynamic_ssl_server_credentials(initial, fetch, require_client_authentication=True)
    return credentials, files


def channel_credentials(pems: tuple[bytes, bytes, bytes]) -> grpc.ChannelCredentials:
    """Client credentials: trust the CA, present the certificate (mTLS)."""
    cert, key, ca = pems
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def _text(values: object) -> list[str]:
    if not isinstance(values, (list, tuple)):
        return []
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values]


def identity_from_auth_context(auth_context: Mapping[str, object]) -> str | None:
    """The caller's service name from its verified certificate, or None (see the module docstring).

    ``auth_context`` is ``ServicerContext.auth_context()``: gRPC puts the certificate's URI SANs in
    ``x509_subject_alternative_name`` (next to DNS and IP names) and its subject CN in
    ``x509_common_name``, after the chain was verified against the CA.
    """
    sans = _text(auth_context.get("x509_subject_alternative_name"))
    spiffe = [san for san in sans if san.lower().startswith(_SPIFFE_SCHEME)]
    if spiffe:
        if len(spiffe) != 1:
            return None
        domain, _, path = spiffe[0][len(_SPIFFE_SCHEME):].partition("/")
        if domain.lower() != SPIFFE_TRUST_DOMAIN or not path or "/" in path:
            return None
        return path
    names = _text(auth_context.get("x509_common_name"))
    return names[0] if len(names) == 1 and names[0] else None
