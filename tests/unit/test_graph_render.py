"""The memory-graph picture (``novaberg graph``): one valid SVG element per node and per connected
pair, sizes by ``gewicht_decay``, colours by the winning layer (SPEC §5.4), a legend."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.graph_render import (
    LAYER_COLOURS,
    components,
    force_layout,
    merge_edges,
    render_html,
    render_svg,
    winning_layer,
)

SVG = "{http://www.w3.org/2000/svg}"


def node(node_id: int, weight: float, inhalt: str = "", *, aktiv: bool = True, assistant: bool = False) -> lzg_pb2.Node:
    n = lzg_pb2.Node(
        id=node_id,
        inhalt=inhalt or f"Erinnerung {node_id}",
        gewicht_decay=weight,
        gewicht_absolut=weight,
        aktiv=aktiv,
        beobachter=common_pb2.BEOBACHTER_ASSISTANT if assistant else common_pb2.BEOBACHTER_USER,
        themen=["Anna"],
    )
    n.magnets.entitaet_ids.append(12)
    return n


def edge(edge_id: int, a: int, b: int, weight: float, gruende: list[str]) -> lzg_pb2.Edge:
    return lzg_pb2.Edge(
        id=edge_id, knoten_a_id=a, knoten_b_id=b, gewicht_absolut=weight, verbindungs_gruende=gruende,
        geteilte_entitaet_ids=[12] if "entitaet" in gruende else [], geteilte_themen=["Anna"],
    )  # fmt: skip


def both(edge_id: int, a: int, b: int, forward: float, backward: float, gruende: list[str]) -> list[lzg_pb2.Edge]:
    return [edge(edge_id, a, b, forward, gruende), edge(edge_id + 1, b, a, backward, gruende)]


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_winning_layer_is_the_highest_schicht_faktor() -> None:
    # entitaet 1.0 > embedding 0.8 > themen 0.5 > timeline 0.4 (SPEC §5.4), whatever the list order.
    assert winning_layer(["themen", "entitaet"]) == "entitaet"
    assert winning_layer(["timeline", "themen", "embedding"]) == "embedding"
    assert winning_layer(["timeline", "themen"]) == "themen"
    assert winning_layer(["timeline"]) == "timeline"
    assert winning_layer([]) == "unbekannt"


def test_merge_edges_keeps_one_line_per_pair_with_the_stronger_direction() -> None:
    edges = [
        *both(1, 1, 2, 2.609, 3.723, ["entitaet"]),
        *both(3, 2, 3, 1.2, 0.9, ["themen", "timeline"]),
        edge(5, 4, 4, 9.0, ["entitaet"]),  # self-loop: left out
        *both(6, 1, 99, 5.0, 5.0, ["embedding"]),  # 99 is not drawn
    ]
    lines = merge_edges(edges, {1, 2, 3, 4})
    assert [(line.a, line.b) for line in lines] == [(1, 2), (2, 3)]
    first, second = lines
    assert math.isclose(first.gewicht_absolut, 3.723)
    assert sorted(first.edge_ids) == [1, 2]
    assert first.layer == "entitaet"
    assert second.layer == "themen"
    assert math.isclose(second.gewicht_absolut, 1.2)


def test_svg_has_one_circle_per_node_and_one_line_per_connected_pair() -> None:
    nodes = [node(1, 3.9, "Anna ist meine Schwester"), node(2, 3.2), node(3, 1.0, aktiv=False),
             node(4, 2.0, assistant=True)]  # fmt: skip
    edges = [*both(1, 1, 2, 2.6, 3.7, ["entitaet", "themen"]), *both(3, 2, 4, 1.5, 1.8, ["embedding"])]
    root = parse(render_svg(nodes, edges, entity_names={12: "Anna"}, title="meister · nova"))
    assert root.tag == f"{SVG}svg"
    circles = {c.get("data-id"): c for c in root.iter(f"{SVG}circle") if c.get("class") == "node"}
    assert set(circles) == {"1", "2", "3", "4"}
    lines = [line for line in root.iter(f"{SVG}line") if line.get("class") == "edge"]
    assert {(line.get("data-a"), line.get("data-b")) for line in lines} == {("1", "2"), ("2", "4")}
    colours = {(line.get("data-a"), line.get("data-b")): line.get("stroke") for line in lines}
    assert colours[("1", "2")] == LAYER_COLOURS["entitaet"]
    assert colours[("2", "4")] == LAYER_COLOURS["embedding"]
    # Sized by gewicht_decay: the stronger node has the larger circle.
    radius = {k: float(c.get("r", "0")) for k, c in circles.items()}
    assert radius["1"] > radius["2"] > radius["4"] > radius["3"]
    # Inactive nodes are hollow and dashed; the assistant's node has the other fill.
    assert circles["3"].get("stroke-dasharray")
    assert circles["3"].get("fill") == "#ffffff"
    assert circles["4"].get("fill") != circles["1"].get("fill")
    # Tooltips name the entity by its name and the full content.
    tooltip = circles["1"].find(f"{SVG}title")
    assert tooltip is not None and tooltip.text is not None
    assert "Anna ist meine Schwester" in tooltip.text and "Entitäten: Anna" in tooltip.text
    # Every circle lies inside the canvas.
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    for c in circles.values():
        assert 0 < float(c.get("cx", "-1")) < width and 0 < float(c.get("cy", "-1")) < height


def test_svg_legend_names_every_layer() -> None:
    root = parse(render_svg([node(1, 1.0)], []))
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "legend")
    texts = {t.text for t in legend.iter(f"{SVG}text")}
    assert {"entitaet", "embedding", "themen", "timeline", "user", "assistant", "inaktiv"} <= texts


def test_text_is_escaped_and_the_document_stays_valid() -> None:
    nodes = [node(1, 2.0, 'Ich <3 "Schokolade" & Anna'), node(2, 1.0)]
    root = parse(render_svg(nodes, both(1, 1, 2, 1.0, 1.0, ["themen"])))
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "label"]
    assert any(label is not None and label.startswith("Ich <3") for label in labels)


def test_html_is_self_contained_with_the_svg_and_a_node_table() -> None:
    nodes = [node(1, 3.0), node(2, 2.0), node(3, 1.0)]
    html = render_html(nodes, both(1, 1, 2, 1.0, 2.0, ["entitaet"]), title="meister · nova")
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    svg = html[html.index("<svg"): html.index("</svg>") + len("</svg>")]
    assert len([c for c in parse(svg).iter(f"{SVG}circle") if c.get("class") == "node"]) == 3
    assert html.count("<tr><td>") == 3
    # Strongest first in the table.
    assert html.index("<tr><td>1</td>") < html.index("<tr><td>2</td>") < html.index("<tr><td>3</td>")


def test_empty_graph_renders() -> None:
    root = parse(render_svg([], []))
    assert not [c for c in root.iter(f"{SVG}circle") if c.get("class") == "node"]


def test_force_layout_is_deterministic_and_separates_nodes() -> None:
    ids = list(range(1, 9))
    links = [(1, 2, 1.0), (2, 3, 1.0), (3, 4, 2.0), (5, 6, 1.0), (6, 7, 1.0), (7, 8, 1.0), (4, 5, 0.5)]
    first = force_layout(ids, links, width=600, height=400, margin=20)
    again = force_layout(ids, links, width=600, height=400, margin=20)
    assert first == again
    for x, y in first.values():
        assert 20 - 1e-6 <= x <= 580 + 1e-6 and 20 - 1e-6 <= y <= 380 + 1e-6
    points = list(first.values())
    closest = min(math.dist(p, q) for i, p in enumerate(points) for q in points[i + 1:])
    assert closest > 20  # no two nodes on top of each other


def test_components_largest_first() -> None:
    lines = merge_edges([*both(1, 1, 2, 1.0, 1.0, ["themen"]), *both(3, 3, 4, 1.0, 1.0, ["themen"]),
                         *both(5, 4, 5, 1.0, 1.0, ["themen"])], None)  # fmt: skip
    assert components([1, 2, 3, 4, 5, 6], lines) == [[3, 4, 5], [1, 2], [6]]
