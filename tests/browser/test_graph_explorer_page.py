"""The explorer page (``novaberg graph -o x.html``) in a real headless Chromium at 2,000 nodes:
it loads offline in under 3 s without console errors and draws; search, a click on a node (its
content, its edges with reasons, its neighbourhood), zoom and the filters work."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import BrowserContext, ConsoleMessage, Page

from novaberg_dev.graph_explorer import LAYER_ORDER, payload_from_html, synthetic_graph, write_graph_file

NODES = 2_000
MEAN_DEGREE = 30  # 30,000 node pairs, 60,000 directed rows (the 369-node demo pair had 24,122 rows)
LOAD_BUDGET_MS = 3_000
BACKGROUND = (251, 250, 247)  # #fbfaf7, explorer.css


EMPTY_SPOT = """([width, height]) => {
  const api = window.novabergExplorer, shown = [];
  api.renderer.refresh();  // what sigma picks under the pointer is drawn at this camera
  api.graph.forEachNode((key, attributes) => shown.push(api.renderer.graphToViewport(attributes)));
  for (let y = 20; y < height; y += 20) for (let x = 20; x < width; x += 20) {
    if (shown.every((p) => Math.hypot(p.x - x, p.y - y) > 40)) return [x, y];
  }
  throw new Error("no empty spot on the stage");
}"""
"""A point of the stage at least 40 px from every node."""

SETTLED = """() => { const r = window.novabergExplorer.renderer, mouse = r.getMouseCaptor();
  return !r.getCamera().isAnimated() && !mouse.currentWheelDirection && mouse.clicks === 0; }"""
"""Sigma has finished the wheel's animated zoom (250 ms) and its double-click window (300 ms) is closed.

A click sooner lands either while nodes still slide under the pointer or as the second half of a
double click (sigma then zooms instead of emitting ``clickStage``): both flaked in CI.
"""


@pytest.fixture(scope="module")
def explorer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nodes, edges, names = synthetic_graph(NODES, mean_degree=MEAN_DEGREE, seed=7)
    path = tmp_path_factory.mktemp("explorer") / "graph.html"
    start = time.perf_counter()
    write_graph_file(path, nodes, edges, entity_names=names, title="synthetisch · 2000")
    print(f"\nrendered {NODES} nodes / {len(edges)} rows in {time.perf_counter() - start:.2f} s, "
          f"{path.stat().st_size / 1e6:.2f} MB")  # fmt: skip
    return path


@pytest.fixture(scope="module")
def data(explorer_file: Path) -> dict[str, Any]:
    return payload_from_html(explorer_file.read_text(encoding="utf-8"))


class Opened:
    """A freshly loaded page, with what it logged and asked for."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.on("request", lambda request: self.requests.append(request.url))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def counts(self) -> tuple[int, int]:
        text = self.page.inner_text("#counts")
        match = re.fullmatch(r"(\d+) von \d+ Knoten, (\d+) von \d+ Verbindungen sichtbar", text.strip())
        assert match, text
        return int(match.group(1)), int(match.group(2))


@pytest.fixture
def opened(browser: BrowserContext, explorer_file: Path) -> Iterator[Opened]:
    page = browser.new_page()
    seen = Opened(page)
    page.goto(explorer_file.as_uri())
    page.wait_for_function("window.novabergExplorer && window.novabergExplorer.ready", timeout=30_000)
    try:
        yield seen
    finally:
        page.close()


def test_loads_offline_fast_without_errors_and_draws(opened: Opened, data: dict[str, Any]) -> None:
    page = opened.page
    load_ms = page.evaluate("window.novabergExplorer.readyAt")
    print(f"\npage ready {load_ms:.0f} ms after navigation start")
    assert load_ms < LOAD_BUDGET_MS
    assert page.evaluate("[window.novabergExplorer.nodeCount, window.novabergExplorer.edgeCount]") == [
        NODES, len(data["edges"]["a"])]  # fmt: skip
    assert opened.counts() == (NODES, len(data["edges"]["a"]))
    page.wait_for_timeout(300)
    image = Image.open(io.BytesIO(page.locator("#graph").screenshot())).convert("RGB")
    pixels: list[tuple[int, int, int]] = list(image.get_flattened_data())  # type: ignore[arg-type]
    drawn = sum(1 for r, g, b in pixels if max(abs(r - BACKGROUND[0]), abs(g - BACKGROUND[1]), abs(b - BACKGROUND[2])) > 12)
    assert drawn > 0.10 * len(pixels), f"only {drawn} of {len(pixels)} pixels drawn"
    assert len(set(pixels)) > 50  # nodes in two speaker colours, edges in layer colours, labels
    assert opened.errors == []
    assert [url for url in opened.requests if not url.startswith("file://")] == []


def test_search_then_a_click_on_the_hit_shows_the_node_its_edges_and_neighbourhood(
    opened: Opened, data: dict[str, Any]
) -> None:
    page, nodes, lines = opened.page, data["nodes"], data["edges"]
    i = nodes["id"].index(1234)
    page.fill("#search", f"Erinnerung {nodes['id'][i]} über")
    page.wait_for_function("document.querySelectorAll('#hits li').length === 1")
    assert page.inner_text("#hit-count") == "1 Treffer"
    page.click("#hits li")
    details = page.locator("#details")
    details.wait_for(state="visible")
    assert nodes["text"][i] in details.inner_text()
    mine = [e for e in range(len(lines["a"])) if i in (lines["a"][e], lines["b"][e])]
    assert details.locator("ol li").count() == min(len(mine), 300)
    first = details.locator("ol li").first.inner_text()  # strongest first, with its reasons
    strongest = max(mine, key=lambda e: max(lines["ab"][e], lines["ba"][e]))
    reasons = [layer for bit, layer in enumerate(LAYER_ORDER) if lines["reasons"][strongest] >> bit & 1]
    assert f"[{', '.join(reasons)}]" in first
    neighbours = {nodes["id"][lines["b"][e] if lines["a"][e] == i else lines["a"][e]] for e in mine}
    assert set(page.evaluate("window.novabergExplorer.selectedNeighbours()")) == neighbours
    assert opened.errors == []


def test_a_click_on_the_canvas_selects_a_node_and_the_wheel_zooms(opened: Opened, data: dict[str, Any]) -> None:
    page, nodes = opened.page, data["nodes"]
    i = max(range(NODES), key=lambda k: nodes["decay"][k])
    # Zoom onto the node so that nothing else lies under the pointer, then click where sigma draws it.
    where = page.evaluate(
        """(key) => { const r = window.novabergExplorer.renderer;
             const shown = r.getNodeDisplayData(key);
             r.getCamera().setState({x: shown.x, y: shown.y, ratio: 0.02});
             r.refresh();
             return r.graphToViewport(window.novabergExplorer.graph.getNodeAttributes(key)); }""",
        str(i),
    )
    box = page.locator("#graph").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + where["x"], box["y"] + where["y"])
    page.locator("#details").wait_for(state="visible")
    assert page.inner_text("#details h2").startswith(f"#{nodes['id'][i]} ")
    before = page.evaluate("window.novabergExplorer.renderer.getCamera().ratio")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, 600)
    page.wait_for_function(f"window.novabergExplorer.renderer.getCamera().ratio > {before} * 1.2")
    page.wait_for_function(SETTLED)
    empty = page.evaluate(EMPTY_SPOT, [box["width"], box["height"]])
    page.mouse.click(box["x"] + empty[0], box["y"] + empty[1])  # the empty stage: the selection ends
    page.locator("#details").wait_for(state="hidden")
    assert opened.errors == []


def test_filters_show_exactly_what_they_select(opened: Opened, data: dict[str, Any]) -> None:
    page, nodes, lines = opened.page, data["nodes"], data["edges"]
    n, e_all = NODES, range(len(lines["a"]))

    def expected(node_ok: list[bool], layer_mask: int = 15, min_weight: float = 0.0) -> tuple[int, int]:
        edges = sum(1 for e in e_all if node_ok[lines["a"][e]] and node_ok[lines["b"][e]]
                    and lines["reasons"][e] & layer_mask and max(lines["ab"][e], lines["ba"][e]) >= min_weight)
        return sum(node_ok), edges

    page.uncheck("#states input[value='0']")  # inactive nodes off
    active = [bool(a) for a in nodes["active"]]
    assert opened.counts() == expected(active) and sum(active) < n
    page.uncheck("#layers input[value='0']")  # entitaet off: an edge stays if another reason is on
    page.uncheck("#layers input[value='2']")  # themen off
    assert opened.counts() == expected(active, layer_mask=0b1010)
    page.click("#reset")
    assert opened.counts() == (n, len(lines["a"]))
    assistant = [data["speakers"][s]["label"] == "assistant" for s in nodes["speaker"]]
    page.uncheck("#speakers input[value='0']")  # user off
    assert opened.counts() == expected(assistant)
    page.click("#reset")
    slide = "(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); return +el.value; }"
    low = page.eval_on_selector("#node-min", slide, "3")  # the value the slider's steps allow
    min_weight = page.eval_on_selector("#edge-min", slide, "2.5")
    assert opened.counts() == expected([d >= low - 1e-9 for d in nodes["decay"]], min_weight=min_weight - 1e-9)
    page.click("#reset")
    page.fill("#time-from", "2026-03-01")
    page.fill("#time-to", "2026-03-31")
    page.dispatch_event("#time-to", "change")
    from_s, to_s = 1_772_323_200, 1_775_001_600  # 2026-03-01 and 2026-04-01, 00:00 UTC
    assert opened.counts() == expected([from_s <= s < to_s for s in nodes["said"]])
    assert opened.errors == []
