"""A pair's long-term memory graph as a picture a person can look at (``novaberg graph``).

Nodes are circles sized by ``gewicht_decay`` (SPEC §5.7), filled by ``beobachter`` (user / the
character), hollow when inactive; edges are lines coloured by their winning layer (the firing
layer with the highest Schicht-Faktor, SPEC §5.4) and as wide as the stronger of their two
directed rows. The layout is a deterministic force-directed one computed with numpy, so the
same graph always gives the same picture. Output is standalone SVG or a self-contained HTML
page with that SVG inline (no scripts, no external resources); hovering a node or edge shows
its details through SVG ``<title>`` tooltips.

    svg = render_svg(nodes, edges, entity_names={12: "Anna"}, title="meister · nova")
    html = render_html(nodes, edges, entity_names={12: "Anna"}, title="meister · nova")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape

import numpy as np

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2

__all__ = [
    "LAYER_COLOURS",
    "LAYER_ORDER",
    "EdgeLine",
    "components",
    "force_layout",
    "merge_edges",
    "render_html",
    "render_svg",
    "winning_layer",
]

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

NODE_FILL: Mapping[int, str] = {
    common_pb2.BEOBACHTER_USER: "#3d5a80",
    common_pb2.BEOBACHTER_ASSISTANT: "#9c6ade",
}
NODE_FILL_OTHER = "#8d8d8d"
BEOBACHTER_LABEL: Mapping[int, str] = {
    common_pb2.BEOBACHTER_USER: "user",
    common_pb2.BEOBACHTER_ASSISTANT: "assistant",
}

WIDTH = 1280
HEIGHT = 820
MARGIN = 90
LEGEND_WIDTH = 230
MIN_RADIUS = 4.0
MAX_RADIUS = 20.0
LABEL_CHARS = 24
GRAVITY = 0.004
CELL = 180.0
SINGLE_CELL = (150.0, 56.0)


@dataclass(frozen=True)
class EdgeLine:
    """One drawn line: the two directed rows between a node pair merged (SPEC §5.4: A→B and B→A)."""

    a: int
    b: int
    layer: str
    gruende: tuple[str, ...]
    gewicht_absolut: float
    """The stronger direction's ``gewicht_absolut``."""
    geteilte_entitaet_ids: tuple[int, ...]
    geteilte_themen: tuple[str, ...]
    edge_ids: tuple[int, ...]


def winning_layer(gruende: Sequence[str]) -> str:
    """The firing layer with the highest Schicht-Faktor (SPEC §5.4); ``unbekannt`` when none is known."""
    for layer in LAYER_ORDER:
        if layer in gruende:
            return layer
    return "unbekannt"


def merge_edges(edges: Sequence[lzg_pb2.Edge], node_ids: set[int] | None = None) -> list[EdgeLine]:
    """One :class:`EdgeLine` per unordered node pair, keeping the stronger direction's weight.

    Edges touching a node outside ``node_ids`` (when given) are left out, as are self-loops.
    """
    merged: dict[tuple[int, int], EdgeLine] = {}
    for edge in edges:
        a, b = edge.knoten_a_id, edge.knoten_b_id
        if a == b or (node_ids is not None and (a not in node_ids or b not in node_ids)):
            continue
        key = (min(a, b), max(a, b))
        previous = merged.get(key)
        ids = (edge.id,) if previous is None else (*previous.edge_ids, edge.id)
        if previous is not None and previous.gewicht_absolut >= edge.gewicht_absolut:
            merged[key] = replace(previous, edge_ids=ids)
            continue
        gruende = tuple(edge.verbindungs_gruende)
        merged[key] = EdgeLine(
            a=key[0],
            b=key[1],
            layer=winning_layer(gruende),
            gruende=gruende,
            gewicht_absolut=edge.gewicht_absolut,
            geteilte_entitaet_ids=tuple(edge.geteilte_entitaet_ids),
            geteilte_themen=tuple(edge.geteilte_themen),
            edge_ids=ids,
        )
    return [merged[key] for key in sorted(merged)]


def force_layout(
    node_ids: Sequence[int],
    links: Sequence[tuple[int, int, float]],
    *,
    width: float = WIDTH - LEGEND_WIDTH,
    height: float = HEIGHT,
    margin: float = MARGIN,
    iterations: int = 300,
) -> dict[int, tuple[float, float]]:
    """Fruchterman–Reingold positions inside ``width × height`` (minus ``margin``), deterministic.

    ``links`` are ``(a, b, strength)``; a stronger link pulls harder. Nodes start on a circle in
    the given order, a weak pull to the centre keeps unconnected parts on the canvas.
    """
    n = len(node_ids)
    if n == 0:
        return {}
    cx, cy = width / 2, height / 2
    if n == 1:
        return {node_ids[0]: (cx, cy)}
    index = {node_id: i for i, node_id in enumerate(node_ids)}
    angles = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    pos = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    pos += 0.01 * np.stack([np.sin(3.0 * angles), np.cos(5.0 * angles)], axis=1)  # break symmetry
    k = math.sqrt(4.0 / n)  # ideal distance in the unit square [-1, 1]²
    pairs = [(index[a], index[b], s) for a, b, s in links if a in index and b in index and a != b]
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    strength = np.array([p[2] for p in pairs], dtype=np.float64)
    if len(strength):
        strength = 0.3 + 0.7 * strength / max(float(strength.max()), 1e-9)
        # Dense cliques (all memories about one person) would collapse into a knot: a node's
        # springs are weakened by its degree, so well-connected nodes keep their distance.
        degree = np.bincount(np.concatenate([src, dst]), minlength=n).astype(np.float64)
        strength = strength * 2.0 / np.sqrt(degree[src] * degree[dst])
    temperature = 0.2
    for step in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta**2).sum(axis=2)) + 1e-9
        np.fill_diagonal(dist, np.inf)
        disp = ((k * k / dist**2)[:, :, None] * delta).sum(axis=1)
        if len(src):
            d = pos[src] - pos[dst]
            length = np.sqrt((d**2).sum(axis=1)) + 1e-9
            pull = (length / k * strength)[:, None] * d
            np.add.at(disp, src, -pull)
            np.add.at(disp, dst, pull)
        disp -= GRAVITY * pos * n  # a weak pull to the centre keeps components together
        length = np.sqrt((disp**2).sum(axis=1)) + 1e-9
        pos += disp / length[:, None] * np.minimum(length, temperature)[:, None]
        temperature = 0.2 * (1.0 - step / iterations) + 0.002
    # Long axis horizontal (principal axes), then one scale for both axes, centred.
    centred = pos - pos.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    pos = centred @ vt.T
    if pos[0, 0] < 0:  # a fixed orientation, so the same graph always looks the same
        pos[:, 0] = -pos[:, 0]
    low, high = pos.min(axis=0), pos.max(axis=0)
    extent = np.maximum(high - low, 1e-9)
    scale = min((width - 2 * margin) / extent[0], (height - 2 * margin) / extent[1])
    centre = (low + high) / 2
    xs = cx + (pos[:, 0] - centre[0]) * scale
    ys = cy + (pos[:, 1] - centre[1]) * scale
    return {node_id: (float(xs[i]), float(ys[i])) for i, node_id in enumerate(node_ids)}


def components(node_ids: Sequence[int], lines: Sequence[EdgeLine]) -> list[list[int]]:
    """Connected components (lists of node ids in input order), largest first, ties by first id."""
    parent = {i: i for i in node_ids}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for line in lines:
        if line.a in parent and line.b in parent:
            parent[root(line.a)] = root(line.b)
    groups: dict[int, list[int]] = {}
    for i in node_ids:
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def _place(node_ids: Sequence[int], lines: Sequence[EdgeLine]) -> dict[int, tuple[float, float]]:
    """Each component laid out by :func:`force_layout` in its own box; boxes packed in rows
    (largest first) and the whole scaled down uniformly if it does not fit the drawing area."""
    area_w = WIDTH - LEGEND_WIDTH - 2 * MARGIN
    area_h = HEIGHT - 2 * MARGIN - 20
    links = [(e.a, e.b, e.gewicht_absolut) for e in lines]
    raw: dict[int, tuple[float, float]] = {}
    x = y = row_h = 0.0
    for group in components(node_ids, lines):
        if len(group) == 1:
            box_w, box_h = SINGLE_CELL
        else:
            box_w, box_h = CELL * math.sqrt(len(group)) * 1.4, CELL * math.sqrt(len(group)) * 0.8
        if x > 0 and x + box_w > area_w:
            x, y, row_h = 0.0, y + row_h, 0.0
        inner = min(box_w, box_h) / 2 if len(group) == 1 else 30.0
        for node_id, (px, py) in force_layout(group, links, width=box_w, height=box_h, margin=inner).items():
            raw[node_id] = (x + px, y + py)
        x += box_w
        row_h = max(row_h, box_h)
    used_w = max((p[0] for p in raw.values()), default=0.0) + SINGLE_CELL[0] / 2
    used_h = y + row_h
    scale = min(1.0, area_w / max(used_w, 1e-9), area_h / max(used_h, 1e-9))
    off_x = MARGIN + (area_w - used_w * scale) / 2
    off_y = MARGIN + 20 + (area_h - used_h * scale) / 2
    return {i: (off_x + px * scale, off_y + py * scale) for i, (px, py) in raw.items()}


def _radius(weight: float, high: float) -> float:
    """Circle radius: area proportional to ``gewicht_decay`` relative to the strongest node."""
    if high <= 0:
        return MIN_RADIUS
    return max(MIN_RADIUS, MAX_RADIUS * math.sqrt(max(weight, 0.0) / high))


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _entity_label(ids: Sequence[int], names: Mapping[int, str]) -> str:
    return ", ".join(names.get(i, f"#{i}") for i in ids)


def render_svg(
    nodes: Sequence[lzg_pb2.Node],
    edges: Sequence[lzg_pb2.Edge],
    *,
    entity_names: Mapping[int, str] | None = None,
    title: str = "",
) -> str:
    """The graph as a standalone SVG document (one ``<circle class="node">`` per node, one
    ``<line class="edge">`` per connected node pair), with a legend."""
    names = dict(entity_names or {})
    ordered = sorted(nodes, key=lambda n: n.id)
    node_ids = [n.id for n in ordered]
    lines = merge_edges(edges, set(node_ids))
    positions = _place(node_ids, lines)
    weights = [n.gewicht_decay for n in ordered]
    low, high = (min(weights), max(weights)) if weights else (0.0, 0.0)
    max_edge = max((e.gewicht_absolut for e in lines), default=1.0) or 1.0
    by_id = {n.id: n for n in ordered}

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title or 'Novaberg memory graph')}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fbfaf7"/>',
    ]
    if title:
        out.append(f'<text x="16" y="24" font-size="15" font-weight="bold">{escape(title)}</text>')
    out.append('<g class="edges">')
    for line in lines:
        (x1, y1), (x2, y2) = positions[line.a], positions[line.b]
        stroke = 1.0 + 4.0 * line.gewicht_absolut / max_edge
        details = [f"{line.a} ↔ {line.b}: {', '.join(line.gruende) or '—'}"]
        details.append(f"gewicht_absolut {line.gewicht_absolut:.3f}")
        if line.geteilte_entitaet_ids:
            details.append(f"Entitäten: {_entity_label(line.geteilte_entitaet_ids, names)}")
        if line.geteilte_themen:
            details.append(f"Themen: {', '.join(line.geteilte_themen)}")
        out.append(
            f'<line class="edge" data-layer="{line.layer}" data-a="{line.a}" data-b="{line.b}" '
            f'x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{LAYER_COLOURS[line.layer]}" stroke-width="{stroke:.2f}" stroke-opacity="0.7">'
            f"<title>{escape(' · '.join(details))}</title></line>"
        )
    out.append("</g>")
    out.append('<g class="nodes">')
    labels: list[tuple[float, float, str]] = []
    for node_id in node_ids:
        node = by_id[node_id]
        x, y = positions[node_id]
        r = _radius(node.gewicht_decay, high)
        fill = NODE_FILL.get(node.beobachter, NODE_FILL_OTHER)
        style = f'fill="{fill}" fill-opacity="0.85" stroke="#222" stroke-width="1"'
        if not node.aktiv:
            style = f'fill="#ffffff" stroke="{fill}" stroke-width="2" stroke-dasharray="3 2"'
        tooltip = [
            f"#{node.id} „{node.inhalt}“",
            f"Sprecher: {BEOBACHTER_LABEL.get(node.beobachter, 'unbekannt')}",
            f"gewicht_decay {node.gewicht_decay:.3f} (absolut {node.gewicht_absolut:.3f})",
            f"aktiv: {'ja' if node.aktiv else 'nein'}",
        ]
        if node.themen:
            tooltip.append(f"Themen: {', '.join(node.themen)}")
        if node.magnets.entitaet_ids:
            tooltip.append(f"Entitäten: {_entity_label(node.magnets.entitaet_ids, names)}")
        if node.ei.emotion:
            tooltip.append(f"Emotion: {node.ei.emotion}")
        out.append(
            f'<g class="node-group"><circle class="node" data-id="{node.id}" '
            f'data-gewicht-decay="{node.gewicht_decay:.4f}" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {style}>'
            f"<title>{escape(chr(10).join(tooltip))}</title></circle></g>"
        )
        labels.append((x, y + r + 12, _short(node.inhalt)))
    out.append("</g>")
    out.append('<g class="labels" text-anchor="middle">')
    for x, y, text in labels:
        quoted = escape(text)
        out.append(
            f'<text x="{x:.1f}" y="{y:.1f}" fill="none" stroke="#fbfaf7" stroke-width="3">{quoted}</text>'
            f'<text class="label" x="{x:.1f}" y="{y:.1f}" fill="#222">{quoted}</text>'
        )
    out.append("</g>")
    out.extend(_legend(len(ordered), len(lines), low, high))
    out.append("</svg>")
    return "\n".join(out)


def _legend(node_count: int, edge_count: int, low: float, high: float) -> list[str]:
    x0 = WIDTH - LEGEND_WIDTH + 10
    y = 50
    parts = [
        f'<g class="legend"><rect x="{x0 - 10}" y="{y - 30}" width="{LEGEND_WIDTH - 10}" '
        f'height="360" fill="#ffffff" stroke="#ccc"/>',
        f'<text x="{x0}" y="{y - 8}" font-weight="bold">Kanten (Gewinner-Schicht)</text>',
    ]
    for layer in (*LAYER_ORDER, "unbekannt"):
        y += 20
        parts.append(
            f'<line x1="{x0}" y1="{y - 4}" x2="{x0 + 30}" y2="{y - 4}" stroke="{LAYER_COLOURS[layer]}" stroke-width="4"/>'
            f'<text x="{x0 + 40}" y="{y}">{layer}</text>'
        )
    y += 34
    parts.append(f'<text x="{x0}" y="{y}" font-weight="bold">Knoten (Sprecher)</text>')
    for label, fill in (("user", NODE_FILL[common_pb2.BEOBACHTER_USER]),
                        ("assistant", NODE_FILL[common_pb2.BEOBACHTER_ASSISTANT])):
        y += 22
        parts.append(
            f'<circle cx="{x0 + 10}" cy="{y - 4}" r="7" fill="{fill}" stroke="#222"/>'
            f'<text x="{x0 + 40}" y="{y}">{label}</text>'
        )
    y += 22
    parts.append(
        f'<circle cx="{x0 + 10}" cy="{y - 4}" r="7" fill="#ffffff" stroke="#555" stroke-width="2" '
        f'stroke-dasharray="3 2"/><text x="{x0 + 40}" y="{y}">inaktiv</text>'
    )
    y += 30
    parts.append(f'<text x="{x0}" y="{y}">Größe: gewicht_decay</text>')
    y += 16
    parts.append(f'<text x="{x0}" y="{y}">({low:.2f} … {high:.2f})</text>')
    y += 16
    parts.append(f'<text x="{x0}" y="{y}">Breite: Kantengewicht</text>')
    y += 26
    parts.append(f'<text x="{x0}" y="{y}">{node_count} Knoten, {edge_count} Verbindungen</text>')
    parts.append("</g>")
    return parts


def render_html(
    nodes: Sequence[lzg_pb2.Node],
    edges: Sequence[lzg_pb2.Edge],
    *,
    entity_names: Mapping[int, str] | None = None,
    title: str = "",
) -> str:
    """A self-contained HTML page: the SVG inline plus a table of the nodes, strongest first."""
    names = dict(entity_names or {})
    svg = render_svg(nodes, edges, entity_names=names, title=title)
    rows = []
    for node in sorted(nodes, key=lambda n: (-n.gewicht_decay, n.id)):
        rows.append(
            "<tr>"
            f"<td>{node.id}</td><td>{node.gewicht_decay:.3f}</td>"
            f"<td>{'ja' if node.aktiv else 'nein'}</td>"
            f"<td>{BEOBACHTER_LABEL.get(node.beobachter, 'unbekannt')}</td>"
            f"<td>{escape(node.inhalt)}</td>"
            f"<td>{escape(', '.join(node.themen))}</td>"
            f"<td>{escape(_entity_label(node.magnets.entitaet_ids, names))}</td>"
            f"<td>{escape(node.ei.emotion)}</td>"
            "</tr>"
        )
    heading = escape(title or "Novaberg memory graph")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="de"><head><meta charset="utf-8">'
        f"<title>{heading}</title>"
        "<style>body{font-family:sans-serif;margin:20px;background:#f4f2ee;color:#222}"
        "table{border-collapse:collapse;margin-top:16px;background:#fff}"
        "td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;text-align:left}"
        "svg{background:#fff;border:1px solid #ccc;max-width:100%;height:auto}</style>"
        f"</head><body><h1>{heading}</h1>\n"
        "<p>Knoten nach <code>gewicht_decay</code> skaliert; Kanten nach Gewinner-Schicht gefärbt. "
        "Über einem Knoten oder einer Kante erscheinen die Details.</p>\n"
        f"{svg}\n"
        "<table><thead><tr><th>id</th><th>gewicht_decay</th><th>aktiv</th><th>Sprecher</th>"
        "<th>inhalt</th><th>themen</th><th>Entitäten</th><th>emotion</th></tr></thead><tbody>\n"
        + "\n".join(rows)
        + "\n</tbody></table></body></html>\n"
    )
