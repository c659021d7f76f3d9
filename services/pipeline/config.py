"""Configuration of the pipeline service, read once from the environment (STYLE rule 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from novaberg_core.config import ENV_KZG_ADDR, ENV_LZG_ADDR, ENV_REDIS_URL, CommonConfig
from novaberg_core.env import ConfigError, env_choice, env_float, env_int, env_prefix, env_str
from novaberg_core.limits import KZG_TOP_K_DEFAULT

__all__ = ["ANALYZERS", "MAX_CONCURRENT_RPCS", "PipelineConfig"]

ANALYZERS = ("offline", "ollama")
"""Accepted values of ``NOVABERG_PIPELINE_ANALYZER``."""

SERVICE_NAME = "pipeline"
"""The service's short name: its telemetry resource and its variables' prefix."""
PREFIX = env_prefix(SERVICE_NAME)
"""``NOVABERG_PIPELINE_``: the prefix of the service's own variables."""

MAX_CONCURRENT_RPCS = 64
"""The edge's limit of calls at once (``NOVABERG_PIPELINE_MAX_CONCURRENT_RPCS``): on two cores about half a
second of work at the measured ~120 calls/s; more wait past their callers' deadlines (docs/decisions.md)."""


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """Settings of the pipeline service (env prefix ``NOVABERG_PIPELINE_``)."""

    common: CommonConfig
    """Host, port, grace, telemetry and log level (``NOVABERG_PIPELINE_HOST`` …)."""

    kzg_addr: str
    """``host:port`` of the KZG service (``NOVABERG_KZG_ADDR``)."""

    lzg_addr: str
    """``host:port`` of the LZG service (``NOVABERG_LZG_ADDR``)."""

    redis_url: str
    """Redis holding the previous-turn cluster per pair (``NOVABERG_REDIS_URL``)."""

    analyzer: str = "offline"
    """Analyzer for turns sent without a salience result: ``offline`` rules or ``ollama`` chat model."""

    ollama_url: str = "http://127.0.0.1:11434"
    """Ollama server of the ``ollama`` analyzer (``NOVABERG_OLLAMA_URL``)."""

    ollama_chat_model: str = ""
    """Chat model of the ``ollama`` analyzer (``NOVABERG_PIPELINE_OLLAMA_MODEL``; required for it)."""

    ollama_timeout_s: float = 60.0
    """How long one analysis by the chat model may take."""

    ollama_fallback_offline: bool = False
    """Answer with the offline rules when the chat model fails (``NOVABERG_PIPELINE_OLLAMA_FALLBACK``)."""

    kzg_top_k: int = 10
    """KZG hits per dossier (both perspectives together, SPEC §4.5)."""

    recall_k: int = 10
    """Memories in the dossier's recall list when the request names no ``recall_k`` (SPEC §11;
    ``NOVABERG_PIPELINE_RECALL_K``; chosen by measurement, docs/decisions.md)."""

    gewicht_user: float = 1.0
    """``RETRIEVAL_KZG_GEWICHT_USER`` (mem §11.6): weight of ``beobachter = user`` hits."""

    gewicht_assistant: float = 0.7
    """``RETRIEVAL_KZG_GEWICHT_ASSISTANT`` (mem §11.6): weight of the character's own hits."""

    registry_cache_s: float = 60.0
    """How long the analyzers remember an entity or timeline id the LZG gave for a name or date, per pair
    (``NOVABERG_PIPELINE_REGISTRY_CACHE_S``; 0 = ask the LZG every time). A merge, delete or rename
    made elsewhere reaches new turns at most this much later (see ``services.pipeline.registry_cache.RegistryCache``)."""

    peer_timeout_s: float = 10.0
    """Deadline of each call to the KZG or LZG service; a call waits up to this long for a peer that is
    (re)starting instead of failing at once (``wait_for_ready``)."""

    silent_peer_pause_s: float = 5.0
    """How long a peer the call can do without (a memory layer in the dossier, the LZG's registry
    when a turn is observed) is left out after it gave no answer, before it is asked again
    (``NOVABERG_PIPELINE_SILENT_PEER_PAUSE_S``; 0 = ask every time; services.pipeline.deadline)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PipelineConfig:
        analyzer = env_choice(f"{PREFIX}ANALYZER", ANALYZERS, "offline", env=env)
        model = env_str(f"{PREFIX}OLLAMA_MODEL", "", env=env)
        if analyzer == "ollama" and not model:
            raise ConfigError(
                f"{PREFIX}OLLAMA_MODEL", f"{PREFIX}OLLAMA_MODEL must be set when {PREFIX}ANALYZER=ollama"
            )
        fallback = env_choice(f"{PREFIX}OLLAMA_FALLBACK", ("offline", "none"), "none", env=env)
        return cls(
            common=CommonConfig.from_env(
                SERVICE_NAME, PREFIX, env=env, max_concurrent_rpcs=MAX_CONCURRENT_RPCS
            ),
            kzg_addr=env_str(ENV_KZG_ADDR, env=env),
            lzg_addr=env_str(ENV_LZG_ADDR, env=env),
            redis_url=env_str(ENV_REDIS_URL, env=env),
            analyzer=analyzer,
            ollama_url=env_str("NOVABERG_OLLAMA_URL", "http://127.0.0.1:11434", env=env),
            ollama_chat_model=model,
            ollama_timeout_s=env_float(f"{PREFIX}OLLAMA_TIMEOUT_S", 60.0, min_value=0.1, env=env),
            ollama_fallback_offline=fallback == "offline",
            kzg_top_k=env_int(f"{PREFIX}KZG_TOP_K", KZG_TOP_K_DEFAULT, min_value=1, max_value=100, env=env),
            recall_k=env_int(f"{PREFIX}RECALL_K", 10, min_value=0, max_value=100, env=env),
            gewicht_user=env_float(f"{PREFIX}GEWICHT_USER", 1.0, min_value=0.0, env=env),
            gewicht_assistant=env_float(f"{PREFIX}GEWICHT_ASSISTANT", 0.7, min_value=0.0, env=env),
            registry_cache_s=env_float(f"{PREFIX}REGISTRY_CACHE_S", 60.0, min_value=0.0, env=env),
            peer_timeout_s=env_float(f"{PREFIX}PEER_TIMEOUT_S", 10.0, min_value=0.1, env=env),
            silent_peer_pause_s=env_float(f"{PREFIX}SILENT_PEER_PAUSE_S", 5.0, min_value=0.0, env=env),
        )
