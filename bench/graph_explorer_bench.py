"""``novaberg graph`` cost: layout, page and picture at the demo-pair size and at 5,000 nodes.

    .venv/bin/python bench/graph_explorer_bench.py [--sizes 369:24122,5000:300000] [--no-browser]

Each size ``NODES:ROWS`` is a synthetic pair (``graph_explorer.synthetic_graph``: topic communities,
both directed rows per connected pair). Measured separately: merging the rows into lines, the igraph
layout, the whole ``.html`` (layout included) and its size, ``.png`` and ``.svg``; then, when a
Chromium is there (``scripts/ensure_chromium.sh`` finds one, installs none), the page's load time in
headless Chromium: ms from navigation start until the first frame is drawn (``readyAt``).
The old renderer took 19 s and wrote 7 MB at 369 nodes / 24,122 rows.

Prints a table; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from novaberg_dev.graph_explorer import layout, merge_edges, synthetic_graph, write_graph_file

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-unsafe-swiftshader"]  # fmt: skip


def timed(work: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def page_load_ms(chromium: str, page: Path, repeats: int = 3) -> list[float]:
    from playwright.sync_api import sync_playwright

    loads = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True, args=FLAGS, viewport={"width": 1400, "height": 900})
        for _ in range(repeats):
            tab = context.new_page()
            tab.goto(page.as_uri())
            tab.wait_for_function("window.novabergExplorer && window.novabergExplorer.ready", timeout=120_000)
            loads.append(float(tab.evaluate("window.novabergExplorer.readyAt")))
            tab.close()
        context.close()
    return loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="369:24122,5000:300000", help="NODES:DIRECTED_ROWS, comma-separated")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    chromium = None if args.no_browser else (os.environ.get("NOVABERG_CHROMIUM") or shutil.which("chromium"))
    results: dict[str, Any] = {}
    print(f"{'nodes':>6}{'rows':>9}{'lines':>8}{'merge s':>9}{'layout s':>10}{'html s':>8}{'html MB':>9}"
          f"{'png s':>7}{'png MB':>8}{'svg s':>7}{'svg MB':>8}{'load ms':>9}")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes.split(","):
            n, rows = (int(x) for x in size.split(":"))
            nodes, edges, names = synthetic_graph(n, mean_degree=rows / n)
            merge_s, lines = timed(lambda: merge_edges(edges, {x.id for x in nodes}))  # noqa: B023
            import igraph  # noqa: F401  (imported once, outside the timing)

            layout_s, _ = timed(lambda: layout([x.id for x in nodes], lines))  # noqa: B023
            out: dict[str, tuple[float, float]] = {}
            for suffix in (".html", ".png", ".svg"):
                path = Path(folder) / f"graph-{n}{suffix}"
                seconds, _ = timed(lambda: write_graph_file(path, nodes, edges, entity_names=names))  # noqa: B023
                out[suffix] = (seconds, path.stat().st_size / 1e6)
            loads = page_load_ms(chromium, Path(folder) / f"graph-{n}.html") if chromium else []
            load = statistics.median(loads) if loads else float("nan")
            print(f"{n:>6}{len(edges):>9}{len(lines):>8}{merge_s:>9.2f}{layout_s:>10.2f}"
                  f"{out['.html'][0]:>8.2f}{out['.html'][1]:>9.2f}{out['.png'][0]:>7.2f}{out['.png'][1]:>8.2f}"
                  f"{out['.svg'][0]:>7.2f}{out['.svg'][1]:>8.2f}{load:>9.0f}")  # fmt: skip
            results[str(n)] = {
                "rows": len(edges), "lines": len(lines), "merge_s": round(merge_s, 2), "layout_s": round(layout_s, 2),
                "html_s": round(out[".html"][0], 2), "html_mb": round(out[".html"][1], 2),
                "png_s": round(out[".png"][0], 2), "png_mb": round(out[".png"][1], 2),
                "svg_s": round(out[".svg"][0], 2), "svg_mb": round(out[".svg"][1], 2),
                "page_load_ms": [round(x) for x in loads],
            }  # fmt: skip
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; html s includes its layout")
    print(json.dumps({"bench": "graph_explorer", **results}))


if __name__ == "__main__":
    main()
