"""The whole memory core on one machine: embedded stores plus the five services as processes.

Used by ``make run`` (``novaberg up``), the end-to-end tests and the benchmarks. Every service
runs as its own process on its own port, as on Kubernetes, configured only through the same
environment variables the Helm chart sets (README, configuration table).

By default the stack runs mTLS: a throwaway CA made at each start issues every service and the
``operator`` (the CLI, the tests' clients) a certificate in ``<data-dir>/tls/``
(:mod:`novaberg_dev.devcerts`); the CA's key stays in memory (:attr:`Stack.ca`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from novaberg_core.config import ENV_POSTGRES_URL, ENV_REDIS_URL
from novaberg_core.errors import Unavailable
from novaberg_core.lifecycle import PARENT_PID_ENV
from novaberg_core.server import wait_for_serving
from novaberg_core.tls import ENV_TLS_MODE, PLAINTEXT, CertificateFiles, TlsConfig, channel_credentials
from novaberg_dev.devcerts import CertificateAuthority, write_identity_files
from novaberg_dev.embedded import StoreUrls, start_stores, stop_stores
from novaberg_dev.embedded.state import free_ports

# Start order: what others call comes first (log ← all, kzg/lzg ← pixie/pipeline).
SERVICES: tuple[str, ...] = ("log", "kzg", "lzg", "pixie", "pipeline")
HEALTH_NAMES: Mapping[str, str] = {
    "log": "novaberg.log.v1.LogService",
    "kzg": "novaberg.kzg.v1.KzgService",
    "lzg": "novaberg.lzg.v1.LzgService",
    "pixie": "novaberg.pixie.v1.PixieService",
    "pipeline": "novaberg.pipeline.v1.PipelineService",
}
REPO_ROOT = Path(__file__).resolve().parents[2]
OPERATOR = "operator"
"""Identity of the stack's client certificate: the CLI, the demo and the tests' clients."""

_LOG = logging.getLogger(__name__)


@dataclass
class Stack:
    """Running service processes and where to reach them."""

    data_dir: Path
    urls: StoreUrls
    addresses: dict[str, str]
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stores_dir: Path | None = None
    metrics_ports: dict[str, int] = field(default_factory=dict)
    """Each service's Prometheus endpoint (``NOVABERG_<SVC>_METRICS_PORT``: one host, one port each)."""
    """The embedded stores this stack started itself (stopped with it); None when given by URL."""
    tls: dict[str, TlsConfig] = field(default_factory=dict)
    """Certificate files per identity (each service and :data:`OPERATOR`) under mTLS; empty in plaintext."""
    ca: CertificateAuthority | None = None
    """The stack's CA under mTLS (tests issue more identities with it); its key is never written."""

    @property
    def client_tls(self) -> TlsConfig:
        """What a client of this stack connects with: the operator's certificate, or plaintext."""
        return self.tls.get(OPERATOR, PLAINTEXT)

    def service_env(self, service: str) -> dict[str, str]:
        """The environment of one service process: the stack's plus its own certificate files."""
        own = self.tls.get(service)
        return self.env if own is None else {**self.env, **own.as_env()}

    @property
    def pids(self) -> dict[str, int]:
        """The running service processes' pids."""
        return {name: process.pid for name, process in self.processes.items() if process.poll() is None}

    def metrics_url(self, service: str) -> str:
        """Where ``service``'s metrics can be scraped."""
        return f"http://127.0.0.1:{self.metrics_ports[service]}/metrics"

    def log_path(self, service: str) -> Path:
        return self.data_dir / "logs" / f"{service}.log"

    def start_service(self, service: str) -> None:
        """Starts (or restarts) one service process with the stack's environment.

        In a session of its own (a terminal's Ctrl-C reaches the launcher, which stops the services
        in order); it stops with this process even so (``novaberg_core.lifecycle``). Call it from the
        main thread: the kernel ties that to the thread that started the process.
        """
        self.log_path(service).parent.mkdir(parents=True, exist_ok=True)
        log_file = self.log_path(service).open("ab")
        self.processes[service] = subprocess.Popen(
            [sys.executable, "-m", f"services.{service}"],
            cwd=REPO_ROOT,
            env=self.service_env(service),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log_file.close()

    async def wait_serving(self, service: str, timeout: float = 60.0) -> None:  # noqa: ASYNC109
        """Waits for SERVING; a process that died meanwhile is reported with its log tail."""
        process = self.processes[service]
        deadline = asyncio.get_running_loop().time() + timeout
        client = self.client_tls
        credentials = channel_credentials(CertificateFiles(client).read()) if client.enabled else None
        while True:
            if process.poll() is not None:
                raise Unavailable(
                    f"service {service} exited with code {process.returncode}:\n{self.log_tail(service)}"
                )
            try:
                await wait_for_serving(
                    self.addresses[service], HEALTH_NAMES[service], timeout=1.0, credentials=credentials
                )
                return
            except Unavailable:
                if asyncio.get_running_loop().time() > deadline:
                    raise Unavailable(
                        f"service {service} not SERVING after {timeout:.0f} s:\n{self.log_tail(service)}"
                    ) from None

    async def stop_service(self, service: str, grace: float = 10.0) -> int | None:
        """SIGTERM (graceful: NOT_SERVING, drain, flush), then SIGKILL after ``grace`` s."""
        process = self.processes.pop(service, None)
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(process.wait, grace)
        except subprocess.TimeoutExpired:
            process.kill()
            return await asyncio.to_thread(process.wait)

    def kill_service(self, service: str) -> None:
        """SIGKILL without any shutdown steps (crash tests)."""
        process = self.processes.pop(service, None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    async def stop(self, grace: float = 10.0) -> None:
        """Stops the services in reverse start order, then the stores this stack started."""
        for service in reversed(SERVICES):
            if service in self.processes:
                await self.stop_service(service, grace)
        if self.stores_dir is not None:
            await asyncio.to_thread(stop_stores, self.stores_dir)

    def log_tail(self, service: str, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path(service).read_text(errors="replace").splitlines()[-lines:])
        return "(no log)"


def stack_env(
    urls: StoreUrls,
    addresses: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
    metrics_ports: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The environment every service process gets (ports, peers, stores, metrics endpoints)."""
    env = dict(os.environ)
    env.update(
        {
            ENV_POSTGRES_URL: urls.postgres_url,
            ENV_REDIS_URL: urls.redis_url,
            "PYTHONUNBUFFERED": "1",
            # Each service gets SIGTERM should this process die without stopping it.
            PARENT_PID_ENV: str(os.getpid()),
        }
    )
    # One BLAS thread per service: the embeddings and cosines are small products that a second,
    # spinning BLAS thread per process only slows down when six processes share a few cores.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    for service, address in addresses.items():
        env[f"NOVABERG_{service.upper()}_ADDR"] = address
        env[f"NOVABERG_{service.upper()}_PORT"] = address.rsplit(":", 1)[1]
        env[f"NOVABERG_{service.upper()}_HOST"] = "127.0.0.1"
    for service, port in (metrics_ports or {}).items():
        env[f"NOVABERG_{service.upper()}_METRICS_PORT"] = str(port)
    if extra:
        env.update(extra)
    return env


async def start_stack(
    data_dir: Path | str,
    *,
    urls: StoreUrls | None = None,
    services: Sequence[str] = SERVICES,
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 90.0,  # noqa: ASYNC109
    mtls: bool = True,
) -> Stack:
    """Starts the stores (unless ``urls`` are given) and ``services``; returns once all are SERVING.

    Stores started here belong to the stack: :meth:`Stack.stop` stops them too (their data stays).
    ``mtls`` (default) issues fresh certificates in ``<data_dir>/tls``; ``mtls=False`` runs the
    services with ``NOVABERG_TLS_MODE=plaintext``.
    """
    root = Path(data_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    stores_dir = None
    if urls is None:
        stores_dir = root / "stores"
        urls = await asyncio.to_thread(start_stores, stores_dir)
    ports = free_ports(2 * len(SERVICES))  # one gRPC and one metrics listener per service, all distinct
    addresses = {service: f"127.0.0.1:{port}" for service, port in zip(SERVICES, ports[: len(SERVICES)], strict=True)}
    metrics_ports = dict(zip(SERVICES, ports[len(SERVICES) :], strict=True))
    env = stack_env(urls, addresses, extra_env, metrics_ports)
    ca = CertificateAuthority.create("Novaberg local stack CA") if mtls else None
    identities = (
        await asyncio.to_thread(write_identity_files, root / "tls", ca, (*SERVICES, OPERATOR)) if ca else {}
    )
    if not mtls:
        env[ENV_TLS_MODE] = "plaintext"  # the services are plaintext only when told so
    stack = Stack(
        data_dir=root,
        urls=urls,
        addresses=addresses,
        env=env,
        stores_dir=stores_dir,
        tls=identities,
        ca=ca,
        metrics_ports=metrics_ports,
    )
    try:
        # Pixie last, once its peers serve: a gRPC channel whose first connect is refused waits out
        # a reconnect backoff, and Pixie's calls fail fast meanwhile (an outage to its worker).
        for wave in ([s for s in services if s != "pixie"], [s for s in services if s == "pixie"]):
            for service in wave:
                stack.start_service(service)
            for service in wave:
                await stack.wait_serving(service, timeout)
    except BaseException:
        await stack.stop(grace=2.0)
        raise
    return stack
