"""What every pod of the chart must hold: probes, a locked-down security context, the GPU on
Ollama, Pixie's replica identity, autoscaling and disruption budgets for the right services."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.deploy import chart

SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
STATELESS = ("kzg", "lzg", "pipeline", "log")


def _pod(manifests: list[chart.Manifest], owner: str) -> dict[str, Any]:
    return next(pod for o, pod in chart.pod_templates(manifests) if o["metadata"]["name"] == owner)


@pytest.mark.parametrize("value_set", ["default", "stores"])
def test_services_have_native_grpc_probes(value_set: str) -> None:
    manifests = chart.render(value_set)
    for svc in SERVICES:
        (container,) = _pod(manifests, f"nova-{svc}")["spec"]["containers"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"] == {"port": 50051}, f"{svc} {probe}"
        assert {"name": "grpc", "containerPort": 50051, "protocol": "TCP"} in container["ports"]


def test_with_tls_the_probes_ask_the_plaintext_health_listener() -> None:
    """Kubelet's gRPC probe cannot speak TLS; under mTLS it asks the health-only plaintext listener."""
    manifests = chart.render("production")
    for svc in SERVICES:
        (container,) = _pod(manifests, f"nova-{svc}")["spec"]["containers"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"] == {"port": 8081}, f"{svc} {probe}"
        assert {"name": "health", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env[f"NOVABERG_{svc.upper()}_HEALTH_PORT"] == "8081"


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_every_container_is_locked_down(value_set: str) -> None:
    manifests = chart.render(value_set)
    for owner, pod in chart.pod_templates(manifests):
        spec = pod["spec"]
        name = owner["metadata"]["name"]
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{name}/{container['name']} has no writable /tmp"
            volume = next(v for v in spec["volumes"] if v["name"] == mounts["/tmp"])
            assert "emptyDir" in volume
    (account,) = chart.of_kind(manifests, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False


def test_security_context_comes_from_values() -> None:
    manifests = chart.render({"podSecurityContext": {"runAsNonRoot": True, "runAsUser": 4242, "seccompProfile": {"type": "RuntimeDefault"}}})
    assert _pod(manifests, "nova-kzg")["spec"]["securityContext"]["runAsUser"] == 4242


def test_ollama_requests_the_gpu_and_pulls_its_model() -> None:
    manifests = chart.render("production")
    spec = _pod(manifests, "nova-ollama")["spec"]
    (container,) = spec["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["runtimeClassName"] == "nvidia"
    (pull,) = spec["initContainers"]
    assert "ollama pull" in pull["args"][0] and "nomic-embed-text-v2-moe" in pull["args"]
    claim = next(v for v in spec["volumes"] if v["name"] == "models")["persistentVolumeClaim"]["claimName"]
    assert chart.named(manifests, "PersistentVolumeClaim", claim)["spec"]["resources"]["requests"]["storage"] == "50Gi"
    assert "nvidia.com/gpu" not in container["resources"].get("requests", {})  # extended resources: limit = request


def test_ollama_also_pulls_the_chat_model_of_the_ollama_analyzer() -> None:
    manifests = chart.render({"services": {"pipeline": {"settings": {"analyzer": "ollama", "ollamaModel": "qwen3:8b"}}}})
    (pull,) = _pod(manifests, "nova-ollama")["spec"]["initContainers"]
    assert pull["args"][2:] == ["nomic-embed-text-v2-moe", "qwen3:8b"]


def test_pixie_runs_two_replicas_named_after_their_pods() -> None:
    for value_set in chart.VALUE_SETS:
        manifests = chart.render(value_set)
        assert chart.named(manifests, "Deployment", "nova-pixie")["spec"]["replicas"] >= 2
        env = chart.container_env(manifests, "nova-pixie")
        assert env["NOVABERG_PIXIE_REPLICA_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    with pytest.raises(helm.HelmValuesError):
        chart.render_files({"services": {"pixie": {"replicas": 1}}})


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_hpa_on_cpu_for_the_stateless_services_only(value_set: str) -> None:
    manifests = chart.render(value_set)
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in chart.of_kind(manifests, "HorizontalPodAutoscaler")}
    assert set(hpas) == {f"nova-{s}" for s in STATELESS}
    for name, hpa in hpas.items():
        cpu = next(m for m in hpa["spec"]["metrics"] if m["type"] == "Resource")
        assert cpu["resource"]["name"] == "cpu" and cpu["resource"]["target"]["type"] == "Utilization"
        # the HPA owns the replica count
        assert "replicas" not in chart.named(manifests, "Deployment", name)["spec"]


def test_custom_metric_hpa_is_values_gated() -> None:
    default = {h["metadata"]["name"]: h for h in chart.of_kind(chart.render("default"), "HorizontalPodAutoscaler")}
    assert all(len(h["spec"]["metrics"]) == 1 for h in default.values())
    production = {h["metadata"]["name"]: h for h in chart.of_kind(chart.render("production"), "HorizontalPodAutoscaler")}
    pods_metric = next(m for m in production["nova-pipeline"]["spec"]["metrics"] if m["type"] == "Pods")
    assert pods_metric["pods"]["metric"]["name"] == "novaberg_pipeline_turns_in_flight"
    assert pods_metric["pods"]["target"] == {"type": "AverageValue", "averageValue": "8"}
    assert len(production["nova-lzg"]["spec"]["metrics"]) == 1


def test_without_autoscaling_the_deployment_keeps_its_replicas() -> None:
    manifests = chart.render({"services": {"kzg": {"replicas": 3, "autoscaling": {"enabled": False}}}})
    assert chart.named(manifests, "Deployment", "nova-kzg")["spec"]["replicas"] == 3
    assert "nova-kzg" not in {h["metadata"]["name"] for h in chart.of_kind(manifests, "HorizontalPodAutoscaler")}


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_a_disruption_budget_per_service(value_set: str) -> None:
    manifests = chart.render(value_set)
    budgets = {p["metadata"]["name"]: p["spec"] for p in chart.of_kind(manifests, "PodDisruptionBudget")}
    assert set(budgets) == {f"nova-{s}" for s in SERVICES}
    assert all(b["maxUnavailable"] == 1 for b in budgets.values())


def test_replicas_spread_over_nodes_and_zones() -> None:
    spec = _pod(chart.render("default"), "nova-lzg")["spec"]
    keys = {c["topologyKey"] for c in spec["topologySpreadConstraints"]}
    assert keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}


def test_in_chart_stores_are_statefulsets_with_volumes() -> None:
    manifests = chart.render("stores")
    for name, mount in (("nova-redis", "/data"), ("nova-postgresql", "/var/lib/postgresql/data")):
        statefulset = chart.named(manifests, "StatefulSet", name)
        (claim,) = statefulset["spec"]["volumeClaimTemplates"]
        (container,) = statefulset["spec"]["template"]["spec"]["containers"]
        assert {"name": claim["metadata"]["name"], "mountPath": mount} in container["volumeMounts"]
    redis = chart.named(manifests, "StatefulSet", "nova-redis")["spec"]["template"]["spec"]["containers"][0]
    assert "--requirepass" in redis["args"]


def test_store_secret_changes_roll_the_pods() -> None:
    def checksum(values: dict[str, Any]) -> str:
        pod = _pod(chart.render(values), "nova-kzg")
        return str(pod["metadata"]["annotations"]["checksum/config"])

    base = {"stores": {"existingSecret": "", "redisUrl": "redis://a:6379/0", "postgresUrl": "postgresql://u@b/db"}}
    changed = {"stores": {**base["stores"], "redisUrl": "redis://c:6379/0"}}
    assert checksum(base) == checksum(base)
    assert checksum(base) != checksum(changed)
    secret = chart.named(chart.render(base), "Secret", "nova-stores")
    assert secret["stringData"] == {"redis-url": "redis://a:6379/0", "postgres-url": "postgresql://u@b/db"}


def test_the_helm_test_pod_checks_health_and_one_rpc() -> None:
    manifests = chart.render("default")
    (pod,) = chart.of_kind(manifests, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    script = container["args"][0]
    assert "grpc.health.v1.Health/Check" in script and "list" in script
    assert "novaberg.pipeline.v1.PipelineService" in script
    assert container["envFrom"] == [{"configMapRef": {"name": "nova-addresses"}}]
    tls_pod = chart.of_kind(chart.render("production"), "Pod")[0]
    assert "-cert /tls/tls.crt" in tls_pod["spec"]["containers"][0]["args"][0]
