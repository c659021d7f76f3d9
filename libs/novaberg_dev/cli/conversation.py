"""Turns into the stack and dossiers out of it: ``novaberg observe``, ``recall`` and ``import`` (LoCoMo or
``{"turns": [...]}`` conversation files).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, Unpack

from google.protobuf.json_format import MessageToDict

from novaberg.common.v1 import common_pb2
from novaberg.kzg.v1 import kzg_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2
from novaberg_core.maintenance import TASK_PROMOTION
from novaberg_core.peers import PEER_OUTAGES
from novaberg_core.timeutil import to_timestamp
from novaberg_dev.cli.common import (
    DEFAULT_CHARACTER,
    DEFAULT_USER,
    CliError,
    ProgressBar,
    entity_names,
    node_texts,
    pair_of,
    parse_as_of,
)
from novaberg_dev.cli.maintenance import print_run
from novaberg_dev.clients import DevClients, ServiceCallError

__all__ = [
    "IMPORT_BATCH",
    "ImportOptions",
    "ImportedTurn",
    "cmd_import",
    "cmd_observe",
    "cmd_recall",
    "observe_batches",
    "parse_locomo",
    "parse_locomo_date",
    "parse_turn_file",
]


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


class ImportOptions(TypedDict, total=False):
    """What ``novaberg import`` takes besides the file (keywords of :func:`parse_turn_file`)."""

    samples: Sequence[str]
    """The LoCoMo samples to import (all when empty); a ``turns`` file has none."""
    user_id: str | None
    """The pair's user instead of the file's (LoCoMo: ``<sample>-<speaker_a>``, else the default user)."""
    character_id: str | None
    """The pair's character instead of the file's (LoCoMo: ``speaker_b``, else the default character)."""


def parse_locomo(data: Any, **options: Unpack[ImportOptions]) -> list[ImportedTurn]:
    """Turns of LoCoMo conversations (speaker_a → user, speaker_b → the character), in session order.

    Each session's ``session_N_date_time`` is the first turn's ``as_of``; later turns follow 30 s apart.
    A turn's id is ``{sample_id}:{dia_id}`` (:func:`distinct_turn_ids` where a dia_id repeats).
    """
    if not isinstance(data, list):
        raise CliError("a LoCoMo file is a JSON list of conversations")
    wanted = set(options.get("samples", ()))
    user_id, character_id = options.get("user_id"), options.get("character_id")
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
    return distinct_turn_ids(turns)


def distinct_turn_ids(turns: Sequence[ImportedTurn]) -> list[ImportedTurn]:
    """``turns`` with every (pair, turn_id, role) once: a repeat in the file gets ``~2``, ``~3``… appended.

    The pipeline takes a turn_id as the turn's identity (a resent turn is written once) and refuses a
    batch naming one twice; a file may repeat an id by mistake (a hand-made file, a data slip), and
    its turns are kept all the same — the same ids on every run of the import, so a second run of it
    finds them.
    """
    seen: dict[tuple[str, str, str, int], int] = {}
    distinct: list[ImportedTurn] = []
    for turn in turns:
        key = (turn.pair.user_id, turn.pair.character_id, turn.turn_id, turn.beobachter)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            turn = dataclasses.replace(turn, turn_id=f"{turn.turn_id}~{seen[key]}")
        distinct.append(turn)
    return distinct


def _file_turn_id(index: int, role: str, text: str) -> str:
    """The id of a file's turn that names none: its place and a digest of what it says, the same on
    every run of the import (so a run after a failed one finds the turns that arrived)."""
    digest = hashlib.blake2b(f"{role}\n{text}".encode(), digest_size=6).hexdigest()
    return f"turn-{index + 1}-{digest}"


def parse_turn_file(data: Any, **options: Unpack[ImportOptions]) -> list[ImportedTurn]:
    """A conversation file: LoCoMo, or ``{"turns": [{"role": "user"|"assistant", "text", "as_of"?}]}``;
    each (pair, turn_id, role) once (:func:`distinct_turn_ids`)."""
    if isinstance(data, list) and all(isinstance(s, dict) and "conversation" in s for s in data):
        return parse_locomo(data, **options)
    if isinstance(data, dict) and isinstance(data.get("turns"), list):
        pair = common_pb2.Pair(
            user_id=options.get("user_id") or DEFAULT_USER,
            character_id=options.get("character_id") or DEFAULT_CHARACTER,
        )
        turns = []
        for i, raw in enumerate(data["turns"]):
            role = raw.get("role") if isinstance(raw, dict) else None
            if role not in ("user", "assistant") or not str(raw.get("text", "")).strip():
                raise CliError(f"turns[{i}] needs role 'user' or 'assistant' and a non-empty text")
            text = str(raw["text"]).strip()
            turns.append(ImportedTurn(
                pair=pair, turn_id=str(raw.get("turn_id") or _file_turn_id(i, role, text)),
                beobachter=common_pb2.BEOBACHTER_USER if role == "user" else common_pb2.BEOBACHTER_ASSISTANT,
                text=text, as_of=parse_as_of(raw.get("as_of")),
            ))  # fmt: skip
        return distinct_turn_ids(turns)
    raise CliError("unknown conversation format: expected a LoCoMo list or an object with 'turns'")


# --------------------------------------------------------------------------- commands


async def cmd_observe(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    pair = pair_of(args)
    request = pipeline_pb2.ObserveTurnRequest(
        pair=pair, turn_id=args.turn_id or str(uuid.uuid4()), text=args.text,
        beobachter=common_pb2.BEOBACHTER_ASSISTANT if args.assistant else common_pb2.BEOBACHTER_USER,
    )  # fmt: skip
    as_of = parse_as_of(args.as_of)
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
            names = await entity_names(clients, pair)
    entities = ", ".join(names.get(i, f"#{i}") for i in a.magnets.entitaet_ids) or "-"
    out(f"analysis ({'by the analyzer' if response.analyzed_by_service else 'given'}): salienz "
        f"{a.salience.salienz:.2f}, themen {', '.join(a.salience.themen) or '-'}, "
        f"emotion {a.ei.emotion or '-'}, entities {entities}"
        f"{f', timeline #{a.magnets.timeline_id}' if a.magnets.HasField('timeline_id') else ''}")
    if stored.canon_rejections:
        out(f"canon rejections: {', '.join(stored.canon_rejections)}")
    return 0


async def cmd_recall(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from novaberg_dev.demo import format_dossier

    pair = pair_of(args)
    request = pipeline_pb2.BuildDossierRequest(
        pair=pair, turn_id=str(uuid.uuid4()), query_text=args.question, nova_emotion=args.nova_emotion or "",
        readers=[args.reader], user_name=args.user_name, character_name=args.character_name,
        intentionen=args.intention or [],
    )  # fmt: skip
    as_of = parse_as_of(args.as_of)
    if as_of is not None:
        request.as_of.CopyFrom(to_timestamp(as_of))
    dossier = await clients.call("pipeline", "BuildDossier", request)
    if args.json:
        out(json.dumps(MessageToDict(dossier, preserving_proto_field_name=True), ensure_ascii=False, indent=2))
        return 0
    names = await entity_names(clients, pair)
    texts = await node_texts(clients, pair)
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
IMPORT_RETRY_PAUSES_S: tuple[float, ...] = (1.0, 5.0)
"""Pauses before a batch is sent again after an outage (so three attempts): ObserveTurns is safe to
resend, the turns that arrived are not written twice."""
_OUTAGES = frozenset(error.status_code.name for error in PEER_OUTAGES)
"""The statuses of a peer that could not answer now (novaberg_core.peers): a batch is sent again after them."""


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


async def _observe_batch(
    clients: DevClients, request: pipeline_pb2.ObserveTurnsRequest, bar: ProgressBar
) -> pipeline_pb2.ObserveTurnsResponse:
    """One ObserveTurns call, sent again after an outage (IMPORT_RETRY_PAUSES_S): it is safe to resend.
    Each resend is announced on a line of its own above the import's progress."""
    for pause in (*IMPORT_RETRY_PAUSES_S, None):
        try:
            response: pipeline_pb2.ObserveTurnsResponse = await clients.call(
                "pipeline", "ObserveTurns", request, timeout=600.0
            )
            return response
        except ServiceCallError as error:
            if pause is None or error.code not in _OUTAGES:
                raise
            bar.note(f"{error.code}: {error.details}; sending the batch again in {pause:g} s "
                     "(the turns that arrived are not written twice)")  # fmt: skip
            await asyncio.sleep(pause)
    raise AssertionError("the last attempt returns or raises")


async def cmd_import(clients: DevClients, args: argparse.Namespace, out: Callable[[str], None]) -> int:
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
    already: dict[tuple[str, str], int] = {}
    # Batches of one pair's turns in file order (ObserveTurns: the result of ObserveTurn per turn).
    for request in observe_batches(turns):
        try:
            response = await _observe_batch(clients, request, bar)
        except ServiceCallError as error:
            bar.finish()
            raise CliError(
                f"{error} — the turns that arrived are kept; run the same import again to add the rest"
            ) from None
        key = (request.pair.user_id, request.pair.character_id)
        for result in response.results:
            if result.repeated:  # observed by an earlier run of this import; counted there
                already[key] = already.get(key, 0) + 1
                continue
            stored = result.kzg
            tier = ("rejected" if stored.outcome == kzg_pb2.STORE_OUTCOME_REJECTED_BELOW_GATE
                    else kzg_pb2.Tier.Name(stored.tier).removeprefix("TIER_").lower())
            tiers[tier] = tiers.get(tier, 0) + 1
            queued += int(stored.queued_for_promotion) + stored.reinforced_queued_count
        pairs[key] = pairs.get(key, 0) + len(request.turns)
        bar.advance(len(request.turns))
    bar.finish()
    for (user, character), count in pairs.items():
        before = f", {already[(user, character)]} of them there already" if (user, character) in already else ""
        out(f"pair {user} · {character}: {count} turns observed{before}")
    written = ", ".join(f"{name} {tiers[name]}" for name in ("high", "mid", "minimum", "rejected") if name in tiers)
    out(f"KZG: {written or 'nothing new'}; {queued} queued for promotion")
    if args.promote:
        run = (await clients.call("pixie", "TriggerTask", pixie_pb2.TriggerTaskRequest(
            task=TASK_PROMOTION, force=True), timeout=600.0)).run  # fmt: skip
        out("promotion run (Pixie's continuous worker promotes at the same time; "
            "`novaberg pixie runs` lists its runs too):")
        print_run(run, out)
    return 0
