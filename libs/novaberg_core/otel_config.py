"""The standard OpenTelemetry environment variables, checked at start with the SDK's own tables.

The SDK (``opentelemetry.sdk._configuration``, what ``opentelemetry-instrument`` runs) is the
reference: exporter names are its entry points (``otlp`` resolved by ``OTEL_EXPORTER_OTLP_PROTOCOL``
to ``otlp_proto_grpc`` or ``otlp_proto_http``, ``console``, ``prometheus`` …), comma lists allowed,
``none`` for nothing; the sampler is one of its ``opentelemetry_traces_sampler`` entry points. Here
the values are only *checked*, so a typo stops the service at start naming the variable (the SDK
alone would log a warning and fall back); :mod:`novaberg_core.telemetry` and
:mod:`novaberg_core.metrics` build the exporters through the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Final, Literal

from opentelemetry.sdk._configuration import (
    _EXPORTER_BY_OTLP_PROTOCOL,
    _EXPORTER_ENV_BY_SIGNAL_TYPE,
    _EXPORTER_OTLP,
    _PROTOCOL_ENV_BY_SIGNAL_TYPE,
)
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_TRACES_SAMPLER,
    OTEL_TRACES_SAMPLER_ARG,
)

from novaberg_core.env import ConfigError

__all__ = [
    "ENTRY_POINT_GROUPS",
    "Signal",
    "check_sampler",
    "exporter_names",
    "known_exporters",
    "signal_exporters",
]

Signal = Literal["traces", "metrics"]

ENTRY_POINT_GROUPS: Final[Mapping[Signal, str]] = {
    "traces": "opentelemetry_traces_exporter",
    "metrics": "opentelemetry_metrics_exporter",
}
_SAMPLER_GROUP: Final = "opentelemetry_traces_sampler"
_RATIO_SAMPLERS: Final = ("traceidratio", "parentbased_traceidratio")
_ENDPOINTS: Final[Mapping[Signal, tuple[str, ...]]] = {
    "traces": (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
    "metrics": (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT),
}


def _raw(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def known_exporters(signal: Signal) -> frozenset[str]:
    """Exporter names the installed SDK and exporters register for ``signal``, plus ``otlp``."""
    return frozenset(ep.name for ep in entry_points(group=ENTRY_POINT_GROUPS[signal])) | {_EXPORTER_OTLP}


def exporter_names(variable: str, raw: str, signal: Signal) -> str:
    """``raw`` as a checked comma list (``"otlp,console"``), or ``"none"``; :class:`ConfigError` otherwise."""
    names = [part.strip().lower() for part in raw.split(",")]
    if names == ["none"]:
        return "none"
    known = known_exporters(signal)
    unknown = [name for name in names if name not in known]
    if unknown or not all(names) or len(set(names)) != len(names):
        raise ConfigError(
            variable,
            f"{variable} must be none or a comma list of {', '.join(sorted(known))} (each once), got {raw!r}",
        )
    return ",".join(names)


def _check_protocol(env: Mapping[str, str], signal: Signal) -> None:
    for variable in (_PROTOCOL_ENV_BY_SIGNAL_TYPE[signal], OTEL_EXPORTER_OTLP_PROTOCOL):
        value = _raw(env, variable)
        if value is not None and value not in _EXPORTER_BY_OTLP_PROTOCOL:
            raise ConfigError(
                variable, f"{variable} must be one of {', '.join(_EXPORTER_BY_OTLP_PROTOCOL)}, got {value!r}"
            )


def signal_exporters(
    signal: Signal, env: Mapping[str, str] | None = None, *, override: str | None = None
) -> str:
    """The exporters of ``signal``: the ``override`` variable's, else ``OTEL_<SIGNAL>_EXPORTER``'s, else
    ``otlp`` when an OTLP endpoint is set, else ``none``. Checked (names, protocol)."""
    source = os.environ if env is None else env
    _check_protocol(source, signal)
    if override is not None and _raw(source, override) is not None:
        return exporter_names(override, _raw(source, override) or "", signal)
    standard = _EXPORTER_ENV_BY_SIGNAL_TYPE[signal]
    value = _raw(source, standard)
    if value is not None:
        return exporter_names(standard, value, signal)
    if any(_raw(source, name) is not None for name in _ENDPOINTS[signal]):
        return _EXPORTER_OTLP
    return "none"


def check_sampler(env: Mapping[str, str] | None = None) -> None:
    """``OTEL_TRACES_SAMPLER`` names an installed sampler; a ratio sampler's ``_ARG`` is within 0..1."""
    source = os.environ if env is None else env
    name = _raw(source, OTEL_TRACES_SAMPLER)
    if name is None:
        return
    known = sorted(ep.name for ep in entry_points(group=_SAMPLER_GROUP))
    if name.lower() not in known:
        raise ConfigError(
            OTEL_TRACES_SAMPLER, f"{OTEL_TRACES_SAMPLER} must be one of {', '.join(known)}, got {name!r}"
        )
    arg = _raw(source, OTEL_TRACES_SAMPLER_ARG)
    if name.lower() in _RATIO_SAMPLERS and arg is not None:
        try:
            ratio = float(arg)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(
                OTEL_TRACES_SAMPLER_ARG, f"{OTEL_TRACES_SAMPLER_ARG} must be a ratio within 0..1, got {arg!r}"
            )
