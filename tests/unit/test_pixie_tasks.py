"""Pixie's pure scheduling rules, config and list paging (SPEC §9)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from novaberg_core.env import ConfigError
from novaberg_core.errors import InvalidArgument
from services.pixie.config import PixieConfig, parse_hhmm
from services.pixie.paging import MAX_LIMIT, page_limit
from services.pixie.tasks import (
    PIXIE_PROMOTION_PRIORITAET,
    TASK_DECAY,
    TASK_PROMOTION,
    backoff_seconds,
    due_day,
    group_by_key,
    next_attempt_at,
    pair_lock_key,
    require_task,
    run_day_of,
    should_park,
    task_registry,
)


def test_registry_lists_promotion_first_with_the_seed_priority() -> None:
    registry = task_registry(time(3, 30))
    assert list(registry) == [TASK_PROMOTION, TASK_DECAY]
    assert registry[TASK_PROMOTION].priority == PIXIE_PROMOTION_PRIORITAET == 0.9
    assert registry[TASK_PROMOTION].schedule == "continuous"
    assert registry[TASK_DECAY].schedule == "daily 03:30"
    assert registry[TASK_DECAY].priority < registry[TASK_PROMOTION].priority
    assert task_registry(time(23, 5))[TASK_DECAY].schedule == "daily 23:05"


def test_unknown_task_is_invalid_argument_naming_the_field() -> None:
    registry = task_registry(time(3, 30))
    with pytest.raises(InvalidArgument, match=r"task must be one of synapsen_promotion, synapsen_decay, got 'x'"):
        require_task(registry, "x")
    assert require_task(registry, TASK_DECAY).name == TASK_DECAY


def test_daily_task_is_due_from_its_time_on_the_utc_day() -> None:
    at = time(3, 30)
    assert due_day(datetime(2026, 11, 29, 3, 29, 59, tzinfo=UTC), at) is None
    assert due_day(datetime(2026, 11, 29, 3, 30, tzinfo=UTC), at) == date(2026, 11, 29)
    assert due_day(datetime(2026, 11, 29, 23, 59, tzinfo=UTC), at) == date(2026, 11, 29)
    # 01:00 at UTC+2 is 23:00 UTC of the previous day: due for that day.
    plus2 = timezone(timedelta(hours=2))
    assert due_day(datetime(2026, 11, 30, 1, 0, tzinfo=plus2), at) == date(2026, 11, 29)
    assert run_day_of(datetime(2026, 11, 30, 1, 0, tzinfo=plus2)) == date(2026, 11, 29)
    with pytest.raises(ValueError):
        run_day_of(datetime(2026, 11, 30, 1, 0))


def test_backoff_doubles_from_base_and_is_capped() -> None:
    assert [backoff_seconds(n, 2.0, 300.0) for n in range(0, 10)] == [
        0.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 300.0,
    ]
    assert backoff_seconds(10_000, 2.0, 300.0) == 300.0
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert next_attempt_at(now, 3, 0.5, 60.0) == now + timedelta(seconds=2)


def test_park_after_max_attempts() -> None:
    assert [should_park(n, 5) for n in (1, 4, 5, 6)] == [False, False, True, True]


def test_pair_lock_key_is_stable_signed_64_bit_and_unambiguous() -> None:
    key = pair_lock_key("meister", "nova")
    assert key == pair_lock_key("meister", "nova")
    assert -(2**63) <= key < 2**63
    assert pair_lock_key("ab", "c") != pair_lock_key("a", "bc")
    assert pair_lock_key("meister", "nova") != pair_lock_key("nova", "meister")


def test_group_by_key_keeps_first_seen_order() -> None:
    groups = group_by_key([("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)])
    assert list(groups.items()) == [("b", [1, 3]), ("a", [2, 5]), ("c", [4])]


def test_config_reads_pixie_variables_and_fails_fast_naming_them() -> None:
    env = {
        "NOVABERG_POSTGRES_URL": "postgresql://x/y",
        "NOVABERG_KZG_ADDR": "kzg:1",
        "NOVABERG_LZG_ADDR": "lzg:2",
        "NOVABERG_PIXIE_DECAY_AT": "04:05",
        "NOVABERG_PIXIE_MAX_ATTEMPTS": "3",
        "NOVABERG_PIXIE_REPLICA_ID": "pixie-a",
        "NOVABERG_TLS_MODE": "plaintext",
    }
    cfg = PixieConfig.from_env(env)
    assert cfg.decay_at == time(4, 5)
    assert cfg.max_attempts == 3
    assert cfg.replica_id == "pixie-a"
    assert cfg.log_addr == ""
    assert PixieConfig.from_env({k: v for k, v in env.items() if k != "NOVABERG_PIXIE_DECAY_AT"}).decay_at == time(3, 30)
    with pytest.raises(ConfigError, match="NOVABERG_PIXIE_DECAY_AT") as bad_time:
        PixieConfig.from_env({**env, "NOVABERG_PIXIE_DECAY_AT": "24:00"})
    assert bad_time.value.variable == "NOVABERG_PIXIE_DECAY_AT"
    with pytest.raises(ConfigError, match="NOVABERG_PIXIE_MAX_ATTEMPTS"):
        PixieConfig.from_env({**env, "NOVABERG_PIXIE_MAX_ATTEMPTS": "0"})
    with pytest.raises(ConfigError, match="NOVABERG_KZG_ADDR"):
        PixieConfig.from_env({k: v for k, v in env.items() if k != "NOVABERG_KZG_ADDR"})
    # Two replicas without an explicit id get different consumer names.
    env_no_id = {k: v for k, v in env.items() if k != "NOVABERG_PIXIE_REPLICA_ID"}
    assert PixieConfig.from_env(env_no_id).replica_id != PixieConfig.from_env(env_no_id).replica_id


def test_parse_hhmm() -> None:
    assert parse_hhmm("X", " 00:00 ") == time(0, 0)
    assert parse_hhmm("X", "23:59") == time(23, 59)
    for bad in ("3:30", "03:60", "0330", "", "03:30:00"):
        with pytest.raises(ConfigError, match="X must be a UTC time HH:MM"):
            parse_hhmm("X", bad)


def test_a_list_call_returns_its_default_for_0_and_never_more_than_the_cap() -> None:
    assert [page_limit(0, 20), page_limit(7, 20), page_limit(MAX_LIMIT + 1, 20)] == [20, 7, MAX_LIMIT]
    with pytest.raises(InvalidArgument, match="limit must be >= 0 \\(0 means the default 20\\), got -1"):
        page_limit(-1, 20)
