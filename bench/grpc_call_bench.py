"""What one gRPC call costs on this machine, bare and with the tracing interceptors every service runs.

A turn makes eleven unary calls (three from the caller to the pipeline, eight from the pipeline to
the KZG and the LZG; ``bench/turn_bench.py`` lists them), so the fixed cost of a call is part of
every turn's memory time. This bench times sequential unary calls of a 2 kB message between two
processes (a server process, the client in this one, both on uvloop as the services are) in four
configurations: no interceptor, OpenTelemetry's client interceptors only (as
``novaberg_core.server.client_channel_arguments`` installs them on every peer channel), its server
interceptor only (as ``novaberg_core.server.create_server`` installs it), and both. Spans are
recorded by an SDK tracer provider without an exporter. Configurations run in turn, ``--rounds``
times, so a drift of the machine's pace reaches all of them alike.

    .venv/bin/python bench/grpc_call_bench.py [--calls 3000] [--rounds 3]

Prints microseconds per call (wall, and the client process's CPU) per configuration and round,
and as last line one JSON object with the medians: ``bare_us``, ``client_traced_us``,
``server_traced_us``, ``both_traced_us``, ``client_cpu_bare_us``, ``client_cpu_traced_us``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import socket
import statistics
import time
from multiprocessing.synchronize import Event

import grpc
import uvloop
from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor
from opentelemetry.sdk.trace import TracerProvider

METHOD = "/bench.Echo/Echo"
MESSAGE = b"x" * 2000
WARMUP_CALLS = 200
CONFIGURATIONS = {
    "bare": (False, False),
    "client_traced": (False, True),
    "server_traced": (True, False),
    "both_traced": (True, True),
}
"""name → (server interceptor, client interceptors)."""


def _identity(data: bytes) -> bytes:
    return data


async def _serve(port: int, traced: bool, ready: Event) -> None:
    interceptors = [aio_server_interceptor(tracer_provider=TracerProvider())] if traced else []
    server = grpc.aio.server(interceptors=interceptors)

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return request

    handler = grpc.unary_unary_rpc_method_handler(echo, _identity, _identity)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Echo": handler}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    ready.set()
    await server.wait_for_termination()


def _server_process(port: int, traced: bool, ready: Event) -> None:
    uvloop.run(_serve(port, traced, ready))


async def _time_calls(port: int, traced: bool, calls: int) -> tuple[float, float]:
    """(wall µs, client CPU µs) per call."""
    options = {"interceptors": aio_client_interceptors(tracer_provider=TracerProvider())} if traced else {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", **options) as channel:  # type: ignore[arg-type]
        call = channel.unary_unary(METHOD, request_serializer=_identity, response_deserializer=_identity)
        for _ in range(WARMUP_CALLS):
            await call(MESSAGE)
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await call(MESSAGE)
        return (time.perf_counter() - wall) / calls * 1e6, (time.process_time() - cpu) / calls * 1e6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def measure(server_traced: bool, client_traced: bool, calls: int) -> tuple[float, float]:
    """One configuration: a fresh server process, ``calls`` timed calls."""
    spawn = multiprocessing.get_context("spawn")  # no fork of a process that has run gRPC channels
    ready = spawn.Event()
    port = _free_port()
    server = spawn.Process(target=_server_process, args=(port, server_traced, ready), daemon=True)
    server.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the echo server did not start within 30 s")
        return uvloop.run(_time_calls(port, client_traced, calls))
    finally:
        server.terminate()
        server.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    wall: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    cpu: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(args.rounds):
        for name, (server_traced, client_traced) in CONFIGURATIONS.items():
            us, cpu_us = measure(server_traced, client_traced, args.calls)
            wall[name].append(us)
            cpu[name].append(cpu_us)
    print(f"unary calls of {len(MESSAGE)} bytes, {args.calls} per round, {args.rounds} rounds (µs per call)")
    for name in CONFIGURATIONS:
        rounds = " / ".join(f"{us:.0f}" for us in wall[name])
        cpu_rounds = " / ".join(f"{us:.0f}" for us in cpu[name])
        print(f"  {name:<14} wall {rounds:<20} client CPU {cpu_rounds}")
    summary = {f"{name}_us": round(statistics.median(wall[name]), 1) for name in CONFIGURATIONS}
    summary["client_cpu_bare_us"] = round(statistics.median(cpu["bare"]), 1)
    summary["client_cpu_traced_us"] = round(statistics.median(cpu["client_traced"]), 1)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
