"""The image recipe: runtime set only, non-root, one entry point that the chart calls by service name.

No Docker engine here, so the Dockerfile is read, and the entry point script is run for real.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from tests.deploy import chart

DOCKERFILE = chart.REPO_ROOT / "deploy" / "Dockerfile"
ENTRYPOINT = chart.REPO_ROOT / "deploy" / "novaberg-service.sh"


def _stages() -> dict[str, str]:
    text = DOCKERFILE.read_text()
    parts = re.split(r"^FROM \S+ AS (\w+)\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_multi_stage_build_installs_the_runtime_set_only() -> None:
    stages = _stages()
    assert list(stages) == ["build", "runtime"]
    build, runtime = stages["build"], stages["runtime"]
    assert "requirements-runtime.txt" in build and "requirements-nodeps.txt" in build
    assert not re.search(r"requirements\.txt", DOCKERFILE.read_text()), "the dev set must not reach the image"
    assert "pip install" not in runtime, "the runtime stage copies the built venv, it installs nothing"
    assert "COPY --from=build /opt/venv /opt/venv" in runtime


def test_the_image_holds_the_services_and_their_shared_code_but_not_the_dev_tools() -> None:
    build = _stages()["build"]
    copied = re.findall(r"^COPY (?!--)(\S+)", build, flags=re.MULTILINE)
    assert {"libs/novaberg/", "libs/novaberg_core/", "services/"} <= set(copied)
    assert "libs/" not in copied and not any("novaberg_dev" in path for path in copied)


def test_runtime_stage_is_non_root_with_the_entry_point() -> None:
    runtime = _stages()["runtime"]
    user = re.search(r"^USER (\S+)$", runtime, flags=re.MULTILINE)
    assert user and user.group(1).split(":")[0] == "10001"
    assert 'ENTRYPOINT ["novaberg-service"]' in runtime
    assert "HOME=/tmp" in runtime and "PYTHONDONTWRITEBYTECODE=1" in runtime


def test_entry_point_runs_each_service_and_refuses_others(tmp_path: Path) -> None:
    # a `python` on PATH that prints its arguments stands in for the interpreter the image has
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    for svc in ("kzg", "lzg", "pipeline", "pixie", "log"):
        done = subprocess.run(["sh", str(ENTRYPOINT), svc], capture_output=True, text=True, env=env, check=True)
        assert done.stdout.strip() == f"-m services.{svc}"
        assert (chart.REPO_ROOT / "services" / svc / "__main__.py").exists()
    refused = subprocess.run(["sh", str(ENTRYPOINT), "redis"], capture_output=True, text=True, env=env, check=False)
    assert refused.returncode == 64 and "usage" in refused.stderr


def test_chart_runs_the_image_by_service_name_and_tags_it_with_the_app_version() -> None:
    manifests = chart.render("default")
    for svc in ("kzg", "lzg", "pipeline", "pixie", "log"):
        (container,) = chart.named(manifests, "Deployment", f"nova-{svc}")["spec"]["template"]["spec"]["containers"]
        assert container["args"] == [svc]
        assert container["image"] == "registry.example.com/novaberg/memory-core:0.1.0"
    makefile = (chart.REPO_ROOT / "Makefile").read_text()
    assert "docker info" in makefile and "$(IMAGE):$(APP_VERSION)" in makefile
