"""The demo conversation as data: ``data/demo_conversation.json`` (or another file of its format) read and
checked into a :class:`DemoScript`, and the simulated calendar it is replayed on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from novaberg_core.timeutil import utc_now

__all__ = [
    "DEFAULT_DEMO_PATH",
    "AnalysisSpec",
    "DemoScript",
    "ScriptError",
    "TimelineSpec",
    "TurnSpec",
    "load_script",
    "simulated_start",
]

DEFAULT_DEMO_PATH = Path(__file__).resolve().parents[1] / "data" / "demo_conversation.json"
"""The demo conversation shipped with the libs."""


@dataclass(frozen=True)
class AnalysisSpec:
    """A scripted upstream analysis of one turn (SPEC §4.1–§4.2): deterministic instead of analyzed."""

    inhalt: str
    salienz: float
    themen: tuple[str, ...]
    gedaechtnistyp: str
    dimension: str
    emotion: str
    arousal: float
    intentionen: tuple[str, ...]
    entitaeten: tuple[str, ...]
    """Entity names, resolved through LZG ResolveEntities(create_missing=True)."""
    timeline: str | None = None
    """Key into the script's ``timelines``."""
    modus: str = "alltag"


@dataclass(frozen=True)
class TimelineSpec:
    """A timeline ref (SPEC §5.1) at a simulated day."""

    key: str
    day: int
    at: time
    praezision: str
    titel: str
    themen: tuple[str, ...]


@dataclass(frozen=True)
class TurnSpec:
    """One exchange: the user's turn, Nova's scripted answer, the cluster of this turn."""

    day: int
    at: time
    user: str
    nova: str
    cluster: str
    analysis: AnalysisSpec | None
    """None → the pipeline's analyzer produces it."""
    nova_analysis: AnalysisSpec | None
    nova_emotion: str | None = None


@dataclass(frozen=True)
class DemoScript:
    """The whole demo: pair, names, registry hints, turns, the pause and the questions."""

    title: str
    user_id: str
    character_id: str
    user_name: str
    character_name: str
    nova_emotion: str
    entities: Mapping[str, str]
    """Entity name → typ for newly created entities."""
    timelines: Mapping[str, TimelineSpec]
    turns: tuple[TurnSpec, ...]
    pause_days: int
    pause_label: str
    questions: tuple[TurnSpec, ...]

    @property
    def last_day(self) -> int:
        return max((t.day for t in self.turns), default=0)


class ScriptError(ValueError):
    """The demo file is malformed; the message names the field."""


def _req(raw: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if key not in raw:
        raise ScriptError(f"{where}.{key} is missing")
    value = raw[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ScriptError(f"{where}.{key} must be {kind}, got {value!r}")
    return value


def _at(raw: Mapping[str, Any], where: str) -> time:
    text = raw.get("time", "12:00")
    try:
        hour, minute = (int(part) for part in str(text).split(":"))
        return time(hour, minute)
    except ValueError:
        raise ScriptError(f"{where}.time must be HH:MM, got {text!r}") from None


def _analysis(raw: Any, where: str) -> AnalysisSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where} must be an object")
    salienz = float(_req(raw, "salienz", where, (int, float)))
    if not 0.0 <= salienz <= 1.0:
        raise ScriptError(f"{where}.salienz must be in 0..1, got {salienz}")
    return AnalysisSpec(
        inhalt=_req(raw, "inhalt", where, str),
        salienz=salienz,
        themen=tuple(_req(raw, "themen", where, list)),
        gedaechtnistyp=raw.get("gedaechtnistyp", "episodisch"),
        dimension=raw.get("dimension", ""),
        emotion=raw.get("emotion", ""),
        arousal=float(raw.get("arousal", 0.0)),
        intentionen=tuple(raw.get("intentionen", ())),
        entitaeten=tuple(raw.get("entitaeten", ())),
        timeline=raw.get("timeline"),
        modus=raw.get("modus", "alltag"),
    )


def _turn(raw: Any, where: str, *, question: bool) -> TurnSpec:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where} must be an object")
    return TurnSpec(
        day=0 if question else int(_req(raw, "day", where, int)),
        at=_at(raw, where),
        user=_req(raw, "user", where, str),
        nova=_req(raw, "nova", where, str),
        cluster=_req(raw, "cluster", where, str),
        analysis=_analysis(raw.get("analysis"), f"{where}.analysis"),
        nova_analysis=_analysis(raw.get("nova_analysis"), f"{where}.nova_analysis"),
        nova_emotion=raw.get("nova_emotion"),
    )


def load_script(path: Path | str = DEFAULT_DEMO_PATH) -> DemoScript:
    """Reads and checks a demo file; a malformed one raises :class:`ScriptError` naming the field."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    pair = _req(raw, "pair", "demo", dict)
    timelines = {
        key: TimelineSpec(
            key=key,
            day=int(_req(spec, "day", f"timelines.{key}", int)),
            at=_at(spec, f"timelines.{key}"),
            praezision=_req(spec, "praezision", f"timelines.{key}", str),
            titel=spec.get("titel", key),
            themen=tuple(spec.get("themen", ())),
        )
        for key, spec in raw.get("timelines", {}).items()
    }
    turns = tuple(_turn(t, f"turns[{i}]", question=False) for i, t in enumerate(_req(raw, "turns", "demo", list)))
    questions = tuple(
        _turn(q, f"questions[{i}]", question=True) for i, q in enumerate(raw.get("questions", []))
    )
    for i, turn in enumerate((*turns, *questions)):
        for spec in (turn.analysis, turn.nova_analysis):
            if spec is not None and spec.timeline is not None and spec.timeline not in timelines:
                raise ScriptError(f"turn {i}: timeline {spec.timeline!r} is not in 'timelines'")
    if any(later.day < earlier.day for earlier, later in itertools.pairwise(turns)):
        raise ScriptError("turns must be in order of their day")
    pause = raw.get("pause", {})
    return DemoScript(
        title=raw.get("title", "Novaberg demo"),
        user_id=_req(pair, "user_id", "pair", str),
        character_id=_req(pair, "character_id", "pair", str),
        user_name=raw.get("user_name", "User"),
        character_name=raw.get("character_name", "Nova"),
        nova_emotion=raw.get("nova_emotion", ""),
        entities=dict(raw.get("entities", {})),
        timelines=timelines,
        turns=turns,
        pause_days=int(pause.get("days", 90)),
        pause_label=str(pause.get("label", f"{int(pause.get('days', 90))} days later")),
        questions=questions,
    )


def simulated_start(last_day: int, now: datetime | None = None) -> datetime:
    """Midnight (UTC) of the Monday that starts the simulated weeks, so the last turn is not after today."""
    today = (now or utc_now()).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=last_day)
    return first - timedelta(days=first.weekday())
