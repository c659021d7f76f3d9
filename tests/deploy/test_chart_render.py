"""The chart renders, lints clean and validates strictly for the three value sets.

Rendering and linting run Helm's own Go code (helm-python-sdk); every manifest is validated
against the Kubernetes JSON schemas of kubernetes-validate in strict mode (unknown fields fail).
"""

from __future__ import annotations

from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.deploy import chart


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_helm_lint_strict_is_clean(value_set: str) -> None:
    report = chart.lint(value_set)
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    # severity 2 = warning, 3 = error: strict lint fails on both; 1 (info) is "icon is recommended"
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_lint_reports_a_broken_template(tmp_path: Any) -> None:
    """The lint check can fail: a copy of the chart with a template that does not parse."""
    copy = tmp_path / "novaberg"
    chart._chart().save_dir(tmp_path)
    (copy / "templates" / "broken.yaml").write_text("{{ if }}\n")
    report = helm.lint(copy, {}, strict=True)
    assert report["errors"] or [m for m in report["messages"] if m["severity"] >= 2]


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_every_manifest_is_valid_kubernetes(value_set: str) -> None:
    manifests = chart.render(value_set)
    assert manifests
    for manifest in manifests:
        chart.validate_manifest(manifest)


def test_strict_validation_rejects_an_unknown_field() -> None:
    deployment = chart.named(chart.render("default"), "Deployment", "nova-kzg")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grpcPort"] = 50051
    with pytest.raises(kubernetes_validate.ValidationError):
        chart.validate_manifest(deployment)


def test_the_renders_hold_every_kind_the_issue_asks_for() -> None:
    kinds = {name: {m["kind"] for m in chart.render(name)} for name in chart.VALUE_SETS}
    everywhere = {"Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget", "HorizontalPodAutoscaler",
                  "ServiceAccount", "ConfigMap", "Pod"}
    for name, found in kinds.items():
        assert everywhere <= found, f"{name} lacks {everywhere - found}"
    assert "StatefulSet" in kinds["stores"] and "PersistentVolumeClaim" in kinds["default"]
    assert "Secret" in kinds["stores"] and "Secret" not in kinds["production"]  # existingSecret there


def test_the_values_schema_rejects_typos_and_bad_values() -> None:
    for bad in (
        {"services": {"kzg": {"replica": 3}}},
        {"services": {"pixie": {"replicas": 1}}},
        {"services": {"pipeline": {"maxConcurrentRpcs": -1}}},
        {"services": {"pixie": {"settings": {"decayAt": "3:30"}}}},
        {"embedding": {"provider": "bert"}},
        {"grpc": {"port": 0}},
        {"stores": {"redisUrl": "http://nope"}},
        {"unknownTopLevel": True},
    ):
        with pytest.raises(helm.HelmValuesError):
            chart.render_files(bad)


def test_a_release_without_any_store_source_fails_with_a_message() -> None:
    with pytest.raises(helm.HelmRenderError, match="no Redis for kzg and pipeline"):
        chart.render_files({"stores": {"existingSecret": ""}})


def test_the_crd_resources_render_when_asked_for() -> None:
    """ServiceMonitor and cert-manager Certificates are opt-in: their CRDs are not in the Kubernetes
    schemas, so they stay out of the three value sets and are checked here by hand."""
    values = {"metrics": {"serviceMonitor": {"enabled": True}}, "tls": {"enabled": True, "certManager": {"enabled": True}}}
    manifests = chart.render(values)
    crds = [m for m in manifests if m["kind"] in ("ServiceMonitor", "Certificate")]
    assert len([m for m in crds if m["kind"] == "ServiceMonitor"]) == 5
    certificates = {m["metadata"]["name"]: m for m in crds if m["kind"] == "Certificate"}
    assert set(certificates) == {f"nova-{s}" for s in ("kzg", "lzg", "pipeline", "pixie", "log", "client")}
    mounted = {
        owner["metadata"]["name"]: next(v["secret"]["secretName"] for v in pod["spec"]["volumes"] if v["name"] == "tls")
        for owner, pod in chart.pod_templates(manifests) if any(v["name"] == "tls" for v in pod["spec"]["volumes"])
    }
    assert mounted["nova-kzg"] == certificates["nova-kzg"]["spec"]["secretName"] == "nova-kzg-tls"
    assert mounted["nova-test-grpc"] == certificates["nova-client"]["spec"]["secretName"]
    assert "nova-kzg-headless.novaberg.svc.cluster.local" in certificates["nova-kzg"]["spec"]["dnsNames"]
    for manifest in manifests:
        if manifest in crds:
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):
                chart.validate_manifest(manifest)
        else:
            chart.validate_manifest(manifest)


def test_notes_tell_how_to_reach_and_test_the_release() -> None:
    text = chart.notes("default")
    assert "dns:///nova-pipeline-headless.novaberg.svc.cluster.local:50051" in text
    assert "helm test nova" in text
    assert "kubectl -n novaberg create secret generic novaberg-stores" in text
    assert "without a metrics adapter" in chart.notes("production")
