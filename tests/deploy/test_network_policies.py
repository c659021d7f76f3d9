"""Who may reach whom, computed from the rendered NetworkPolicies and compared with the design.

A small evaluator applies Kubernetes NetworkPolicy semantics (a pod selected by a policy of a
type is isolated for that direction; rules are unions of peers × ports; podSelector alone means
the policy's namespace; an empty or missing `from`/`to`/`ports` allows all) to the release's pods
plus a few pods and addresses outside it. A connection needs the source's egress and the
destination's ingress.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from tests.deploy import chart
from tests.deploy.test_chart_labels import EVERYTHING_ON

NS = chart.NAMESPACE


@dataclass(frozen=True)
class Endpoint:
    name: str
    namespace: str | None  # None: an address outside the cluster
    labels: dict[str, str] = field(default_factory=dict, hash=False)
    ports: frozenset[tuple[int, str]] = frozenset()
    ip: str | None = None


def _namespace_labels(namespace: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": namespace}


def _release_endpoints(manifests: list[chart.Manifest]) -> list[Endpoint]:
    endpoints = []
    for _, pod in chart.pod_templates(manifests):
        labels = pod["metadata"]["labels"]
        ports = frozenset((p["containerPort"], p.get("protocol", "TCP")) for c in pod["spec"]["containers"]
                          for p in c.get("ports", []))
        endpoints.append(Endpoint(labels["app.kubernetes.io/component"], NS, labels, ports))
    return endpoints


OUTSIDERS = [
    Endpoint("caller", "dialogue", {"app": "dialogue-graph"}),
    Endpoint("neighbour", NS, {"app": "something-else"}),
    Endpoint("prometheus", "monitoring", {"app": "prometheus"}),
    Endpoint("kube-dns", "kube-system", {"k8s-app": "kube-dns"}, frozenset({(53, "UDP"), (53, "TCP")})),
    Endpoint("ext-redis", None, ports=frozenset({(6379, "TCP")}), ip="10.20.0.5"),
    Endpoint("ext-postgres", None, ports=frozenset({(5432, "TCP")}), ip="10.20.1.5"),
    Endpoint("internet", None, ports=frozenset((p, "TCP") for p in (443, 4317, 4318, 6379, 5432, 11434)), ip="203.0.113.7"),
]


def _peer_matches(peer: dict[str, Any], policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        if other.ip is None:
            return False
        block = peer["ipBlock"]
        address = ipaddress.ip_address(other.ip)
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(e) for e in block.get("except", []))
    if other.namespace is None:
        return False
    if "namespaceSelector" in peer:
        if not chart.selects(peer["namespaceSelector"], _namespace_labels(other.namespace)):
            return False
    elif other.namespace != policy_namespace:
        return False
    return "podSelector" not in peer or chart.selects(peer["podSelector"], other.labels)


def _rule_allows(rule: dict[str, Any], key: str, policy_namespace: str, other: Endpoint, port: tuple[int, str]) -> bool:
    peers = rule.get(key) or []
    if peers and not any(_peer_matches(p, policy_namespace, other) for p in peers):
        return False
    ports = rule.get("ports") or []
    return not ports or any(
        p.get("protocol", "TCP") == port[1] and p["port"] <= port[0] <= p.get("endPort", p["port"]) for p in ports
    )


def _allowed(policies: list[chart.Manifest], direction: str, subject: Endpoint, other: Endpoint, port: tuple[int, str]) -> bool:
    if subject.namespace != NS:  # only the release's namespace has policies here
        return True
    key = "to" if direction == "Egress" else "from"
    selecting = [p for p in policies if direction in p["spec"]["policyTypes"] and chart.selects(p["spec"]["podSelector"], subject.labels)]
    if not selecting:
        return True
    rules = [r for p in selecting for r in p["spec"].get(direction.lower()) or []]
    return any(_rule_allows(r, key, NS, other, port) for r in rules)


def reachability(manifests: list[chart.Manifest]) -> dict[str, dict[str, set[int]]]:
    """source → destination → ports reachable (destinations with none are left out)."""
    policies = chart.of_kind(manifests, "NetworkPolicy")
    endpoints = _release_endpoints(manifests) + OUTSIDERS
    table: dict[str, dict[str, set[int]]] = {}
    for source in endpoints:
        if source.namespace is None:
            continue
        for target in endpoints:
            if target is source:
                continue
            for port in target.ports:
                if _allowed(policies, "Egress", source, target, port) and _allowed(policies, "Ingress", target, source, port):
                    table.setdefault(source.name, {}).setdefault(target.name, set()).add(port[0])
    return table


GRPC, METRICS, DNS = 50051, 9464, 53
OTLP = {4317, 4318}
SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
INTERNET_ALL = {443, 4317, 4318, 6379, 5432, 11434}

# The design, for a release with every in-chart component on (stores, Ollama, collector).
EXPECTED_IN_CHART: dict[str, dict[str, set[int]]] = {
    "pipeline": {"kzg": {GRPC}, "lzg": {GRPC}, "log": {GRPC}, "redis": {6379}, "ollama": {11434},
                 "otel-collector": OTLP, "kube-dns": {DNS}},
    "kzg": {"log": {GRPC}, "redis": {6379}, "ollama": {11434}, "otel-collector": OTLP, "kube-dns": {DNS}},
    "lzg": {"log": {GRPC}, "postgresql": {5432}, "ollama": {11434}, "otel-collector": OTLP, "kube-dns": {DNS}},
    "pixie": {"kzg": {GRPC}, "lzg": {GRPC}, "log": {GRPC}, "postgresql": {5432}, "otel-collector": OTLP, "kube-dns": {DNS}},
    "log": {"postgresql": {5432}, "otel-collector": OTLP, "kube-dns": {DNS}},
    "ollama": {"kube-dns": {DNS}, "internet": {443}},
    "otel-collector": {"kube-dns": {DNS}, "internet": {443, 4317, 4318}},
    # the helm test pod has no policy of its own: the services' ingress lets it in, the stores' not
    "test": {**{svc: {GRPC} for svc in SERVICES}, "kube-dns": {DNS}, "ext-redis": {6379}, "ext-postgres": {5432},
             "internet": INTERNET_ALL},
    # outside the release only the pipeline answers (metrics to the monitoring namespace)
    "caller": {"pipeline": {GRPC}, "kube-dns": {DNS}, "ext-redis": {6379}, "ext-postgres": {5432}, "internet": INTERNET_ALL},
    "neighbour": {"pipeline": {GRPC}, "kube-dns": {DNS}, "ext-redis": {6379}, "ext-postgres": {5432}, "internet": INTERNET_ALL},
    "prometheus": {**{svc: {METRICS} for svc in SERVICES}, "pipeline": {GRPC, METRICS}, "kube-dns": {DNS},
                   "ext-redis": {6379}, "ext-postgres": {5432}, "internet": INTERNET_ALL},
    "kube-dns": {"pipeline": {GRPC}, "ext-redis": {6379}, "ext-postgres": {5432}, "internet": INTERNET_ALL},
}


def test_reachability_with_every_in_chart_component() -> None:
    table = reachability(chart.render(EVERYTHING_ON))
    assert table == EXPECTED_IN_CHART


def test_each_store_only_from_its_owners() -> None:
    table = reachability(chart.render(EVERYTHING_ON))
    redis = {src for src, dsts in table.items() if "redis" in dsts}
    postgresql = {src for src, dsts in table.items() if "postgresql" in dsts}
    assert redis == {"kzg", "pipeline"}
    assert postgresql == {"lzg", "log", "pixie"}


def test_reachability_in_production_with_external_stores() -> None:
    table = reachability(chart.render("production"))
    # external stores only on their CIDRs and ports, each only from its owners
    assert {src for src, d in table.items() if src in SERVICES and "ext-redis" in d} == {"kzg", "pipeline"}
    assert {src for src, d in table.items() if src in SERVICES and "ext-postgres" in d} == {"lzg", "log", "pixie"}
    assert all("internet" not in table[svc] for svc in SERVICES)
    # the pipeline only from the dialogue namespace (pipelineFrom), the rest from no outsider
    assert table["caller"].get("pipeline") == {GRPC}
    assert "pipeline" not in table["neighbour"]
    assert table["prometheus"]["kzg"] == {METRICS} and table["prometheus"]["pipeline"] == {METRICS}
    # the collector exports only to the observability namespace, which holds none of our pods
    assert table["otel-collector"] == {"kube-dns": {DNS}}
    assert table["kzg"]["otel-collector"] == OTLP


def test_without_policies_everything_is_open() -> None:
    """The evaluator is not vacuous: with the policies off the outsider reaches every service."""
    table = reachability(chart.render({**EVERYTHING_ON, "networkPolicy": {"enabled": False}}))
    assert set(table["caller"]) >= {*SERVICES, "redis", "postgresql", "ollama"}
