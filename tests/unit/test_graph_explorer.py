"""The memory-graph renderer (``novaberg graph``): merged lines with their layers (SPEC §5.4), a
deterministic igraph layout, the explorer page's data and self-containment, the PNG/SVG picture, and
the suffix check. The page's behaviour in a real browser is tested in ``tests/browser``."""

from __future__ import annotations

import io
import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_dev.graph_explorer import (
    LAYER_ORDER,
    OUTPUT_SUFFIXES,
    UnsupportedOutputError,
    backbone,
    graph_payload,
    layout,
    merge_edges,
    payload_from_html,
    render_html,
    render_image,
    synthetic_graph,
    winning_layer,
    write_graph_file,
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
    n.kzg_erstellt_am.FromSeconds(1_780_000_000 + node_id * 86_400)
    n.erstellt_am.FromSeconds(1_780_000_000 + node_id * 86_400 + 3_600)
    return n


def edge(edge_id: int, a: int, b: int, weight: float, gruende: list[str]) -> lzg_pb2.Edge:
    return lzg_pb2.Edge(
        id=edge_id, knoten_a_id=a, knoten_b_id=b, gewicht_absolut=weight, verbindungs_gruende=gruende,
        geteilte_entitaet_ids=[12] if "entitaet" in gruende else [], geteilte_themen=["Anna"],
    )  # fmt: skip


def both(edge_id: int, a: int, b: int, forward: float, backward: float, gruende: list[str]) -> list[lzg_pb2.Edge]:
    return [edge(edge_id, a, b, forward, gruende), edge(edge_id + 1, b, a, backward, gruende)]


def small_graph() -> tuple[list[lzg_pb2.Node], list[lzg_pb2.Edge]]:
    nodes = [node(1, 3.9, "Anna ist meine Schwester"), node(2, 3.2), node(3, 0.05, aktiv=False),
             node(4, 2.0, assistant=True), node(5, 1.0)]  # fmt: skip
    edges = [*both(1, 1, 2, 2.6, 3.7, ["entitaet", "themen"]), *both(3, 2, 4, 1.5, 1.8, ["embedding"]),
             *both(5, 3, 5, 0.9, 0.8, ["timeline"])]  # fmt: skip
    return nodes, edges


def test_winning_layer_is_the_highest_schicht_faktor() -> None:
    # entitaet 1.0 > embedding 0.8 > themen 0.5 > timeline 0.4 (SPEC §5.4), whatever the list order.
    assert winning_layer(["themen", "entitaet"]) == "entitaet"
    assert winning_layer(["timeline", "themen", "embedding"]) == "embedding"
    assert winning_layer(["timeline", "themen"]) == "themen"
    assert winning_layer(["timeline"]) == "timeline"
    assert winning_layer([]) == "unbekannt"


def test_merge_edges_keeps_one_line_per_pair_with_both_directions() -> None:
    edges = [
        *both(1, 1, 2, 2.609, 3.723, ["entitaet"]),
        edge(3, 2, 3, 1.2, ["themen", "timeline"]),
        edge(4, 3, 2, 0.9, ["themen", "embedding"]),  # the other row adds a reason: the union is kept
        edge(5, 4, 4, 9.0, ["entitaet"]),  # self-loop: left out
        *both(6, 1, 99, 5.0, 5.0, ["embedding"]),  # 99 is not drawn
    ]
    lines = merge_edges(edges, {1, 2, 3, 4})
    assert [(line.a, line.b) for line in lines] == [(1, 2), (2, 3)]
    first, second = lines
    assert (first.weight_ab, first.weight_ba) == (2.609, 3.723) and math.isclose(first.weight, 3.723)
    assert sorted(first.edge_ids) == [1, 2] and first.layer == "entitaet"
    assert second.gruende == ("themen", "timeline", "embedding") and second.layer == "embedding"
    assert (second.weight_ab, second.weight_ba) == (1.2, 0.9)
    assert len(merge_edges(edges)) == 3  # without a node set, 1–99 stays


def test_backbone_keeps_each_nodes_strongest_lines() -> None:
    # A star around node 1 plus a weak ring: with k=2 node 1 keeps its two strongest spokes, and each
    # outer node keeps its own strongest lines, so nothing is left without a pulling line.
    spokes = [edge(i, 1, i, float(i), ["entitaet"]) for i in range(2, 8)]
    ring = [edge(100 + i, i, i + 1, 0.1, ["timeline"]) for i in range(2, 7)]
    lines = merge_edges(spokes + ring)
    kept = {(line.a, line.b) for line in backbone(lines, k=2)}
    assert {(1, 7), (1, 6)} <= kept
    assert all(any(n in pair for pair in kept) for n in range(1, 8))
    assert len(backbone(lines, k=100)) == len(lines)


def test_layout_is_deterministic_places_every_node_and_separates_them() -> None:
    nodes, edges, _ = synthetic_graph(300, mean_degree=12, seed=3)
    ids = [n.id for n in nodes] + [1001, 1002]  # two isolated nodes
    lines = merge_edges(edges)
    first = layout(ids, lines)
    assert first == layout(ids, lines)
    assert set(first) == set(ids)
    assert len({(round(x, 6), round(y, 6)) for x, y in first.values()}) == len(ids)
    assert all(math.isfinite(x) and math.isfinite(y) for x, y in first.values())


def test_layout_packs_components_apart() -> None:
    lines = merge_edges([*both(1, 1, 2, 1.0, 1.0, ["themen"]), *both(3, 2, 3, 1.0, 1.0, ["themen"]),
                         *both(5, 4, 5, 1.0, 1.0, ["themen"])])  # fmt: skip
    where = layout([1, 2, 3, 4, 5, 6], lines)

    def box(ids: list[int]) -> tuple[float, float, float, float]:
        xs, ys = [where[i][0] for i in ids], [where[i][1] for i in ids]
        return min(xs), max(xs), min(ys), max(ys)

    big, small = box([1, 2, 3]), box([4, 5])
    overlap_x = big[0] <= small[1] and small[0] <= big[1]
    overlap_y = big[2] <= small[3] and small[2] <= big[3]
    assert not (overlap_x and overlap_y)


def test_payload_is_columnwise_with_node_indexes_and_reason_masks() -> None:
    nodes, edges = small_graph()
    data = graph_payload(nodes, edges, entity_names={12: "Anna"}, title="meister · nova")
    columns = data["nodes"]
    assert columns["id"] == [1, 2, 3, 4, 5]
    assert all(len(values) == 5 for values in columns.values())
    assert columns["active"] == [1, 1, 0, 1, 1]
    assert columns["speaker"][3] != columns["speaker"][0]
    assert [data["speakers"][code]["label"] for code in columns["speaker"][:4]] == ["user", "user", "user", "assistant"]
    assert columns["said"][0] == 1_780_000_000 + 86_400 and columns["stored"][0] == columns["said"][0] + 3_600
    assert data["themes"][columns["themes"][0][0]] == "Anna" and columns["entities"][0] == [12]
    assert data["entityNames"] == {"12": "Anna"}
    lines = data["edges"]
    assert list(zip(lines["a"], lines["b"], strict=True)) == [(0, 1), (1, 3), (2, 4)]
    bit = {layer: 1 << i for i, layer in enumerate(LAYER_ORDER)}
    assert lines["reasons"] == [bit["entitaet"] | bit["themen"], bit["embedding"], bit["timeline"]]
    assert (lines["ab"][0], lines["ba"][0]) == (2.6, 3.7)
    assert lines["entities"][0] == [12] and lines["entities"][1] == []


def test_html_is_one_self_contained_file() -> None:
    nodes, edges = small_graph()
    html = render_html(nodes, edges, entity_names={12: "Anna"}, title="meister · nova")
    assert html.startswith("<!DOCTYPE html>")
    # No fetched resource: no src/href attributes, no module imports; the two libraries are inline
    # with their licences.
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", html)
    assert not re.search(r"(?<![.\w])import\s*\(", html)
    assert "Copyright (c) 2016-2021 Guillaume Plique" in html and "Alexis Jacomy" in html
    assert "sourceMappingURL" not in html
    assert html.count("<script") == 4  # graphology, sigma, the data, the app
    assert "<title>meister · nova</title>" in html
    assert payload_from_html(html) == json.loads(json.dumps(graph_payload(nodes, edges, entity_names={12: "Anna"},
                                                                          title="meister · nova")))  # fmt: skip


def test_text_cannot_break_out_of_the_page() -> None:
    hostile = 'Ich <3 "Schokolade" & Anna </script><script>alert(1)</script> <!-- x'
    nodes = [node(1, 2.0, hostile), node(2, 1.0)]
    html = render_html(nodes, both(1, 1, 2, 1.0, 1.0, ["themen"]), title="</title><b>x")
    assert "</script><script>alert(1)" not in html and "<!-- x" not in html
    assert "<title>&lt;/title&gt;&lt;b&gt;x</title>" in html
    assert payload_from_html(html)["nodes"]["text"][0] == hostile


def test_png_is_a_real_picture_with_something_drawn(tmp_path: Path) -> None:
    nodes, edges = small_graph()
    path = write_graph_file(tmp_path / "graph.png", nodes, edges, entity_names={12: "Anna"}, title="meister · nova")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data)).convert("RGB")
    assert image.size == (1920, 1200)
    background = image.getpixel((5, image.size[1] - 5))
    drawn = sum(1 for pixel in image.get_flattened_data() if pixel != background)
    assert drawn > 0.005 * image.size[0] * image.size[1]


def test_svg_is_xml_with_one_shape_per_node(tmp_path: Path) -> None:
    nodes, edges = small_graph()
    path = write_graph_file(tmp_path / "graph.SVG", nodes, edges, title="meister · nova")  # suffix case ignored
    root = ET.fromstring(path.read_bytes())
    assert root.tag == f"{SVG}svg"
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    assert len(list(groups["nodes"].iter(f"{SVG}path"))) == len(nodes)
    assert list(groups["edges"].iter(f"{SVG}path"))  # few lines: drawn as vectors
    assert render_image(nodes, edges, "svg") == render_image(nodes, edges, "svg")  # no date inside


def test_svg_of_a_big_graph_keeps_nodes_vector_and_edges_as_one_bitmap() -> None:
    nodes, edges, _ = synthetic_graph(400, mean_degree=40)
    root = ET.fromstring(render_image(nodes, edges, "svg"))
    assert list(root.iter(f"{SVG}image"))
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    assert len(list(groups["nodes"].iter(f"{SVG}path"))) == 400


@pytest.mark.parametrize("name", ["graph.pdf", "graph", "graph.html.txt", "graph.jpg"])
def test_a_wrong_suffix_names_the_allowed_ones_and_writes_nothing(tmp_path: Path, name: str) -> None:
    nodes, edges = small_graph()
    with pytest.raises(UnsupportedOutputError) as raised:
        write_graph_file(tmp_path / name, nodes, edges)
    message = str(raised.value)
    assert all(suffix in message for suffix in OUTPUT_SUFFIXES) and name in message
    assert not list(tmp_path.iterdir())


def test_empty_graph_renders_in_every_format(tmp_path: Path) -> None:
    for suffix in OUTPUT_SUFFIXES:
        path = write_graph_file(tmp_path / f"empty{suffix}", [], [])
        assert path.stat().st_size > 0
    assert payload_from_html((tmp_path / "empty.html").read_text())["nodes"]["id"] == []


def test_synthetic_graph_has_the_lzg_record_shapes() -> None:
    nodes, edges, names = synthetic_graph(200, mean_degree=10, seed=1)
    assert [n.id for n in nodes] == list(range(1, 201))
    assert any(not n.aktiv for n in nodes) and all((n.gewicht_decay >= 0.1) == n.aktiv for n in nodes)
    rows = {(e.knoten_a_id, e.knoten_b_id) for e in edges}
    assert all((b, a) in rows for a, b in rows)  # both directions of every pair (SPEC §5.4)
    assert len(rows) == 2 * 200 * 10 // 2
    assert all(e.verbindungs_gruende and set(e.verbindungs_gruende) <= set(LAYER_ORDER) for e in edges)
    assert {i for n in nodes for i in n.magnets.entitaet_ids} <= set(names)
