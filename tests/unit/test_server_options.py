"""Connection ageing of the servers (NOVABERG_GRPC_MAX_CONNECTION_AGE_S) as grpc channel arguments."""

from __future__ import annotations

import pytest

from novaberg_core.config import CommonConfig
from novaberg_core.env import ConfigError
from novaberg_core.server import server_options

PLAIN = {"NOVABERG_TLS_MODE": "plaintext"}


def test_default_age_is_five_minutes_with_a_grace() -> None:
    options = dict(server_options(CommonConfig.from_env("kzg", env=PLAIN)))
    assert options["grpc.max_connection_age_ms"] == 300_000
    assert options["grpc.max_connection_age_grace_ms"] == 30_000
    assert options["grpc.so_reuseport"] == 0


def test_age_from_the_environment_and_zero_turns_it_off() -> None:
    cfg = CommonConfig.from_env("lzg", env={"NOVABERG_GRPC_MAX_CONNECTION_AGE_S": "1.5", **PLAIN})
    assert cfg.max_connection_age_s == 1.5
    assert dict(server_options(cfg))["grpc.max_connection_age_ms"] == 1500
    off = CommonConfig.from_env("lzg", env={"NOVABERG_GRPC_MAX_CONNECTION_AGE_S": "0", **PLAIN})
    assert "grpc.max_connection_age_ms" not in dict(server_options(off))
    assert "grpc.max_connection_age_grace_ms" not in dict(server_options(off))


@pytest.mark.parametrize("raw", ["-1", "soon"])
def test_a_bad_age_names_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        CommonConfig.from_env("log", env={"NOVABERG_GRPC_MAX_CONNECTION_AGE_S": raw})
    assert caught.value.variable == "NOVABERG_GRPC_MAX_CONNECTION_AGE_S"
