"""The ``novaberg`` entry point: the parser of every command and the dispatch to the command modules."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from novaberg_core.errors import NovabergError
from novaberg_core.maintenance import TASKS
from novaberg_core.tls import PLAINTEXT, TlsConfig
from novaberg_dev.cli.common import (
    DEFAULT_CHARACTER,
    DEFAULT_DATA_DIR,
    DEFAULT_USER,
    CliError,
    read_addresses,
    read_client_tls,
    require_services,
)
from novaberg_dev.cli.conversation import cmd_import, cmd_observe, cmd_recall
from novaberg_dev.cli.graph import check_graph_output, cmd_graph, cmd_inspect
from novaberg_dev.cli.log import cmd_log
from novaberg_dev.cli.maintenance import cmd_pixie, cmd_reembed
from novaberg_dev.cli.rights import RIGHTS_COMMANDS, RightsCliError, add_pixie_commands, add_rights_commands
from novaberg_dev.cli.up import cmd_demo, run_up
from novaberg_dev.clients import DevClients, ServiceCallError

__all__ = ["COMMANDS", "build_parser", "main", "run_command"]


COMMANDS: Mapping[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "observe": (cmd_observe, ("pipeline",)),
    "recall": (cmd_recall, ("pipeline", "lzg")),
    "import": (cmd_import, ("pipeline",)),
    "inspect": (cmd_inspect, ("lzg", "kzg")),
    "graph": (cmd_graph, ("lzg",)),
    "log": (cmd_log, ("log",)),
    "pixie": (cmd_pixie, ("pixie",)),
    "demo": (cmd_demo, ("pipeline", "lzg", "kzg", "pixie")),
    **RIGHTS_COMMANDS,
}
"""Command → (coroutine, services it needs)."""


async def run_command(
    args: argparse.Namespace,
    addresses: Mapping[str, str],
    out: Callable[[str], None] = print,
    *,
    tls: TlsConfig = PLAINTEXT,
) -> int:
    """Runs one client command against ``addresses`` (connecting per ``tls``)."""
    handler, needed = COMMANDS[args.command]
    require_services(addresses, *needed)
    async with DevClients(addresses, tls=tls) as clients:
        result: int = await handler(clients, args, out)
        return result


def _pair_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", default=DEFAULT_USER, help=f"user_id of the pair (default {DEFAULT_USER})")
    parser.add_argument("--character", default=DEFAULT_CHARACTER,
                        help=f"character_id of the pair (default {DEFAULT_CHARACTER})")


GLOSSARY = "docs/glossary.md"
"""The German data names (SPEC naming rule) and the seed abbreviations, one line each."""

_EPILOG = f"""\
Output is English; the spec's German data names (lzg_knoten, gewicht_decay, salienz, beobachter,
turn_roh, synapsen_decay …) keep their names. Each is explained in one line in the glossary
{GLOSSARY} (here: {Path(__file__).resolve().parents[3] / GLOSSARY}).
Common options such as --data-dir are accepted before or after a subcommand.
"""


def _data_dir_option(parser: argparse.ArgumentParser, *, up: bool = False) -> None:
    """``--data-dir`` on ``parser``; SUPPRESS as default so the option may stand at any level
    (``novaberg --data-dir X pixie runs`` and ``novaberg pixie runs --data-dir X`` alike)."""
    help_text = (f"where the stores, logs and stack file live (default {DEFAULT_DATA_DIR})" if up else
                 f"the stack started by `novaberg up --data-dir` (default {DEFAULT_DATA_DIR}, or the "
                 "NOVABERG_<SVC>_ADDR variables)")  # fmt: skip
    parser.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="novaberg", description="Novaberg memory core: start it, feed it turns, look inside.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _data_dir_option(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("up", help="start embedded stores and all five services, replay the demo, serve")
    _data_dir_option(up, up=True)
    up.add_argument("--once", action="store_true", help="exit 0 after start-up and the demo")
    up.add_argument("--no-demo", action="store_true", help="start and serve without replaying the demo")
    up.add_argument("--demo-file", type=Path, help="another demo conversation (format of the shipped one)")

    reembed = sub.add_parser(
        "reembed", help="rewrite every vector of the stores with the configured model and text recipe (SPEC §2)"
    )
    reembed.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                         help="the embedded stores of `novaberg up --data-dir` (default .novaberg); "
                              "NOVABERG_REDIS_URL / NOVABERG_POSTGRES_URL win when set")
    reembed.add_argument("--only", choices=("kzg", "lzg"), help="re-embed one store only")

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text)
        _data_dir_option(command)
        return command

    demo = client("demo", "replay the shipped demo conversation against the running stack (in its own pair)")
    demo.add_argument("--demo-file", type=Path, help="another demo conversation (format of the shipped one)")

    observe = client("observe", "observe one turn (session, KZG write)")
    _pair_options(observe)
    observe.add_argument("text", help="what was said")
    observe.add_argument("--assistant", action="store_true", help="the character's turn (default: the user's)")
    observe.add_argument("--turn-id", help="id of the turn (default a new UUID)")
    observe.add_argument("--as-of", help="ISO time of the turn (default now)")
    observe.add_argument("--salienz", type=float, help="give the analysis instead of the analyzer: raw salience")
    observe.add_argument("--themen", help="comma-separated themes (with --salienz)")
    observe.add_argument("--entity", action="append", help="entity name, resolved/created in the LZG (repeatable)")
    observe.add_argument("--emotion", help="Plutchik emotion label (with --salienz)")
    observe.add_argument("--inhalt", help="distilled content (default: the text)")
    observe.add_argument("--gedaechtnistyp", default="episodisch",
                         help="memory type of the turn (with --salienz; default episodisch)")
    observe.add_argument("--dimension", default="allgemein",
                         help="life area of the turn (with --salienz; the pipeline requires one)")

    recall = client("recall", "build the dossier for a question: memory block plus paths")
    _pair_options(recall)
    recall.add_argument("question", help="the turn to build the dossier for")
    recall.add_argument("--reader", default="analysis", choices=("analysis", "composer"),
                        help="whose memory block to print (default analysis)")
    recall.add_argument("--nova-emotion", help="the character's current emotion (Plutchik sector factor)")
    recall.add_argument("--intention", action="append", help="an intention of the turn (e.g. anweisung)")
    recall.add_argument("--user-name", default="Meister",
                        help="the user's name in the memory block (default Meister)")
    recall.add_argument("--character-name", default="Nova",
                        help="the character's name in the memory block (default Nova)")
    recall.add_argument("--as-of", help="ISO time the dossier is built at (default now)")
    recall.add_argument("--json", action="store_true", help="the raw BuildDossier response as JSON")

    imp = client("import", "observe every turn of a conversation file (LoCoMo or {'turns': [...]})")
    imp.add_argument("file", help="the conversation file (JSON)")
    imp.add_argument("--sample", action="append", help="LoCoMo sample_id to import (repeatable; default all)")
    imp.add_argument("--limit", type=int, default=0, help="at most this many turns")
    imp.add_argument("--user", help="user_id for all turns (LoCoMo default: <sample>-<speaker_a>)")
    imp.add_argument("--character", help="character_id for all turns (LoCoMo default: <speaker_b>)")
    imp.add_argument("--promote", action="store_true", help="run Pixie's promotion afterwards and show its counts")

    inspect = client("inspect", "a pair: counts, strongest nodes, or the edges of one node")
    _pair_options(inspect)
    inspect.add_argument("--node", type=int, help="show this node and its edges")
    inspect.add_argument("--limit", type=int, default=15, help="at most this many nodes (default 15)")
    inspect.add_argument("--include-inactive", action="store_true", help="list inactive (decayed) nodes too")

    graph = client("graph", "a pair's memory graph: an interactive offline page (.html) or a picture (.png, .svg)")
    _pair_options(graph)
    graph.add_argument("-o", "--output", type=Path, help="file to write: .html (explorer), .png or .svg "
                                                          "(default <data-dir>/graph-<user>-<character>.html)")
    graph.add_argument("--limit", type=int, default=5000, help="at most this many active nodes, strongest first")
    graph.add_argument("--include-inactive", action="store_true",
                       help="add the inactive nodes too (at most --limit of them, strongest first)")

    log = client("log", "a turn's story from the pipeline log (without TURN_ID: the pair's last turns)")
    _pair_options(log)
    log.add_argument("turn_id", nargs="?", help="the turn to tell (default: list the pair's recent turns)")
    log.add_argument("--node", help="only rows of this node (e.g. observe, kzg, promotion)")
    log.add_argument("--art", help="only rows of this art (eingang, db_write, turn_roh …: the glossary)")
    log.add_argument("--limit", type=int, default=None,
                     help="at most this many rows of the turn (default 1000), or turns listed (default 20)")
    log.add_argument("--full", action="store_true", help="do not shorten the rows")
    log.add_argument("--json", action="store_true", help="the rows as JSON")

    pixie = client("pixie", "Pixie's tasks and runs")
    pixie_sub = pixie.add_subparsers(dest="pixie_command", required=True, metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        command = pixie_sub.add_parser(name, help=help_text, description=help_text)
        _data_dir_option(command)
        return command

    action("tasks", "the tasks, their schedule and last run")
    runs = action("runs", "recent runs, newest first")
    runs.add_argument("--task", choices=TASKS, help="only runs of this task")
    runs.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20)")
    trigger = action("trigger", "run a task now")
    trigger.add_argument("task", choices=TASKS, help="the task to run")
    trigger.add_argument("--as-of", help="the day a daily run belongs to (ISO time)")
    trigger.add_argument("--force", action="store_true", help="run even if paused or already run that day")
    trigger.add_argument("--pair", action="append", metavar="USER:CHARACTER",
                         help="limit the run to this pair (repeatable; default all pairs). A run with --as-of in "
                              "the future must name its pairs")
    for name in ("pause", "resume"):
        action(name, f"{name} a task").add_argument("task", choices=TASKS, help=f"the task to {name}")
    parked = action("parked", "promotion jobs that kept failing")
    parked.add_argument("--limit", type=int, default=50, help="at most this many jobs (default 50)")
    add_pixie_commands(action)
    add_rights_commands(client)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.data_dir = getattr(args, "data_dir", None)
    if args.command == "up" and args.data_dir is None:
        args.data_dir = DEFAULT_DATA_DIR
    try:
        if args.command == "up":
            with contextlib.suppress(KeyboardInterrupt):
                return asyncio.run(run_up(args.data_dir, args.once, not args.no_demo, args.demo_file))
            return 130
        if args.command == "reembed":
            return asyncio.run(cmd_reembed(args, print))
        if args.command == "graph":
            if args.output is None:
                base = args.data_dir or DEFAULT_DATA_DIR
                args.output = base / f"graph-{args.user}-{args.character}.html"
            check_graph_output(args.output)  # before any call: a wrong suffix is a usage error
        addresses = read_addresses(args.data_dir)
        return asyncio.run(run_command(args, addresses, tls=read_client_tls(args.data_dir)))
    except ServiceCallError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (CliError, RightsCliError, NovabergError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `novaberg log … | head`: the reader left, nothing to report
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
