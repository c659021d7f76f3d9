"""Turn analyzers: produce the salience result of a turn when the caller sends raw text (SPEC §7).

One interface, two implementations:

- :class:`OfflineAnalyzer` — the rules of :mod:`services.pipeline.text_rules` (keyword themes,
  capitalised name mentions, a dated mention, a transparent salience heuristic), no model.
- :class:`OllamaChatAnalyzer` — asks a chat model through Ollama's ``/api/chat`` with
  ``format="json"`` and validates every field of the answer against the canon
  (:mod:`novaberg_core.canon`) before anything is used.

Both resolve entity mentions to ids through the pair's LZG entity registry (``ResolveEntities``,
unknown names created) and a dated mention to a timeline ref (``UpsertTimeline`` with its
``praezision``, an existing ref of the same instant and precision reused) — through the
:class:`EntityRegistry` port, so the rules stay testable without a server.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

import httpx
import ollama

from novaberg.common.v1 import common_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg_core.canon import Canon, default_canon
from novaberg_core.errors import Unavailable
from novaberg_core.limits import STORE_GATE_RAW  # re-exported: below it no entity or timeline is created
from services.pipeline import text_rules
from services.pipeline.dates import PRAEZISIONEN, DatedMention

__all__ = [
    "GEDAECHTNISTYPEN",
    "STORE_GATE_RAW",
    "AnalysisOutputError",
    "AnalyzedTurn",
    "Analyzer",
    "EntityRegistry",
    "OfflineAnalyzer",
    "OllamaChatAnalyzer",
    "normalise_instant",
]

GEDAECHTNISTYPEN = ("episodisch", "semantisch", "prozedural")
"""Allowed ``gedaechtnistyp`` values (kzg §2)."""

NEW_ENTITY_TYP = "unbekannt"
"""``typ`` of entities an analyzer creates; a person or a curator may refine it later."""

MAX_THEMEN = text_rules.MAX_THEMEN


class EntityRegistry(Protocol):
    """The pair's entity and timeline registry (the LZG service in production)."""

    async def resolve_entities(
        self, pair: common_pb2.Pair, names: Sequence[str], *, create_missing: bool
    ) -> list[int]:
        """Ids in the order of ``names`` (0 = unknown and not created)."""
        ...

    async def timeline_for(
        self, pair: common_pb2.Pair, mention: DatedMention, *, titel: str, themen: Sequence[str]
    ) -> int | None:
        """The id of a timeline ref at ``mention.zeitpunkt`` with ``mention.praezision`` (created if new);
        None when the registry gave no answer and the turn goes without (services.pipeline.deadline)."""
        ...


@dataclass(frozen=True, slots=True)
class AnalyzedTurn:
    """An analyzer's result: the analysis used for the KZG write, and what produced it (for the log)."""

    analysis: pipeline_pb2.TurnAnalysis
    herkunft: str
    details: dict[str, Any] = field(default_factory=dict)


class Analyzer(Protocol):
    """Produces the :class:`TurnAnalysis` of one turn's text (SPEC §7)."""

    name: str

    async def analyze(
        self, text: str, pair: common_pb2.Pair, beobachter: common_pb2.Beobachter, as_of: datetime,
        *, question_before: str = "",
    ) -> AnalyzedTurn:
        """``question_before``: the other speaker's question this turn follows in the session ("" for none)."""
        ...


def normalise_instant(day: date | datetime, praezision: str) -> datetime:
    """The start of the unit ``praezision`` containing ``day`` (UTC): day, ISO week, month, quarter, year."""
    if praezision not in PRAEZISIONEN:
        raise ValueError(f"praezision must be one of {', '.join(PRAEZISIONEN)}, got {praezision!r}")
    if isinstance(day, datetime):
        moment = day.astimezone(UTC)
        if praezision == "minute":
            return moment.replace(second=0, microsecond=0)
        if praezision == "stunde":
            return moment.replace(minute=0, second=0, microsecond=0)
        base = moment.date()
    else:
        base = day
    start = datetime(base.year, base.month, base.day, tzinfo=UTC)
    if praezision in ("minute", "stunde", "tag"):
        return start
    if praezision == "woche":
        return start - timedelta(days=start.weekday())
    if praezision == "monat":
        return start.replace(day=1)
    if praezision == "quartal":
        return start.replace(month=3 * ((start.month - 1) // 3) + 1, day=1)
    return start.replace(month=1, day=1)


async def _ids(registry: EntityRegistry, pair: common_pb2.Pair, names: Sequence[str], *, create: bool) -> list[int]:
    return await registry.resolve_entities(pair, names, create_missing=create) if names else []


def ordered_ids(resolved: Mapping[str, int], mentions: Sequence[str]) -> list[int]:
    """Entity ids in order of first mention, each once, unknown (0) left out (SPEC §4.1)."""
    return list(dict.fromkeys(resolved[name] for name in mentions if resolved.get(name, 0) > 0))


def _titel(text: str) -> str:
    snippet = " ".join(text.split())
    return snippet if len(snippet) <= 120 else snippet[:117] + "..."


async def _timeline_id(
    registry: EntityRegistry, pair: common_pb2.Pair, dated: DatedMention | None, *, stored: bool, text: str,
    themen: Sequence[str],
) -> int | None:
    """The timeline ref of a stored turn's dated mention (created if new); None for no date or an unstored turn."""
    if not stored or dated is None:
        return None
    return await registry.timeline_for(pair, dated, titel=_titel(text), themen=themen)


def _turn_analysis(
    salience: common_pb2.SalienceResult, ei: common_pb2.EiFields, entity_ids: list[int], timeline_id: int | None,
    inhalt: str,
) -> pipeline_pb2.TurnAnalysis:
    """An analyzer's result: the magnets are the resolved entities and the timeline ref, if any (SPEC §4.1)."""
    magnets = common_pb2.Magnets(entitaet_ids=entity_ids)
    if timeline_id is not None:
        magnets.timeline_id = timeline_id
    return pipeline_pb2.TurnAnalysis(salience=salience, ei=ei, magnets=magnets, inhalt=inhalt)


class OfflineAnalyzer:
    """The rule-based default (module docstring of :mod:`services.pipeline.text_rules`)."""

    name = "offline"

    def __init__(self, registry: EntityRegistry, canon: Canon | None = None) -> None:
        self.registry = registry
        self.canon = canon or default_canon()

    async def analyze(
        self, text: str, pair: common_pb2.Pair, beobachter: common_pb2.Beobachter, as_of: datetime,
        *, question_before: str = "",
    ) -> AnalyzedTurn:
        findings = text_rules.analyze_text(text, as_of, answers=bool(question_before))
        mentions = list(findings.mentions.mentions)
        candidates = [name for name in mentions if name in findings.mentions.candidates]
        others = [name for name in mentions if name not in findings.mentions.candidates]
        dated = findings.dated
        if candidates:
            # A name candidate is an entity cue by itself: the score is known before any lookup, so
            # the registered names, the candidates (created when the turn is stored) and the
            # timeline ref are resolved in one parallel round trip.
            cues = {**findings.cues, "entity": True}
            salienz = text_rules.salience_heuristic(has_content=bool(findings.themen), cues=cues)
            stored = salienz >= STORE_GATE_RAW
            other_ids, candidate_ids, timeline_id = await asyncio.gather(
                _ids(self.registry, pair, others, create=False),
                _ids(self.registry, pair, candidates, create=stored),
                _timeline_id(self.registry, pair, dated, stored=stored, text=text, themen=findings.themen),
            )
        else:
            other_ids, candidate_ids = await _ids(self.registry, pair, others, create=False), []
            cues = {**findings.cues, "entity": any(i > 0 for i in other_ids)}
            salienz = text_rules.salience_heuristic(has_content=bool(findings.themen), cues=cues)
            stored = salienz >= STORE_GATE_RAW
            timeline_id = await _timeline_id(self.registry, pair, dated, stored=stored, text=text, themen=findings.themen)
        resolved = {**dict(zip(others, other_ids, strict=True)), **dict(zip(candidates, candidate_ids, strict=True))}
        ids = ordered_ids(resolved, mentions)
        intentionen = [i for i in findings.intentionen if i in self.canon.intentionen]
        analysis = _turn_analysis(
            common_pb2.SalienceResult(
                salienz=salienz, themen=findings.themen, gedaechtnistyp=findings.gedaechtnistyp,
                dimension=findings.dimension,
            ),
            common_pb2.EiFields(emotion=findings.emotion, arousal=findings.arousal, intentionen=intentionen),
            ids, timeline_id, text,
        )  # fmt: skip
        details: dict[str, Any] = {
            "regeln": "text_rules",
            "cues": cues,
            "emotion_treffer": findings.emotion_hits,
            "erwaehnungen": mentions,
            "kandidaten": candidates if stored else [],
            "datum": findings.dated.record() if findings.dated else None,
            "unter_schwelle": not stored,
        }
        return AnalyzedTurn(analysis=analysis, herkunft=self.name, details=details)


# --- Ollama chat ------------------------------------------------------------------------------


class AnalysisOutputError(ValueError):
    """The chat model's answer does not satisfy the output contract; the message says which field."""


_SYSTEM_PROMPT = """Du analysierst eine Gesprächsäußerung für das Gedächtnis einer KI-Begleiterin.
Antworte NUR mit einem JSON-Objekt mit genau diesen Feldern:
{{
  "salienz": Zahl 0..1 (wie wichtig ist die Äußerung für die Beziehung, 0.3 = gerade merkenswert, ≥0.7 = sehr wichtig),
  "themen": Liste von 1 bis {max_themen} kurzen Themen-Stichwörtern (Kleinbuchstaben),
  "gedaechtnistyp": einer von {gedaechtnistypen},
  "dimension": ein Wort für den Lebensbereich (z. B. beziehungen, interessen, gesundheit, arbeit, allgemein),
  "emotion": eine von freude, vertrauen, angst, ueberraschung, traurigkeit, ekel, wut, erwartung, neutral,
  "arousal": Zahl 0..1,
  "modus": einer von {modus} oder "",
  "intentionen": Liste aus {intentionen},
  "entitaeten": Liste der genannten Eigennamen (Personen, Orte, Organisationen) genau wie im Text,
  "datum": null oder {{"datum": "JJJJ-MM-TT", "praezision": einer von {praezisionen}}} für ein genanntes Datum,
  "inhalt": die Aussage in einem knappen Satz
}}
Relative Angaben wie "morgen" oder "letzte Woche" rechnest du vom Bezugszeitpunkt aus.
Steht "Vorher gefragt" dabei, antwortet die Äußerung auf diese Frage: bewerte und fasse sie mit dem, was
gefragt war (nur die Äußerung selbst ist zu analysieren)."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AnalysisOutputError(message)


def _unit(raw: Mapping[str, Any], name: str) -> float:
    value = raw.get(name)
    _require(
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1,
        f"{name} must be a number within 0..1, got {value!r}",
    )
    return float(value)  # type: ignore[arg-type]


def _strings(raw: Mapping[str, Any], name: str) -> list[str]:
    value = raw.get(name, [])
    _require(isinstance(value, list) and all(isinstance(v, str) for v in value), f"{name} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def _string(raw: Mapping[str, Any], name: str) -> str:
    value = raw.get(name, "")
    if value is None:
        return ""
    _require(isinstance(value, str), f"{name} must be a string, got {value!r}")
    return str(value).strip()


@dataclass(frozen=True, slots=True)
class ValidatedOutput:
    """The chat model's answer after validation against the output contract and the canon."""

    salienz: float
    themen: list[str]
    gedaechtnistyp: str
    dimension: str
    emotion: str
    arousal: float
    modus: str
    intentionen: list[str]
    entitaeten: list[str]
    datum: DatedMention | None
    inhalt: str
    rejections: list[str]


def validate_output(content: str, canon: Canon) -> ValidatedOutput:
    """Parse and check the model's JSON (fields as in the system prompt).

    Structural faults (not JSON, a missing or mistyped salience, a bad date) raise
    :class:`AnalysisOutputError`; values outside the canon are dropped (``intentionen``) or
    emptied (``modus``, ``gedaechtnistyp``) and listed in ``rejections`` as ``field=value``.
    """
    try:
        raw = json.loads(content)
    except json.JSONDecodeError as error:
        raise AnalysisOutputError(f"the answer is not JSON: {error.msg} at {error.pos}") from None
    _require(isinstance(raw, dict), f"the answer must be a JSON object, got {type(raw).__name__}")
    rejections: list[str] = []
    salienz = _unit(raw, "salienz")
    themen = list(dict.fromkeys(t.lower() for t in _strings(raw, "themen")))[:MAX_THEMEN]
    for theme in themen:
        _require("|" not in theme and all(ord(c) >= 32 for c in theme), f"themen contains {theme!r}")
    gedaechtnistyp = _string(raw, "gedaechtnistyp").lower()
    if gedaechtnistyp and gedaechtnistyp not in GEDAECHTNISTYPEN:
        rejections.append(f"gedaechtnistyp={gedaechtnistyp}")
        gedaechtnistyp = ""
    arousal = _unit(raw, "arousal") if raw.get("arousal") is not None else 0.0
    modus = _string(raw, "modus")
    if modus and modus not in canon.modus:
        rejections.append(f"modus={modus}")
        modus = ""
    intentionen: list[str] = []
    for value in _strings(raw, "intentionen"):
        if value in canon.intentionen:
            intentionen.append(value)
        else:
            rejections.append(f"intentionen={value}")
    datum: DatedMention | None = None
    raw_datum = raw.get("datum")
    if raw_datum is not None:
        _require(isinstance(raw_datum, dict), f"datum must be null or an object, got {raw_datum!r}")
        praezision = _string(raw_datum, "praezision")
        _require(praezision in PRAEZISIONEN, f"datum.praezision must be one of {', '.join(PRAEZISIONEN)}")
        try:
            day = date.fromisoformat(_string(raw_datum, "datum"))
        except ValueError:
            raise AnalysisOutputError(f"datum.datum must be a date JJJJ-MM-TT, got {raw_datum.get('datum')!r}") from None
        datum = DatedMention(normalise_instant(day, praezision), praezision, _string(raw_datum, "datum"))
    return ValidatedOutput(
        salienz=salienz,
        themen=themen,
        gedaechtnistyp=gedaechtnistyp,
        dimension=_string(raw, "dimension").lower() or text_rules.DEFAULT_DIMENSION,
        emotion=_string(raw, "emotion").lower() or "neutral",
        arousal=arousal,
        modus=modus,
        intentionen=list(dict.fromkeys(intentionen)),
        entitaeten=list(dict.fromkeys(_strings(raw, "entitaeten"))),
        datum=datum,
        inhalt=_string(raw, "inhalt"),
        rejections=rejections,
    )


class OllamaChatAnalyzer:
    """Asks an Ollama chat model for the analysis (``format="json"``, temperature 0) and validates it.

    A model that cannot be reached, or whose answer breaks the output contract, raises
    :class:`Unavailable` naming the server, the model and the fault — unless a ``fallback``
    analyzer is configured, which then answers (the fault stays in ``details``).
    """

    name = "ollama"

    def __init__(
        self,
        registry: EntityRegistry,
        *,
        host: str,
        model: str,
        timeout_s: float = 60.0,
        canon: Canon | None = None,
        fallback: Analyzer | None = None,
    ) -> None:
        self.registry = registry
        self.host = host
        self.model = model
        self.timeout_s = timeout_s
        self.canon = canon or default_canon()
        self.fallback = fallback
        self._client: ollama.AsyncClient | None = None

    def system_prompt(self) -> str:
        return _SYSTEM_PROMPT.format(
            max_themen=MAX_THEMEN,
            gedaechtnistypen=", ".join(GEDAECHTNISTYPEN),
            modus=", ".join(sorted(self.canon.modus)),
            intentionen=", ".join(sorted(self.canon.intentionen)),
            praezisionen=", ".join(PRAEZISIONEN),
        )

    def _client_for_loop(self) -> ollama.AsyncClient:
        if self._client is None:
            self._client = ollama.AsyncClient(host=self.host, timeout=self.timeout_s)
        return self._client

    async def _chat(self, text: str, beobachter: common_pb2.Beobachter, as_of: datetime, question_before: str) -> Any:
        sprecher = "die KI-Begleiterin selbst" if beobachter == common_pb2.BEOBACHTER_ASSISTANT else "der Nutzer"
        # The turn's time on the pair's clock (its offset named): the calendar "morgen" counts on; the
        # question it answers, when it follows one: "Ja, letzten Dienstag." means what was asked.
        gefragt = f"Vorher gefragt: {question_before}\n" if question_before else ""
        user = f"Bezugszeitpunkt: {as_of.isoformat()}\nSprecher: {sprecher}\n{gefragt}Äußerung: {text}"
        where = f"Ollama chat analyzer at {self.host} (model {self.model!r})"
        try:
            return await self._client_for_loop().chat(
                model=self.model,
                messages=[{"role": "system", "content": self.system_prompt()}, {"role": "user", "content": user}],
                format="json",
                options={"temperature": 0},
            )
        except ollama.ResponseError as error:
            raise Unavailable(f"{where} failed: HTTP {error.status_code} {error.error}") from error
        except (ConnectionError, httpx.HTTPError, ollama.RequestError) as error:
            raise Unavailable(f"{where} cannot be reached: {error}") from error

    async def analyze(
        self, text: str, pair: common_pb2.Pair, beobachter: common_pb2.Beobachter, as_of: datetime,
        *, question_before: str = "",
    ) -> AnalyzedTurn:
        try:
            response = await self._chat(text, beobachter, as_of, question_before)
            content = response.message.content or ""
            output = validate_output(content, self.canon)
        except (Unavailable, AnalysisOutputError) as error:
            message = (
                f"Ollama chat analyzer at {self.host} (model {self.model!r}) gave an invalid answer: {error}"
                if isinstance(error, AnalysisOutputError)
                else str(error)
            )
            if self.fallback is None:
                raise Unavailable(message) from error
            result = await self.fallback.analyze(text, pair, beobachter, as_of, question_before=question_before)
            return AnalyzedTurn(
                analysis=result.analysis,
                herkunft=f"{result.herkunft} (fallback)",
                details={**result.details, "fallback_grund": message},
            )
        stored = output.salienz >= STORE_GATE_RAW
        names = output.entitaeten
        resolved, timeline_id = await asyncio.gather(
            _ids(self.registry, pair, names, create=stored),
            _timeline_id(self.registry, pair, output.datum, stored=stored, text=text, themen=output.themen),
        )
        analysis = _turn_analysis(
            common_pb2.SalienceResult(
                salienz=output.salienz, themen=output.themen, gedaechtnistyp=output.gedaechtnistyp,
                dimension=output.dimension,
            ),
            common_pb2.EiFields(
                emotion=output.emotion, modus=output.modus, arousal=output.arousal, intentionen=output.intentionen
            ),
            ordered_ids(dict(zip(names, resolved, strict=True)), names), timeline_id, output.inhalt or text,
        )  # fmt: skip
        details: dict[str, Any] = {
            "modell": self.model,
            "entitaeten": names,
            "datum": output.datum.record() if output.datum else None,
            "kanon_verworfen": output.rejections,
            "input_tokens": int(getattr(response, "prompt_eval_count", 0) or 0),
            "output_tokens": int(getattr(response, "eval_count", 0) or 0),
        }
        return AnalyzedTurn(analysis=analysis, herkunft=self.name, details=details)
