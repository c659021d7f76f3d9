"""The SQL formulas (migration 002: the edge formula of Trigger 2; migration 011: the decay) equal the Python domain
on random inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services.lzg.layers import (
    LZG_SCHICHT_FAKTOR,
    SCHICHT_ORDER,
    Praezision,
    TimelineRef,
    embedding_tiefe,
    themen_tiefe,
    timeline_tiefe,
    winner_of,
)
from services.lzg.store import LzgStore
from services.lzg.weights import LZG_KNOTEN_DECAY_RATE, damp, days_until, decayed, edge_raw

pytestmark = pytest.mark.integration
N = 3000


async def test_damping_equals_python(store: LzgStore) -> None:
    xs = np.concatenate([np.random.default_rng(1).uniform(-1.0, 15.0, N), [0.0, 10.0, 0.673, 1e-9]]).tolist()
    rows = await store.pool.fetch("SELECT x, lzg.daempfen(x) AS y FROM unnest($1::float8[]) AS x", xs)
    for row in rows:
        assert row["y"] == pytest.approx(damp(row["x"]), abs=1e-12)


async def test_decay_equals_python(store: LzgStore) -> None:
    """``knoten_verfall`` (migration 011), used by the daily decay and every read as of an instant, is SPEC §5.7's
    incremental decay: the spec's check value (start 3.25 → 1.0 in 2.2 years) and random weights and spans, fractions
    of a day included."""
    rng = np.random.default_rng(5)
    start = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    to_one = days_until(3.25, 1.0)
    assert round(to_one / 365.25, 1) == 2.2
    weights = [3.25, *rng.uniform(0.05, 10.0, N).tolist()]
    seconds = [to_one * 86400.0, *rng.uniform(0.0, 400 * 86400.0, N).tolist()]
    rows = await store.pool.fetch(
        "SELECT lzg.knoten_verfall(w, $3::timestamptz, $3::timestamptz + make_interval(secs => s), $4) AS v "
        "FROM unnest($1::float8[], $2::float8[]) WITH ORDINALITY AS u(w, s, i) ORDER BY i",
        weights, seconds, start, LZG_KNOTEN_DECAY_RATE,
    )  # fmt: skip
    assert rows[0]["v"] == pytest.approx(1.0, abs=1e-9)
    for row, w, s in zip(rows, weights, seconds, strict=True):
        assert row["v"] == pytest.approx(decayed(w, s / 86400.0), rel=1e-12)


async def test_decay_at_the_ends_of_time_gives_a_number(store: LzgStore) -> None:
    """Spans the requests allow (1970 to 9999) take a weight below what a float holds: PostgreSQL's exp()
    and product raise "underflow" there, where the Python twin rounds to 0 — the read answered INTERNAL
    (migration 012). Now 0 beyond e^−700 (the twin: 0 or below 1e−304), and a weight carried back over
    millennia stays finite; the spans before still give the twin's number."""
    start = datetime(2026, 6, 1, tzinfo=UTC)
    day = 86400.0
    spans = [
        1_400 * 365.25 * day,  # exp(−767): PostgreSQL's exp() underflows
        7_973 * 365.25 * day,  # to 9999-12-30, the latest as_of
        1_270 * 365.25 * day,  # exp(−696) ≈ 2e−303: its product with 1e−30 underflows
        400 * day,  # an ordinary span, for comparison
    ]
    weights = [3.25, 3.25, 1e-30, 3.25]
    rows = await store.pool.fetch(
        "SELECT lzg.knoten_verfall(w, $3::timestamptz, $3::timestamptz + make_interval(secs => s), $4) AS v "
        "FROM unnest($1::float8[], $2::float8[]) WITH ORDINALITY AS u(w, s, i) ORDER BY i",
        weights, spans, start, LZG_KNOTEN_DECAY_RATE,
    )  # fmt: skip
    values = [row["v"] for row in rows]
    assert values[:3] == [0.0, 0.0, 0.0]
    assert [decayed(w, s / day) for w, s in zip(weights[:3], spans[:3], strict=True)] == [0.0, 0.0, 0.0]
    assert values[3] == pytest.approx(decayed(3.25, 400.0), rel=1e-12)
    # Back in time from a decay done in year 9999: the exponent is capped, the weight is a finite number.
    back = await store.pool.fetchval(
        "SELECT lzg.knoten_verfall(1.0, '9999-12-29'::timestamptz, '1970-01-01'::timestamptz, $1)", LZG_KNOTEN_DECAY_RATE
    )
    assert back == pytest.approx(np.exp(700.0))


async def test_edge_raw_equals_python(store: LzgStore) -> None:
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, 10, N), rng.uniform(0, 10, N)
    faktor = rng.choice([0.4, 0.5, 0.8, 1.0], N)
    tiefe = rng.uniform(0, 1, N)
    n = rng.integers(1, 5, N)
    a[:10] = b[:10]  # equal anchors
    rows = await store.pool.fetch(
        "SELECT lzg.kante_roh(a, b, f, t, n) AS ab, lzg.kante_roh(b, a, f, t, n) AS ba "
        "FROM unnest($1::float8[], $2::float8[], $3::float8[], $4::float8[], $5::int[]) AS u(a, b, f, t, n)",
        a.tolist(),
        b.tolist(),
        faktor.tolist(),
        tiefe.tolist(),
        n.tolist(),
    )
    for i, row in enumerate(rows):
        ab, ba = edge_raw(float(a[i]), float(b[i]), float(faktor[i]), float(tiefe[i]), int(n[i]))
        assert row["ab"] == pytest.approx(ab, abs=1e-12)
        assert row["ba"] == pytest.approx(ba, abs=1e-12)


async def test_winner_factor_and_depth_equal_python(store: LzgStore) -> None:
    rng = np.random.default_rng(3)
    cases = []
    for _ in range(N):
        chosen = [s.value for s in SCHICHT_ORDER if rng.random() < 0.5] or ["themen"]
        cases.append(
            (
                chosen,
                float(rng.uniform(-0.2, 1.0)),
                float(rng.uniform(0.3, 0.9)),
                int(rng.integers(0, 4)),
                int(rng.integers(0, 8)),
                int(rng.integers(0, 8)),
                float(rng.uniform(0, 1)),
            )
        )
    rows = await store.pool.fetch(
        "SELECT lzg.schicht_faktor(string_to_array(g, ',')) AS f, "
        "lzg.schicht_tiefe(string_to_array(g, ','), c, s, n, na, nb, tl) AS t "
        "FROM unnest($1::text[], $2::float8[], $3::float8[], $4::int[], $5::int[], $6::int[], $7::float8[]) "
        "WITH ORDINALITY AS u(g, c, s, n, na, nb, tl, i) ORDER BY i",
        *[[",".join(c[0]) if i == 0 else c[i] for c in cases] for i in range(7)],
    )
    for case, row in zip(cases, rows, strict=True):
        gruende, cos, schwelle, n_shared, na, nb, tl = case
        winner = winner_of(gruende)
        assert row["f"] == LZG_SCHICHT_FAKTOR[winner]
        expected = {
            "entitaet": 1.0,
            "embedding": embedding_tiefe(cos, schwelle),
            "themen": themen_tiefe(n_shared, na, nb),
            "timeline": tl,
        }[winner.value]
        if expected is None:
            assert row["t"] is None
        else:
            assert row["t"] == pytest.approx(expected, abs=1e-12)


async def test_timeline_depth_equals_python_for_every_precision(store: LzgStore) -> None:
    rng = np.random.default_rng(4)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    precisions = [p.value for p in Praezision]
    za, pa, zb, pb = [], [], [], []
    for _ in range(N):
        a = base + timedelta(seconds=float(rng.uniform(0, 4 * 365 * 86400)))
        scale = float(rng.choice([2 * 86400, 30 * 86400, 400 * 86400, 1000 * 86400]))
        b = a + timedelta(seconds=float(rng.uniform(-scale, scale)))
        p = precisions[int(rng.integers(len(precisions)))]
        q = p if rng.random() < 0.9 else precisions[int(rng.integers(len(precisions)))]
        za.append(a.replace(microsecond=int(rng.integers(0, 10**6))))
        zb.append(b)
        pa.append(p)
        pb.append(q)
    rows = await store.pool.fetch(
        "SELECT lzg.timeline_tiefe(za, pa, zb, pb) AS t "
        "FROM unnest($1::timestamptz[], $2::text[], $3::timestamptz[], $4::text[]) WITH ORDINALITY AS u(za, pa, zb, pb, i) "
        "ORDER BY i",
        za,
        pa,
        zb,
        pb,
    )
    fired = 0
    for i, row in enumerate(rows):
        expected = timeline_tiefe(
            TimelineRef(za[i], Praezision(pa[i])), TimelineRef(zb[i], Praezision(pb[i]))
        )
        if expected is None:
            assert row["t"] is None, (za[i], zb[i], pa[i], pb[i])
        else:
            fired += 1
            assert row["t"] == pytest.approx(expected, abs=1e-12), (za[i], zb[i], pa[i])
    assert fired > N // 4  # the sample exercises the firing branch, not only the refusals
