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

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg_core.authz import load_policy
from novaberg_core.server import RunningServer
from novaberg_core.tls import CertificateFiles, TlsConfig
from novaberg_dev.devcerts import CertificateAuthority, write_identity_files
from tests.service.mtls.stand_in import (
    FILES,
    IDENTITIES,
    RIGHTS_SERVICE,
    StandIn,
    call_status,
    rpc_error,
    serve_stand_in,
    tls_credentials,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
ADMIN_CALLERS: dict[str, set[str]] = {"novaberg.log.v1.LogService/Purge": {"operator", "pixie"}}
"""Who may call an admin RPC besides nobody: the operator, and Pixie its daily log retention."""


# --- the pipeline's own identity and the open methods ----------------------------------------------


async def test_a_service_identity_reaches_the_rpcs_the_policy_gives_it(
    server: tuple[StandIn, RunningServer], certs: dict[str, TlsConfig]
) -> None:
    stand_in, running = server
    async with grpc.aio.secure_channel(running.target, tls_credentials(certs["pipeline"])) as channel:
        assert await call_status(channel, "novaberg.kzg.v1.KzgService/StoreEntry") == grpc.StatusCode.OK
        assert await call_status(channel, "novaberg.lzg.v1.LzgService/SpreadingRead") == grpc.StatusCode.OK
        assert await call_status(channel, "novaberg.log.v1.LogService/Write", log_pb2.WriteBatch().SerializeToString()) == (
            grpc.StatusCode.OK
        )
        assert await call_status(channel, "novaberg.kzg.v1.KzgService/ReadPromotionJobs") == grpc.StatusCode.PERMISSION_DENIED
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
        error = await rpc_error(channel, "novaberg.pipeline.v1.PipelineService/ObserveTurn")
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
        error = await rpc_error(channel, "novaberg.log.v1.LogService/Purge")
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    assert error.details().endswith("Socket closed")
    assert stand_in.calls == []


async def test_a_plaintext_client_fails_the_handshake(server: tuple[StandIn, RunningServer]) -> None:
    stand_in, running = server
    async with grpc.aio.insecure_channel(running.target) as channel:
        error = await rpc_error(channel, "grpc.health.v1.Health/Check")
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
        error = await rpc_error(channel, "novaberg.kzg.v1.KzgService/StoreEntry")
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
            error = await rpc_error(channel, "novaberg.pipeline.v1.PipelineService/ObserveTurn")
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
    channels = {i: grpc.aio.secure_channel(running.target, tls_credentials(certs[i])) for i in IDENTITIES}
    try:
        with caplog.at_level(logging.WARNING, logger="novaberg_core.authz"):
            for method, identity in ADMIN_CASES:
                error = await rpc_error(channels[identity], method)
                assert error.code() == grpc.StatusCode.PERMISSION_DENIED, (method, identity)
                assert error.details() == f"caller '{identity}' may not call {method} (authorisation policy)"
        logged = [r.getMessage() for r in caplog.records]
        for method, identity in ADMIN_CASES:
            assert any(f"PERMISSION_DENIED: {identity} may not call {method} (peer " in line for line in logged)
        assert stand_in.calls == []
        for method in sorted({m for m, _ in ADMIN_CASES}):  # the operator gets through every one
            assert await call_status(channels["operator"], method) == grpc.StatusCode.OK, method
        assert await call_status(channels["pixie"], "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.OK
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
        async with grpc.aio.secure_channel(running.target, tls_credentials(certs[identity])) as channel:
            outcome = {method: await call_status(channel, method) for method in every}
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
    async with grpc.aio.secure_channel(running.target, tls_credentials(certs["gateway"])) as gateway, \
            grpc.aio.secure_channel(running.target, tls_credentials(certs["operator"])) as operator:  # fmt: skip
        assert await call_status(gateway, method, broken) == grpc.StatusCode.PERMISSION_DENIED
        assert await call_status(operator, method, broken) == grpc.StatusCode.INVALID_ARGUMENT
        assert await call_status(operator, method, pair) == grpc.StatusCode.OK
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
        assert await call_status(channel, "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.UNIMPLEMENTED
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for _ in stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])):
                pass
        assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
        await running.health.enter_graceful_shutdown()
        answer = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_the_health_listener_is_off_unless_configured(certs: dict[str, TlsConfig]) -> None:
    _, running = await serve_stand_in(certs["kzg"])
    try:
        assert running.health_port is None
    finally:
        await running.stop(None)


# --- plaintext and the environment --------------------------------------------------------------------


async def test_plaintext_has_no_authorisation_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="novaberg_core.authz"):
        stand_in, running = await serve_stand_in(TlsConfig())
    try:
        assert any("PLAINTEXT (NOVABERG_TLS_MODE=plaintext)" in r.getMessage() for r in caplog.records)
        async with grpc.aio.insecure_channel(running.target) as channel:
            assert await call_status(channel, "novaberg.log.v1.LogService/Purge") == grpc.StatusCode.OK
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
        with grpc.secure_channel(f"127.0.0.1:{port}", tls_credentials(certs["gateway"])) as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        process.terminate()
        process.communicate(timeout=20)
