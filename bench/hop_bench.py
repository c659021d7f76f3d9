"""What one gRPC hop between two services costs: bare ``grpc.aio`` against the interceptors every
service runs (issue 11: a turn makes ~10 such hops; SPEC §7 "every service step has a span").

    .venv/bin/python bench/hop_bench.py [--calls 3000] [--rounds 2]

A server process answers the health service's ``Check`` (the smallest unary call there is) and a
client in this process calls it ``--calls`` times after a warm-up, one call at a time. Variants:

- ``bare``: no interceptor on either side;
- ``metrics+errors``: the server's ``RpcMetricsInterceptor`` and ``ErrorMappingInterceptor``
  (novaberg_core.server), the client bare;
- ``traced``: what a plaintext service runs (novaberg_core.server.create_server and
  client_channel_arguments): OpenTelemetry's server interceptor before those two, and its client
  interceptor on the channel (spans recorded, exported nowhere). Under mTLS the authorisation check
  and TLS come on top.

The variants run in turn, ``--rounds`` times, so a drifting machine touches each alike. Per call:
wall time, the client's CPU and the server process's CPU. The last line is one JSON object with
each variant's median over the rounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event

import grpc
import grpc.aio
import psutil
import uvloop
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from bench.processes import cpu_seconds
from novaberg_dev.embedded.state import free_port

VARIANTS = ("bare", "metrics+errors", "traced")
WARMUP = 200


def server_interceptors(variant: str) -> list[grpc.aio.ServerInterceptor]:
    if variant == "bare":
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    from novaberg_core.rpc_metrics import RpcMetricsInterceptor
    from novaberg_core.server_interceptors import ErrorMappingInterceptor
    from novaberg_core.telemetry import setup_telemetry

    mapped: list[grpc.aio.ServerInterceptor] = [RpcMetricsInterceptor(), ErrorMappingInterceptor()]
    if variant == "metrics+errors":
        return mapped
    return [aio_server_interceptor(tracer_provider=setup_telemetry("hop-bench-server", "none")), *mapped]


def serve(port: int, variant: str, ready: Event) -> None:
    async def main() -> None:
        server = grpc.aio.server(interceptors=server_interceptors(variant))
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        ready.set()
        await server.wait_for_termination()

    uvloop.run(main())


@dataclass(frozen=True)
class Hop:
    wall_ms: float
    client_cpu_ms: float
    server_cpu_ms: float


async def call_repeatedly(port: int, variant: str, calls: int, server: int) -> Hop:
    options: dict[str, object] = {}
    if variant == "traced":
        from opentelemetry.instrumentation.grpc import aio_client_interceptors

        from novaberg_core.telemetry import setup_telemetry

        options["interceptors"] = aio_client_interceptors(tracer_provider=setup_telemetry("hop-bench-client", "none"))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", **options) as channel:  # type: ignore[arg-type]
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest()
        for _ in range(WARMUP):
            await stub.Check(request)
        pids = {"client": psutil.Process().pid, "server": server}
        before, started = cpu_seconds(pids), time.perf_counter()
        for _ in range(calls):
            await stub.Check(request)
        wall = time.perf_counter() - started
        after = cpu_seconds(pids)
        client, served = after["client"] - before["client"], after["server"] - before["server"]
    return Hop(1000 * wall / calls, 1000 * client / calls, 1000 * served / calls)


def measure(variant: str, calls: int) -> Hop:
    port = free_port()
    ready = multiprocessing.Event()
    process = multiprocessing.Process(target=serve, args=(port, variant, ready), daemon=True)
    process.start()
    try:
        if not ready.wait(30):
            raise RuntimeError(f"the {variant} server did not start")
        assert process.pid is not None
        return uvloop.run(call_repeatedly(port, variant, calls, process.pid))
    finally:
        process.terminate()
        process.join(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    hops: dict[str, list[Hop]] = {variant: [] for variant in VARIANTS}
    print(f"one unary call at a time, {args.calls} calls per variant and round, {os.cpu_count()} cores")
    print(f"{'round':<7}{'variant':<16}{'wall ms':>10}{'client CPU ms':>15}{'server CPU ms':>15}")
    for round_ in range(1, args.rounds + 1):
        for variant in VARIANTS:
            hop = measure(variant, args.calls)
            hops[variant].append(hop)
            print(f"{round_:<7}{variant:<16}{hop.wall_ms:>10.3f}{hop.client_cpu_ms:>15.3f}{hop.server_cpu_ms:>15.3f}")
    result = {
        variant: {
            "wall_ms": round(statistics.median(h.wall_ms for h in measured), 3),
            "client_cpu_ms": round(statistics.median(h.client_cpu_ms for h in measured), 3),
            "server_cpu_ms": round(statistics.median(h.server_cpu_ms for h in measured), 3),
        }
        for variant, measured in hops.items()
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
