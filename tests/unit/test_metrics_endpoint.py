"""The process's Prometheus endpoint lists each series once per scrape, however often the process
flushed its metrics before (a service flushes at every shutdown; a test process runs many)."""

from __future__ import annotations

import re
import urllib.request
from collections import Counter

from novaberg_core import metrics
from novaberg_dev.embedded.state import free_port


def _series(text: str) -> Counter[str]:
    """How often each sample (name and labels) stands in a scrape."""
    return Counter(
        m.group(1) for line in text.splitlines() if (m := re.match(r"([^#\s][^ ]*) ", line))
    )


def test_a_flush_between_scrapes_repeats_no_series() -> None:
    port = metrics.setup_metrics("endpoint-test", port=free_port(), host="127.0.0.1")
    assert port is not None
    metrics.record_run("synapsen_decay", "ok")
    url = f"http://127.0.0.1:{port}/metrics"
    for _ in range(3):
        assert metrics.flush_metrics(5.0)
    metrics.record_run("synapsen_decay", "ok")
    text = urllib.request.urlopen(url, timeout=30).read().decode()
    counts = _series(text)
    runs = [s for s in counts if s.startswith("novaberg_pixie_runs_total{")
            and 'outcome="ok"' in s and 'task="synapsen_decay"' in s]  # fmt: skip
    assert len(runs) == 1, runs
    value = re.search(re.escape(runs[0]) + r" ([0-9.e+]+)\n", text)
    assert value is not None and float(value.group(1)) >= 2  # both runs, before and after the flushes
    assert [s for s, n in counts.items() if n > 1] == []
