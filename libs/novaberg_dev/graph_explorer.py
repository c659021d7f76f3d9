"""A pair's long-term memory graph as an interactive offline page or a static picture (``novaberg graph``).

Pure: nodes, edges and entity names in, one file out; no stores, no services.

    write_graph_file(Path("graph.html"), nodes, edges, entity_names={12: "Anna"}, title="meister · nova")

Suffixes (:data:`OUTPUT_SUFFIXES`): ``.html`` an explorer page — zoom/pan, search by text,
filters (layer = edge reason, speaker, weight range, time range, active/inactive), a click on a
node shows its content, its edges with their reasons and highlights its neighbourhood;
``.png`` / ``.svg`` a static picture for reports (matplotlib, headless Agg backend).

Why these libraries (measured on the 2-core dev machine, synthetic graphs of the LZG's shape):

* Layout: igraph's Fruchterman–Reingold (C) takes 0.9 s at 5,000 nodes / 150,000 node pairs;
  networkx needs scipy and took 120 s (``spring_layout``, 50 iterations) and 380 s
  (``forceatlas2_layout``) on the same graph; igraph's DrL took 55 s. The old hand-written numpy
  layout was O(n²) in memory per step (19 s at 369 nodes).
* Renderer: sigma.js 3 (WebGL) on graphology, vendored from npm with its licence in
  ``graph_explorer_assets/vendor/`` and inlined, so the page needs no network. In headless Chromium
  without a GPU (SwiftShader) at 5,000 nodes / 150,000 pairs sigma drew its first frame in
  1.9 s, vis-network 10 (canvas, physics off) in 8.8 s, and a zoom redraw took 0.2–0.7 s against
  0.6–1.8 s. Edges use sigma's 1-pixel line program: the default quad edges took 4 s more at
  2,000 nodes in software WebGL.
* One self-contained file (≈260 kB of JavaScript inline) rather than a page plus an assets
  folder: a report attachment or a copied file cannot lose its scripts, and the graph data
  (megabytes at 5,000 nodes) dwarfs the library code anyway.
"""

from __future__ import annotations

import heapq
import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, Unpack

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2

__all__ = [
    "LAYER_COLOURS",
    "LAYER_ORDER",
    "OUTPUT_SUFFIXES",
    "EdgeLine",
    "GraphOptions",
    "UnsupportedOutputError",
    "backbone",
    "check_output_suffix",
    "graph_payload",
    "layout",
    "merge_edges",
    "payload_from_html",
    "render_html",
    "render_image",
    "synthetic_graph",
    "winning_layer",
    "write_graph_file",
]

OUTPUT_SUFFIXES: tuple[str, ...] = (".html", ".png", ".svg")
"""What :func:`write_graph_file` writes: the explorer page, or a static picture."""

LAYER_ORDER: tuple[str, ...] = ("entitaet", "embedding", "themen", "timeline")
"""Layers by Schicht-Faktor, highest first (SPEC §5.4: 1.0, 0.8, 0.5, 0.4)."""

LAYER_COLOURS: Mapping[str, str] = {
    "entitaet": "#d1495b",
    "embedding": "#00798c",
    "themen": "#edae49",
    "timeline": "#66a182",
    "unbekannt": "#8d8d8d",
}
"""Edge colour per winning layer (``unbekannt``: a reason this renderer does not know)."""

SPEAKERS: tuple[tuple[int, str, str], ...] = (
    (common_pb2.BEOBACHTER_USER, "user", "#3d5a80"),
    (common_pb2.BEOBACHTER_ASSISTANT, "assistant", "#9c6ade"),
    (common_pb2.BEOBACHTER_UNSPECIFIED, "unbekannt", "#8d8d8d"),
)
"""``beobachter`` value, its label and node colour; the index in this tuple is the page's speaker code."""

ASSETS = Path(__file__).with_name("graph_explorer_assets")
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("vendor/graphology-0.26.0.umd.min.js", "vendor/graphology-LICENSE.txt"),
    ("vendor/sigma-3.0.3.min.js", "vendor/sigma-LICENSE.txt"),
)
"""Vendored third-party scripts (``graph_explorer_assets/vendor/``, see its README), inlined in this
order, each headed by its licence (MIT: the notice travels with every copy)."""
DATA_OPEN = '<script type="application/json" id="graph-data">'

LABEL_CHARS = 48
SVG_RASTER_EDGES = 5_000
"""Above this many drawn lines an SVG's edges are embedded as one bitmap; nodes and text stay vector."""


class UnsupportedOutputError(ValueError):
    """The output file's suffix is not one of :data:`OUTPUT_SUFFIXES`."""


class EdgeLine(NamedTuple):
    """The directed rows between one node pair merged into one line (SPEC §5.4: A→B and B→A)."""

    a: int
    b: int
    layer: str
    """The winning layer (:func:`winning_layer`)."""
    gruende: tuple[str, ...]
    weight_ab: float
    """``gewicht_absolut`` of the row a → b (0 when there is none)."""
    weight_ba: float
    geteilte_entitaet_ids: tuple[int, ...]
    geteilte_themen: tuple[str, ...]
    edge_ids: tuple[int, ...] = ()

    @property
    def weight(self) -> float:
        """The stronger direction's ``gewicht_absolut``."""
        return max(self.weight_ab, self.weight_ba)


def check_output_suffix(path: Path) -> str:
    """The lower-case suffix of ``path``; :class:`UnsupportedOutputError` naming the allowed ones otherwise."""
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise UnsupportedOutputError(
            f"cannot write a graph to {str(path)!r}: unknown suffix {suffix or '(none)'!r}; "
            f"use one of {', '.join(OUTPUT_SUFFIXES)}"
        )
    return suffix


def winning_layer(gruende: Sequence[str]) -> str:
    """The firing layer with the highest Schicht-Faktor (SPEC §5.4); ``unbekannt`` when none is known."""
    for layer in LAYER_ORDER:
        if layer in gruende:
            return layer
    return "unbekannt"


def merge_edges(edges: Sequence[lzg_pb2.Edge], node_ids: set[int] | None = None) -> list[EdgeLine]:
    """One :class:`EdgeLine` per unordered node pair, sorted by pair; reasons, shared entities and
    themes are the union of both rows. Self-loops and edges leaving ``node_ids`` (when given) are dropped."""
    rows: dict[tuple[int, int], list[lzg_pb2.Edge]] = {}
    for edge in edges:
        a, b = edge.knoten_a_id, edge.knoten_b_id
        if a == b or (node_ids is not None and (a not in node_ids or b not in node_ids)):
            continue
        rows.setdefault((a, b) if a < b else (b, a), []).append(edge)
    winners: dict[tuple[str, ...], str] = {}
    lines = []
    for (a, b), pair in sorted(rows.items()):
        gruende, entities, themen = (tuple(pair[0].verbindungs_gruende), tuple(pair[0].geteilte_entitaet_ids),
                                     tuple(pair[0].geteilte_themen))  # fmt: skip
        for other in pair[1:]:  # the two directions were formed together (SPEC §5.4): usually equal
            gruende = _union(gruende, other.verbindungs_gruende)
            entities = _union(entities, other.geteilte_entitaet_ids)
            themen = _union(themen, other.geteilte_themen)
        winner = winners.get(gruende)
        if winner is None:
            winner = winners[gruende] = winning_layer(gruende)
        weight_ab = max((e.gewicht_absolut for e in pair if e.knoten_a_id == a), default=0.0)
        weight_ba = max((e.gewicht_absolut for e in pair if e.knoten_a_id == b), default=0.0)
        lines.append(EdgeLine(a, b, winner, gruende, weight_ab, weight_ba, entities, themen,
                              tuple(e.id for e in pair)))  # fmt: skip
    return lines


def _union(first: tuple[Any, ...], second: Sequence[Any]) -> tuple[Any, ...]:
    if len(second) == len(first) and all(x in first for x in second):
        return first
    return first + tuple(x for x in second if x not in first)


LAYOUT_NEIGHBOURS = 10
"""How many of each node's strongest lines pull in the layout (all lines are drawn). On all 150,000
pairs of a 5,000-node graph Fruchterman–Reingold collapses into one blob (igraph's grid variant
then degrades to minutes); on each node's 10 strongest it keeps topic clusters apart, in 0.8 s."""


def backbone(lines: Sequence[EdgeLine], k: int = LAYOUT_NEIGHBOURS) -> list[EdgeLine]:
    """The lines that are among the ``k`` strongest of at least one of their two nodes, in input order."""
    by_node: dict[int, list[tuple[float, int]]] = {}
    for i, line in enumerate(lines):
        by_node.setdefault(line.a, []).append((line.weight, -i))
        by_node.setdefault(line.b, []).append((line.weight, -i))
    keep: set[int] = set()
    for ranked in by_node.values():
        keep.update(-i for _, i in heapq.nlargest(k, ranked))
    return [line for i, line in enumerate(lines) if i in keep]


def layout(node_ids: Sequence[int], lines: Sequence[EdgeLine]) -> dict[int, tuple[float, float]]:
    """Positions (unit-free, y up): igraph's Fruchterman–Reingold on the :func:`backbone`, per
    connected component, with igraph's random start drawn from a fixed seed, so the same graph
    always gives the same picture; components packed in rows, largest first, each in a square
    whose area grows with its node count."""
    import igraph

    index = {node_id: i for i, node_id in enumerate(node_ids)}
    pulling = backbone([e for e in lines if e.a in index and e.b in index])
    graph = igraph.Graph(n=len(node_ids), edges=[(index[e.a], index[e.b]) for e in pulling])
    high = max((e.weight for e in pulling), default=1.0) or 1.0
    graph.es["weight"] = [0.3 + 0.7 * e.weight / high for e in pulling]
    groups = sorted(graph.connected_components(), key=lambda g: (-len(g), g[0]))
    state = random.getstate()
    random.seed(0)  # igraph draws its start positions from Python's random
    try:
        boxes = [_component_layout(graph, group) for group in groups]
    finally:
        random.setstate(state)
    positions: dict[int, tuple[float, float]] = {}
    row_width = max(math.sqrt(len(node_ids)) * 1.6, max((side for side, _ in boxes), default=1.0))
    x = y = row_height = 0.0
    for group, (side, coords) in zip(groups, boxes, strict=True):
        if x > 0 and x + side > row_width:
            x, y, row_height = 0.0, y + row_height, 0.0
        for vertex, (px, py) in zip(group, coords, strict=True):
            positions[node_ids[vertex]] = (x + px, -(y + py))
        x += side
        row_height = max(row_height, side)
    return positions


def _component_layout(graph: Any, group: list[int]) -> tuple[float, list[tuple[float, float]]]:
    """One component's coordinates inside a square box ``[0, side]²`` (margin included)."""
    size = len(group)
    side = math.sqrt(size) * 1.1 + 1.0
    if size == 1:
        return side, [(side / 2, side / 2)]
    sub = graph.induced_subgraph(group)
    coords = sub.layout_fruchterman_reingold(weights="weight", niter=500).coords
    xs, ys = [c[0] for c in coords], [c[1] for c in coords]
    low_x, low_y = min(xs), min(ys)
    extent = max(max(xs) - low_x, max(ys) - low_y, 1e-9)
    inner = side - 1.0
    off_x = (side - inner * (max(xs) - low_x) / extent) / 2
    off_y = (side - inner * (max(ys) - low_y) / extent) / 2
    return side, [(off_x + (px - low_x) / extent * inner, off_y + (py - low_y) / extent * inner) for px, py in coords]


class GraphOptions(TypedDict, total=False):
    """What a page or picture shows besides the nodes and edges (keywords of the renderers)."""

    entity_names: Mapping[int, str] | None
    """Entity id → name for the page (the picture names no entities)."""
    title: str
    """The heading; "Novaberg memory graph" when empty."""
    positions: Mapping[int, tuple[float, float]] | None
    """Node id → position; :func:`layout` computes them when None."""


def _drawing(
    nodes: Sequence[lzg_pb2.Node], edges: Sequence[lzg_pb2.Edge], options: GraphOptions
) -> tuple[list[lzg_pb2.Node], list[int], list[EdgeLine], Mapping[int, tuple[float, float]], str]:
    """What the page and the picture draw: nodes sorted by id, their ids, one line per node pair,
    a position per node, the title."""
    ordered = sorted(nodes, key=lambda n: n.id)
    node_ids = [n.id for n in ordered]
    lines = merge_edges(edges, set(node_ids))
    positions = options.get("positions")
    where = positions if positions is not None else layout(node_ids, lines)
    return ordered, node_ids, lines, where, options.get("title") or "Novaberg memory graph"


def _seconds(stamp: Any) -> int:
    return int(stamp.seconds)


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def graph_payload(
    nodes: Sequence[lzg_pb2.Node], edges: Sequence[lzg_pb2.Edge], **options: Unpack[GraphOptions]
) -> dict[str, Any]:
    """The page's data, column-wise (one list per field, edges referring to node indexes), to keep
    the file small: ``nodes`` (sorted by id), ``edges`` (one per node pair), name tables."""
    ordered, node_ids, lines, where, title = _drawing(nodes, edges, options)
    index = {node_id: i for i, node_id in enumerate(node_ids)}
    speaker = {value: code for code, (value, _, _) in enumerate(SPEAKERS)}
    masks = {g: sum(1 << i for i, layer in enumerate(LAYER_ORDER) if layer in g) for g in {e.gruende for e in lines}}
    themes: dict[str, int] = {}
    emotions: dict[str, int] = {"": 0}

    def theme_ids(values: Sequence[str]) -> list[int]:
        return [themes.setdefault(t, len(themes)) for t in values]

    return {
        "title": title,
        "layers": list(LAYER_ORDER),
        "layerColours": dict(LAYER_COLOURS),
        "speakers": [{"label": label, "colour": colour} for _, label, colour in SPEAKERS],
        "nodes": {
            "id": node_ids,
            "x": [round(where[i][0], 3) for i in node_ids],
            "y": [round(where[i][1], 3) for i in node_ids],
            "text": [n.inhalt for n in ordered],
            "label": [_short(n.inhalt) for n in ordered],
            "decay": [round(n.gewicht_decay, 4) for n in ordered],
            "absolut": [round(n.gewicht_absolut, 4) for n in ordered],
            "speaker": [speaker.get(n.beobachter, len(SPEAKERS) - 1) for n in ordered],
            "active": [1 if n.aktiv else 0 for n in ordered],
            "said": [_seconds(n.kzg_erstellt_am) or _seconds(n.erstellt_am) for n in ordered],
            "stored": [_seconds(n.erstellt_am) for n in ordered],
            "frequency": [n.haeufigkeit for n in ordered],
            "themes": [theme_ids(n.themen) for n in ordered],
            "entities": [list(n.magnets.entitaet_ids) for n in ordered],
            "emotion": [emotions.setdefault(n.ei.emotion, len(emotions)) for n in ordered],
        },
        "edges": {
            "a": [index[e.a] for e in lines],
            "b": [index[e.b] for e in lines],
            "reasons": [masks[e.gruende] for e in lines],
            "ab": [round(e.weight_ab, 4) for e in lines],
            "ba": [round(e.weight_ba, 4) for e in lines],
            "entities": [list(e.geteilte_entitaet_ids) for e in lines],
            "themes": [theme_ids(e.geteilte_themen) for e in lines],
        },
        "themes": list(themes),
        "emotions": list(emotions),
        "entityNames": {str(k): v for k, v in (options.get("entity_names") or {}).items()},
    }


def _asset(name: str) -> str:
    text = (ASSETS / name).read_text(encoding="utf-8")
    return re.sub(r"^//# sourceMappingURL=.*$", "", text, flags=re.MULTILINE)  # no map to look for offline


def _script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: ``<`` escaped, so no ``</script>`` or ``<!--``."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def render_html(
    nodes: Sequence[lzg_pb2.Node], edges: Sequence[lzg_pb2.Edge], **options: Unpack[GraphOptions]
) -> str:
    """The explorer as one self-contained HTML document (libraries, app and data inline)."""
    payload = graph_payload(nodes, edges, **options)
    parts = {
        "TITLE": escape(payload["title"]),
        "CSS": _asset("explorer.css"),
        "LIBRARIES": "\n".join(f"<script>/*!\n{_asset(licence)}*/\n{_asset(name)}</script>" for name, licence in LIBRARIES),
        "DATA": _script_json(payload),
        "APP": _asset("explorer.js"),
    }
    template = _asset("explorer.html")
    # One pass over the template only, so nothing inside the data or the libraries is substituted.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], template)


def payload_from_html(html: str) -> dict[str, Any]:
    """The data of a page written by :func:`render_html` (for tests and tools reading a page back)."""
    start = html.index(DATA_OPEN) + len(DATA_OPEN)
    data: dict[str, Any] = json.loads(html[start : html.index("</script>", start)])
    return data


def render_image(
    nodes: Sequence[lzg_pb2.Node], edges: Sequence[lzg_pb2.Edge], fmt: str, **options: Unpack[GraphOptions]
) -> bytes:
    """A static picture (``fmt`` ``png`` or ``svg``) for reports: lines coloured by winning layer,
    nodes sized by ``gewicht_decay`` and filled by speaker (hollow when inactive), the strongest
    nodes labelled, a legend. Same layout as the page."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    ordered, node_ids, lines, where, title = _drawing(nodes, edges, options)  # the picture names no entities
    figure = Figure(figsize=(16, 10), dpi=120, facecolor="#fbfaf7")  # 1920 × 1200 px
    axes = figure.add_axes((0.01, 0.01, 0.80, 0.93))
    axes.set_axis_off()
    axes.set_aspect("equal")
    figure.suptitle(title, x=0.02, y=0.98, ha="left", fontsize=15, fontweight="bold")
    if lines:
        alpha = max(0.08, min(0.7, 300.0 / len(lines) ** 0.75))
        high = max(e.weight for e in lines) or 1.0
        edge_art = LineCollection(
            [(where[e.a], where[e.b]) for e in lines],
            colors=[LAYER_COLOURS[e.layer] for e in lines],
            linewidths=[0.3 + 1.7 * e.weight / high for e in lines],
            alpha=alpha, zorder=1, rasterized=fmt == "svg" and len(lines) > SVG_RASTER_EDGES,
        )  # fmt: skip
        edge_art.set_gid("edges")
        axes.add_collection(edge_art)
    if ordered:
        high_node = max(n.gewicht_decay for n in ordered) or 1.0
        colour = {value: c for value, _, c in SPEAKERS}
        sizes = [8 + 160 * max(n.gewicht_decay, 0.0) / high_node for n in ordered]
        fills = [colour.get(n.beobachter, SPEAKERS[-1][2]) if n.aktiv else "#ffffff" for n in ordered]
        rims = ["#222222" if n.aktiv else colour.get(n.beobachter, SPEAKERS[-1][2]) for n in ordered]
        node_art = axes.scatter([where[i][0] for i in node_ids], [where[i][1] for i in node_ids], s=sizes,
                                c=fills, edgecolors=rims, linewidths=0.6, zorder=2)  # fmt: skip
        node_art.set_gid("nodes")
        for node in sorted(ordered, key=lambda n: (-n.gewicht_decay, n.id))[:25]:
            x, y = where[node.id]
            axes.annotate(_short(node.inhalt, 30), (x, y), xytext=(0, 7), textcoords="offset points",
                          ha="center", fontsize=7, color="#222222", zorder=3)  # fmt: skip
        axes.autoscale_view()
    handles = [Line2D([], [], color=LAYER_COLOURS[layer], lw=3, label=layer) for layer in (*LAYER_ORDER, "unbekannt")]
    handles += [Line2D([], [], marker="o", ls="", markersize=8, markerfacecolor=c, markeredgecolor="#222222",
                       label=label) for value, label, c in SPEAKERS if value]  # fmt: skip
    handles.append(Line2D([], [], marker="o", ls="", markersize=8, markerfacecolor="#ffffff",
                          markeredgecolor="#555555", label="inaktiv"))  # fmt: skip
    figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.82, 0.93), frameon=True,
                  title=f"{len(ordered)} Knoten, {len(lines)} Verbindungen\nGröße: gewicht_decay",
                  fontsize=9, title_fontsize=9)  # fmt: skip
    buffer = io.BytesIO()
    # No date and fixed element ids: the same graph gives the same bytes.
    with matplotlib.rc_context({"svg.hashsalt": "novaberg"}):
        figure.savefig(buffer, format=fmt, facecolor=figure.get_facecolor(),
                       metadata={"Date": None} if fmt == "svg" else {})  # fmt: skip
    return buffer.getvalue()


def write_graph_file(
    path: Path, nodes: Sequence[lzg_pb2.Node], edges: Sequence[lzg_pb2.Edge], **options: Unpack[GraphOptions]
) -> Path:
    """Writes ``path`` by its suffix (see :data:`OUTPUT_SUFFIXES`); checks the suffix before any work."""
    suffix = check_output_suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".html":
        path.write_text(render_html(nodes, edges, **options), encoding="utf-8")
    else:
        path.write_bytes(render_image(nodes, edges, suffix[1:], **options))
    return path


def synthetic_graph(
    node_count: int, *, mean_degree: float = 30.0, seed: int = 0
) -> tuple[list[lzg_pb2.Node], list[lzg_pb2.Edge], dict[int, str]]:
    """A made-up pair's graph of the LZG's record shapes, for benchmarks and browser tests: nodes in
    topic communities (shared entity/theme edges inside them, embedding and timeline edges across),
    both directed rows per connected pair, about ``mean_degree`` neighbours per node, some inactive."""
    rng = random.Random(seed)
    communities = max(1, node_count // 40)
    entity_names = {100 + c: f"Person {c}" for c in range(communities)}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    nodes: list[lzg_pb2.Node] = []
    members: dict[int, list[int]] = {}
    for i in range(node_count):
        community = rng.randrange(communities)
        node_id = i + 1
        members.setdefault(community, []).append(node_id)
        weight = rng.uniform(0.05, 6.0)
        node = lzg_pb2.Node(
            id=node_id, inhalt=f"Erinnerung {node_id} über Person {community}: Thema {community % 17}, "
            f"Satz {rng.randrange(10_000)}", gewicht_absolut=weight, gewicht_decay=weight, aktiv=weight >= 0.1,
            beobachter=common_pb2.BEOBACHTER_USER if rng.random() < 0.6 else common_pb2.BEOBACHTER_ASSISTANT,
            themen=[f"thema-{community % 17}", f"thema-{rng.randrange(40)}"], haeufigkeit=rng.randrange(1, 9),
        )  # fmt: skip
        node.magnets.entitaet_ids.append(100 + community)
        node.ei.emotion = rng.choice(("freude", "vertrauen", "trauer", "ueberraschung", ""))
        said = start + timedelta(minutes=rng.randrange(60 * 24 * 300))
        node.kzg_erstellt_am.FromDatetime(said.replace(tzinfo=None))
        node.erstellt_am.FromDatetime((said + timedelta(hours=1)).replace(tzinfo=None))
        nodes.append(node)
    community_of = {node_id: c for c, ids in members.items() for node_id in ids}
    pairs: set[tuple[int, int]] = set()
    target = round(node_count * mean_degree / 2)
    while len(pairs) < target and node_count > 1:
        a = rng.randrange(1, node_count + 1)
        b = rng.choice(members[community_of[a]]) if rng.random() < 0.85 else rng.randrange(1, node_count + 1)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    edges: list[lzg_pb2.Edge] = []
    for a, b in sorted(pairs):
        same = community_of[a] == community_of[b]
        gruende = ["entitaet", "themen"] if same else []
        if rng.random() < 0.4:
            gruende.append("embedding")
        if not gruende or rng.random() < 0.2:
            gruende.append("timeline")
        shared_entities = [100 + community_of[a]] if same else []
        shared_themes = [f"thema-{community_of[a] % 17}"] if same else []
        # Like SPEC §5.4: the winning layer's Schicht-Faktor scales the weight, more layers add a bonus.
        factor = {"entitaet": 1.0, "embedding": 0.8, "themen": 0.5, "timeline": 0.4}[winning_layer(gruende)]
        weight = rng.uniform(1.0, 4.0) * factor + 0.1 * (len(gruende) - 1)
        for source, target_id, w in ((a, b, weight), (b, a, weight * rng.uniform(0.7, 1.3))):
            edges.append(lzg_pb2.Edge(
                id=len(edges) + 1, knoten_a_id=source, knoten_b_id=target_id, gewicht_absolut=w,
                verbindungs_gruende=gruende, geteilte_entitaet_ids=shared_entities, geteilte_themen=shared_themes,
                anzahl_schichten=len(gruende),
            ))  # fmt: skip
    return nodes, edges, entity_names
