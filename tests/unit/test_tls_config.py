"""Transport security settings from the environment, the health port, and the caller's identity."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from novaberg_core.config import CommonConfig
from novaberg_core.env import ConfigError
from novaberg_core.tls import PLAINTEXT, CertificateFiles, TlsConfig, check_files, identity_from_auth_context
from novaberg_dev.devcerts import CertificateAuthority, write_identity_files

PLAIN = {"NOVABERG_TLS_MODE": "plaintext"}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsConfig:
    return write_identity_files(tmp_path_factory.mktemp("tls"), CertificateAuthority.create(), ["kzg"])["kzg"]


def test_code_built_configs_are_plaintext_the_environment_is_mtls() -> None:
    assert CommonConfig(service_name="kzg").tls == PLAINTEXT and not PLAINTEXT.enabled
    with pytest.raises(ConfigError) as raised:
        CommonConfig.from_env("kzg", env={})
    assert raised.value.variable == "NOVABERG_TLS_CERT_FILE"
    assert str(raised.value) == (
        "NOVABERG_TLS_CERT_FILE must be set (NOVABERG_TLS_MODE is mtls, the default; "
        "NOVABERG_TLS_MODE=plaintext runs without transport security)"
    )
    assert CommonConfig.from_env("kzg", env=PLAIN).tls == PLAINTEXT


def test_mtls_reads_the_three_files_and_names_the_first_missing(files: TlsConfig) -> None:
    env = files.as_env()
    assert env["NOVABERG_TLS_MODE"] == "mtls"
    assert TlsConfig.from_env(env) == files and files.enabled
    for variable in ("NOVABERG_TLS_CERT_FILE", "NOVABERG_TLS_KEY_FILE", "NOVABERG_TLS_CA_FILE"):
        with pytest.raises(ConfigError) as missing:
            TlsConfig.from_env({k: v for k, v in env.items() if k != variable})
        assert missing.value.variable == variable
        with pytest.raises(ConfigError, match=rf"^{variable}: cannot read /nowhere/x\.pem \(") as unreadable:
            TlsConfig.from_env({**env, variable: "/nowhere/x.pem"})
        assert unreadable.value.variable == variable
    with pytest.raises(ConfigError, match=r"^NOVABERG_TLS_MODE must be one of mtls, plaintext, got 'tls'$"):
        TlsConfig.from_env({"NOVABERG_TLS_MODE": "tls"})
    assert TlsConfig.from_env({"NOVABERG_TLS_MODE": "MTLS", **{k: v for k, v in env.items() if k != "NOVABERG_TLS_MODE"}}).enabled


def test_the_policy_file_must_exist_when_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        TlsConfig.from_env({**PLAIN, "NOVABERG_AUTHZ_POLICY_FILE": str(tmp_path / "policy.yaml")})
    assert raised.value.variable == "NOVABERG_AUTHZ_POLICY_FILE"
    (tmp_path / "policy.yaml").write_text("version: 1\n")
    assert TlsConfig.from_env({**PLAIN, "NOVABERG_AUTHZ_POLICY_FILE": str(tmp_path / "policy.yaml")}).authz_policy_file


def test_files_that_do_not_fit_together_name_the_variable(files: TlsConfig, tmp_path: Path) -> None:
    check_files(files)
    other = write_identity_files(tmp_path, CertificateAuthority.create(), ["kzg"])["kzg"]
    with pytest.raises(ConfigError) as mismatch:
        check_files(dataclasses.replace(files, key_file=other.key_file))
    assert mismatch.value.variable == "NOVABERG_TLS_CERT_FILE"
    (tmp_path / "garbage.pem").write_text("not a certificate")
    with pytest.raises(ConfigError) as bad_ca:
        check_files(dataclasses.replace(files, ca_file=str(tmp_path / "garbage.pem")))
    assert bad_ca.value.variable == "NOVABERG_TLS_CA_FILE"


def test_certificate_files_report_changes_once(files: TlsConfig, tmp_path: Path) -> None:
    own = write_identity_files(tmp_path, CertificateAuthority.create(), ["kzg"])["kzg"]
    watched = CertificateFiles(own)
    first = watched.read()
    assert watched.changed() is None
    renewed = write_identity_files(tmp_path, CertificateAuthority.create(), ["kzg"])["kzg"]  # same paths
    assert renewed == own
    second = watched.changed()
    assert second is not None and second != first and watched.reloads == 1
    assert watched.changed() is None


def test_health_port_is_off_unless_set() -> None:
    assert CommonConfig.from_env("kzg", env=PLAIN).health_port is None
    assert CommonConfig.from_env("kzg", env={**PLAIN, "NOVABERG_KZG_HEALTH_PORT": "8081"}).health_port == 8081
    with pytest.raises(ConfigError) as raised:
        CommonConfig.from_env("kzg", env={**PLAIN, "NOVABERG_KZG_HEALTH_PORT": "probe"})
    assert raised.value.variable == "NOVABERG_KZG_HEALTH_PORT"


@pytest.mark.parametrize(
    ("context", "identity"),
    [
        ({"x509_subject_alternative_name": [b"spiffe://novaberg/pipeline", b"localhost"], "x509_common_name": [b"x"]},
         "pipeline"),
        ({"x509_subject_alternative_name": [b"localhost", b"127.0.0.1"], "x509_common_name": [b"operator"]}, "operator"),
        ({"x509_common_name": [b"gateway"]}, "gateway"),
        ({"x509_subject_alternative_name": [b"SPIFFE://Novaberg/kzg"]}, "kzg"),
        ({"x509_subject_alternative_name": [b"spiffe://elsewhere/pipeline"], "x509_common_name": [b"pipeline"]}, None),
        ({"x509_subject_alternative_name": [b"spiffe://novaberg/a", b"spiffe://novaberg/b"]}, None),
        ({"x509_subject_alternative_name": [b"spiffe://novaberg/ns/x"]}, None),
        ({"x509_subject_alternative_name": [b"spiffe://novaberg/"]}, None),
        ({"x509_common_name": [b""]}, None),
        ({}, None),
    ],
)
def test_identity_is_the_spiffe_id_else_the_common_name(context: dict[str, list[bytes]], identity: str | None) -> None:
    assert identity_from_auth_context(context) == identity
