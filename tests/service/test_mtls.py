"""mTLS and per-RPC authorisation in the one server bootstrap, with real certificates, real
servers on port 0 and real channels (issue 13).

The server under test is :func:`novaberg_core.server.create_server` serving stand-in handlers for
every method of the five services (and of a future data-rights service): each answers an empty
response and records the caller :func:`novaberg_core.authz.caller_identity` saw, so a test sees
exactly whether a call got past the handshake and the policy. What each rejection looks like to
the client is asserted precisely:

- no client certificate, a certificate of another CA, a plaintext client: the server's TLS
  handshake fails before gRPC sees a call → the client gets UNAVAILABLE ("failed to connect to all
  addresses; … Socket closed"), the server logs nothing of its own (gRPC core logs the handshake);
- a client that does not trust the server's CA: UNAVAILABLE naming CERTIFICATE_VERIFY_FAILED;
- a certificate of the right CA without a usable identity: UNAUTHENTICATED;
- an identity the policy does not allow: PERMISSION_DENIED naming caller and method.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FileDescriptor, MethodDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.authz import caller_identity, load_policy
from novaberg_core.channels import ReloadingChannel, peer_channel
from novaberg_core.config import CommonConfig
from novaberg_core.server import RunningServer, create_server
from novaberg_core.tls import CertificateFiles, TlsConfig, channel_credentials
from novaberg_dev.devcerts import CertificateAuthority, IssuedCertificate, write_identity_files

REPO_ROOT = Path(__file__).resolve().parents[2]
FILES: tuple[FileDescriptor, ...] = (
    kzg_pb2.DESCRIPTOR, lzg_pb2.DESCRIPTOR, log_pb2.DESCRIPTOR, pixie_pb2.DESCRIPTOR, pipeline_pb2.DESCRIPTOR,
)  # fmt: skip
SERVICES = tuple(service.full_name for f in FILES for service in f.services_by_name.values())
RIGHTS_SERVICE = "novaberg.rights.v1.RightsService"
"""A stand-in for the data-rights RPCs that do not exist yet (the policy covers them by pattern)."""
IDENTITIES = ("kzg", "lzg", "pipeline", "pixie", "log", "operator", "gateway", "client")
ADMIN_CALLERS: dict[str, set[str]] = {"novaberg.log.v1.LogService/Purge": {"operator", "pixie"}}
"""Who may call an admin RPC besides nobody: the operator, and Pixie its daily log retention."""


# --- a server with stand-in handlers ---------------------------------------------------------------


class StandIn:
    """Empty answers for every method of the five services and of :data:`RIGHTS_SERVICE`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def _unary(self, method: str, response: Any) -> Any:
        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            self.calls.append((method, caller_identity()))
            return response

        return handle

    def _client_stream(self, method: str, response: Any) -> Any:
        async def handle(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            async for _ in requests:
                pass
            self.calls.append((method, caller_identity()))
            return response

        return handle

    def register(self, server: grpc.aio.Server) -> None:
        for file in FILES:
            for service in file.services_by_name.values():
                handlers = {m.name: self._handler(service.full_name, m) for m in service.methods}
                server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
        rights = {
            name: grpc.unary_unary_rpc_method_handler(self._unary(f"{RIGHTS_SERVICE}/{name}", b""))
            for name in ("ErasePair", "EraseUser", "ExportPair", "ForgetMemory", "CorrectMemory", "RequeueParkedJobs")
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(RIGHTS_SERVICE, rights),))

    def _handler(self, service: str, method: MethodDescriptor) -> grpc.RpcMethodHandler:
        request_type = message_factory.GetMessageClass(method.input_type)
        response_type = message_factory.GetMessageClass(method.output_type)
        path = f"{service}/{method.name}"
        options = {"request_deserializer": request_type.FromString, "response_serializer": response_type.SerializeToString}
        if method.client_streaming:
            return grpc.stream_unary_rpc_method_handler(self._client_stream(path, response_type()), **options)
        return grpc.unary_unary_rpc_method_handler(self._unary(path, response_type()), **options)


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("test CA")


@pytest.fixture(scope="module")
def certs(ca: CertificateAuthority, tmp_path_factory: pytest.TempPathFactory) -> dict[str, TlsConfig]:
    return write_identity_files(tmp_path_factory.mktemp("certs"), ca, IDENTITIES)


def _copy(tls: TlsConfig, directory: Path) -> TlsConfig:
    """``tls``'s files copied into ``directory`` (so a test can replace them)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Any] = {}
    for field in ("cert_file", "key_file", "ca_file"):
        target = directory / Path(getattr(tls, field)).name
        shutil.copyfile(getattr(tls, field), target)
        paths[field] = str(target)
    return dataclasses.replace(tls, **paths)


def _install(tls: TlsConfig, issued: IssuedCertificate, ca_pem: bytes | None = None) -> None:
    """Replace ``tls``'s files atomically, as a Secret volume update does."""
    parts = [(tls.cert_file, issued.cert_pem), (tls.key_file, issued.key_pem)]
    if ca_pem is not None:
        parts.append((tls.ca_file, ca_pem))
    for path, data in parts:
        tmp = f"{path}.new"
        Path(tmp).write_bytes(data)
        os.replace(tmp, path)


async def _serve(tls: TlsConfig, *, health_port: int | None = None) -> tuple[StandIn, RunningServer]:
    stand_in = StandIn()
    cfg = CommonConfig(service_name="kzg", host="127.0.0.1", tls=tls, health_port=health_port, grace_seconds=0.5)
    running = await create_server(cfg, stand_in.register, SERVICES)
    return stand_in, running


@pytest.fixture
async def server(certs: dict[str, TlsConfig]) -> AsyncIterator[tuple[StandIn, RunningServer]]:
    stand_in, running = await _serve(certs["kzg"], health_port=0)
    try:
        yield stand_in, running
    finally:
        await running.stop(None)


def _credentials(tls: TlsConfig) -> grpc.ChannelCredentials:
    return channel_credentials(CertificateFiles(tls).read())


async def _call(channel: grpc.aio.Channel, method: str, request: bytes = b"") -> grpc.StatusCode:
    """Calls ``method`` (``package.Service/Method``) with raw bytes; the status code."""
    path = f"/{method}"
    try:
        if method == "novaberg.log.v1.LogService/Write":
            await channel.stream_unary(path)(iter([request]), timeout=5)
        else:
            await channel.unary_unary(path)(request, timeout=5)
    except grpc.aio.AioRpcError as error:
        return error.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


async def _error(channel: grpc.aio.Channel, method: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await channel.unary_unary(f"/{method}")(b"", timeout=5)
    return raised.value


# --- the pipeline's own identity and the open methods ----------------------------------------------


async def test_a_service_identity_reaches_the_rpcs_the_policy_gives_it(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    stand_in, running = server
    async with grpc.aio.secure_channel(running.target, _credentials(certs["pipeline"])) as channel:
        assert await _call(channel, "novaberg.kzg.v1.KzgService/StoreEntry") == grpc.StatusCode.OK
        assert await _call(channel, "novaberg.lzg.v1.LzgService/SpreadingRead") == grpc.StatusCode.OK
        assert await _call(channel, "novaberg.log.v1.LogService/Write", log_pb2.WriteBatch().SerializeToString()) == (
            grpc.StatusCode.OK
        )
        assert await _call(channel, "novaberg.kzg.v1.KzgService/ReadPromotionJobs") == grpc.StatusCode.PERMISSION_DENIED
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        answers = [a async for a in stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
        assert "novaberg.kzg.v1.KzgService" in {s.name for s in answers[0].list_services_response.service}
    assert stand_in.calls == [
        ("novaberg.kzg.v1.KzgService/StoreEntry", "pipeline"),
        ("novaberg.lzg.v1.LzgService/SpreadingRead", "pipeline"),
        ("novaberg.log.v1.LogService/Write", "pipeline"),
    ]


# --- rejected at the handshake ---------------------------------------------------------------------


async def test_no_client_certificate_fails_the_handshake(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    stand_in, running = server
    ca_only = grpc.ssl_channel_credentials(root_certificates=CertificateFiles(certs["pipeline"]).read()[2])
    async with grpc.aio.secure_channel(running.target, ca_only) as channel:
        error = await _error(channel, "novaberg.pipeline.v1.PipelineService/ObserveTurn")
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert error.details().startswith("failed to connect to all addresses; last error: UNAVAILABLE: ")
    assert error.details().endswith("Socket closed")
    assert stand_in.calls == []


async def test_a_certificate_of_another_ca_fails_the_handshake(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig], tmp_path: Path
) -> None:
    stand_in, running = server
    stranger = write_identity_files(tmp_path, CertificateAuthority.create("another CA"), ["operator"])["operator"]
    own_ca = CertificateFiles(certs["operator"]).read()[2]
    cert, key, _ = CertificateFiles(stranger).read()
    credentials = grpc.ssl_channel_credentials(root_certificates=own_ca, private_key=key, certificate_chain=cert)
    async with grpc.aio.secure_channel(running.target, credentials) as channel:
        error = await _error(channel, "novaberg.log.v1.LogService/Purge")
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert error.details().endswith("Socket closed")
    assert stand_in.calls == []


async def test_a_plaintext_client_fails_the_handshake(server: tuple[StandIn, RunningServer]) -> None:
    stand_in, running = server
    async with grpc.aio.insecure_channel(running.target) as channel:
        error = await _error(channel, "grpc.health.v1.Health/Check")
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert stand_in.calls == []


async def test_a_client_that_does_not_trust_the_server_sees_why(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    _, running = server
    cert, key, _ = CertificateFiles(certs["pipeline"]).read()
    other_ca = CertificateAuthority.create("not the server's CA").cert_pem
    credentials = grpc.ssl_channel_credentials(root_certificates=other_ca, private_key=key, certificate_chain=cert)
    async with grpc.aio.secure_channel(running.target, credentials) as channel:
        error = await _error(channel, "novaberg.kzg.v1.KzgService/StoreEntry")
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert "CERTIFICATE_VERIFY_FAILED" in error.details()


# --- rejected by the policy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "uris", "common_name"),
    [
        ("foreign trust domain", ["spiffe://elsewhere/pipeline"], "pipeline"),
        ("two SPIFFE IDs", ["spiffe://novaberg/pipeline", "spiffe://novaberg/operator"], "pipeline"),
        ("no name at all", [], ""),
    ],
)
async def test_a_certificate_without_a_usable_identity_is_unauthenticated(
    server: tuple[StandIn, RunningServer],
    ca: CertificateAuthority,
    certs: dict[str, TlsConfig],
    caplog: pytest.LogCaptureFixture,
    name: str,
    uris: list[str],
    common_name: str,
) -> None:
    stand_in, running = server
    issued = ca.issue(None, common_name=common_name, uris=uris)
    ca_pem = CertificateFiles(certs["kzg"]).read()[2]
    credentials = grpc.ssl_channel_credentials(ca_pem, issued.key_pem, issued.cert_pem)
    with caplog.at_level(logging.WARNING, logger="novaberg_core.authz"):
        async with grpc.aio.secure_channel(running.target, credentials) as channel:
            error = await _error(channel, "novaberg.pipeline.v1.PipelineService/ObserveTurn")
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED, name
    assert "names no identity" in error.details()
    assert stand_in.calls == []
    assert any(
        "UNAUTHENTICATED call of novaberg.pipeline.v1.PipelineService/ObserveTurn" in r.getMessage() for r in caplog.records
    )


def _admin_cases() -> list[tuple[str, str]]:
    """(method, identity) for every admin entry of the shipped policy and every identity it does not name."""
    cases: list[tuple[str, str]] = []
    for rule in load_policy().admin_rules:
        for pattern in rule.methods:
            method = pattern.replace("novaberg.*/", f"{RIGHTS_SERVICE}/")
            allowed = ADMIN_CALLERS.get(method, {"operator"})
            cases.extend((method, identity) for identity in IDENTITIES if identity not in allowed)
    return cases


ADMIN_CASES = _admin_cases()


def test_the_admin_table_covers_the_issue_s_list() -> None:
    methods = {method for method, _ in ADMIN_CASES}
    for expected in (
        "novaberg.log.v1.LogService/Purge", "novaberg.lzg.v1.LzgService/DeleteEntity",
        "novaberg.lzg.v1.LzgService/MergeEntities", "novaberg.pixie.v1.PixieService/TriggerTask",
        "novaberg.pixie.v1.PixieService/PauseTask", "novaberg.pixie.v1.PixieService/ResumeTask",
        *(f"{RIGHTS_SERVICE}/{name}" for name in ("ErasePair", "EraseUser", "ExportPair", "ForgetMemory",
                                                  "CorrectMemory", "RequeueParkedJobs")),
    ):  # fmt: skip
        assert expected in methods, expected
    assert len(ADMIN_CASES) >= 15 * 6


async def test_every_admin_rpc_refuses_every_other_identity(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig], caplog: pytest.LogCaptureFixture
) -> None:
    """Table-driven over the policy's admin entries: PERMISSION_DENIED, logged with identity and method."""
    stand_in, running = server
    channels = {i: grpc.aio.secure_channel(running.target, _credentials(certs[i])) for i in IDENTITIES}
    try:
        with caplog.at_level(logging.WARNING, logger="novaberg_core.authz"):
            for method, identity in ADMIN_CASES:
                error = await _error(channels[identity], method)
                assert error.code() == grpc.StatusCode.PERMISSION_DENIED, (method, identity)
                assert error.details() == f"caller '{identity}' may not call {method} (authorisation policy)"
        logged = [r.getMessage() for r in caplog.records]
        for method, identity in ADMIN_CASES:
            assert any(f"PERMISSION_DENIED: {identity} may not call {method} (peer " in line for line in logged)
        assert stand_in.calls == []
        for method in sorted({m for m, _ in ADMIN_CASES}):  # the operator gets through every one
            assert await _call(channels["operator"], method) == grpc.StatusCode.OK, method
        assert await _call(channels["pixie"], "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.OK
    finally:
        for channel in channels.values():
            await channel.close()


async def test_outside_callers_only_drive_turns(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    _, running = server
    every = [f"{s.full_name}/{m.name}" for f in FILES for s in f.services_by_name.values() for m in s.methods]
    turns = {f"novaberg.pipeline.v1.PipelineService/{m}" for m in ("ObserveTurn", "ObserveTurns", "BuildDossier", "Dispatch")}
    for identity in ("gateway", "client"):
        async with grpc.aio.secure_channel(running.target, _credentials(certs[identity])) as channel:
            outcome = {method: await _call(channel, method) for method in every}
        assert {m for m, code in outcome.items() if code == grpc.StatusCode.OK} == turns, identity
        assert {code for m, code in outcome.items() if m not in turns} == {grpc.StatusCode.PERMISSION_DENIED}


async def test_the_policy_is_checked_before_the_request_contract(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    """A refused caller's bytes are not even parsed: invalid UTF-8 is PERMISSION_DENIED for it and
    INVALID_ARGUMENT for a caller the policy lets through."""
    stand_in, running = server
    pair = kzg_pb2.GetSessionRequest(pair={"user_id": "u", "character_id": "c"}).SerializeToString()
    broken = pair.replace(b"u", b"\xff", 1)
    method = "novaberg.kzg.v1.KzgService/GetSession"
    async with grpc.aio.secure_channel(running.target, _credentials(certs["gateway"])) as gateway, \
            grpc.aio.secure_channel(running.target, _credentials(certs["operator"])) as operator:  # fmt: skip
        assert await _call(gateway, method, broken) == grpc.StatusCode.PERMISSION_DENIED
        assert await _call(operator, method, broken) == grpc.StatusCode.INVALID_ARGUMENT
        assert await _call(operator, method, pair) == grpc.StatusCode.OK
    assert stand_in.calls == [(method, "operator")]


# --- the health listener for probes ----------------------------------------------------------------


async def test_the_health_listener_serves_health_only_in_plaintext(server: tuple[StandIn, RunningServer]) -> None:
    _, running = server
    assert running.health_port is not None and running.health_port != running.port
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.health_port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "novaberg.kzg.v1.KzgService"):
            answer = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        assert await _call(channel, "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.UNIMPLEMENTED
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for _ in stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])):
                pass
        assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
        await running.health.enter_graceful_shutdown()
        answer = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_the_health_listener_is_off_unless_configured(certs: dict[str, TlsConfig]) -> None:
    _, running = await _serve(certs["kzg"])
    try:
        assert running.health_port is None
    finally:
        await running.stop(None)


# --- reloading ---------------------------------------------------------------------------------------


async def test_replaced_server_files_serve_new_connections(
    certs: dict[str, TlsConfig], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server moves to a certificate of a new CA (and trusts the new CA's clients): a new
    connection from an old client no longer verifies the server, a new client's does, and a
    connection opened before the change goes on with what it negotiated."""
    server_tls = _copy(certs["kzg"], tmp_path / "server")
    _, running = await _serve(server_tls)
    method = "novaberg.kzg.v1.KzgService/StoreEntry"
    try:
        before = grpc.aio.secure_channel(running.target, _credentials(certs["pipeline"]))
        assert await _call(before, method) == grpc.StatusCode.OK
        new_ca = CertificateAuthority.create("the renewed CA")
        new_client = write_identity_files(tmp_path / "client", new_ca, ["pipeline"])["pipeline"]
        with caplog.at_level(logging.INFO, logger="novaberg_core.tls"):
            _install(server_tls, new_ca.issue("kzg"), new_ca.cert_pem)
            async with grpc.aio.secure_channel(running.target, _credentials(certs["pipeline"])) as old_client:
                error = await _error(old_client, method)
            assert error.code() == grpc.StatusCode.UNAVAILABLE and "CERTIFICATE_VERIFY_FAILED" in error.details()
            async with grpc.aio.secure_channel(running.target, _credentials(new_client)) as renewed:
                assert await _call(renewed, method) == grpc.StatusCode.OK
        assert any("TLS files changed, loaded again" in r.getMessage() for r in caplog.records)
        assert await _call(before, method) == grpc.StatusCode.OK  # its connection predates the change
        await before.close()
    finally:
        await running.stop(None)


async def test_a_half_done_rotation_keeps_the_loaded_files(
    certs: dict[str, TlsConfig], ca: CertificateAuthority, tmp_path: Path
) -> None:
    server_tls = _copy(certs["kzg"], tmp_path / "server")
    _, running = await _serve(server_tls)
    method = "novaberg.kzg.v1.KzgService/StoreEntry"
    try:
        renewed = ca.issue("kzg")
        Path(server_tls.cert_file).write_bytes(renewed.cert_pem)  # the key does not match yet
        async with grpc.aio.secure_channel(running.target, _credentials(certs["pipeline"])) as channel:
            assert await _call(channel, method) == grpc.StatusCode.OK
        Path(server_tls.key_file).write_bytes(renewed.key_pem)
        async with grpc.aio.secure_channel(running.target, _credentials(certs["pipeline"])) as channel:
            assert await _call(channel, method) == grpc.StatusCode.OK
    finally:
        await running.stop(None)


async def test_a_peer_channel_moves_to_renewed_client_files(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig], tmp_path: Path
) -> None:
    """The client side: new calls of a long-lived peer channel present the new certificate."""
    stand_in, running = server
    client_tls = dataclasses.replace(_copy(certs["pipeline"], tmp_path / "client"), client_reload_interval_s=0.0)
    channel = peer_channel(running.target, client_tls)
    assert isinstance(channel, ReloadingChannel)
    try:
        store = channel.unary_unary("/novaberg.kzg.v1.KzgService/StoreEntry")  # bound once, like a stub's
        await store(b"", timeout=5)
        cert, key, _ = CertificateFiles(certs["operator"]).read()
        _install(client_tls, IssuedCertificate(cert, key))
        with pytest.raises(grpc.aio.AioRpcError) as raised:  # the operator may not write KZG entries
            await store(b"", timeout=5)
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "caller 'operator'" in raised.value.details()
        assert channel.generation == 1
    finally:
        await channel.close()
    assert stand_in.calls == [("novaberg.kzg.v1.KzgService/StoreEntry", "pipeline")]


# --- plaintext and the environment --------------------------------------------------------------------


async def test_plaintext_has_no_authorisation_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="novaberg_core.authz"):
        stand_in, running = await _serve(TlsConfig())
    try:
        assert any("PLAINTEXT (NOVABERG_TLS_MODE=plaintext)" in r.getMessage() for r in caplog.records)
        async with grpc.aio.insecure_channel(running.target) as channel:
            assert await _call(channel, "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.OK
        assert stand_in.calls == [("novaberg.log.v1.LogService/Purge", None)]
    finally:
        await running.stop(None)


_ENTRY_POINT = """
from novaberg_core.config import CommonConfig
from novaberg_core.server import run_server, run_service

async def main() -> None:
    await run_server(CommonConfig.from_env("echo"), lambda server: None, ["novaberg.echo.v1.Echo"])

run_service(main)
"""


@pytest.fixture
def bare_env() -> Iterator[dict[str, str]]:
    yield {k: v for k, v in os.environ.items() if not k.startswith("NOVABERG_")} | {"NOVABERG_ECHO_PORT": "0"}


@pytest.mark.parametrize(
    ("extra", "variable"),
    [
        ({}, "NOVABERG_TLS_CERT_FILE"),
        ({"NOVABERG_TLS_CERT_FILE": "/nonexistent/tls.crt"}, "NOVABERG_TLS_CERT_FILE"),
        ({"NOVABERG_TLS_MODE": "tls"}, "NOVABERG_TLS_MODE"),
    ],
)
def test_a_service_from_the_environment_is_mtls_unless_told_otherwise(
    bare_env: dict[str, str], extra: dict[str, str], variable: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY_POINT], cwd=REPO_ROOT, env=bare_env | extra, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"configuration error: {variable}" in done.stderr and "Traceback" not in done.stderr


def test_a_service_from_the_environment_serves_mtls(bare_env: dict[str, str], certs: dict[str, TlsConfig]) -> None:
    env = bare_env | certs["kzg"].as_env() | {"NOVABERG_ECHO_HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", _ENTRY_POINT], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not any("echo: serving" in line for line in lines):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        assert any("echo: mTLS: client certificates required" in line for line in lines), lines
        port = int(lines[-1].rsplit(":", 1)[1])
        with grpc.secure_channel(f"127.0.0.1:{port}", _credentials(certs["gateway"])) as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        process.terminate()
        process.communicate(timeout=20)
