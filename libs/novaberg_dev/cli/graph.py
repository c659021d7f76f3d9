"""Looking inside a pair: ``novaberg inspect`` (counts, strongest nodes, a node's edges) and ``graph`` (the
memory graph as the offline explorer page or a picture).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg_core.timeutil import from_timestamp
from novaberg_dev.cli.common import CliError, beobachter_name, entity_names, node_texts, pair_of, shorten
from novaberg_dev.clients import DevClients

__all__ = ["check_graph_output", "cmd_graph", "cmd_inspect", "write_graph"]


async def cmd_inspect(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = pair_of(args)
    # The node first: an unknown one is an error before anything is printed.
    node = (await clients.call("lzg", "GetNode", lzg_pb2.GetNodeRequest(pair=pair, node_id=args.node))).node \
        if args.node else None
    stats = await clients.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=pair))
    session = await clients.call("kzg", "GetSession", kzg_pb2.GetSessionRequest(pair=pair))
    names = await entity_names(clients, pair)
    out(f"pair {pair.user_id} · {pair.character_id}: {stats.nodes_active} active / {stats.nodes_inactive} inactive "
        f"nodes, {stats.edges} edges, {stats.entities} entities, {stats.timelines} timelines"
        f"{f' (model {stats.model_id})' if stats.model_id else ''}; session {len(session.turns)} turns"
        f"{' + summary' if session.summary else ''}")
    if node is not None:
        return await _inspect_node(clients, pair, node, names, out)
    listed = await clients.call("lzg", "ListNodes", lzg_pb2.ListNodesRequest(
        pair=pair, limit=args.limit, include_inactive=args.include_inactive))  # fmt: skip
    if not listed.nodes:
        out("no nodes yet")
        return 0
    out(f"strongest {len(listed.nodes)} nodes (gewicht_decay):")
    for item in listed.nodes:
        entities = ", ".join(names.get(i, f"#{i}") for i in item.magnets.entitaet_ids)
        themen = ", ".join(item.themen)
        out(f"  #{item.id:<5} {item.gewicht_decay:6.3f}{'' if item.aktiv else ' (inactive)'}  "
            f"{beobachter_name(item.beobachter):9} {shorten(item.inhalt, 70)}"
            f"{f'  [{themen}]' if themen else ''}{f'  {{{entities}}}' if entities else ''}")
    return 0


async def _inspect_node(
    clients: DevClients, pair: common_pb2.Pair, node: lzg_pb2.Node, names: Mapping[int, str],
    out: Callable[[str], None],
) -> int:
    node_id = node.id
    out(f"node #{node.id} \"{node.inhalt}\"")
    out(f"  {beobachter_name(node.beobachter)}, {'active' if node.aktiv else 'inactive'}, "
        f"gewicht_roh {node.gewicht_roh:.3f}"
        f", gewicht_absolut {node.gewicht_absolut:.3f}, gewicht_decay {node.gewicht_decay:.3f}, "
        f"haeufigkeit {node.haeufigkeit}")
    out(f"  themen {list(node.themen)}, entities "
        f"{[names.get(i, f'#{i}') for i in node.magnets.entitaet_ids]}, emotion {node.ei.emotion or '-'}"
        f"{f', timeline {node.magnets.timeline_id}' if node.magnets.HasField('timeline_id') else ''}")
    out(f"  erstellt_am {from_timestamp(node.erstellt_am):%Y-%m-%d %H:%M}, verstaerkt_am "
        f"{from_timestamp(node.verstaerkt_am):%Y-%m-%d %H:%M}, decay_am {from_timestamp(node.decay_am):%Y-%m-%d %H:%M}"
        f", source {node.kzg_quell_key}")
    edges = (await clients.call("lzg", "ListEdges", lzg_pb2.ListEdgesRequest(pair=pair, node_id=node_id))).edges
    texts = await node_texts(clients, pair)
    out(f"  {len(edges)} edges (directed rows), strongest first:")
    for edge in sorted(edges, key=lambda e: (-e.gewicht_absolut, e.id)):
        outgoing = edge.knoten_a_id == node_id
        other = edge.knoten_b_id if outgoing else edge.knoten_a_id
        shared = []
        if edge.geteilte_entitaet_ids:
            shared.append("entity " + ", ".join(names.get(i, f"#{i}") for i in edge.geteilte_entitaet_ids))
        if edge.geteilte_themen:
            shared.append("theme " + ", ".join(edge.geteilte_themen))
        if edge.HasField("embedding_cosine_initial"):
            shared.append(f"cosine {edge.embedding_cosine_initial:.2f}")
        if edge.HasField("timeline_naehe_tage"):
            shared.append(f"{edge.timeline_naehe_tage} days apart")
        out(f"    {'→' if outgoing else '←'} #{other:<5} {edge.gewicht_absolut:6.3f}  "
            f"[{', '.join(edge.verbindungs_gruende)}] {'; '.join(shared)}  {shorten(texts.get(other, ''), 50)}")
    return 0


async def cmd_graph(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = pair_of(args)
    path = await write_graph(clients, pair, args.output, limit=args.limit, include_inactive=args.include_inactive)
    out(f"wrote {path}")
    return 0


def check_graph_output(output: Path) -> None:
    """A graph file name the renderer can write, else :class:`CliError` naming the allowed suffixes."""
    from novaberg_dev.graph_explorer import UnsupportedOutputError, check_output_suffix

    try:
        check_output_suffix(output)
    except UnsupportedOutputError as error:
        raise CliError(str(error)) from None


async def write_graph(
    clients: DevClients, pair: common_pb2.Pair, output: Path, *, limit: int = 5000, include_inactive: bool = False
) -> Path:
    """Renders the pair's graph to ``output`` (``.html`` explorer, ``.png``/``.svg`` picture): the
    ``limit`` strongest active nodes and, with ``include_inactive``, up to ``limit`` inactive ones.

    The inactive ones are chosen separately: ListNodes ranks by ``gewicht_decay``, where they sit
    below every active node (SPEC §5.7: < 0.1), so one ranked list would cut them off first.
    """
    from novaberg_dev.graph_explorer import write_graph_file

    check_graph_output(output)
    stats = await clients.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=pair))
    total = stats.nodes_active + stats.nodes_inactive
    if include_inactive and total:
        every = (await clients.call("lzg", "ListNodes", lzg_pb2.ListNodesRequest(
            pair=pair, limit=total, include_inactive=True))).nodes  # fmt: skip
        nodes = [n for n in every if n.aktiv][:limit] + [n for n in every if not n.aktiv][:limit]
    elif stats.nodes_active:
        nodes = list((await clients.call("lzg", "ListNodes", lzg_pb2.ListNodesRequest(
            pair=pair, limit=limit, include_inactive=False))).nodes)  # fmt: skip
    else:
        nodes = []
    edges = []
    if stats.edges and nodes:  # all of the pair's rows: a limit below would drop arbitrary lines
        edges = list((await clients.call("lzg", "ListEdges", lzg_pb2.ListEdgesRequest(
            pair=pair, limit=stats.edges), timeout=600.0)).edges)  # fmt: skip
    names = await entity_names(clients, pair)
    title = f"Novaberg LZG · {pair.user_id} · {pair.character_id}"
    return write_graph_file(output, nodes, edges, entity_names=names, title=title)
