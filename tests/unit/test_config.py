"""Configuration helpers fail fast and name the variable (STYLE rule 2)."""

from __future__ import annotations

import dataclasses

import pytest

from novaberg_core.config import MAX_CONCURRENT_RPCS_DEFAULT, CommonConfig
from novaberg_core.env import ConfigError, env_bool, env_choice, env_float, env_int, env_prefix, env_str
from services.pipeline.config import PipelineConfig


def test_env_int_names_the_variable_and_the_bad_value() -> None:
    with pytest.raises(ConfigError) as raised:
        env_int("NOVABERG_KZG_PORT", env={"NOVABERG_KZG_PORT": "abc"})
    assert str(raised.value) == "NOVABERG_KZG_PORT must be an integer, got 'abc'"
    assert raised.value.variable == "NOVABERG_KZG_PORT"
    assert isinstance(raised.value, ValueError)


def test_required_variable_missing_or_empty() -> None:
    for env in ({}, {"NOVABERG_LZG_DSN": "  "}):
        with pytest.raises(ConfigError, match=r"^NOVABERG_LZG_DSN must be set$"):
            env_str("NOVABERG_LZG_DSN", env=env)


def test_defaults_apply_only_when_unset() -> None:
    env = {"A": " 7 ", "B": "0.25", "C": "Yes", "D": "otlp", "E": "text"}
    assert env_int("A", 1, env=env) == 7
    assert env_int("MISSING", 1, env=env) == 1
    assert env_float("B", 1.0, env=env) == 0.25
    assert env_float("MISSING", 1.5, env=env) == 1.5
    assert env_bool("C", False, env=env) is True
    assert env_bool("MISSING", True, env=env) is True
    assert env_choice("D", ("none", "OTLP"), "none", env=env) == "OTLP"
    assert env_str("E", env=env) == "text"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda env: env_float("X", env=env), "X must be a number, got 'abc'"),
        (
            lambda env: env_bool("X", env=env),
            "X must be a boolean (true/false, 1/0, yes/no, on/off), got 'abc'",
        ),
        (lambda env: env_choice("X", ("none", "otlp"), env=env), "X must be one of none, otlp, got 'abc'"),
    ],
)
def test_malformed_values_name_the_variable(call: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        call({"X": "abc"})  # type: ignore[operator]
    assert str(raised.value) == message


def test_float_rejects_nan_and_infinity() -> None:
    for raw in ("nan", "inf", "-inf"):
        with pytest.raises(ConfigError, match="X must be a finite number"):
            env_float("X", env={"X": raw})


def test_bounds() -> None:
    with pytest.raises(ConfigError, match=r"^P must be <= 65535, got 70000$"):
        env_int("P", env={"P": "70000"}, min_value=0, max_value=65535)
    with pytest.raises(ConfigError, match=r"^G must be >= 0.0, got -1.0$"):
        env_float("G", env={"G": "-1"}, min_value=0.0)
    assert env_int("P", env={"P": "0"}, min_value=0, max_value=65535) == 0


def test_bool_spellings() -> None:
    for raw in ("1", "true", "TRUE", "yes", "on"):
        assert env_bool("F", env={"F": raw}) is True
    for raw in ("0", "false", "No", "off"):
        assert env_bool("F", env={"F": raw}) is False


def test_env_prefix() -> None:
    assert env_prefix("kzg") == "NOVABERG_KZG_"
    assert env_prefix("pipeline-log") == "NOVABERG_PIPELINE_LOG_"


# Without NOVABERG_TLS_MODE a service from the environment is mTLS and needs its certificate files
# (tests/unit/test_tls_config.py); these tests are about the other variables.
PLAIN = {"NOVABERG_TLS_MODE": "plaintext"}


def test_common_config_defaults() -> None:
    cfg = CommonConfig.from_env("kzg", env=PLAIN)
    assert cfg == CommonConfig(
        service_name="kzg", host="[::]", port=0, grace_seconds=5.0, otel_exporter="none", log_level="INFO"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.port = 1  # type: ignore[misc]


def test_common_config_reads_prefixed_variables() -> None:
    env = {
        "NOVABERG_KZG_HOST": "127.0.0.1",
        "NOVABERG_KZG_PORT": "50051",
        "NOVABERG_KZG_GRACE_SECONDS": "12.5",
        "NOVABERG_KZG_OTEL_EXPORTER": "console",
        "NOVABERG_KZG_LOG_LEVEL": "debug",
        "NOVABERG_LZG_PORT": "1",  # another service's variable is ignored
        **PLAIN,
    }
    cfg = CommonConfig.from_env("kzg", env=env)
    assert (cfg.host, cfg.port, cfg.grace_seconds, cfg.otel_exporter, cfg.log_level) == (
        "127.0.0.1",
        50051,
        12.5,
        "console",
        "DEBUG",
    )
    custom = CommonConfig.from_env("kzg", prefix="KZG_", env={"KZG_PORT": "7", **PLAIN})
    assert custom.port == 7


def test_the_concurrency_limit_has_a_service_default_an_override_and_an_off_switch() -> None:
    assert CommonConfig.from_env("kzg", env=PLAIN).max_concurrent_rpcs == MAX_CONCURRENT_RPCS_DEFAULT == 256
    pipeline = {"NOVABERG_KZG_ADDR": "k:1", "NOVABERG_LZG_ADDR": "l:1", "NOVABERG_REDIS_URL": "redis://r", **PLAIN}
    assert PipelineConfig.from_env(pipeline).common.max_concurrent_rpcs == 64  # the edge's own default
    limit = "NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS"
    assert PipelineConfig.from_env({**pipeline, limit: "9"}).common.max_concurrent_rpcs == 9
    assert CommonConfig.from_env("kzg", env={"NOVABERG_KZG_MAX_CONCURRENT_RPCS": "0", **PLAIN}).max_concurrent_rpcs == 0
    with pytest.raises(ConfigError, match=r"^NOVABERG_KZG_MAX_CONCURRENT_RPCS must be >= 0, got -1$"):
        CommonConfig.from_env("kzg", env={"NOVABERG_KZG_MAX_CONCURRENT_RPCS": "-1", **PLAIN})


def test_common_config_errors_name_the_variable() -> None:
    cases = {
        "NOVABERG_KZG_PORT": "abc",
        "NOVABERG_KZG_GRACE_SECONDS": "-3",
        "NOVABERG_KZG_OTEL_EXPORTER": "jaeger",
        "NOVABERG_KZG_LOG_LEVEL": "LOUD",
    }
    for name, raw in cases.items():
        with pytest.raises(ConfigError) as raised:
            CommonConfig.from_env("kzg", env={name: raw})
        assert raised.value.variable == name
        assert str(raised.value).startswith(f"{name} must ")
    with pytest.raises(ConfigError, match=r"^NOVABERG_KZG_PORT must be <= 65535, got 65536$"):
        CommonConfig.from_env("kzg", env={"NOVABERG_KZG_PORT": "65536"})


def test_exporter_follows_standard_otel_variables() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", **PLAIN}
    assert CommonConfig.from_env("kzg", env=endpoint).otel_exporter == "otlp"
    traces_endpoint = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317", **PLAIN}
    assert CommonConfig.from_env("kzg", env=traces_endpoint).otel_exporter == "otlp"
    assert (
        CommonConfig.from_env("kzg", env={**endpoint, "OTEL_TRACES_EXPORTER": "none"}).otel_exporter == "none"
    )
    explicit = {**endpoint, "OTEL_TRACES_EXPORTER": "none", "NOVABERG_KZG_OTEL_EXPORTER": "console"}
    assert CommonConfig.from_env("kzg", env=explicit).otel_exporter == "console"


def test_log_level_falls_back_to_process_wide_variable() -> None:
    assert CommonConfig.from_env("kzg", env={"NOVABERG_LOG_LEVEL": "warning", **PLAIN}).log_level == "WARNING"
    both = {"NOVABERG_LOG_LEVEL": "warning", "NOVABERG_KZG_LOG_LEVEL": "ERROR", **PLAIN}
    assert CommonConfig.from_env("kzg", env=both).log_level == "ERROR"


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVABERG_PIXIE_PORT", "abc")
    with pytest.raises(ConfigError, match=r"^NOVABERG_PIXIE_PORT must be an integer, got 'abc'$"):
        CommonConfig.from_env("pixie")
