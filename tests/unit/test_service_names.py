"""Every service names itself the same way (issue 15): ``config.SERVICE_NAME`` its short name and
``config.PREFIX`` its variables' prefix, ``server.FULL_SERVICE_NAME`` the gRPC service it serves."""

from __future__ import annotations

import importlib

import pytest

from novaberg_core.env import env_prefix

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
