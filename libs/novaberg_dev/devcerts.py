"""Throwaway certificates for a local stack and the tests: one CA, a certificate per identity.

``novaberg up`` (``novaberg_dev.stack``) and the mTLS tests make a fresh CA in the data dir and
issue every service (and the ``operator`` CLI) a certificate that serves as server and client
certificate alike: subject CN = the identity, SAN URI ``spiffe://novaberg/<identity>`` (the field
:mod:`novaberg_core.tls` reads first), SAN DNS ``localhost`` and the identity, SAN IP 127.0.0.1
and ::1. ECDSA P-256 keys: made in well under a millisecond each.

Dev-only (``cryptography`` is in the dev set, not the image's runtime set): production
certificates come from cert-manager or the operator's own CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from novaberg_core.tls import SPIFFE_TRUST_DOMAIN, TlsConfig

__all__ = ["CertificateAuthority", "IssuedCertificate", "write_identity_files"]

_DEFAULT_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _general_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


@dataclass(frozen=True)
class IssuedCertificate:
    """A leaf certificate and its key, both PEM."""

    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA that issues leaf certificates for service identities."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def create(cls, name: str = "Novaberg local CA", *, days: int = 30) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = dt.datetime.now(dt.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                    encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, certificate)

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        identity: str | None,
        *,
        common_name: str | None = None,
        uris: Sequence[str] | None = None,
        hosts: Sequence[str] = _DEFAULT_HOSTS,
        days: int = 30,
    ) -> IssuedCertificate:
        """A server-and-client certificate for ``identity`` (CN and ``spiffe://novaberg/<identity>``).

        ``common_name`` and ``uris`` override the defaults (tests make odd certificates with them).
        """
        key = ec.generate_private_key(ec.SECP256R1())
        cn = common_name if common_name is not None else identity
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] if cn else [])
        if uris is None:
            uris = [f"spiffe://{SPIFFE_TRUST_DOMAIN}/{identity}"] if identity else []
        alt_names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(uri) for uri in uris]
        alt_names += _general_names([*hosts, *([identity] if identity else [])])
        now = dt.datetime.now(dt.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        return IssuedCertificate(certificate.public_bytes(serialization.Encoding.PEM), _private_pem(key))


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write atomically (a reader never sees half a file), readable by the owner only for keys."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    tmp.replace(path)


def write_identity_files(
    directory: Path, ca: CertificateAuthority, identities: Iterable[str], *, days: int = 30
) -> dict[str, TlsConfig]:
    """``<directory>/ca.crt`` and ``<identity>.crt``/``.key`` for each identity; their :class:`TlsConfig`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_file = directory / "ca.crt"
    _write(ca_file, ca.cert_pem, 0o644)
    configs: dict[str, TlsConfig] = {}
    for identity in identities:
        issued = ca.issue(identity, days=days)
        cert_file, key_file = directory / f"{identity}.crt", directory / f"{identity}.key"
        _write(cert_file, issued.cert_pem, 0o644)
        _write(key_file, issued.key_pem, 0o600)
        configs[identity] = TlsConfig(
            mode="mtls", cert_file=str(cert_file), key_file=str(key_file), ca_file=str(ca_file)
        )
    return configs
