"""``novaberg log``: a turn's story from the pipeline log, or a pair's recent turns."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict

from novaberg.log.v1 import log_pb2
from novaberg_core.timeutil import from_timestamp
from novaberg_dev.cli.common import pair_of, shorten
from novaberg_dev.clients import DevClients

__all__ = ["cmd_log"]


def _format_record(record: log_pb2.LogRecord, full: bool) -> str:
    try:
        inhalt: Any = json.loads(record.inhalt_json) if record.inhalt_json else None
    except ValueError:
        inhalt = record.inhalt_json
    text = inhalt if isinstance(inhalt, str) else json.dumps(inhalt, ensure_ascii=False, separators=(", ", ": "))
    return f"{record.node}/{record.art}  {text if full else shorten(str(text), 150)}"


_LIST_TURNS_DEFAULT = 20
_TURN_ROWS_DEFAULT = 1000
_LIST_ROWS_MAX = 5000
"""Rows read (newest first) to find a pair's recent turns."""


def _turn_text(record: log_pb2.LogRecord) -> str:
    """What a turn was about, from one of its rows: the prompt of ``turn_roh``, an ``eingang``'s text."""
    try:
        inhalt: Any = json.loads(record.inhalt_json) if record.inhalt_json else None
    except ValueError:
        return ""
    if isinstance(inhalt, dict):
        for key in ("user_prompt", "text", "query_text", "inhalt"):
            if isinstance(inhalt.get(key), str) and inhalt[key].strip():
                return str(inhalt[key])
        return ""
    return inhalt if isinstance(inhalt, str) and record.art == "eingang" else ""


async def _list_turns(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """The pair's most recent turns (rows of any art, or of ``--art``/``--node``), newest first."""
    pair = pair_of(args)
    wanted = args.limit or _LIST_TURNS_DEFAULT
    rows = (await clients.call("log", "Query", log_pb2.QueryRequest(
        pair=pair, art=args.art or "", node=args.node or "", limit=_LIST_ROWS_MAX, descending=True,
    ))).records  # fmt: skip
    turns: dict[str, list[log_pb2.LogRecord]] = {}
    for row in rows:
        if row.turn_id in turns or len(turns) < wanted:
            turns.setdefault(row.turn_id, []).append(row)
    filters = [f"{name} {value}" for name, value in (("art", args.art), ("node", args.node)) if value]
    which = f" with {' and '.join(filters)} rows" if filters else ""
    if not turns:
        out(f"no turns of {pair.user_id} · {pair.character_id}{which} in the pipeline log yet "
            "(rows are flushed every few seconds)")
        return 0
    out(f"last {len(turns)} turns of {pair.user_id} · {pair.character_id}{which}, newest first "
        "(novaberg log <turn_id> tells one):")
    for turn_id, records in turns.items():
        newest = from_timestamp(records[0].erstellt_am)
        text = next((t for t in map(_turn_text, records) if t), "")
        arts = ", ".join(sorted({r.art for r in records}))
        out(f"  {newest:%Y-%m-%d %H:%M}  {turn_id}  {shorten(text, 60) if text else '-'}  [{arts}]")
    return 0


async def cmd_log(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    if not args.turn_id:
        return await _list_turns(clients, args, out)
    query = log_pb2.QueryRequest(
        turn_id=args.turn_id, node=args.node or "", art=args.art or "", limit=args.limit or _TURN_ROWS_DEFAULT
    )
    records = (await clients.call("log", "Query", query)).records
    if args.json:
        out(json.dumps([MessageToDict(r, preserving_proto_field_name=True) for r in records], ensure_ascii=False,
                       indent=2))
        return 0
    if not records:
        out(f"no pipeline-log rows for turn {args.turn_id} (rows are flushed every few seconds)")
        return 0
    out(f"turn {args.turn_id}: {len(records)} rows")
    depth = 0
    for record in records:
        if record.art == "span_end":
            depth = max(depth - 1, 0)
        stamp = from_timestamp(record.erstellt_am).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        out(f"  {stamp} {'  ' * depth}{_format_record(record, args.full)}  ({record.quelle})")
        if record.art == "span_start":
            depth += 1
    return 0
