"""What every service test shares: the offline model, loaded once, and an in-memory pipeline log."""

from __future__ import annotations

import pytest

from novaberg_core.embedding import EmbeddingProvider, make_provider
from novaberg_core.pipeline_log import InMemorySink, PipelineLog


@pytest.fixture(scope="session")
def provider() -> EmbeddingProvider:
    """all-MiniLM-L6-v2 int8, the offline default, shared by every server of the session; its profile
    supplies the thresholds."""
    return make_provider("minilm")


@pytest.fixture
def sink() -> InMemorySink:
    return InMemorySink()


@pytest.fixture
def plog(sink: InMemorySink) -> PipelineLog:
    """The server's pipeline-log client; ``await plog.flush()`` moves its records into ``sink``."""
    return PipelineLog(sink)
