"""How the CLI connects: the operator certificate of the stack file, or NOVABERG_TLS_* of the shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from novaberg_core.tls import PLAINTEXT, TlsConfig
from novaberg_dev.cli import CliError, main, read_client_tls, write_stack_file

ADDRESSES = {"pipeline": "127.0.0.1:1", "lzg": "127.0.0.1:2"}


@pytest.fixture
def operator(tmp_path: Path) -> TlsConfig:
    for name in ("operator.crt", "operator.key", "ca.crt"):
        (tmp_path / name).write_text("pem")
    return TlsConfig(mode="mtls", cert_file=str(tmp_path / "operator.crt"), key_file=str(tmp_path / "operator.key"),
                     ca_file=str(tmp_path / "ca.crt"))  # fmt: skip


def test_the_stack_file_names_the_operator_certificate(tmp_path: Path, operator: TlsConfig) -> None:
    write_stack_file(tmp_path / "stack", ADDRESSES, {"tls": operator.as_env()})
    assert read_client_tls(tmp_path / "stack", {}) == operator
    # addresses from the environment do not count when --data-dir is given
    assert read_client_tls(tmp_path / "stack", {"NOVABERG_PIPELINE_ADDR": "h:1"}) == operator


def test_a_stack_file_without_tls_is_a_plaintext_stack(tmp_path: Path) -> None:
    write_stack_file(tmp_path, ADDRESSES)
    assert read_client_tls(tmp_path, {}) == PLAINTEXT


def test_addresses_from_the_shell_take_tls_from_the_shell(
    tmp_path: Path, operator: TlsConfig, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shell = {"NOVABERG_PIPELINE_ADDR": "nova.example:443"}
    assert read_client_tls(None, {**shell, **operator.as_env()}) == operator
    assert read_client_tls(None, {**shell, "NOVABERG_TLS_MODE": "plaintext"}) == PLAINTEXT
    with pytest.raises(CliError, match=r"^NOVABERG_TLS_CERT_FILE must be set \(NOVABERG_TLS_MODE is mtls"):
        read_client_tls(None, shell)
    monkeypatch.setenv("NOVABERG_PIPELINE_ADDR", "127.0.0.1:1")
    monkeypatch.delenv("NOVABERG_TLS_MODE", raising=False)
    monkeypatch.delenv("NOVABERG_TLS_CERT_FILE", raising=False)
    assert main(["recall", "x"]) == 1
    assert capsys.readouterr().err.startswith("error: NOVABERG_TLS_CERT_FILE must be set")
