"""Each service gets exactly the environment it uses, and every README setting is reachable.

The README's configuration table is parsed (variables, defaults, "used by"); each variable has a
values key here. One render sets every key to a non-default sample and checks the variable in
exactly the services the README names — so a new README row without a values key, a key that no
longer reaches its variable, or a variable leaking into a service that does not use it all fail.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy import chart

SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
PEERS = {"kzg": {"log"}, "lzg": {"log"}, "pipeline": {"kzg", "lzg", "log"}, "pixie": {"kzg", "lzg", "log"}, "log": set()}
REDIS_USERS = {"kzg", "pipeline"}
POSTGRES_USERS = {"lzg", "log", "pixie"}
USED_BY = {  # the README's "used by" words → services
    "all": set(SERVICES),
    "every writer": {"kzg", "lzg", "pipeline", "pixie"},
    "embedding, analyzer": {"kzg", "lzg", "pipeline"},
}
README = chart.REPO_ROOT / "README.md"
PER_SERVICE = ("HOST", "PORT", "GRACE_SECONDS", "LOG_LEVEL", "OTEL_EXPORTER", "HEALTH_PORT", "MAX_CONCURRENT_RPCS")


def readme_table() -> dict[str, tuple[str | None, str]]:
    """Variable → (README default or None for none/unset/random, "used by") of the configuration table."""
    text = README.read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str | None, str]] = {}
    header = re.search(r"Per service, (.+?) \(`<SVC>` = ([A-Z, ]+)\)", section.replace("\n", " "))
    assert header, "the per-service variables sentence is gone from the README"
    for svc in header.group(2).split(", "):
        for suffix in PER_SERVICE:
            rows[f"NOVABERG_{svc}_{suffix}"] = (None, svc.lower())
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([A-Z_]+)`", cells[0].split("(or", 1)[0])
        defaults = [d.strip().strip("`") for d in cells[1].split(", ")] if "`" in cells[1] else []
        first = names[0]
        for index, name in enumerate(names):
            if name.startswith("_"):
                service_addr = re.fullmatch(r"_(KZG|LZG|LOG|PIXIE|PIPELINE)_ADDR", name)
                name = "NOVABERG" + name if service_addr else "_".join(first.split("_")[:2]) + name
            default = defaults[index] if index < len(defaults) and defaults[index] not in ("—", "") else None
            rows[name] = (default, cells[2])
    return rows


def _services_of(variable: str, used_by: str) -> set[str]:
    if used_by == "callers":
        peer = variable.removeprefix("NOVABERG_").removesuffix("_ADDR").lower()
        return {svc for svc, peers in PEERS.items() if peer in peers}
    if used_by in USED_BY:
        return USED_BY[used_by]
    return {word.strip() for word in used_by.split(",")}


def _set(values: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        values = values.setdefault(key, {})
    values[last] = value


# variable → (values key, sample). Samples differ from the defaults, so seeing them proves the path.
VALUE_KEYS: dict[str, tuple[str, Any]] = {
    "NOVABERG_REDIS_URL": ("stores.redisUrl", "redis://:pw@redis.example:6380/2"),
    "NOVABERG_POSTGRES_URL": ("stores.postgresUrl", "postgresql://nb:pw@pg.example:5433/nb"),
    "NOVABERG_EMBEDDING": ("embedding.provider", "minilm"),
    "NOVABERG_OLLAMA_URL": ("embedding.ollamaUrl", "http://ollama.example:11434"),
    "NOVABERG_OLLAMA_MODEL": ("embedding.ollamaModel", "nomic-sample"),
    "NOVABERG_KZG_REINFORCEMENT": ("services.kzg.settings.reinforcement", "aus"),
    "NOVABERG_KZG_VECTOR_ALGORITHM": ("services.kzg.settings.vectorAlgorithm", "HNSW"),
    "NOVABERG_KZG_RECLAIM_IDLE_MS": ("services.kzg.settings.reclaimIdleMs", 61000),
    "NOVABERG_LZG_POOL_MAX": ("services.lzg.settings.poolMax", 11),
    "NOVABERG_LZG_CACHE_MB": ("services.lzg.settings.cacheMb", 2048),
    "NOVABERG_PIPELINE_ANALYZER": ("services.pipeline.settings.analyzer", "ollama"),
    "NOVABERG_PIPELINE_KZG_TOP_K": ("services.pipeline.settings.kzgTopK", 12),
    "NOVABERG_PIPELINE_RECALL_K": ("services.pipeline.settings.recallK", 25),
    "NOVABERG_PIPELINE_GEWICHT_USER": ("services.pipeline.settings.gewichtUser", 0.9),
    "NOVABERG_PIPELINE_GEWICHT_ASSISTANT": ("services.pipeline.settings.gewichtAssistant", 0.6),
    "NOVABERG_PIPELINE_OLLAMA_MODEL": ("services.pipeline.settings.ollamaModel", "qwen-sample"),
    "NOVABERG_PIPELINE_OLLAMA_TIMEOUT_S": ("services.pipeline.settings.ollamaTimeoutS", 61),
    "NOVABERG_PIPELINE_OLLAMA_FALLBACK": ("services.pipeline.settings.ollamaFallback", "offline"),
    "NOVABERG_PIPELINE_PEER_TIMEOUT_S": ("services.pipeline.settings.peerTimeoutS", 11),
    "NOVABERG_PIPELINE_REGISTRY_CACHE_S": ("services.pipeline.settings.registryCacheS", 0),
    "NOVABERG_PIPELINE_SILENT_PEER_PAUSE_S": ("services.pipeline.settings.silentPeerPauseS", 2),
    "NOVABERG_PIXIE_DECAY_AT": ("services.pixie.settings.decayAt", "04:15"),
    "NOVABERG_PIXIE_MAX_ATTEMPTS": ("services.pixie.settings.maxAttempts", 6),
    "NOVABERG_PIXIE_LOG_RETENTION_DAYS": ("services.pixie.settings.logRetentionDays", 30),
    "NOVABERG_PIXIE_RUN_RETENTION_DAYS": ("services.pixie.settings.runRetentionDays", 91),
    "NOVABERG_PIXIE_CONCURRENCY": ("services.pixie.settings.concurrency", 9),
    "NOVABERG_PIXIE_BATCH_SIZE": ("services.pixie.settings.batchSize", 65),
    "NOVABERG_PIXIE_BLOCK_MS": ("services.pixie.settings.blockMs", 1001),
    "NOVABERG_PIXIE_BACKOFF_BASE_S": ("services.pixie.settings.backoffBaseS", 3),
    "NOVABERG_PIXIE_BACKOFF_MAX_S": ("services.pixie.settings.backoffMaxS", 301),
    "NOVABERG_PIXIE_RECLAIM_IDLE_MS": ("services.pixie.settings.reclaimIdleMs", 30001),
    "NOVABERG_PIXIE_PAIR_LOCK_WAIT_MS": ("services.pixie.settings.pairLockWaitMs", 2001),
    "NOVABERG_PIXIE_STALE_RUN_S": ("services.pixie.settings.staleRunS", 901),
    "NOVABERG_PIXIE_DAILY_RETRY_S": ("services.pixie.settings.dailyRetryS", 902),
    "NOVABERG_PIXIE_SCHEDULER_INTERVAL_S": ("services.pixie.settings.schedulerIntervalS", 31),
    "NOVABERG_PIXIE_RPC_TIMEOUT_S": ("services.pixie.settings.rpcTimeoutS", 32),
    "NOVABERG_PIXIE_RUN_WINDOW_S": ("services.pixie.settings.runWindowS", 61),
    "NOVABERG_LOG_VORHALTUNG_TAGE": ("services.log.settings.vorhaltungTage", 30),
    "NOVABERG_LOG_POOL_MAX": ("services.log.settings.poolMax", 9),
    "NOVABERG_PIPELINE_LOG_FLUSH_SEKUNDEN": ("pipelineLog.flushSeconds", 5),
    "NOVABERG_PIPELINE_LOG_BATCH": ("pipelineLog.batch", 500),
    "NOVABERG_PIPELINE_LOG_MAX_BUFFER": ("pipelineLog.maxBuffer", 2000000),
    "OTEL_EXPORTER_OTLP_ENDPOINT": ("telemetry.otlpEndpoint", "http://collector.example:4317"),
    "OTEL_EXPORTER_OTLP_PROTOCOL": ("telemetry.otlpProtocol", "http/protobuf"),
    "OTEL_TRACES_EXPORTER": ("telemetry.tracesExporter", "console"),
    "OTEL_METRICS_EXPORTER": ("telemetry.metricsExporter", "none"),
    "NOVABERG_GRPC_MAX_CONNECTION_AGE_S": ("grpc.maxConnectionAgeSeconds", 120),
    "NOVABERG_EVENT_LOOP": ("eventLoop", "asyncio"),
    "NOVABERG_LOG_LEVEL": ("logLevel", "WARNING"),
    "NOVABERG_METRICS_PORT": ("metrics.port", 9465),
    "NOVABERG_LOG_FORMAT": ("logFormat", "json"),
    "OTEL_TRACES_SAMPLER": ("telemetry.tracesSampler", "parentbased_traceidratio"),
    "OTEL_TRACES_SAMPLER_ARG": ("telemetry.tracesSamplerArg", "0.25"),
    "NOVABERG_TLS_MODE": ("tls.mode", "plaintext"),
    "NOVABERG_TLS_CERT_FILE": ("tls.mountPath", "/etc/sample-tls"),
    "NOVABERG_TLS_KEY_FILE": ("tls.mountPath", "/etc/sample-tls"),
    "NOVABERG_TLS_CA_FILE": ("tls.mountPath", "/etc/sample-tls"),
    "NOVABERG_AUTHZ_POLICY_FILE": ("authz.mountPath", "/etc/sample-authz"),
}
EXPECTED_VALUE = {
    "NOVABERG_TLS_CERT_FILE": "/etc/sample-tls/tls.crt",
    "NOVABERG_TLS_KEY_FILE": "/etc/sample-tls/tls.key",
    "NOVABERG_TLS_CA_FILE": "/etc/sample-tls/ca.crt",
    "NOVABERG_AUTHZ_POLICY_FILE": "/etc/sample-authz/policy.yaml",
    "NOVABERG_PIPELINE_GEWICHT_USER": "0.9",
}
# Variables the chart sets that the README table does not list (conventions of the deployment).
CHART_ONLY_USED_BY = {
    "NOVABERG_PIXIE_RUN_WINDOW_S": {"pixie"},
    "OTEL_EXPORTER_OTLP_PROTOCOL": set(SERVICES), "OTEL_TRACES_EXPORTER": set(SERVICES),
    "OTEL_METRICS_EXPORTER": set(SERVICES), "NOVABERG_LOG_LEVEL": set(SERVICES), "NOVABERG_METRICS_PORT": set(SERVICES),
    "NOVABERG_TLS_MODE": set(SERVICES), "NOVABERG_TLS_CERT_FILE": set(SERVICES), "NOVABERG_TLS_KEY_FILE": set(SERVICES),
    "NOVABERG_TLS_CA_FILE": set(SERVICES), "NOVABERG_AUTHZ_POLICY_FILE": set(SERVICES),
}


def _sample_values() -> dict[str, Any]:
    values: dict[str, Any] = {"tls": {"enabled": True}, "authz": {"enabled": True, "policy": "sample: true\n"},
                              "stores": {"existingSecret": ""}}
    for path, sample in VALUE_KEYS.values():
        _set(values, path, sample)
    for svc in SERVICES:
        _set(values, f"addresses.{svc}", f"dns:///{svc}.sample.example:7000")
        service = values["services"].setdefault(svc, {})
        service.update({"host": "0.0.0.0", "graceSeconds": 7, "logLevel": "DEBUG", "otelExporter": "console",
                        "otelServiceName": f"nb-{svc}", "maxConcurrentRpcs": 0})
    _set(values, "grpc.port", 50052)
    return values


@pytest.fixture(scope="module")
def sample_render() -> list[chart.Manifest]:
    return chart.render(_sample_values())


def test_every_readme_variable_has_a_values_key() -> None:
    table = readme_table()
    assert len(table) > 60, "the README table was not parsed"
    generic = {f"NOVABERG_{svc.upper()}_{suffix}" for svc in SERVICES for suffix in PER_SERVICE}
    special = {"NOVABERG_PIXIE_REPLICA_ID", "OTEL_SERVICE_NAME"} | {f"NOVABERG_{s.upper()}_ADDR" for s in SERVICES}
    unmapped = set(table) - set(VALUE_KEYS) - generic - special
    assert unmapped == set(), f"README variables without a values key: {sorted(unmapped)}"


def test_every_variable_reaches_exactly_its_services(sample_render: list[chart.Manifest]) -> None:
    table = readme_table()
    envs = {svc: chart.container_env(sample_render, f"nova-{svc}") for svc in SERVICES}
    secret = chart.named(sample_render, "Secret", "nova-stores")["stringData"]
    checked = 0
    for variable, (path, sample) in VALUE_KEYS.items():
        users = _services_of(variable, table[variable][1]) if variable in table else CHART_ONLY_USED_BY[variable]
        for svc in SERVICES:
            entry = envs[svc].get(variable)
            if svc not in users:
                assert entry is None, f"{variable} leaks into {svc}"
                continue
            assert entry is not None, f"{variable} ({path}) missing in {svc}"
            if variable.endswith("_URL") and "valueFrom" in entry:
                ref = entry["valueFrom"]["secretKeyRef"]
                assert ref["name"] == "nova-stores" and secret[ref["key"]] == sample, variable
            else:
                expected = EXPECTED_VALUE.get(variable, str(sample))
                assert entry["value"] == expected, f"{variable} in {svc}: {entry['value']!r} != {expected!r}"
            checked += 1
    assert checked > 80


def test_per_service_generic_variables(sample_render: list[chart.Manifest]) -> None:
    for svc in SERVICES:
        env = chart.container_env(sample_render, f"nova-{svc}")
        prefix = f"NOVABERG_{svc.upper()}_"
        assert env[prefix + "HOST"]["value"] == "0.0.0.0"
        assert env[prefix + "PORT"]["value"] == "50052"
        assert env[prefix + "GRACE_SECONDS"]["value"] == "7"
        assert env[prefix + "MAX_CONCURRENT_RPCS"]["value"] == "0"  # 0 (no limit) is a value, not unset
        assert env[prefix + "LOG_LEVEL"]["value"] == "DEBUG"
        assert env[prefix + "OTEL_EXPORTER"]["value"] == "console"
        assert env["OTEL_SERVICE_NAME"]["value"] == f"nb-{svc}"
        others = {f"NOVABERG_{o.upper()}_{s}" for o in SERVICES if o != svc for s in ("HOST", "PORT", "GRACE_SECONDS", "MAX_CONCURRENT_RPCS")}
        assert not others & set(env), f"{svc} carries another service's settings"


def test_addresses_reach_the_callers_and_the_configmap(sample_render: list[chart.Manifest]) -> None:
    addresses = chart.named(sample_render, "ConfigMap", "nova-addresses")["data"]
    assert addresses == {f"NOVABERG_{s.upper()}_ADDR": f"dns:///{s}.sample.example:7000" for s in SERVICES}


def test_readme_defaults_are_the_chart_defaults() -> None:
    """Where the chart passes a setting with its default, that default is the README's (= the code's)."""
    table = readme_table()
    manifests = chart.render("default")
    envs = {svc: chart.container_env(manifests, f"nova-{svc}") for svc in SERVICES}
    compared = 0
    for variable, (path, _) in VALUE_KEYS.items():
        if variable not in table or not path.startswith(("services.", "pipelineLog.", "grpc.", "eventLoop")):
            continue
        default = table[variable][0]
        rendered = {env[variable]["value"] for env in envs.values() if variable in env}
        if default is None:
            assert rendered <= {""}, f"{variable}: README has no default, the chart sets {rendered}"
            continue
        assert len(rendered) == 1, f"{variable}: {rendered}"
        (value,) = rendered
        same = value == default or (re.fullmatch(r"[\d.]+", default) is not None and float(value) == float(default))
        assert same, f"{variable}: chart default {value!r}, README {default!r}"
        compared += 1
    assert compared >= 35


def test_each_service_has_only_its_own_store_and_peers() -> None:
    for value_set in chart.VALUE_SETS:
        manifests = chart.render(value_set)
        for svc in SERVICES:
            env = chart.container_env(manifests, f"nova-{svc}")
            assert ("NOVABERG_REDIS_URL" in env) == (svc in REDIS_USERS), (value_set, svc)
            assert ("NOVABERG_POSTGRES_URL" in env) == (svc in POSTGRES_USERS), (value_set, svc)
            peers = {name.removeprefix("NOVABERG_").removesuffix("_ADDR").lower() for name in env if name.endswith("_ADDR")}
            assert peers == PEERS[svc], (value_set, svc)
            for peer in peers:
                assert env[f"NOVABERG_{peer.upper()}_ADDR"]["value"] == (
                    f"dns:///nova-{peer}-headless.novaberg.svc.cluster.local:50051"
                )


def test_store_urls_come_from_the_existing_secret_in_production() -> None:
    env = chart.container_env(chart.render("production"), "nova-lzg")
    assert env["NOVABERG_POSTGRES_URL"]["valueFrom"] == {"secretKeyRef": {"name": "novaberg-prod-stores", "key": "postgres-url"}}
    stores = chart.render("stores")
    secret = chart.named(stores, "Secret", "nova-stores")["stringData"]
    assert secret["redis-url"] == "redis://:render-only-redis-password@nova-redis.novaberg.svc.cluster.local:6379/0"
    assert secret["postgres-url"].startswith("postgresql://novaberg:render-only-postgres-password@nova-postgresql.")


def test_extra_env_adds_and_replaces_service_wins() -> None:
    manifests = chart.render({
        "extraEnv": [{"name": "FOO", "value": "global"}, {"name": "NOVABERG_EVENT_LOOP", "value": "asyncio"}],
        "services": {"kzg": {"extraEnv": [{"name": "FOO", "value": "kzg"}]}},
    })
    kzg, lzg = (chart.container_env(manifests, f"nova-{s}") for s in ("kzg", "lzg"))
    assert kzg["FOO"]["value"] == "kzg" and lzg["FOO"]["value"] == "global"
    assert lzg["NOVABERG_EVENT_LOOP"]["value"] == "asyncio"


@pytest.mark.parametrize("value_set", chart.VALUE_SETS)
def test_no_variable_is_set_twice(value_set: str) -> None:
    for owner, pod in chart.pod_templates(chart.render(value_set)):
        for container in pod["spec"]["containers"]:
            names = [e["name"] for e in container.get("env", [])]
            assert len(names) == len(set(names)), owner["metadata"]["name"]


def test_telemetry_goes_to_the_in_chart_collector_when_it_runs() -> None:
    env = chart.container_env(chart.render("production"), "nova-log")
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"] == "http://nova-otel-collector.novaberg.svc.cluster.local:4317"
    assert env["OTEL_TRACES_EXPORTER"]["value"] == "otlp"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in chart.container_env(chart.render("default"), "nova-log")


def test_the_chart_readme_maps_every_variable() -> None:
    text = (chart.CHART_DIR / "README.md").read_text()
    generic = {f"NOVABERG_{svc.upper()}_{suffix}" for svc in SERVICES for suffix in PER_SERVICE}
    named = (set(readme_table()) - generic) | set(VALUE_KEYS)
    missing = sorted(v for v in named if f"`{v}`" not in text)
    assert missing == [], f"deploy/k8s/novaberg/README.md does not map {missing}"
    assert all(f"`NOVABERG_<SVC>_{suffix}`" in text for suffix in PER_SERVICE)
