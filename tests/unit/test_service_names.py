"""Every service names itself and starts the same way (issue 15): ``config.SERVICE_NAME`` its short
name and ``config.PREFIX`` its variables' prefix, ``server.FULL_SERVICE_NAME`` the gRPC service it
serves, and ``python -m services.<svc>`` runs ``server.main`` (``novaberg_core.bootstrap.run_from_env``)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from novaberg_core.env import env_prefix

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "kzg": "novaberg.kzg.v1.KzgService",
    "lzg": "novaberg.lzg.v1.LzgService",
    "log": "novaberg.log.v1.LogService",
    "pipeline": "novaberg.pipeline.v1.PipelineService",
    "pixie": "novaberg.pixie.v1.PixieService",
}


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_a_service_names_itself_and_its_variables_in_config(service: str) -> None:
    config = importlib.import_module(f"services.{service}.config")
    assert config.SERVICE_NAME == service
    assert config.PREFIX == env_prefix(service) == f"NOVABERG_{service.upper()}_"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_a_server_names_the_grpc_service_it_serves(service: str) -> None:
    server = importlib.import_module(f"services.{service}.server")
    assert server.FULL_SERVICE_NAME == SERVICES[service]


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_a_service_runs_as_a_module_through_its_servers_main(service: str) -> None:
    server = importlib.import_module(f"services.{service}.server")
    assert callable(server.main) and not inspect.iscoroutinefunction(server.main)
    entry = (ROOT / "services" / service / "__main__.py").read_text()
    assert f"from services.{service}.server import main\n" in entry
    assert entry.endswith('\nif __name__ == "__main__":\n    main()\n')
