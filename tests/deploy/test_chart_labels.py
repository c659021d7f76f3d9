"""Labels after Helm's best-practice set, and selectors that never reach another release's pods.

Two releases (``nova`` and ``nova2``) are rendered into the same namespace with every optional
component on; every selector of one — Services, workloads, PDBs, NetworkPolicies and their peers,
topology spread — is evaluated against the other's pods.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy import chart

EVERYTHING_ON: dict[str, Any] = {
    **chart.value_set("stores"),
    "ollama": {"enabled": True},
    "embedding": {"provider": "ollama"},
    "otelCollector": {"enabled": True},
}
REQUIRED_LABELS = (
    "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
    "app.kubernetes.io/version", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "helm.sh/chart",
)
SELECTOR_KEYS = {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component"}


def _pods(manifests: list[chart.Manifest]) -> list[tuple[str, dict[str, str]]]:
    return [(owner["metadata"]["name"], pod["metadata"]["labels"]) for owner, pod in chart.pod_templates(manifests)]


def _selectors(manifests: list[chart.Manifest]) -> list[tuple[str, dict[str, Any]]]:
    """(where, selector) of every pod selector in the manifests (same-namespace ones only)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for m in manifests:
        where = f"{m['kind']}/{m['metadata']['name']}"
        spec = m.get("spec") or {}
        if m["kind"] == "Service":
            found.append((where, spec["selector"]))
        elif m["kind"] in ("Deployment", "StatefulSet", "PodDisruptionBudget"):
            found.append((where, spec["selector"]))
        elif m["kind"] == "NetworkPolicy":
            found.append((where, spec["podSelector"]))
            for rule in spec.get("ingress") or []:
                found += [(f"{where} from", p["podSelector"]) for p in rule.get("from") or []
                          if "podSelector" in p and "namespaceSelector" not in p]
            for rule in spec.get("egress") or []:
                found += [(f"{where} to", p["podSelector"]) for p in rule.get("to") or []
                          if "podSelector" in p and "namespaceSelector" not in p]
        if m["kind"] in ("Deployment", "StatefulSet"):
            for constraint in spec["template"]["spec"].get("topologySpreadConstraints") or []:
                found.append((f"{where} spread", constraint["labelSelector"]))
    return found


@pytest.fixture(scope="module")
def releases() -> tuple[list[chart.Manifest], list[chart.Manifest]]:
    return chart.render(EVERYTHING_ON, release="nova"), chart.render(EVERYTHING_ON, release="nova2")


def test_every_resource_and_pod_carries_the_recommended_labels(releases: Any) -> None:
    nova, _ = releases
    for m in nova:
        labels = m["metadata"].get("labels") or {}
        missing = [key for key in REQUIRED_LABELS if key not in labels]
        assert not missing, f"{m['kind']}/{m['metadata']['name']} lacks {missing}"
        assert labels["app.kubernetes.io/instance"] == "nova"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == "0.1.0"
        assert labels["helm.sh/chart"] == "novaberg-0.3.0"
    for owner, labels in _pods(nova):
        assert all(key in labels for key in REQUIRED_LABELS), owner


def test_selectors_use_name_instance_and_component(releases: Any) -> None:
    nova, _ = releases
    for where, selector in _selectors(nova):
        keys = set(selector.get("matchLabels", selector if "matchExpressions" not in selector else {}))
        keys |= {e["key"] for e in selector.get("matchExpressions") or []}
        assert keys == SELECTOR_KEYS, f"{where}: {sorted(keys)}"


def test_no_selector_of_one_release_matches_the_other_releases_pods(releases: Any) -> None:
    for mine, theirs in (releases, releases[::-1]):
        their_pods = _pods(theirs)
        my_pods = _pods(mine)
        assert their_pods and my_pods
        for where, selector in _selectors(mine):
            hits = [owner for owner, labels in their_pods if chart.selects(selector, labels)]
            assert hits == [], f"{where} selects the other release's {hits}"
            assert any(chart.selects(selector, labels) for _, labels in my_pods), f"{where} selects nothing"


def test_each_workload_and_service_selects_exactly_its_own_component(releases: Any) -> None:
    nova, _ = releases
    pods = _pods(nova)
    for m in nova:
        if m["kind"] not in ("Service", "Deployment", "StatefulSet", "PodDisruptionBudget"):
            continue
        hits = {owner for owner, labels in pods if chart.selects(m["spec"]["selector"], labels)}
        expected = m["metadata"]["name"].removesuffix("-headless")
        assert hits == {expected}, f"{m['kind']}/{m['metadata']['name']} selects {hits}"


def test_resource_names_do_not_collide_between_releases(releases: Any) -> None:
    nova, nova2 = releases
    names = [{(m["kind"], m["metadata"]["name"]) for m in r} for r in (nova, nova2)]
    assert not names[0] & names[1]
    hpas = chart.of_kind(nova, "HorizontalPodAutoscaler")
    deployments = {m["metadata"]["name"] for m in chart.of_kind(nova, "Deployment")}
    assert hpas and all(h["spec"]["scaleTargetRef"]["name"] in deployments for h in hpas)
