"""The authorisation policy as data: the shipped file, its format, and that it fits the call graph."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.authz import Policy, PolicyError, load_policy, parse_policy
from novaberg_core.env import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
EVERY_RPC = sorted(
    f"{service.full_name}/{method.name}"
    for file in (kzg_pb2.DESCRIPTOR, lzg_pb2.DESCRIPTOR, log_pb2.DESCRIPTOR, pixie_pb2.DESCRIPTOR, pipeline_pb2.DESCRIPTOR)
    for service in file.services_by_name.values()
    for method in service.methods
)
SERVICES = ("kzg", "lzg", "pipeline", "pixie", "log")
TURNS = {f"novaberg.pipeline.v1.PipelineService/{m}" for m in ("ObserveTurn", "ObserveTurns", "BuildDossier", "Dispatch")}
STUB_SERVICES = {"kzg": "novaberg.kzg.v1.KzgService", "lzg": "novaberg.lzg.v1.LzgService",
                 "stub": "novaberg.lzg.v1.LzgService", "log": "novaberg.log.v1.LogService"}  # fmt: skip


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy()


def test_every_rpc_has_someone_who_may_call_it(policy: Policy) -> None:
    orphans = [rpc for rpc in EVERY_RPC if not policy.identities_for(rpc)]
    assert orphans == []


def test_every_service_may_write_the_pipeline_log(policy: Policy) -> None:
    for identity in SERVICES:
        assert policy.allows(identity, "novaberg.log.v1.LogService/Write"), identity
    for outsider in ("gateway", "client", "operator"):
        assert not policy.allows(outsider, "novaberg.log.v1.LogService/Write"), outsider


def test_outside_callers_may_only_drive_turns(policy: Policy) -> None:
    for identity in ("gateway", "client"):
        assert {rpc for rpc in EVERY_RPC if policy.allows(identity, rpc)} == TURNS, identity
    assert not any(policy.allows("somebody-else", rpc) for rpc in EVERY_RPC)


def test_health_and_reflection_are_open(policy: Policy) -> None:
    for identity in ("gateway", "somebody-else", "kzg"):
        assert policy.allows(identity, "grpc.health.v1.Health/Check")
        assert policy.allows(identity, "grpc.health.v1.Health/Watch")
        assert policy.allows(identity, "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")


def test_future_data_rights_rpcs_are_the_operator_s_by_pattern(policy: Policy) -> None:
    for name in ("ErasePair", "EraseUser", "ExportPair", "ForgetMemory", "CorrectMemory", "RequeueParkedJobs"):
        for service in ("novaberg.rights.v1.RightsService", "novaberg.pixie.v1.PixieService"):
            method = f"{service}/{name}"
            assert policy.identities_for(method) == ["operator"], method
    assert all(rule.callers == {"operator"} for rule in policy.admin_rules)


def _peer_calls(directory: str) -> set[str]:
    """``package.Service/Method`` of every peer call in a service's code: a stub's (``self.kzg.StoreEntry(``)
    or a typed client's (``kzg.store_entry(``, ``lzg_peer.promote``; novaberg_core.peers), whose
    method is the RPC's name in snake case."""
    calls = set()
    for path in (REPO_ROOT / "services" / directory).rglob("*.py"):
        text = path.read_text()
        for stub, method in re.findall(r"\.(kzg|lzg|stub|log)\.([A-Z][A-Za-z]+)\(", text):
            calls.add(f"{STUB_SERVICES[stub]}/{method}")
        for peer, method in re.findall(r"\b(kzg|lzg|log)(?:_peer)?\.([a-z][a-z_]*)\b", text):
            rpc = f"{STUB_SERVICES[peer]}/{''.join(part.title() for part in method.split('_'))}"
            if rpc in EVERY_RPC:
                calls.add(rpc)
    return calls


@pytest.mark.parametrize("service", ["pipeline", "pixie"])
def test_the_policy_allows_every_peer_call_in_the_code(policy: Policy, service: str) -> None:
    """A peer call added to the code without a rule would fail every such call under mTLS."""
    calls = _peer_calls(service)
    assert len(calls) >= 7, calls  # the regex still finds the calls
    assert sorted(c for c in calls if not policy.allows(service, c)) == []


def test_the_operator_may_make_every_call_of_the_cli_and_the_demo(policy: Policy) -> None:
    """``clients.call("lzg", "UpsertTimeline", …)`` and the like in libs/novaberg_dev: the CLI's identity."""
    services = {"pipeline": "novaberg.pipeline.v1.PipelineService", "pixie": "novaberg.pixie.v1.PixieService",
                **{k: v for k, v in STUB_SERVICES.items() if k != "stub"}}  # fmt: skip
    calls = set()
    for path in (REPO_ROOT / "libs" / "novaberg_dev").rglob("*.py"):
        for service, method in re.findall(r'"(pipeline|kzg|lzg|log|pixie)",\s*"([A-Z][A-Za-z]+)"', path.read_text()):
            calls.add(f"{services[service]}/{method}")
    assert len(calls) >= 17, calls
    assert sorted(c for c in calls if not policy.allows("operator", c)) == []


def test_the_format_is_checked_and_errors_say_where() -> None:
    good = "version: 1\nrules:\n  - name: r\n    callers: [pipeline]\n    methods: [a.B/C]\n"
    assert parse_policy(good, "p").allows("pipeline", "a.B/C")
    assert parse_policy(good, "p").allows("anyone", "grpc.health.v1.Health/Check")  # open by default
    bad = {
        "version: 2\nrules: []\n": "version must be 1",
        "version: 1\n": "rules must be a non-empty list",
        "version: 1\nrule: []\n": "unknown keys ['rule']",
        "version: 1\nrules:\n  - callers: [Pipe Line]\n    methods: [a.B/C]\n": "'Pipe Line' is not a valid identity",
        "version: 1\nrules:\n  - callers: [x]\n    methods: [AppendSessionTurn]\n": "is not a valid method",
        "version: 1\nrules:\n  - callers: [x]\n    methods: [a.B/C]\n    admin: yes please\n": "admin a boolean",
        "version: 1\nrules:\n  - callers: [x]\n    method: [a.B/C]\n": "unknown keys ['method']",
        "[": "not YAML",
    }
    for text, message in bad.items():
        with pytest.raises(PolicyError, match=re.escape(message)):
            parse_policy(text, "p")


def test_a_bad_policy_file_names_the_variable(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("version: 1\nrules: nope\n")
    with pytest.raises(ConfigError) as raised:
        load_policy(str(path))
    assert raised.value.variable == "NOVABERG_AUTHZ_POLICY_FILE"
    assert f"{path}: rules must be a non-empty list" in str(raised.value)
    with pytest.raises(ConfigError, match="NOVABERG_AUTHZ_POLICY_FILE"):
        load_policy(str(tmp_path / "missing.yaml"))


def test_an_override_replaces_the_shipped_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("version: 1\nrules:\n  - callers: [dialogue]\n    methods: ['novaberg.pipeline.v1.*/*']\n")
    custom = load_policy(str(path))
    assert custom.source == str(path)
    assert {rpc for rpc in EVERY_RPC if custom.allows("dialogue", rpc)} == TURNS
    assert not custom.allows("pipeline", "novaberg.log.v1.LogService/Write")
