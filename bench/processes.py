"""What the processes of a running stack spend and ask of each other, for the benchmarks that drive
one (``turn_bench``, ``locomo_bench``, ``import_bench``, ``hop_bench``): CPU seconds per process,
the RPCs, Redis commands and PostgreSQL transactions between two moments, percentiles, and the
machine's pace (how fast it runs Python and how long one process takes to answer another; printed by
``turn_bench``, ``locomo_bench`` and ``lzg_bench`` with their timings)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import numpy as np
import psutil
import redis.asyncio

from novaberg_dev.embedded import stores_status
from novaberg_dev.stack import Stack

__all__ = [
    "RPC_TOTAL",
    "MachinePace",
    "RoundTrips",
    "cpu_seconds",
    "machine_pace",
    "percentile",
    "round_trips",
    "scrape",
    "stack_pids",
]


def stack_pids(stack: Stack, stores_dir: Path) -> dict[str, int]:
    """The stack's service processes, its stores' servers and this client, by name."""
    status = stores_status(stores_dir)
    pids = {name: process.pid for name, process in stack.processes.items()}
    for name, store_process in (("postgres", status.postgres), ("redis", status.redis)):
        if store_process is not None:
            pids[name] = store_process.pid
    pids["bench client"] = psutil.Process().pid
    return pids


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds of each process; PostgreSQL with its backends."""
    used: dict[str, float] = {}
    for name, pid in pids.items():
        try:
            process = psutil.Process(pid)
            members = [process, *process.children(recursive=True)] if name == "postgres" else [process]
        except psutil.NoSuchProcess:
            continue
        total = 0.0
        for member in members:
            try:
                times = member.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        used[name] = total
    return used


@dataclass(frozen=True)
class RoundTrips:
    """Counters of everything a turn asks of another process, read before and after the timed turns."""

    rpcs: dict[str, float]
    """Finished server calls per ``service/method`` (the services' ``rpc.server.duration`` counts)."""
    rpc_ms: dict[str, float]
    """Milliseconds the servers spent in those calls, per ``service/method`` (the histograms' sums)."""
    redis_commands: dict[str, int]
    """Redis calls per command (``INFO commandstats``; a script's own calls count too)."""
    redis_usec: dict[str, int]
    """Microseconds Redis spent per command (a script's time includes its calls')."""
    postgres_transactions: int
    """Committed transactions of the database (``pg_stat_database``): one per autocommit statement, and
    one per pool release (asyncpg's reset query). PostgreSQL takes a backend's counts in up to ~10 s
    late, so over a short run this is approximate."""

    def per_turn(self, before: RoundTrips, turns: int) -> dict[str, dict[str, float]]:
        def delta(after: Mapping[str, float], earlier: Mapping[str, float]) -> dict[str, float]:
            moved = {key: (value - earlier.get(key, 0)) / turns for key, value in after.items()}
            return dict(sorted(((k, v) for k, v in moved.items() if v > 0), key=lambda kv: -kv[1]))

        calls = delta(self.rpcs, before.rpcs)
        spent = delta(self.rpc_ms, before.rpc_ms)
        return {
            "rpcs": calls,
            "rpc_ms_per_call": {name: spent.get(name, 0.0) / count for name, count in calls.items()},
            "redis": delta(self.redis_commands, before.redis_commands),
            "redis_ms": {k: v / 1000 for k, v in delta(self.redis_usec, before.redis_usec).items()},
            "postgres": {"transactions": (self.postgres_transactions - before.postgres_transactions) / turns},
        }


RPC_TOTAL = re.compile(r"^rpc_server_duration[a-z_]*_(?P<total>count|sum)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
"""A histogram's total line of the Prometheus exposition: the finished calls
(``rpc_server_duration_milliseconds_count{…} 12``) or the milliseconds they took (``…_sum{…} 30.5``)."""


def scrape(url: str) -> str:
    """The body of a metrics endpoint."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


async def round_trips(metrics_urls: dict[str, str], redis_url: str, postgres_url: str) -> RoundTrips:
    """The counters of :class:`RoundTrips`, scraped from the services' metrics and the two stores."""
    totals: dict[str, dict[str, float]] = {"count": defaultdict(float), "sum": defaultdict(float)}
    for url in metrics_urls.values():
        body = await asyncio.to_thread(scrape, url)
        for line in body.splitlines():
            match = RPC_TOTAL.match(line)
            if match is None:
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
            service = labels.get("rpc_service", "?").rsplit(".", 1)[-1]
            totals[match["total"]][f"{service}/{labels.get('rpc_method', '?')}"] += float(match["value"])
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    commands = {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}
    usec = {name.removeprefix("cmdstat_"): int(value["usec"]) for name, value in stats.items()}
    connection = await asyncpg.connect(postgres_url)
    try:
        committed = await connection.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
    finally:
        await connection.close()
    return RoundTrips(dict(totals["count"]), dict(totals["sum"]), commands, usec, int(committed))


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values``; NaN for none."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


@dataclass(frozen=True)
class MachinePace:
    """How fast the machine is right now, in two ways a turn's latency may depend on.

    The machine drifts by day and by hour, and the two measures move apart: on 2026-12-02 the Python
    loop read 0.41–0.81 s and the round trip 6–151 µs (an idle CPU of this VM is woken by the
    hypervisor: 75–90 µs idle, 12–14 µs with the other CPU busy). Compare latency runs only at a
    similar pace.
    """

    python_loop_s: float
    """Seconds of ``sum(i * i for i in range(10**7))`` in this process."""
    round_trip_us: float
    """Median microseconds of one byte to another process and back over pipes (its CPU idle between)."""

    def line(self) -> str:
        return f"machine pace: Python loop {self.python_loop_s:.2f} s, process round trip {self.round_trip_us:.0f} µs"

    def json_fields(self) -> dict[str, float]:
        """The pace as a benchmark's JSON line carries it."""
        return {"pace_python_loop_s": round(self.python_loop_s, 3), "pace_round_trip_us": round(self.round_trip_us, 1)}

    @classmethod
    def mean(cls, *paces: MachinePace) -> MachinePace:
        """The mean of several measurements (e.g. before and after the timed part)."""
        return cls(
            sum(p.python_loop_s for p in paces) / len(paces), sum(p.round_trip_us for p in paces) / len(paces)
        )


_ECHO = "import os\nwhile (b := os.read(0, 1)):\n    os.write(1, b)\n"


def machine_pace(round_trips_count: int = 2_000) -> MachinePace:
    """Measure :class:`MachinePace` (about a second)."""
    start = time.perf_counter()
    sum(i * i for i in range(10**7))
    loop_s = time.perf_counter() - start
    times = []
    # The context closes both pipes (the echo's stdin last: it ends the loop) and waits for it.
    with subprocess.Popen([sys.executable, "-c", _ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as echo:
        assert echo.stdin is not None and echo.stdout is not None
        write_fd, read_fd = echo.stdin.fileno(), echo.stdout.fileno()
        for _ in range(round_trips_count):
            start = time.perf_counter()
            os.write(write_fd, b"x")
            os.read(read_fd, 1)
            times.append(time.perf_counter() - start)
    return MachinePace(loop_s, float(np.median(times)) * 1e6)

