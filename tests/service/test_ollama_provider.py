"""The Ollama provider against a real HTTP server speaking Ollama's ``POST /api/embed`` (SPEC §2).

The server runs in a thread on 127.0.0.1:0 inside the test; the provider talks to it through the
real ``ollama.AsyncClient`` over TCP. Its behaviour is chosen by the requested model name.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from novaberg_core.embedding.ollama_provider import OllamaProvider
from novaberg_core.errors import ModelMismatch, Unavailable

NOMIC = "nomic-embed-text-v2-moe"


def raw_vector(text: str, dimension: int = 768) -> list[float]:
    """A deterministic, deliberately unnormalised vector per text (norm about 3 × sqrt(dimension))."""
    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
    return (3.0 * rng.standard_normal(dimension)).tolist()


class FakeOllama(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})  # type: ignore[attr-defined]
        if self.path != "/api/embed":
            self._reply(404, {"error": "not found"})
            return
        model = body["model"]
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        if model == NOMIC:
            self._reply(200, {"model": model, "embeddings": [raw_vector(t) for t in texts]})
        elif model == "short-model":
            self._reply(200, {"model": model, "embeddings": [raw_vector(t, 512) for t in texts]})
        elif model == "zero-model":
            self._reply(200, {"model": model, "embeddings": [[0.0] * 768 for _ in texts]})
        elif model == "garbage-model":
            self._send(200, b"<html>this is not ollama</html>", "text/html")
        elif model == "slow-model":
            time.sleep(1.0)
            self._reply(200, {"model": model, "embeddings": [raw_vector(t) for t in texts]})
        else:
            self._reply(404, {"error": f'model "{model}" not found, try pulling it first'})

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    httpd.daemon_threads = True
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


async def test_returns_normalised_vectors_in_order(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), batch_size=2)
    texts = ["Der Meister übt Gitarre.", "Nova mag Regen.", "drei", "vier", "fünf"]
    server.requests.clear()  # type: ignore[attr-defined]
    vectors = await provider.embed(texts)

    assert (provider.model_id, provider.dimension) == ("ollama:nomic-embed-text-v2-moe", 768)
    assert vectors.shape == (5, 768)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors.astype(np.float64), axis=1), 1.0, atol=1e-5)
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.array(raw_vector(text))
        np.testing.assert_allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    sent = server.requests  # type: ignore[attr-defined]
    assert [r["path"] for r in sent] == ["/api/embed"] * 3
    assert [r["input"] for r in sent] == [texts[0:2], texts[2:4], texts[4:5]]
    assert {r["model"] for r in sent} == {NOMIC}


async def test_embed_one_and_empty_input(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server))
    one = await provider.embed_one("Hallo")
    assert one.shape == (768,)
    assert abs(float(np.linalg.norm(one)) - 1.0) < 1e-5
    server.requests.clear()  # type: ignore[attr-defined]
    assert (await provider.embed([])).shape == (0, 768)
    assert server.requests == []  # type: ignore[attr-defined]


async def test_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OllamaProvider(host=f"http://127.0.0.1:{port}")
    with pytest.raises(
        Unavailable, match=rf"127\.0\.0\.1:{port}.*nomic-embed-text-v2-moe.*cannot be reached"
    ):
        await provider.embed(["Hallo"])


async def test_model_not_pulled_is_unavailable_with_the_pull_command(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), model="not-pulled", dimension=768)
    with pytest.raises(Unavailable, match=r"HTTP 404.*ollama pull not-pulled"):
        await provider.embed(["Hallo"])


async def test_answer_that_is_not_an_embed_response_is_unavailable(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), model="garbage-model", dimension=768)
    with pytest.raises(Unavailable, match="not an embed response"):
        await provider.embed(["Hallo"])


async def test_zero_vector_is_unavailable(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), model="zero-model", dimension=768)
    with pytest.raises(Unavailable, match="zero or non-finite"):
        await provider.embed(["Hallo"])


async def test_slow_server_is_unavailable_after_the_timeout(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), model="slow-model", dimension=768, timeout_s=0.2)
    with pytest.raises(Unavailable, match=r"did not answer within 0\.2 s"):
        await provider.embed(["Hallo"])


async def test_vectors_of_another_length_are_a_model_mismatch(server: ThreadingHTTPServer) -> None:
    provider = OllamaProvider(host=url(server), model="short-model", dimension=768)
    with pytest.raises(ModelMismatch, match=r"512-d.*768-d"):
        await provider.embed(["Hallo"])
