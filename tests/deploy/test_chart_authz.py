"""mTLS and the authorisation policy in the chart: explicit plaintext, identities in the
certificates, the production policy in the services' own format."""

from __future__ import annotations

import pytest

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.authz import load_policy, parse_policy
from tests.deploy import chart

SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
IDENTITIES = (*SERVICES, "operator", "gateway", "client")
METHODS = [
    f"{service.full_name}/{method.name}"
    for file in (kzg_pb2.DESCRIPTOR, lzg_pb2.DESCRIPTOR, log_pb2.DESCRIPTOR, pixie_pb2.DESCRIPTOR, pipeline_pb2.DESCRIPTOR)
    for service in file.services_by_name.values()
    for method in service.methods
] + [f"novaberg.rights.v1.RightsService/{m}" for m in ("ErasePair", "EraseUser", "ExportPair", "ForgetMemory")]


@pytest.mark.parametrize("value_set", ["default", "stores"])
def test_without_tls_the_chart_says_plaintext(value_set: str) -> None:
    manifests = chart.render(value_set)
    for svc in SERVICES:
        env = chart.container_env(manifests, f"nova-{svc}")
        assert env["NOVABERG_TLS_MODE"]["value"] == "plaintext", svc
        assert "NOVABERG_TLS_CERT_FILE" not in env and f"NOVABERG_{svc.upper()}_HEALTH_PORT" not in env


def test_with_tls_every_service_is_mtls_with_its_own_secret() -> None:
    manifests = chart.render("production")
    for svc in SERVICES:
        env = chart.container_env(manifests, f"nova-{svc}")
        assert env["NOVABERG_TLS_MODE"]["value"] == "mtls"
        assert env["NOVABERG_TLS_CERT_FILE"]["value"] == "/etc/novaberg/tls/tls.crt"
        assert env["NOVABERG_AUTHZ_POLICY_FILE"]["value"] == "/etc/novaberg/authz/policy.yaml"


def test_cert_manager_certificates_name_the_identity() -> None:
    manifests = chart.render({"tls": {"enabled": True, "certManager": {"enabled": True}}})
    certificates = {c["metadata"]["name"]: c["spec"] for c in chart.of_kind(manifests, "Certificate")}
    for identity in (*SERVICES, "client"):
        spec = certificates[f"nova-{identity}"]
        assert spec["uris"] == [f"spiffe://novaberg/{identity}"]
        assert spec["commonName"] == identity
        assert "client auth" in spec["usages"] and "server auth" in spec["usages"]


def test_the_production_policy_is_the_image_s_without_the_client_identity() -> None:
    configmap = chart.named(chart.render("production"), "ConfigMap", "nova-authz")
    production = parse_policy(configmap["data"]["policy.yaml"], "production-values")
    shipped = load_policy()
    differing = {
        (identity, method)
        for identity in IDENTITIES
        for method in METHODS
        if production.allows(identity, method) != shipped.allows(identity, method)
    }
    turns = {f"novaberg.pipeline.v1.PipelineService/{m}" for m in ("ObserveTurn", "ObserveTurns", "BuildDossier", "Dispatch")}
    assert differing == {("client", method) for method in turns}
