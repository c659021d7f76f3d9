"""The ``novaberg`` command line (one entry point).

    novaberg up [--data-dir .novaberg] [--once] [--no-demo]   start everything, replay the demo, serve
    novaberg demo                                             replay the demo against a running stack
    novaberg observe "Anna hat heute Geburtstag" [--salienz 0.8 --themen Anna,Geburtstag --entity Anna]
    novaberg recall "Was weißt du noch über Anna?"            dossier: memory block plus paths
    novaberg import locomo_dev.json [--sample conv-26] [--limit 200]
    novaberg inspect [--node 7]                               counts, strongest nodes, edges of a node
    novaberg graph [-o graph.html|.png|.svg] [--include-inactive]  the pair's memory graph: explorer or picture
    novaberg log [TURN_ID]                                    a turn's story from the pipeline log
    novaberg pixie tasks|runs|trigger|pause|resume|parked|requeue|erasures
    novaberg erase|export|import-export|forget|correct         a person's rights (novaberg_dev.cli.rights)

Where the services are: ``up`` writes ``<data-dir>/stack.json``; every other command reads it
from ``--data-dir`` (default ``.novaberg``), and ``NOVABERG_<SVC>_ADDR`` variables override it
when no ``--data-dir`` is given. The stack file also names the ``operator`` certificate the CLI
presents under mTLS; with addresses from the environment, ``NOVABERG_TLS_*`` say how to connect
(mTLS unless ``NOVABERG_TLS_MODE=plaintext``). A failed call prints one line
``error: <service>.<Rpc>: <CODE>: <details>`` and exits 1.

One module per command family: :mod:`~novaberg_dev.cli.common` (the stack file, connecting, shared
helpers), :mod:`~novaberg_dev.cli.conversation` (observe, recall, import), :mod:`~novaberg_dev.cli.graph`
(inspect, graph), :mod:`~novaberg_dev.cli.log`, :mod:`~novaberg_dev.cli.maintenance` (pixie, reembed),
:mod:`~novaberg_dev.cli.rights`, :mod:`~novaberg_dev.cli.up` (up, demo) and :mod:`~novaberg_dev.cli.app`
(the parser and ``main``). ``python -m novaberg_dev.cli`` runs ``main``.
"""

from __future__ import annotations

from novaberg_dev.cli.app import build_parser, main
from novaberg_dev.cli.common import (
    DEFAULT_DATA_DIR,
    STACK_FILE,
    CliError,
    ProgressBar,
    read_addresses,
    read_client_tls,
    running_stack_pid,
    write_stack_file,
)
from novaberg_dev.cli.conversation import (
    IMPORT_BATCH,
    ImportedTurn,
    observe_batches,
    parse_locomo,
    parse_locomo_date,
    parse_turn_file,
)
from novaberg_dev.cli.maintenance import COUNT_WORDS
from novaberg_dev.cli.up import cli_command

__all__ = [
    "COUNT_WORDS",
    "DEFAULT_DATA_DIR",
    "IMPORT_BATCH",
    "STACK_FILE",
    "CliError",
    "ImportedTurn",
    "ProgressBar",
    "build_parser",
    "cli_command",
    "main",
    "observe_batches",
    "parse_locomo",
    "parse_locomo_date",
    "parse_turn_file",
    "read_addresses",
    "read_client_tls",
    "running_stack_pid",
    "write_stack_file",
]
