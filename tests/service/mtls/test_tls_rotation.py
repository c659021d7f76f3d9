"""Certificate rotation under a running server and a long-lived peer channel (issue 13): replaced
files serve new connections, a half-done rotation keeps what was loaded."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import grpc
import grpc.aio
import pytest

from novaberg_core.channels import ReloadingChannel, peer_channel
from novaberg_core.server import RunningServer
from novaberg_core.tls import CertificateFiles, TlsConfig
from novaberg_dev.devcerts import CertificateAuthority, IssuedCertificate, write_identity_files
from tests.service.mtls.stand_in import (
    StandIn,
    call_status,
    copy_tls_files,
    install_tls_files,
    rpc_error,
    serve_stand_in,
    tls_credentials,
)


async def test_replaced_server_files_serve_new_connections(
    certs: dict[str, TlsConfig], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server moves to a certificate of a new CA (and trusts the new CA's clients): a new
    connection from an old client no longer verifies the server, a new client's does, and a
    connection opened before the change goes on with what it negotiated."""
    server_tls = copy_tls_files(certs["kzg"], tmp_path / "server")
    _, running = await serve_stand_in(server_tls)
    method = "novaberg.kzg.v1.KzgService/StoreEntry"
    try:
        before = grpc.aio.secure_channel(running.target, tls_credentials(certs["pipeline"]))
        assert await call_status(before, method) == grpc.StatusCode.OK
        new_ca = CertificateAuthority.create("the renewed CA")
        new_client = write_identity_files(tmp_path / "client", new_ca, ["pipeline"])["pipeline"]
        with caplog.at_level(logging.INFO, logger="novaberg_core.tls"):
            install_tls_files(server_tls, new_ca.issue("kzg"), new_ca.cert_pem)
            async with grpc.aio.secure_channel(
                running.target, tls_credentials(certs["pipeline"])
            ) as old_client:
                error = await rpc_error(old_client, method)
            assert (
                error.code() == grpc.StatusCode.UNAVAILABLE and "CERTIFICATE_VERIFY_FAILED" in error.details()
            )
            async with grpc.aio.secure_channel(running.target, tls_credentials(new_client)) as renewed:
                assert await call_status(renewed, method) == grpc.StatusCode.OK
        assert any("TLS files changed, loaded again" in r.getMessage() for r in caplog.records)
        assert await call_status(before, method) == grpc.StatusCode.OK  # its connection predates the change
        await before.close()
    finally:
        await running.stop(None)


async def test_a_half_done_rotation_keeps_the_loaded_files(
    certs: dict[str, TlsConfig], ca: CertificateAuthority, tmp_path: Path
) -> None:
    server_tls = copy_tls_files(certs["kzg"], tmp_path / "server")
    _, running = await serve_stand_in(server_tls)
    method = "novaberg.kzg.v1.KzgService/StoreEntry"
    try:
        renewed = ca.issue("kzg")
        Path(server_tls.cert_file).write_bytes(renewed.cert_pem)  # the key does not match yet
        async with grpc.aio.secure_channel(running.target, tls_credentials(certs["pipeline"])) as channel:
            assert await call_status(channel, method) == grpc.StatusCode.OK
        Path(server_tls.key_file).write_bytes(renewed.key_pem)
        async with grpc.aio.secure_channel(running.target, tls_credentials(certs["pipeline"])) as channel:
            assert await call_status(channel, method) == grpc.StatusCode.OK
    finally:
        await running.stop(None)


async def test_a_peer_channel_moves_to_renewed_client_files(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig], tmp_path: Path
) -> None:
    """The client side: new calls of a long-lived peer channel present the new certificate."""
    stand_in, running = server
    client_tls = dataclasses.replace(
        copy_tls_files(certs["pipeline"], tmp_path / "client"), client_reload_interval_s=0.0
    )
    channel = peer_channel(running.target, client_tls)
    assert isinstance(channel, ReloadingChannel)
    try:
        store = channel.unary_unary("/novaberg.kzg.v1.KzgService/StoreEntry")  # bound once, like a stub's
        await store(b"", timeout=5)
        cert, key, _ = CertificateFiles(certs["operator"]).read()
        install_tls_files(client_tls, IssuedCertificate(cert, key))
        with pytest.raises(grpc.aio.AioRpcError) as raised:  # the operator may not write KZG entries
            await store(b"", timeout=5)
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "caller 'operator'" in raised.value.details()
        assert channel.generation == 1
    finally:
        await channel.close()
    assert stand_in.calls == [("novaberg.kzg.v1.KzgService/StoreEntry", "pipeline")]
