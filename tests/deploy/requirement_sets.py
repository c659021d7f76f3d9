"""The runtime and dev requirement sets, read from the repository's requirements files.

``requirements-runtime.in`` names what the services import at run time; ``requirements.in`` is
``-r requirements-runtime.in`` plus the dev tools. The ``.txt`` files pin them. The dependency
closure of a set is computed from the installed distributions' metadata (the dev venv holds the
whole dev set, so every runtime distribution is installed too).
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

from packaging.requirements import Requirement

REPO_ROOT = Path(__file__).resolve().parents[2]

INSTALLER_DISTRIBUTIONS = frozenset({"pip", "setuptools", "wheel"})
"""Come with the interpreter or the venv; never pinned by the project."""


def canonical(name: str) -> str:
    """PEP 503 name: ``PyYAML`` → ``pyyaml``, ``typing_extensions`` → ``typing-extensions``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_in(path: Path) -> set[str]:
    """Canonical top-level names of an ``.in`` file, following ``-r`` includes."""
    names: set[str] = set()
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            names |= read_in(path.parent / line[3:].strip())
            continue
        names.add(canonical(Requirement(line).name))
    return names


def read_pins(path: Path) -> dict[str, str]:
    """Canonical name → pinned version of a ``.txt`` file (every line must be ``name==version``)."""
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version:
            raise ValueError(f"{path.name}: {line!r} is not pinned with ==")
        pins[canonical(name)] = version.strip()
    return pins


def _requires(name: str) -> set[str]:
    dist = md.distribution(name)
    found: set[str] = set()
    for spec in dist.requires or []:
        requirement = Requirement(spec)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        found.add(canonical(requirement.name))
    return found


def closure(names: set[str], *, skip: frozenset[str] = frozenset()) -> set[str]:
    """``names`` and everything they require (markers evaluated here, no extras), minus ``skip``."""
    todo = sorted(names - skip)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(sorted(_requires(name) - seen - skip))
    return seen


def top_level_modules(distributions: set[str]) -> dict[str, set[str]]:
    """Top-level import name → the canonical names of the installed distributions providing it."""
    result: dict[str, set[str]] = {}
    for module, providers in md.packages_distributions().items():
        for provider in providers:
            result.setdefault(module, set()).add(canonical(provider))
    return {module: providers for module, providers in result.items() if providers & distributions}


def runtime_in() -> set[str]:
    return read_in(REPO_ROOT / "requirements-runtime.in")


def dev_in() -> set[str]:
    return read_in(REPO_ROOT / "requirements.in")


def runtime_pins() -> dict[str, str]:
    """``requirements-runtime.txt`` plus ``requirements-nodeps.txt`` (installed ``--no-deps`` into both sets)."""
    return read_pins(REPO_ROOT / "requirements-runtime.txt")


def dev_pins() -> dict[str, str]:
    return read_pins(REPO_ROOT / "requirements.txt")


def nodeps_pins() -> dict[str, str]:
    return read_pins(REPO_ROOT / "requirements-nodeps.txt")


def dev_only_distributions() -> set[str]:
    """Pinned in the dev set but not in the runtime set: must never be imported by a service."""
    return set(dev_pins()) - set(runtime_pins())


def dev_only_modules() -> dict[str, set[str]]:
    """Top-level module → its dev-only distributions, for modules no runtime distribution also provides."""
    runtime = set(runtime_pins()) | set(nodeps_pins())
    providers = top_level_modules(set(dev_pins()) | runtime)
    return {
        module: dists
        for module, dists in providers.items()
        if dists & dev_only_distributions() and not dists & runtime
    }
