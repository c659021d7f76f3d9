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
    novaberg erase|export|import-export|forget|correct         a person's rights (novaberg_core.cli_rights)

Where the services are: ``up`` writes ``<data-dir>/stack.json``; every other command reads it
from ``--data-dir`` (default ``.novaberg``), and ``NOVABERG_<SVC>_ADDR`` variables override it
when no ``--data-dir`` is given. The stack file also names the ``operator`` certificate the CLI
presents under mTLS; with addresses from the environment, ``NOVABERG_TLS_*`` say how to connect
(mTLS unless ``NOVABERG_TLS_MODE=plaintext``). A failed call prints one line
``error: <service>.<Rpc>: <CODE>: <details>`` and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import time as clock
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from google.protobuf.json_format import MessageToDict

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.log.v1 import log_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.cli_rights import (
    PIXIE_ACTIONS,
    RIGHTS_COMMANDS,
    RightsCliError,
    add_pixie_commands,
    add_rights_commands,
)
from novaberg_core.clients import ServiceCallError, ServiceClients
from novaberg_core.config import ConfigError
from novaberg_core.errors import NovabergError
from novaberg_core.timeutil import from_timestamp, to_timestamp, utc_now
from novaberg_core.tls import PLAINTEXT, TlsConfig

__all__ = [
    "DEFAULT_DATA_DIR",
    "IMPORT_BATCH",
    "STACK_FILE",
    "CliError",
    "ImportedTurn",
    "ProgressBar",
    "build_parser",
    "main",
    "observe_batches",
    "parse_locomo",
    "parse_turn_file",
    "read_addresses",
    "read_client_tls",
    "running_stack_pid",
    "write_stack_file",
]

SERVICE_NAMES: tuple[str, ...] = ("log", "kzg", "lzg", "pixie", "pipeline")
DEFAULT_DATA_DIR = Path(".novaberg")
STACK_FILE = "stack.json"
DEFAULT_USER = "meister"
DEFAULT_CHARACTER = "nova"


class CliError(Exception):
    """A problem the user can fix (no stack found, bad file, bad option); printed as one line."""


# --------------------------------------------------------------------------- where the stack is


def write_stack_file(data_dir: Path, addresses: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> Path:
    """Writes ``<data_dir>/stack.json`` (addresses, pid, start time) for the other commands."""
    path = data_dir / STACK_FILE
    payload = {"addresses": dict(addresses), "pid": os.getpid(), "started_at": utc_now().isoformat(), **(extra or {})}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_stack_pid(data_dir: Path) -> int | None:
    """The pid of a live ``novaberg up`` that wrote ``<data_dir>/stack.json``, else None."""
    try:
        pid = int(json.loads((data_dir / STACK_FILE).read_text(encoding="utf-8")).get("pid", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return pid if pid and pid != os.getpid() and _pid_alive(pid) else None


def read_addresses(data_dir: Path | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Service addresses: ``--data-dir``'s stack.json when given; else ``NOVABERG_<SVC>_ADDR`` over
    the default ``.novaberg/stack.json``. A missing or stale stack file is a :class:`CliError`."""
    env = os.environ if environ is None else environ
    explicit = data_dir is not None
    path = (data_dir if explicit else DEFAULT_DATA_DIR) / STACK_FILE  # type: ignore[operator]
    addresses: dict[str, str] = {}
    if path.exists():
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            addresses = {str(k): str(v) for k, v in payload["addresses"].items()}
            pid = int(payload.get("pid", 0))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise CliError(f"{path} is not a stack file ({error})") from None
        if pid and not _pid_alive(pid):
            if explicit or not any(env.get(f"NOVABERG_{s.upper()}_ADDR") for s in SERVICE_NAMES):
                raise CliError(f"{path} is stale: the stack that wrote it (pid {pid}) is not running; "
                               "start one with `novaberg up`")
            addresses = {}
    elif explicit:
        raise CliError(f"no running stack found: {path} does not exist (start one with `novaberg up --data-dir "
                       f"{data_dir}`)")
    if not explicit:
        for service in SERVICE_NAMES:
            value = env.get(f"NOVABERG_{service.upper()}_ADDR", "").strip()
            if value:
                addresses[service] = value
    if not addresses:
        raise CliError(f"no running stack found: {path} does not exist and no NOVABERG_<SVC>_ADDR is set "
                       "(start one with `novaberg up`)")
    return addresses


def read_client_tls(data_dir: Path | None, environ: Mapping[str, str] | None = None) -> TlsConfig:
    """How the CLI connects: the stack file's ``tls`` (the stack's operator certificate; a stack file
    without one is a plaintext stack) when the addresses come from it, else ``NOVABERG_TLS_*``."""
    env = os.environ if environ is None else environ
    from_env = data_dir is None and any(env.get(f"NOVABERG_{s.upper()}_ADDR", "").strip() for s in SERVICE_NAMES)
    try:
        if from_env:
            return TlsConfig.from_env(env)
        path = (data_dir or DEFAULT_DATA_DIR) / STACK_FILE
        try:
            entry = json.loads(path.read_text(encoding="utf-8")).get("tls")
        except (OSError, ValueError, AttributeError):
            return PLAINTEXT  # read_addresses reports a missing or broken stack file
        return TlsConfig.from_env({str(k): str(v) for k, v in entry.items()}) if isinstance(entry, dict) else PLAINTEXT
    except ConfigError as error:
        raise CliError(str(error)) from None


def _require(addresses: Mapping[str, str], *services: str) -> None:
    for service in services:
        if not addresses.get(service):
            raise CliError(f"no address for the {service} service (set NOVABERG_{service.upper()}_ADDR or use "
                           "a stack started by `novaberg up`)")


# --------------------------------------------------------------------------- small helpers


def _as_of(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"--as-of must be an ISO date/time like 2026-11-29T10:00, got {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _pair(args: argparse.Namespace) -> common_pb2.Pair:
    return common_pb2.Pair(user_id=args.user, character_id=args.character)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BEOBACHTER_NAMES: dict[int, str] = {common_pb2.BEOBACHTER_USER: "user", common_pb2.BEOBACHTER_ASSISTANT: "assistant"}


def _beobachter(value: int) -> str:
    return _BEOBACHTER_NAMES.get(value, "?")


async def _entity_names(clients: ServiceClients, pair: common_pb2.Pair) -> dict[int, str]:
    listed = await clients.call("lzg", "ListEntities", lzg_pb2.ListEntitiesRequest(pair=pair))
    return {e.id: e.name for e in listed.entities}


async def _node_texts(clients: ServiceClients, pair: common_pb2.Pair) -> dict[int, str]:
    listed = await clients.call(
        "lzg", "ListNodes", lzg_pb2.ListNodesRequest(pair=pair, limit=1000, include_inactive=True)
    )
    return {n.id: n.inhalt for n in listed.nodes}


class ProgressBar:
    """Progress with rate and ETA: one line redrawn with ``\\r`` on a terminal, else a line every ``every_s``.

    ``live`` (default: whether ``stream`` is a terminal) chooses the redrawn line; a redirected
    stream (a log file, ``| tee``) gets plain lines instead of one frame per step.
    """

    def __init__(
        self,
        total: int,
        *,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        live: bool | None = None,
        every_s: float = 5.0,
    ) -> None:
        self.total = max(total, 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        isatty = getattr(self.stream, "isatty", None)
        self.live = live if live is not None else bool(isatty and isatty())
        self.every_s = every_s
        self.done = 0
        self.started = clock.monotonic()
        self._printed = -1
        self._printed_at = self.started

    def render(self) -> str:
        share = self.done / self.total if self.total else 1.0
        filled = round(share * self.width)
        elapsed = max(clock.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        remaining = max(self.total - self.done, 0)
        eta = _duration(remaining / rate) if rate > 0 else "--:--"
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} "
                f"{share * 100:5.1f}% {rate:6.1f}/s ETA {eta}")

    def advance(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total) if self.total else self.done + n
        if self.live:
            self.stream.write("\r" + self.render())
            self.stream.flush()
        elif clock.monotonic() - self._printed_at >= self.every_s:
            self._line()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\r" + self.render() + "\n")
            self.stream.flush()
        elif self._printed != self.done:
            self._line()

    def _line(self) -> None:
        self.stream.write(self.render() + "\n")
        self.stream.flush()
        self._printed, self._printed_at = self.done, clock.monotonic()


def _duration(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


# --------------------------------------------------------------------------- conversation files


@dataclass(frozen=True)
class ImportedTurn:
    """One turn of a conversation file, ready for ObserveTurn(s)."""

    pair: common_pb2.Pair
    turn_id: str
    beobachter: common_pb2.Beobachter
    text: str
    as_of: datetime | None
    profile: common_pb2.PairProfile | None = None
    """The pair's speakers and language (SPEC §11), sent with the turn when known."""


_LOCOMO_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"), start=1)}  # fmt: skip


def parse_locomo_date(text: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` → aware UTC datetime; None when it does not parse."""
    match = _LOCOMO_DATE.search(text or "")
    if not match:
        return None
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        return None
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def parse_locomo(
    data: Any,
    *,
    samples: Sequence[str] = (),
    user_id: str | None = None,
    character_id: str | None = None,
) -> list[ImportedTurn]:
    """Turns of LoCoMo conversations (speaker_a → user, speaker_b → the character), in session order.

    Each session's ``session_N_date_time`` is the first turn's ``as_of``; later turns follow 30 s apart.
    """
    if not isinstance(data, list):
        raise CliError("a LoCoMo file is a JSON list of conversations")
    wanted = set(samples)
    turns: list[ImportedTurn] = []
    for sample in data:
        sample_id = str(sample.get("sample_id", ""))
        if wanted and sample_id not in wanted:
            continue
        conversation = sample.get("conversation")
        if not isinstance(conversation, dict):
            raise CliError(f"LoCoMo sample {sample_id!r} has no 'conversation' object")
        speaker_a, speaker_b = conversation.get("speaker_a", "A"), conversation.get("speaker_b", "B")
        pair = common_pb2.Pair(
            user_id=user_id or _slug(f"{sample_id}-{speaker_a}"), character_id=character_id or _slug(speaker_b)
        )
        profile = common_pb2.PairProfile(user_name=str(speaker_a), character_name=str(speaker_b), sprache="en")
        numbers = sorted(
            int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))
        )
        for number in numbers:
            start = parse_locomo_date(str(conversation.get(f"session_{number}_date_time", "")))
            for i, turn in enumerate(conversation[f"session_{number}"]):
                text = str(turn.get("text", "")).strip()
                if turn.get("blip_caption"):
                    text = f"{text} [image: {turn['blip_caption']}]".strip()
                if not text:
                    continue
                role = common_pb2.BEOBACHTER_USER if turn.get("speaker") == speaker_a else common_pb2.BEOBACHTER_ASSISTANT
                turns.append(ImportedTurn(
                    pair=pair, turn_id=f"{sample_id}:{turn.get('dia_id', f'S{number}:{i}')}", beobachter=role,
                    text=text, as_of=None if start is None else start + timedelta(seconds=30 * i), profile=profile,
                ))  # fmt: skip
    if wanted and not turns:
        raise CliError(f"no LoCoMo sample named {', '.join(sorted(wanted))} in this file")
    return turns


def parse_turn_file(
    data: Any,
    *,
    samples: Sequence[str] = (),
    user_id: str | None = None,
    character_id: str | None = None,
) -> list[ImportedTurn]:
    """A conversation file: LoCoMo, or ``{"turns": [{"role": "user"|"assistant", "text", "as_of"?}]}``."""
    if isinstance(data, list) and all(isinstance(s, dict) and "conversation" in s for s in data):
        return parse_locomo(data, samples=samples, user_id=user_id, character_id=character_id)
    if isinstance(data, dict) and isinstance(data.get("turns"), list):
        pair = common_pb2.Pair(user_id=user_id or DEFAULT_USER, character_id=character_id or DEFAULT_CHARACTER)
        turns = []
        for i, raw in enumerate(data["turns"]):
            role = raw.get("role") if isinstance(raw, dict) else None
            if role not in ("user", "assistant") or not str(raw.get("text", "")).strip():
                raise CliError(f"turns[{i}] needs role 'user' or 'assistant' and a non-empty text")
            turns.append(ImportedTurn(
                pair=pair, turn_id=str(raw.get("turn_id") or uuid.uuid4()),
                beobachter=common_pb2.BEOBACHTER_USER if role == "user" else common_pb2.BEOBACHTER_ASSISTANT,
                text=str(raw["text"]).strip(), as_of=_as_of(raw.get("as_of")),
            ))  # fmt: skip
        return turns
    raise CliError("unknown conversation format: expected a LoCoMo list or an object with 'turns'")


# --------------------------------------------------------------------------- commands


async def cmd_observe(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = _pair(args)
    request = pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id=args.turn_id or str(uuid.uuid4()), text=args.text,
        beobachter=common_pb2.BEOBACHTER_ASSISTANT if args.assistant else common_pb2.BEOBACHTER_USER,
    )  # fmt: skip
    as_of = _as_of(args.as_of)
    if as_of is not None:
        request.as_of.CopyFrom(to_timestamp(as_of))
    if args.salienz is not None:
        if not 0.0 <= args.salienz <= 1.0:
            raise CliError(f"--salienz must be in 0..1, got {args.salienz}")
        analysis = request.analysis
        analysis.salience.salienz = args.salienz
        analysis.salience.themen.extend(t.strip() for t in (args.themen or "").split(",") if t.strip())
        analysis.salience.gedaechtnistyp = args.gedaechtnistyp
        analysis.salience.dimension = args.dimension
        analysis.ei.emotion = args.emotion or ""
        analysis.ei.modus = "alltag"
        analysis.inhalt = args.inhalt or ""
        if args.entity:
            resolved = await clients.call("lzg", "ResolveEntities", lzg_pb2.ResolveEntitiesRequest(
                pair=pair, names=args.entity, create_missing=True, typ_for_new="unbekannt"))  # fmt: skip
            analysis.magnets.entitaet_ids.extend(dict.fromkeys(resolved.entitaet_ids))
    elif args.themen or args.entity or args.emotion or args.inhalt:
        raise CliError("--themen/--entity/--emotion/--inhalt describe a given analysis and need --salienz")
    response = await clients.call("pipeline", "ObserveTurn", request)
    stored = response.kzg
    if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE:
        out(f"turn {request.turn_id}: not stored (raw salience below the 0.3 gate)")
    else:
        out(f"turn {request.turn_id}: KZG {kzg_pb2.Tier.Name(stored.tier).removeprefix('TIER_')}, salienz "
            f"{stored.salienz:.3f}, TTL {stored.ttl_seconds // 86400} d"
            f"{', queued for promotion' if stored.queued_for_promotion else ''}"
            f"{f', {stored.reinforced_count} reinforced' if stored.reinforced_count else ''}  ({stored.kzg_key})")
    a = response.analysis
    names: dict[int, str] = {}
    if a.magnets.entitaet_ids:
        with contextlib.suppress(ServiceCallError):  # without the LZG the ids stand in for the names
            names = await _entity_names(clients, pair)
    entities = ", ".join(names.get(i, f"#{i}") for i in a.magnets.entitaet_ids) or "-"
    out(f"analysis ({'by the analyzer' if response.analyzed_by_service else 'given'}): salienz "
        f"{a.salience.salienz:.2f}, themen {', '.join(a.salience.themen) or '-'}, "
        f"emotion {a.ei.emotion or '-'}, entities {entities}"
        f"{f', timeline #{a.magnets.timeline_id}' if a.magnets.HasField('timeline_id') else ''}")
    if stored.canon_rejections:
        out(f"canon rejections: {', '.join(stored.canon_rejections)}")
    return 0


async def cmd_recall(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from novaberg_core.demo import format_dossier

    pair = _pair(args)
    request = pipeline_pb2.BuildDossierRequest(
        pair=pair, turn_id=str(uuid.uuid4()), query_text=args.question, nova_emotion=args.nova_emotion or "",
        readers=[args.reader], user_name=args.user_name, character_name=args.character_name,
        intentionen=args.intention or [],
    )  # fmt: skip
    as_of = _as_of(args.as_of)
    if as_of is not None:
        request.as_of.CopyFrom(to_timestamp(as_of))
    dossier = await clients.call("pipeline", "BuildDossier", request)
    if args.json:
        out(json.dumps(MessageToDict(dossier, preserving_proto_field_name=True), ensure_ascii=False, indent=2))
        return 0
    names = await _entity_names(clients, pair)
    texts = await _node_texts(clients, pair)
    out(f"dossier for “{args.question}” ({pair.user_id} · {pair.character_id}, turn {request.turn_id})")
    for line in format_dossier(dossier, names, texts, reader=args.reader):
        out(line)
    out(f"served node ids: {list(dossier.served_node_ids)}")
    return 0


IMPORT_BATCH = 128
"""Turns per ``ObserveTurns`` call of ``novaberg import`` (the service takes up to 256): enough for the
pipeline to analyse one chunk while it embeds and writes the one before (turns.WRITE_CHUNK), few enough
for the progress bar to move every few seconds."""
IMPORT_BATCH_BYTES = 2 * 1024 * 1024
"""A batch stays under half the services' 4 MiB receive limit, however long its turns."""


def observe_batches(
    turns: Sequence[ImportedTurn], size: int = IMPORT_BATCH
) -> list[pipeline_pb2.ObserveTurnsRequest]:
    """``ObserveTurns`` requests for ``turns`` in their order: consecutive turns of one pair (and
    profile), at most ``size`` turns and :data:`IMPORT_BATCH_BYTES` each."""
    batches: list[pipeline_pb2.ObserveTurnsRequest] = []
    current: pipeline_pb2.ObserveTurnsRequest | None = None
    for turn in turns:
        observed = pipeline_pb2.ObservedTurn(turn_id=turn.turn_id, beobachter=turn.beobachter, text=turn.text)
        if turn.as_of is not None:
            observed.as_of.CopyFrom(to_timestamp(turn.as_of))
        same_pair = current is not None and current.pair == turn.pair and (
            current.profile == turn.profile if turn.profile is not None else not current.HasField("profile")
        )  # fmt: skip
        if (current is None or not same_pair or len(current.turns) >= size
                or current.ByteSize() + observed.ByteSize() > IMPORT_BATCH_BYTES):  # fmt: skip
            current = pipeline_pb2.ObserveTurnsRequest(pair=turn.pair, profile=turn.profile)
            batches.append(current)
        current.turns.append(observed)
    return batches


async def cmd_import(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise CliError(f"{path} is not JSON: {error}") from None
    turns = parse_turn_file(data, samples=args.sample or (), user_id=args.user, character_id=args.character)
    if args.limit:
        turns = turns[: args.limit]
    if not turns:
        raise CliError(f"{path} holds no turns")
    bar = ProgressBar(len(turns), label=f"import {path.name}")
    tiers: dict[str, int] = {}
    queued = 0
    pairs: dict[tuple[str, str], int] = {}
    # Batches of one pair's turns in file order (ObserveTurns: the result of ObserveTurn per turn).
    for request in observe_batches(turns):
        try:
            response = await clients.call("pipeline", "ObserveTurns", request, timeout=600.0)
        except ServiceCallError:
            bar.finish()
            raise
        for result in response.results:
            stored = result.kzg
            tier = ("rejected" if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE
                    else kzg_pb2.Tier.Name(stored.tier).removeprefix("TIER_").lower())
            tiers[tier] = tiers.get(tier, 0) + 1
            queued += int(stored.queued_for_promotion) + stored.reinforced_queued_count
        key = (request.pair.user_id, request.pair.character_id)
        pairs[key] = pairs.get(key, 0) + len(request.turns)
        bar.advance(len(request.turns))
    bar.finish()
    for (user, character), count in pairs.items():
        out(f"pair {user} · {character}: {count} turns observed")
    out("KZG: " + ", ".join(f"{name} {tiers[name]}" for name in ("high", "mid", "minimum", "rejected")
                            if name in tiers) + f"; {queued} queued for promotion")
    if args.promote:
        run = (await clients.call("pixie", "TriggerTask", pixie_pb2.TriggerTaskRequest(
            task="synapsen_promotion", force=True), timeout=600.0)).run  # fmt: skip
        out("promotion run (Pixie's continuous worker promotes at the same time; "
            "`novaberg pixie runs` lists its runs too):")
        _print_run(run, out)
    return 0


async def cmd_inspect(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = _pair(args)
    # The node first: an unknown one is an error before anything is printed.
    node = (await clients.call("lzg", "GetNode", lzg_pb2.GetNodeRequest(pair=pair, node_id=args.node))).node \
        if args.node else None
    stats = await clients.call("lzg", "GetPairStats", lzg_pb2.GetPairStatsRequest(pair=pair))
    session = await clients.call("kzg", "GetSession", kzg_pb2.GetSessionRequest(pair=pair))
    names = await _entity_names(clients, pair)
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
            f"{_beobachter(item.beobachter):9} {_short(item.inhalt, 70)}"
            f"{f'  [{themen}]' if themen else ''}{f'  {{{entities}}}' if entities else ''}")
    return 0


async def _inspect_node(
    clients: ServiceClients, pair: common_pb2.Pair, node: lzg_pb2.Node, names: Mapping[int, str],
    out: Callable[[str], None],
) -> int:
    node_id = node.id
    out(f"node #{node.id} \"{node.inhalt}\"")
    out(f"  {_beobachter(node.beobachter)}, {'active' if node.aktiv else 'inactive'}, "
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
    texts = await _node_texts(clients, pair)
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
            f"[{', '.join(edge.verbindungs_gruende)}] {'; '.join(shared)}  {_short(texts.get(other, ''), 50)}")
    return 0


async def cmd_graph(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = _pair(args)
    path = await write_graph(clients, pair, args.output, limit=args.limit, include_inactive=args.include_inactive)
    out(f"wrote {path}")
    return 0


def _check_graph_output(output: Path) -> None:
    """A graph file name the renderer can write, else :class:`CliError` naming the allowed suffixes."""
    from novaberg_core.graph_explorer import UnsupportedOutputError, check_output_suffix

    try:
        check_output_suffix(output)
    except UnsupportedOutputError as error:
        raise CliError(str(error)) from None


async def write_graph(
    clients: ServiceClients, pair: common_pb2.Pair, output: Path, *, limit: int = 5000, include_inactive: bool = False
) -> Path:
    """Renders the pair's graph to ``output`` (``.html`` explorer, ``.png``/``.svg`` picture): the
    ``limit`` strongest active nodes and, with ``include_inactive``, up to ``limit`` inactive ones.

    The inactive ones are chosen separately: ListNodes ranks by ``gewicht_decay``, where they sit
    below every active node (SPEC §5.7: < 0.1), so one ranked list would cut them off first.
    """
    from novaberg_core.graph_explorer import write_graph_file

    _check_graph_output(output)
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
    names = await _entity_names(clients, pair)
    title = f"Novaberg LZG · {pair.user_id} · {pair.character_id}"
    return write_graph_file(output, nodes, edges, entity_names=names, title=title)


def _format_record(record: log_pb2.LogRecord, full: bool) -> str:
    try:
        inhalt: Any = json.loads(record.inhalt_json) if record.inhalt_json else None
    except ValueError:
        inhalt = record.inhalt_json
    text = inhalt if isinstance(inhalt, str) else json.dumps(inhalt, ensure_ascii=False, separators=(", ", ": "))
    return f"{record.node}/{record.art}  {text if full else _short(str(text), 150)}"


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


async def _list_turns(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """The pair's most recent turns (rows of any art, or of ``--art``/``--node``), newest first."""
    pair = _pair(args)
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
        out(f"  {newest:%Y-%m-%d %H:%M}  {turn_id}  {_short(text, 60) if text else '-'}  [{arts}]")
    return 0


async def cmd_log(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
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


def _run_line(run: pixie_pb2.Run) -> str:
    started = from_timestamp(run.started_at).strftime("%Y-%m-%d %H:%M:%S") if run.HasField("started_at") else "-"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(run.counts.items()) if v) or "nothing to do"
    scope = f"  pairs {', '.join(f'{p.user_id} · {p.character_id}' for p in run.pairs)}" if run.pairs else ""
    return (f"run {run.id:<5} {run.task:20} {run.outcome:8} {started}"
            f"{f'  day {run.run_day}' if run.run_day else ''}{scope}  {counts}"
            f"{f'  error: {run.error}' if run.error else ''}")


COUNT_WORDS: Mapping[str, str] = {
    # synapsen_promotion (SPEC §5.3)
    "jobs": "promotion jobs read from the queue",
    "promoted_new": "became new nodes in the LZG",
    "already_promoted": "were nodes already (a replay after a crash); their KZG entries were retired",
    "duplicates": "repeated an existing node and reinforced it; their KZG entries stay",
    "half_reactivations": "woke a sleeping node (half-reactivation); their KZG entries stay",
    "expired": "had left the KZG (TTL) before they could be promoted",
    "kzg_deleted": "KZG entries deleted after becoming nodes",
    "kzg_delete_failed": "KZG entries not deleted after becoming nodes (they leave by their TTL)",
    "failed": "failed this time and will be retried after a backoff",
    "parked": "failed too often and were parked (novaberg pixie parked)",
    "deferred_locked": "were left for later: another Pixie worker (usually the continuous one) was promoting "
                       "the same pair at that moment and finishes them",
    "deferred_backoff": "are still waiting out the backoff after an earlier failure",
    "acked": "jobs acknowledged and removed from the queue",
    "erased": "named an entry of a pair erased meanwhile (a person's right): no node, acknowledged",
    "out_of_scope": "belonged to pairs outside this run's --pair list and were left to the worker",
    # synapsen_decay (SPEC §5.7, §8)
    "nodes_decayed": "nodes decayed (gewicht_decay lowered by the days since decay_am)",
    "nodes_deactivated": "nodes fell below 0.1 and became inactive (nothing is deleted)",
    "log_rows_deleted": "pipeline-log rows past the retention deleted",
    "kept_turn_roh": "turn_roh rows past the retention kept (they are never purged)",
    "runs_deleted": "finished Pixie runs past their retention deleted",
}
"""What each count of a Pixie run means, in words (``pixie trigger``, ``import --promote``)."""


def describe_counts(run: pixie_pb2.Run) -> list[str]:
    """One line per non-zero count of ``run``: the number, its name and what it means."""
    ordered = sorted(run.counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"  {value:>6} {key}: {COUNT_WORDS.get(key, 'see docs/glossary.md')}"
            for key, value in ordered if value]


def _print_run(run: pixie_pb2.Run, out: Callable[[str], None]) -> None:
    """A triggered run: its line, its counts in words, and how to run it anyway when it was skipped."""
    out(_run_line(run))
    for line in describe_counts(run):
        out(line)
    if run.outcome == "skipped":
        out(f"  skipped; `novaberg pixie trigger {run.task} --force` runs it anyway")


def _parse_pair(text: str) -> common_pb2.Pair:
    """``USER:CHARACTER`` (pair ids hold no ``:``, SPEC §0) → a Pair."""
    user, sep, character = text.partition(":")
    if not sep or not user or not character or ":" in character:
        raise CliError(f"--pair must be USER:CHARACTER, e.g. meister:nova, got {text!r}")
    return common_pb2.Pair(user_id=user, character_id=character)


async def cmd_pixie(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    action = args.pixie_command
    if action == "tasks":
        for task in (await clients.call("pixie", "ListTasks", pixie_pb2.ListTasksRequest())).tasks:
            out(f"{task.name:20} {task.schedule:14} priority {task.priority:.2f}"
                f"{'  PAUSED' if task.paused else ''}")
            if task.HasField("last_run"):
                out(f"  last: {_run_line(task.last_run)}")
    elif action == "runs":
        runs = (await clients.call("pixie", "ListRuns", pixie_pb2.ListRunsRequest(
            task=args.task or "", limit=args.limit))).runs  # fmt: skip
        for run in runs:
            out(_run_line(run))
        if not runs:
            out("no runs yet")
    elif action == "trigger":
        request = pixie_pb2.TriggerTaskRequest(
            task=args.task, force=args.force, pairs=[_parse_pair(p) for p in args.pair or ()]
        )
        as_of = _as_of(args.as_of)
        if as_of is not None:
            request.as_of.CopyFrom(to_timestamp(as_of))
        _print_run((await clients.call("pixie", "TriggerTask", request, timeout=600.0)).run, out)
    elif action in ("pause", "resume"):
        rpc, message = ("PauseTask", pixie_pb2.PauseTaskRequest) if action == "pause" else \
            ("ResumeTask", pixie_pb2.ResumeTaskRequest)
        task = await clients.call("pixie", rpc, message(task=args.task))
        out(f"{task.name}: {'paused' if task.paused else 'running'}")
    elif action == "parked":
        jobs = (await clients.call("pixie", "ListParkedJobs", pixie_pb2.ListParkedJobsRequest(limit=args.limit))).jobs
        for job in jobs:
            out(f"{job.job_id} {job.kzg_key} ({job.user_id} · {job.character_id}) attempts {job.attempts}: "
                f"{job.last_error}")
        if not jobs:
            out("no parked jobs")
    elif action in PIXIE_ACTIONS:
        return int(await PIXIE_ACTIONS[action](clients, args, out))
    return 0


async def cmd_demo(clients: ServiceClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from novaberg_core.demo import load_script, run_demo

    script = load_script(args.demo_file) if args.demo_file else load_script()
    await run_demo(clients, script, out=out)
    return 0


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


async def cmd_reembed(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """``novaberg reembed``: every vector of the KZG and LZG stores anew (services stopped), with progress."""
    from novaberg_core.embedded import stores_status
    from novaberg_core.embedding import profile_for, provider_from_env
    from novaberg_core.reembed import reembed_kzg, reembed_lzg

    redis_url = os.environ.get("NOVABERG_REDIS_URL", "")
    postgres_url = os.environ.get("NOVABERG_POSTGRES_URL", "")
    if not redis_url or not postgres_url:
        status = stores_status(Path(args.data_dir) / "stores")
        if status.redis is None or status.postgres is None or not status.running:
            raise CliError(f"no running stores in {args.data_dir}/stores and no NOVABERG_REDIS_URL/_POSTGRES_URL; "
                           f"start them with `python -m novaberg_core.embedded up --data-dir {args.data_dir}/stores`")
        redis_url = redis_url or status.redis.url
        postgres_url = postgres_url or status.postgres.url
    provider = provider_from_env()
    out(f"re-embedding with {provider.stamp}")
    if args.only in (None, "kzg"):
        bar = ProgressBar(0, label="KZG entries")
        done = await reembed_kzg(redis_url, provider, lambda n, total: _progress(bar, n, total))
        bar.finish()
        out(f"KZG: {done.vectors} entries re-embedded")
    if args.only in (None, "lzg"):
        bar = ProgressBar(0, label="LZG nodes")
        threshold = profile_for(provider.model_id).embedding_layer
        lzg = await reembed_lzg(postgres_url, provider, threshold, lambda n, total: _progress(bar, n, total))
        bar.finish()
        out(f"LZG: {lzg.vectors} nodes re-embedded, {lzg.edges} edge cosines recomputed")
    return 0


def _progress(bar: ProgressBar, done: int, total: int) -> None:
    bar.total = total
    bar.advance(done - bar.done)


async def run_command(
    args: argparse.Namespace,
    addresses: Mapping[str, str],
    out: Callable[[str], None] = print,
    *,
    tls: TlsConfig = PLAINTEXT,
) -> int:
    """Runs one client command against ``addresses`` (connecting per ``tls``)."""
    handler, needed = COMMANDS[args.command]
    _require(addresses, *needed)
    async with ServiceClients(addresses, tls=tls) as clients:
        result: int = await handler(clients, args, out)
        return result


# --------------------------------------------------------------------------- up


def cli_command(data_dir: Path | None = None) -> str:
    """How to run ``novaberg`` from this shell: ``novaberg`` when it is on PATH, else the venv's
    script (``.venv/bin/novaberg``), else ``python -m novaberg_core.cli``; plus ``--data-dir``
    when it is not the default."""
    script = Path(sys.executable).parent / "novaberg"
    found = shutil.which("novaberg")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        command = "novaberg"
    elif script.exists():
        try:
            command = str(script.absolute().relative_to(Path.cwd()))
        except ValueError:
            command = str(script.absolute())
    else:
        command = f"{sys.executable} -m novaberg_core.cli"
    if data_dir is not None and data_dir != DEFAULT_DATA_DIR:
        command += f" --data-dir {data_dir}"
    return command


class _Launcher:
    """What ``up`` needs to end cleanly: SIGINT, SIGTERM and SIGHUP cancel the main task once (its
    ``finally`` stops the services), and output to a reader that left (``make run | tee`` after
    Ctrl-C: SIGPIPE, seen as BrokenPipeError) is dropped and ends the stack the same way."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.task = asyncio.current_task()
        self.reason: str | None = None
        self.exit_code = 0
        self.stopping = False
        """Set while the services stop: further signals are noted, not acted on (the stop is bounded)."""
        loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            loop.add_signal_handler(sig, self.end, sig.name, 128 + sig.value)

    def end(self, reason: str, exit_code: int) -> None:
        """Cancels the main task (once; a later signal changes nothing, the stop is under way)."""
        if self.stopping or self.reason is not None:
            if reason.startswith("SIG") and not reason.startswith("SIGPIPE"):
                self.say(f"{reason}: stopping already (each service gets at most 10 s), please wait")
            return
        if self.task is not None:
            self.reason, self.exit_code = reason, exit_code
            self.task.cancel()

    def say(self, line: str) -> None:
        """Print a line; when the reader has gone, drop output from now on and end the stack."""
        try:
            print(line, flush=True)
        except BrokenPipeError:
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            self.end("SIGPIPE (the output's reader has gone)", 141)

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self.SIGNALS:
            loop.remove_signal_handler(sig)


async def _up(data_dir: Path, once: bool, demo: bool = True, demo_file: Path | None = None) -> int:
    from novaberg_core.demo import load_script, run_demo
    from novaberg_core.stack import SERVICES, Stack, start_stack

    script = load_script(demo_file) if demo_file else (load_script() if demo else None)
    running = running_stack_pid(data_dir)
    if running is not None:
        raise CliError(f"a stack started from {data_dir} is already running (pid {running}); stop it first "
                       "(Ctrl-C in its terminal) or use another --data-dir")
    launcher = _Launcher()
    say = launcher.say
    stack: Stack | None = None
    stack_file = data_dir / STACK_FILE
    serving = False
    try:
        say(f"starting embedded stores and {len(SERVICES)} services in {data_dir} …")
        stack = await start_stack(data_dir)
        say(f"postgres  {stack.urls.postgres_url}")
        say(f"redis     {stack.urls.redis_url}")
        for service in SERVICES:
            say(f"{service:9} {stack.addresses[service]}  SERVING  (log: {stack.log_path(service)}; "
                f"metrics: {stack.metrics_url(service)})")
        if stack.client_tls.enabled:
            say(f"mTLS      certificates of a throwaway CA in {stack.data_dir / 'tls'} (the CLI: operator)")
        stack_file = write_stack_file(
            data_dir, stack.addresses,
            {"postgres_url": stack.urls.postgres_url, "redis_url": stack.urls.redis_url,
             "tls": stack.client_tls.as_env(), "services": stack.pids,
             "metrics": {s: stack.metrics_url(s) for s in stack.metrics_ports}},
        )  # fmt: skip
        say(f"stack file {stack_file} (other novaberg commands find the services through it)")
        demo_user: str | None = None
        if script is not None:
            say("")
            async with ServiceClients(stack.addresses, tls=stack.client_tls) as clients:
                result = await run_demo(clients, script, out=say)
                graph = await write_graph(
                    clients, result.pair, data_dir / f"graph-{result.pair.user_id}-{result.pair.character_id}.html",
                    include_inactive=True,  # the demo's decay leaves inactive nodes: show them
                )
            say(f"\nthe memory graph of {result.pair.user_id} · {result.pair.character_id}: {graph}")
            demo_user = result.pair.user_id
        if once:
            return 0
        command = cli_command(data_dir)
        if demo_user is None:
            say(f"serving; try `{command} inspect` — Ctrl-C stops everything")
        else:
            user = "" if demo_user == DEFAULT_USER else f" --user {demo_user}"
            say(f"serving; try `{command} recall \"Was weißt du noch über Anna?\"{user}` — "
                "Ctrl-C stops everything")
        serving = True
        await asyncio.Event().wait()  # until a signal (or a gone reader) cancels this task
        return 0
    except asyncio.CancelledError:
        if launcher.reason is None:
            raise
        if not serving:
            say(f"interrupted by {launcher.reason}")
        return 0 if serving else launcher.exit_code
    finally:
        launcher.stopping = True
        try:
            if stack is not None:
                say("stopping services …")
                with contextlib.suppress(OSError):
                    stack_file.unlink()
                await stack.stop()
        finally:
            launcher.close()


# --------------------------------------------------------------------------- parser


def _pair_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", default=DEFAULT_USER, help=f"user_id of the pair (default {DEFAULT_USER})")
    parser.add_argument("--character", default=DEFAULT_CHARACTER,
                        help=f"character_id of the pair (default {DEFAULT_CHARACTER})")


GLOSSARY = "docs/glossary.md"
"""The German data names (SPEC naming rule) and the seed abbreviations, one line each."""

_EPILOG = f"""\
Output is English; the spec's German data names (lzg_knoten, gewicht_decay, salienz, beobachter,
turn_roh, synapsen_decay …) keep their names. Each is explained in one line in the glossary
{GLOSSARY} (here: {Path(__file__).resolve().parents[2] / GLOSSARY}).
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
    runs.add_argument("--task", help="only runs of this task (synapsen_promotion or synapsen_decay)")
    runs.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20)")
    trigger = action("trigger", "run a task now")
    trigger.add_argument("task", help="synapsen_promotion or synapsen_decay")
    trigger.add_argument("--as-of", help="the day a daily run belongs to (ISO time)")
    trigger.add_argument("--force", action="store_true", help="run even if paused or already run that day")
    trigger.add_argument("--pair", action="append", metavar="USER:CHARACTER",
                         help="limit the run to this pair (repeatable; default all pairs). A run with --as-of in "
                              "the future must name its pairs")
    for name in ("pause", "resume"):
        action(name, f"{name} a task").add_argument("task", help="synapsen_promotion or synapsen_decay")
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
                return asyncio.run(_up(args.data_dir, args.once, not args.no_demo, args.demo_file))
            return 130
        if args.command == "reembed":
            return asyncio.run(cmd_reembed(args, print))
        if args.command == "graph":
            if args.output is None:
                base = args.data_dir or DEFAULT_DATA_DIR
                args.output = base / f"graph-{args.user}-{args.character}.html"
            _check_graph_output(args.output)  # before any call: a wrong suffix is a usage error
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


if __name__ == "__main__":
    sys.exit(main())
