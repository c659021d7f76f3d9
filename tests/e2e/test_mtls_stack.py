"""The five services as processes under mTLS with the shipped authorisation policy (issue 13).

A turn from an outside caller (`gateway`) runs through the pipeline, which reaches the KZG, the LZG
and the log service with its own certificate; the outside caller itself is refused everywhere
else, and no service is ever refused by another.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import grpc.aio
import pytest

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2, kzg_pb2_grpc
from novaberg.log.v1 import log_pb2, log_pb2_grpc
from novaberg.pipeline.v1 import pipeline_pb2, pipeline_pb2_grpc
from novaberg.pixie.v1 import pixie_pb2, pixie_pb2_grpc
from novaberg_core.tls import CertificateFiles, TlsConfig
from novaberg_dev.devcerts import write_identity_files
from novaberg_dev.stack import SERVICES, Stack
from tests.e2e.helpers import Clients, open_channel
from tests.polling import eventually

PAIR = common_pb2.Pair(user_id="mtls-user", character_id="nova")
USER = common_pb2.BEOBACHTER_USER


@pytest.fixture(scope="module")
def gateway(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> TlsConfig:
    """An outside caller's certificate from the stack's CA."""
    assert stack.ca is not None
    return write_identity_files(tmp_path_factory.mktemp("gateway"), stack.ca, ["gateway"])["gateway"]


def test_every_service_runs_mtls_with_its_own_certificate(stack: Stack) -> None:
    assert stack.client_tls.enabled and Path(stack.client_tls.cert_file).name == "operator.crt"
    for service in SERVICES:
        env = stack.service_env(service)
        assert env["NOVABERG_TLS_MODE"] == "mtls"
        assert Path(env["NOVABERG_TLS_CERT_FILE"]).name == f"{service}.crt"
        assert "NOVABERG_AUTHZ_POLICY_FILE" not in env  # the shipped policy
        log = stack.log_path(service).read_text()
        assert f"{service}: mTLS: client certificates required" in log, service
        assert "PLAINTEXT" not in log, service


async def test_an_outside_turn_runs_through_pipeline_kzg_lzg_and_log(
    stack: Stack, gateway: TlsConfig, clients: Clients
) -> None:
    async with open_channel(stack.addresses["pipeline"], gateway) as channel:
        pipeline = pipeline_pb2_grpc.PipelineServiceStub(channel)
        observed = await pipeline.ObserveTurn(
            pipeline_pb2.ObserveTurnRequest(
                pair=PAIR, turn_id="mtls-1", beobachter=USER, text="My sister Anna celebrates her birthday on March 12."
            )
        )
        assert observed.kzg.outcome == kzg_pb2.STORE_OUTCOME_STORED  # pipeline → KZG StoreEntry
        dossier = await pipeline.BuildDossier(  # pipeline → KZG Retrieve, LZG SpreadingRead
            pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="mtls-2", query_text="When is Anna's birthday?")
        )
        assert dossier.cluster
        await pipeline.Dispatch(  # pipeline → KZG AppendSessionTurn, LZG ReinforceUsed
            pipeline_pb2.DispatchRequest(pair=PAIR, turn_id="mtls-3", user_prompt="When is Anna's birthday?",
                                         answer_text="On March 12.", cluster="Glut")
        )  # fmt: skip
    session = await clients.kzg.GetSession(kzg_pb2.GetSessionRequest(pair=PAIR))
    assert [t.text for t in session.turns][-1] == "On March 12."
    # pipeline → log Write: the turn's records reach the log service under the pipeline's identity
    rows = await eventually(
        lambda: clients.log.Query(log_pb2.QueryRequest(turn_id="mtls-1", limit=100)),
        lambda response: len(response.records) > 0,
        what="the turn's pipeline-log records",
    )
    assert {r.turn_id for r in rows.records} == {"mtls-1"}


async def test_the_outside_caller_is_refused_everywhere_else(stack: Stack, gateway: TlsConfig) -> None:
    async with open_channel(stack.addresses["kzg"], gateway) as kzg, open_channel(
        stack.addresses["log"], gateway
    ) as log, open_channel(stack.addresses["pixie"], gateway) as pixie:
        calls = {
            "kzg.GetSession": kzg_pb2_grpc.KzgServiceStub(kzg).GetSession(kzg_pb2.GetSessionRequest(pair=PAIR)),
            "log.Purge": log_pb2_grpc.LogServiceStub(log).Purge(log_pb2.PurgeRequest()),
            "pixie.TriggerTask": pixie_pb2_grpc.PixieServiceStub(pixie).TriggerTask(
                pixie_pb2.TriggerTaskRequest(task="synapsen_decay")
            ),
        }
        for name, call in calls.items():
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await call
            assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED, name
            assert "caller 'gateway' may not call" in raised.value.details()
    assert "PERMISSION_DENIED: gateway may not call novaberg.log.v1.LogService/Purge" in stack.log_tail("log", 200)


async def test_a_caller_without_a_certificate_is_turned_away_at_the_handshake(stack: Stack) -> None:
    ca_only = grpc.ssl_channel_credentials(root_certificates=CertificateFiles(stack.client_tls).read()[2])
    async with grpc.aio.secure_channel(stack.addresses["pipeline"], ca_only) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await pipeline_pb2_grpc.PipelineServiceStub(channel).BuildDossier(
                pipeline_pb2.BuildDossierRequest(pair=PAIR, turn_id="mtls-x", query_text="x"), timeout=10
            )
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_no_service_was_refused_by_another(stack: Stack) -> None:
    """The shipped policy covers the real call graph (pipeline, Pixie's worker, every log writer)."""
    for service in SERVICES:
        log = stack.log_path(service).read_text()
        refused = [line for line in log.splitlines() if "PERMISSION_DENIED" in line or "UNAUTHENTICATED" in line]
        assert all("gateway may not call" in line for line in refused), refused
