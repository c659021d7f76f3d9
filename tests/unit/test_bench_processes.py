"""The pure parts of ``bench/processes.py``: what a turn asks of the other processes, per turn."""

from __future__ import annotations

import pytest

from bench.processes import RPC_TOTAL, MachinePace, RoundTrips, machine_pace


def test_round_trips_per_turn_are_the_counters_moved_over_the_timed_turns() -> None:
    before = RoundTrips(
        rpcs={"KzgService/StoreEntry": 40.0, "LzgService/GetModel": 2.0},
        rpc_ms={"KzgService/StoreEntry": 100.0, "LzgService/GetModel": 3.0},
        redis_commands={"evalsha": 10, "hset": 100},
        redis_usec={"evalsha": 5_000, "hset": 2_000},
        postgres_transactions=1_000,
    )
    after = RoundTrips(
        rpcs={"KzgService/StoreEntry": 440.0, "LzgService/GetModel": 2.0, "KzgService/Retrieve": 200.0},
        rpc_ms={"KzgService/StoreEntry": 1_300.0, "LzgService/GetModel": 3.0, "KzgService/Retrieve": 900.0},
        redis_commands={"evalsha": 540, "hset": 9_354},
        redis_usec={"evalsha": 763_000, "hset": 450_000},
        postgres_transactions=2_178,
    )
    trips = after.per_turn(before, 200)
    assert trips["rpcs"] == {"KzgService/StoreEntry": 2.0, "KzgService/Retrieve": 1.0}  # unmoved left out
    # (1,300 − 100) ms over 400 calls; 900 ms over 200 calls
    assert trips["rpc_ms_per_call"] == {
        "KzgService/StoreEntry": pytest.approx(3.0),
        "KzgService/Retrieve": pytest.approx(4.5),
    }
    assert list(trips["redis"]) == ["hset", "evalsha"]  # most first
    assert trips["redis"]["hset"] == pytest.approx(46.27)
    assert trips["redis_ms"] == {"evalsha": pytest.approx(3.79), "hset": pytest.approx(2.24)}
    assert trips["postgres"] == {"transactions": pytest.approx(5.89)}


def test_the_rpc_histogram_totals_of_the_prometheus_exposition_are_recognised() -> None:
    line = (
        'rpc_server_duration_milliseconds_count{rpc_grpc_status_code="0",rpc_method="StoreEntry",'
        'rpc_service="novaberg.kzg.v1.KzgService",rpc_system="grpc"} 12.0'
    )
    match = RPC_TOTAL.match(line)
    assert match is not None and match["total"] == "count" and match["value"] == "12.0"
    assert 'rpc_method="StoreEntry"' in match["labels"]
    summed = RPC_TOTAL.match(line.replace("_count{", "_sum{").replace("} 12.0", "} 30.5"))
    assert summed is not None and summed["total"] == "sum" and summed["value"] == "30.5"
    assert RPC_TOTAL.match(line.replace("_count{", '_bucket{le="5.0",')) is None


def test_the_machine_pace_measures_a_python_loop_and_a_round_trip_to_another_process() -> None:
    pace = machine_pace(round_trips_count=50)
    assert 0.0 < pace.python_loop_s < 60.0
    assert 0.0 < pace.round_trip_us < 1_000_000.0
    assert pace.line().startswith("machine pace: Python loop ")


def test_the_pace_of_a_run_is_the_mean_of_its_measurements_as_the_json_line_carries_it() -> None:
    before, after = MachinePace(0.41, 59.04), MachinePace(0.674, 6.0)
    assert MachinePace.mean(before, after) == MachinePace(pytest.approx(0.542), pytest.approx(32.52))  # type: ignore[arg-type]
    assert MachinePace.mean(before, after).json_fields() == {"pace_python_loop_s": 0.542, "pace_round_trip_us": 32.5}
