"""Render and lint the Helm chart with Helm's own Go engine (helm-python-sdk: libhelm_c via ctypes).

No helm binary and no cluster: ``Chart.render`` is ``helm template``, ``lint`` is ``helm lint``.
The three value sets are the chart's defaults, ``ci/production-values.yaml`` and
``ci/stores-values.yaml``. ``python -m tests.deploy.chart --out build/chart`` (``make chart``)
writes each render to ``<out>/<set>.yaml``.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import kubernetes_validate.utils
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "deploy" / "k8s" / "novaberg"
NAMESPACE = "novaberg"
KUBE_VERSION = "1.33.0"
"""The Kubernetes version the renders are linted and validated for."""

VALUE_SETS = ("default", "production", "stores")

Manifest = dict[str, Any]


def value_set(name: str) -> dict[str, Any]:
    """The values of one named set (``default`` = none: the chart's own)."""
    if name == "default":
        return {}
    loaded = yaml.safe_load((CHART_DIR / "ci" / f"{name}-values.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


@functools.cache
def _chart() -> helm.Chart:
    return helm.Chart.load(CHART_DIR)


def render_files(values: dict[str, Any], *, release: str = "nova", namespace: str = NAMESPACE) -> dict[str, str]:
    """Template path → rendered text, as ``helm template`` (install) would produce."""
    return _chart().render(values, name=release, namespace=namespace, is_install=True)


@functools.cache
def _render_cached(values_json: str, release: str, namespace: str) -> tuple[Manifest, ...]:
    files = render_files(json.loads(values_json), release=release, namespace=namespace)
    manifests: list[Manifest] = []
    for path in sorted(files):
        if path.endswith("NOTES.txt"):
            continue
        for document in yaml.safe_load_all(files[path]):
            if document:
                document.setdefault("metadata", {}).setdefault("annotations", {})
                manifests.append(document)
    return tuple(manifests)


def render(values: dict[str, Any] | str, *, release: str = "nova", namespace: str = NAMESPACE) -> list[Manifest]:
    """The parsed manifests of a render (``values`` a dict or the name of a value set)."""
    if isinstance(values, str):
        values = value_set(values)
    # A fresh deep copy per caller: tests may not change each other's manifests.
    return json.loads(json.dumps(_render_cached(json.dumps(values, sort_keys=True), release, namespace)))


def notes(values: dict[str, Any] | str, *, release: str = "nova") -> str:
    if isinstance(values, str):
        values = value_set(values)
    return render_files(values, release=release)[f"{CHART_DIR.name}/templates/NOTES.txt"]


def lint(values: dict[str, Any] | str) -> dict[str, Any]:
    """``helm lint --strict`` of the chart directory with these values."""
    if isinstance(values, str):
        values = value_set(values)
    return helm.lint(CHART_DIR, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE_VERSION}")


# kubernetes_validate.validate re-reads and parses the 1.5 MB definitions file of the schema set on
# every call (~60 ms); the files never change, so read each once. Validation itself is untouched.
kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def validate_manifest(manifest: Manifest) -> str:
    """Validate against the Kubernetes JSON schemas shipped in kubernetes-validate, strictly (no
    unknown fields); raises ``kubernetes_validate.ValidationError`` / ``SchemaNotFoundError``."""
    return str(kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True))


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def named(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    found = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def pod_templates(manifests: list[Manifest]) -> Iterator[tuple[Manifest, dict[str, Any]]]:
    """(owner, pod template {metadata, spec}) of every workload, and the bare Pods (the helm test)."""
    for manifest in manifests:
        if manifest["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield manifest, manifest["spec"]["template"]
        elif manifest["kind"] == "Pod":
            yield manifest, {"metadata": manifest["metadata"], "spec": manifest["spec"]}


def container_env(manifests: list[Manifest], deployment: str) -> dict[str, dict[str, Any]]:
    """Name → EnvVar of the (one) container of a Deployment."""
    spec = named(manifests, "Deployment", deployment)["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return {entry["name"]: entry for entry in container.get("env", [])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for <set>.yaml")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in VALUE_SETS:
        files = render_files(value_set(name))
        parts = [f"# Source: {path}\n{text.strip()}\n" for path, text in sorted(files.items())
                 if not path.endswith("NOTES.txt") and text.strip()]
        target = args.out / f"{name}.yaml"
        target.write_text("---\n".join(parts))
        kinds: dict[str, int] = {}
        for manifest in render(name):
            kinds[manifest["kind"]] = kinds.get(manifest["kind"], 0) + 1
        print(f"{target}: " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Kubernetes LabelSelector semantics (matchLabels + matchExpressions); {} selects everything.

    A plain map (a Service's ``spec.selector``) is read as ``matchLabels``.
    """
    if selector is None:
        return False
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        selector = {"matchLabels": selector}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
