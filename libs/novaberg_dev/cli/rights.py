"""The ``novaberg`` commands of a person's rights over their memories (issue 13; README "Data protection").

    novaberg erase --user U --character C [--reason R] [--yes]     erase a pair in every store
    novaberg erase --user U --all-characters [--reason R] [--yes]  erase every pair of a user
    novaberg export --user U --character C [-o FILE]               the pair's memories as JSON lines
    novaberg import-export FILE [--user U --character C]           an export into an empty pair
    novaberg forget (--node N | --turn T) --reason R               forget one memory
    novaberg correct (--node N | --kzg-key K) --text T --reason R  new content for one memory
    novaberg pixie requeue (--all | JOB_ID ...)                    parked promotion jobs back into the queue
    novaberg pixie erasures                                        erasure receipts

An erasure asks to type the ids again (``U C``, or ``U`` for all characters) unless ``--yes``
is given; without a terminal and without ``--yes`` it refuses.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from novaberg.common.v1 import common_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.timeutil import from_timestamp
from novaberg_dev.cli.common import ProgressBar
from novaberg_dev.clients import DevClients, ServiceCallError

__all__ = ["PIXIE_ACTIONS", "RIGHTS_COMMANDS", "add_pixie_commands", "add_rights_commands", "ask"]

ask: Callable[[str], str] = input
"""How the erasure's confirmation is read (a test replaces it)."""

IMPORT_LINES_PER_MESSAGE = 500
_LONG = 3600.0


class RightsCliError(Exception):
    """A refusal the user can fix; printed as one line by ``novaberg``'s main."""


def _pair(args: argparse.Namespace) -> common_pb2.Pair:
    return common_pb2.Pair(user_id=args.user, character_id=args.character or "")


def _receipt_lines(receipt: pixie_pb2.ErasureReceipt) -> list[str]:
    finished = from_timestamp(receipt.finished_at).isoformat() if receipt.HasField("finished_at") else "-"
    lines = [
        f"erasure {receipt.id} ({receipt.scope}): {receipt.state}, finished {finished}, token {receipt.token}"
    ]
    by_store: dict[str, list[str]] = {}
    for key, value in sorted(receipt.counts.items()):
        store, _, kind = key.partition(".")
        by_store.setdefault(store, []).append(f"{kind} {value}")
    lines += [f"  {store:6} {', '.join(parts)}" for store, parts in by_store.items()]
    if receipt.error:
        lines.append(f"  last error: {receipt.error}")
    return lines


async def cmd_erase(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    if args.all_characters == bool(args.character):
        raise RightsCliError("name --character C, or --all-characters to erase every pair of the user")
    expected = args.user if args.all_characters else f"{args.user} {args.character}"
    what = (
        f"every memory of user {args.user}"
        if args.all_characters
        else f"every memory of the pair {args.user} · {args.character}"
    )
    if not args.yes:
        try:
            typed = ask(
                f"This erases {what} in every store; it cannot be undone.\nType '{expected}' to confirm: "
            )
        except EOFError:
            raise RightsCliError(
                "no confirmation (no terminal): type the ids at the prompt or pass --yes"
            ) from None
        if typed.strip() != expected:
            raise RightsCliError(f"confirmation did not match {expected!r}; nothing was erased")
    if args.all_characters:
        receipt = await clients.call(
            "pixie",
            "EraseUser",
            pixie_pb2.EraseUserRequest(user_id=args.user, reason=args.reason),
            timeout=_LONG,
        )
    else:
        receipt = await clients.call(
            "pixie",
            "ErasePair",
            pixie_pb2.ErasePairRequest(pair=_pair(args), reason=args.reason),
            timeout=_LONG,
        )
    for line in _receipt_lines(receipt):
        out(line)
    return 0


async def _stream(clients: DevClients, rpc: str, request: Any) -> AsyncIterator[Any]:
    """A server-streaming Pixie call; a failure becomes one line (ServiceCallError)."""
    try:
        async for message in getattr(clients.stub("pixie"), rpc)(request, timeout=_LONG):
            yield message
    except grpc.aio.AioRpcError as error:
        raise ServiceCallError(
            "pixie", rpc, error.code().name, " ".join((error.details() or "").split())
        ) from None


async def cmd_export(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = _pair(args)
    path = Path(args.output or f"export-{pair.user_id}-{pair.character_id}.jsonl")
    bar: ProgressBar | None = None
    written = 0
    tmp = path.with_name(path.name + ".part")
    with tmp.open("w", encoding="utf-8") as handle:
        async for chunk in _stream(clients, "ExportPair", pixie_pb2.ExportPairRequest(pair=pair)):
            if bar is None:
                bar = ProgressBar(int(chunk.total_lines), label=f"export {path.name}")
            for line in chunk.lines:
                handle.write(line + "\n")
            written += len(chunk.lines)
            bar.advance(len(chunk.lines))
    tmp.replace(path)
    if bar is not None:
        bar.finish()
    counts = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0]).get("counts", {})
    out(f"{written} lines written to {path} (" + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    return 0


async def cmd_import_export(
    clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]
) -> int:
    path = Path(args.file)
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as error:
        raise RightsCliError(f"cannot read {path}: {error.strerror}") from None
    if (args.user is None) != (args.character is None):
        raise RightsCliError("name both --user and --character for another target pair, or neither")
    bar = ProgressBar(len(lines), label=f"import {path.name}")

    async def requests() -> AsyncIterator[pixie_pb2.ImportPairRequest]:
        first = pixie_pb2.ImportPairRequest()
        if args.user is not None:
            first.pair.CopyFrom(_pair(args))
        yield first
        for start in range(0, len(lines), IMPORT_LINES_PER_MESSAGE):
            part = lines[start : start + IMPORT_LINES_PER_MESSAGE]
            bar.advance(len(part))
            yield pixie_pb2.ImportPairRequest(lines=part)

    try:
        answer = await clients.stub("pixie").ImportPair(requests(), timeout=_LONG)
    except grpc.aio.AioRpcError as error:
        raise ServiceCallError(
            "pixie", "ImportPair", error.code().name, " ".join((error.details() or "").split())
        ) from None
    finally:
        bar.finish()
    out(
        f"imported into {answer.pair.user_id} · {answer.pair.character_id}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(answer.counts.items()))
    )
    return 0


async def cmd_forget(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    request = pixie_pb2.ForgetMemoryRequest(pair=_pair(args), reason=args.reason)
    if args.node:
        request.node_id = args.node
    else:
        request.source_turn_id = args.turn
    answer = await clients.call("pixie", "ForgetMemory", request)
    out(
        f"forgotten: nodes {list(answer.node_ids)}, {answer.edges} edges, "
        f"KZG entries {list(answer.kzg_keys)}, "
        f"{answer.session_turns} session turns"
    )
    return 0


async def cmd_correct(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    request = pixie_pb2.CorrectMemoryRequest(pair=_pair(args), inhalt=args.text, reason=args.reason)
    if args.node:
        request.node_id = args.node
    else:
        request.kzg_key = args.kzg_key
    answer = await clients.call("pixie", "CorrectMemory", request)
    where = [f"node {answer.node_id}"] if answer.node_id else []
    where += [f"KZG entry {answer.kzg_key}"] if answer.kzg_key else []
    out(
        f"corrected {' and '.join(where)}: edges {answer.edges_removed} removed, "
        f"{answer.edges_created} formed; "
        f"was: {answer.previous_inhalt!r}"
    )
    return 0


async def cmd_pixie_requeue(
    clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]
) -> int:
    if args.all == bool(args.job_ids):
        raise RightsCliError("name JOB_IDs or --all")
    answer = await clients.call(
        "pixie", "RequeueParkedJobs", pixie_pb2.RequeueParkedJobsRequest(job_ids=args.job_ids, all=args.all)
    )
    out(
        f"requeued {answer.requeued} parked jobs ({', '.join(answer.job_ids) or '-'}); "
        f"{answer.gone} dropped because their KZG entry is gone"
    )
    return 0


async def cmd_pixie_erasures(
    clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]
) -> int:
    receipts = (
        await clients.call("pixie", "ListErasures", pixie_pb2.ListErasuresRequest(limit=args.limit))
    ).erasures
    for receipt in receipts:
        for line in _receipt_lines(receipt):
            out(line)
    if not receipts:
        out("no erasures")
    return 0


RIGHTS_COMMANDS: Mapping[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "erase": (cmd_erase, ("pixie",)),
    "export": (cmd_export, ("pixie",)),
    "import-export": (cmd_import_export, ("pixie",)),
    "forget": (cmd_forget, ("pixie",)),
    "correct": (cmd_correct, ("pixie",)),
}
"""Command → (coroutine, services it needs), merged into ``novaberg_dev.cli.COMMANDS``."""

PIXIE_ACTIONS: Mapping[str, Callable[..., Any]] = {
    "requeue": cmd_pixie_requeue,
    "erasures": cmd_pixie_erasures,
}
"""``novaberg pixie <action>`` handled here."""


def add_rights_commands(client: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """The rights commands on the parser (``client`` adds a command with --data-dir)."""
    erase = client("erase", "erase a pair (or every pair of a user) in every store; asks to confirm")
    erase.add_argument("--user", required=True, help="user_id of the pair")
    erase.add_argument("--character", help="character_id of the pair")
    erase.add_argument("--all-characters", action="store_true", help="every pair of the user")
    erase.add_argument("--reason", default="", help="kept with the receipt (no personal data)")
    erase.add_argument("--yes", action="store_true", help="do not ask to type the ids again")

    export = client("export", "a pair's memories as JSON lines (novaberg.export/1)")
    export.add_argument("--user", required=True, help="user_id of the pair")
    export.add_argument("--character", required=True, help="character_id of the pair")
    export.add_argument("-o", "--output", help="file to write (default export-<user>-<character>.jsonl)")

    imp = client("import-export", "write an export file into an empty pair")
    imp.add_argument("file", help="a file written by `novaberg export`")
    imp.add_argument("--user", help="target user_id (default: the file's pair)")
    imp.add_argument("--character", help="target character_id (default: the file's pair)")

    for name, help_text in (
        ("forget", "forget one memory (a node, or every memory of a source turn)"),
        ("correct", "new content for one memory (re-embedded, edges formed again)"),
    ):
        command = client(name, help_text)
        command.add_argument("--user", required=True, help="user_id of the pair")
        command.add_argument("--character", required=True, help="character_id of the pair")
        target = command.add_mutually_exclusive_group(required=True)
        target.add_argument("--node", type=int, help="the LZG node id")
        if name == "forget":
            target.add_argument("--turn", help="the source turn id")
        else:
            target.add_argument("--kzg-key", help="the KZG entry (and the node promoted from it)")
            command.add_argument("--text", required=True, help="the corrected content")
        command.add_argument("--reason", required=True, help="logged with the change")


def add_pixie_commands(action: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """``novaberg pixie requeue`` and ``novaberg pixie erasures`` (``action`` adds a pixie action)."""
    requeue = action("requeue", "put parked promotion jobs back into the queue")
    requeue.add_argument("job_ids", nargs="*", help="parked job ids (see `novaberg pixie parked`)")
    requeue.add_argument("--all", action="store_true", help="every parked job")
    erasures = action("erasures", "erasure receipts, newest first")
    erasures.add_argument("--limit", type=int, default=20, help="at most this many receipts (default 20)")
