"""Turn analyzers (SPEC §7): the offline rules and the Ollama chat analyzer behind one interface.

The registry is an in-memory stand-in for the LZG entity/timeline registry (its own behaviour is
tested with the LZG service); the Ollama analyzer talks to a real HTTP server on 127.0.0.1:0 that
speaks Ollama's ``/api/chat``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

import pytest

from novaberg.common.v1 import common_pb2
from novaberg_core.canon import default_canon
from novaberg_core.errors import Unavailable
from services.pipeline.analyzer import (
    AnalysisOutputError,
    Analyzer,
    OfflineAnalyzer,
    OllamaChatAnalyzer,
    normalise_instant,
    validate_output,
)
from services.pipeline.dates import DatedMention
from tests.service.pipeline.ollama_chat import ChatServer, running_chat_server

AS_OF = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
PAIR = common_pb2.Pair(user_id="meister", character_id="nova")
USER = common_pb2.BEOBACHTER_USER


class MemoryRegistry:
    """Entity and timeline registry of one process (names match ignoring case)."""

    def __init__(self, known: dict[str, int] | None = None) -> None:
        self.entities: dict[str, int] = {k.lower(): v for k, v in (known or {}).items()}
        self.created: list[str] = []
        self.timelines: list[tuple[datetime, str, str, list[str]]] = []
        self.calls: list[tuple[str, list[str], bool]] = []

    async def resolve_entities(self, pair: common_pb2.Pair, names: Sequence[str], *, create_missing: bool) -> list[int]:
        self.calls.append(("resolve", list(names), create_missing))
        ids = []
        for name in names:
            if name.lower() not in self.entities and create_missing:
                self.entities[name.lower()] = 100 + len(self.entities)
                self.created.append(name)
            ids.append(self.entities.get(name.lower(), 0))
        return ids

    async def timeline_for(
        self, pair: common_pb2.Pair, mention: DatedMention, *, titel: str, themen: Sequence[str]
    ) -> int:
        for index, (zeitpunkt, praezision, _, _) in enumerate(self.timelines):
            if (zeitpunkt, praezision) == (mention.zeitpunkt, mention.praezision):
                return index + 1
        self.timelines.append((mention.zeitpunkt, mention.praezision, titel, list(themen)))
        return len(self.timelines)


# --- offline -------------------------------------------------------------------------------


async def test_offline_high_turn_resolves_names_and_date() -> None:
    registry = MemoryRegistry({"Schwester": 7})
    analyzer: Analyzer = OfflineAnalyzer(registry)
    result = await analyzer.analyze("Meine Schwester Anna hat am 12. März Geburtstag.", PAIR, USER, AS_OF)
    a = result.analysis
    assert result.herkunft == "offline"
    assert a.salience.salienz == pytest.approx(0.85)
    assert list(a.salience.themen) == ["schwester", "anna", "geburtstag"]
    # "Schwester" is registered (found though not a candidate), "Anna" is created; order of first mention
    assert list(a.magnets.entitaet_ids) == [7, registry.entities["anna"]]
    assert registry.created == ["Anna"]
    assert a.magnets.HasField("timeline_id") and a.magnets.timeline_id == 1
    assert registry.timelines[0][:2] == (datetime(2026, 3, 12, tzinfo=UTC), "tag")
    assert list(a.ei.intentionen) == ["information_teilen"]
    assert a.inhalt == "Meine Schwester Anna hat am 12. März Geburtstag."
    assert result.details["kandidaten"] == ["Anna"]


async def test_offline_same_date_reuses_the_timeline_and_entity() -> None:
    registry = MemoryRegistry()
    analyzer = OfflineAnalyzer(registry)
    first = await analyzer.analyze("Anna hat am 12. März Geburtstag.", PAIR, USER, AS_OF)
    second = await analyzer.analyze("Am 12. März feiert Anna im Garten.", PAIR, USER, AS_OF)
    assert first.analysis.magnets.timeline_id == second.analysis.magnets.timeline_id
    assert first.analysis.magnets.entitaet_ids[0] == second.analysis.magnets.entitaet_ids[0]
    assert registry.created == ["Anna"]


async def test_offline_registered_common_noun_is_an_entity_cue() -> None:
    text = "Der Zahnarzt war heute sehr nett."  # "Zahnarzt" follows an article: never a candidate
    plain = await OfflineAnalyzer(MemoryRegistry()).analyze(text, PAIR, USER, AS_OF)
    known = await OfflineAnalyzer(MemoryRegistry({"zahnarzt": 5})).analyze(text, PAIR, USER, AS_OF)
    # base 0.3 + dated ("heute") 0.15; the registered entity adds 0.15
    assert plain.analysis.salience.salienz == pytest.approx(0.45) and list(plain.analysis.magnets.entitaet_ids) == []
    assert known.analysis.salience.salienz == pytest.approx(0.6) and list(known.analysis.magnets.entitaet_ids) == [5]


async def test_offline_below_gate_creates_nothing() -> None:
    registry = MemoryRegistry()
    result = await OfflineAnalyzer(registry).analyze("ok danke", PAIR, USER, AS_OF)
    assert result.analysis.salience.salienz == pytest.approx(0.1)
    assert registry.created == [] and registry.timelines == []
    assert not result.analysis.magnets.HasField("timeline_id")


async def test_offline_intentions_are_canon_values() -> None:
    registry = MemoryRegistry()
    result = await OfflineAnalyzer(registry).analyze("Erinnere mich morgen an den Zahnarzt!", PAIR, USER, AS_OF)
    assert list(result.analysis.ei.intentionen) == ["anweisung"]
    assert set(result.analysis.ei.intentionen) <= default_canon().intentionen


def test_normalise_instant_units() -> None:
    d = date(2026, 8, 13)  # a Thursday
    assert normalise_instant(d, "tag") == datetime(2026, 8, 13, tzinfo=UTC)
    assert normalise_instant(d, "woche") == datetime(2026, 8, 10, tzinfo=UTC)
    assert normalise_instant(d, "monat") == datetime(2026, 8, 1, tzinfo=UTC)
    assert normalise_instant(d, "quartal") == datetime(2026, 7, 1, tzinfo=UTC)
    assert normalise_instant(d, "jahr") == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="praezision"):
        normalise_instant(d, "jahrzehnt")


# --- output validation ---------------------------------------------------------------------

GOOD = {
    "salienz": 0.82,
    "themen": ["Familie", "Geburtstag", "familie"],
    "gedaechtnistyp": "episodisch",
    "dimension": "Beziehungen",
    "emotion": "Freude",
    "arousal": 0.6,
    "modus": "alltag",
    "intentionen": ["information_teilen", "small_talk"],
    "entitaeten": ["Anna", "Treuchtlingen"],
    "datum": {"datum": "2026-03-12", "praezision": "tag"},
    "inhalt": "Annas Geburtstag ist am 12. März.",
}


def test_validate_output_accepts_and_cleans() -> None:
    out = validate_output(json.dumps(GOOD), default_canon())
    assert out.salienz == 0.82
    assert out.themen == ["familie", "geburtstag"]
    assert out.intentionen == ["information_teilen"]
    assert out.rejections == ["intentionen=small_talk"]
    assert out.modus == "alltag"
    assert out.datum is not None and out.datum.zeitpunkt == datetime(2026, 3, 12, tzinfo=UTC)
    assert (out.emotion, out.dimension) == ("freude", "beziehungen")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"salienz": 1.4}, "salienz must be a number within 0..1"),
        ({"salienz": "hoch"}, "salienz must be a number"),
        ({"themen": "familie"}, "themen must be a list of strings"),
        ({"datum": {"datum": "12.03.2026", "praezision": "tag"}}, "datum.datum must be a date"),
        ({"datum": {"datum": "2026-03-12", "praezision": "jahrzehnt"}}, "datum.praezision must be one of"),
        ({"themen": ["a|b"]}, "themen contains"),
    ],
)
def test_validate_output_refuses_structural_faults(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(AnalysisOutputError, match=message):
        validate_output(json.dumps({**GOOD, **patch}), default_canon())


def test_validate_output_gives_an_empty_dimension_the_default() -> None:
    assert validate_output(json.dumps({**GOOD, "dimension": ""}), default_canon()).dimension == "allgemein"


def test_validate_output_empties_foreign_modus_and_type() -> None:
    out = validate_output(json.dumps({**GOOD, "modus": "Alltag", "gedaechtnistyp": "traum"}), default_canon())
    assert (out.modus, out.gedaechtnistyp) == ("", "")
    assert out.rejections == ["gedaechtnistyp=traum", "modus=Alltag", "intentionen=small_talk"]


def test_validate_output_refuses_non_json() -> None:
    with pytest.raises(AnalysisOutputError, match="not JSON"):
        validate_output("Sure! Here is the analysis: {", default_canon())
    with pytest.raises(AnalysisOutputError, match="JSON object"):
        validate_output("[1, 2]", default_canon())


# --- a real HTTP server speaking Ollama's chat API ---------------------------------------------


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with running_chat_server(json.dumps(GOOD)) as server:
        yield server


async def test_ollama_analyzer_over_http(chat_server: ChatServer) -> None:
    registry = MemoryRegistry({"Treuchtlingen": 3})
    analyzer: Analyzer = OllamaChatAnalyzer(registry, host=chat_server.url, model="gemma3:4b")
    result = await analyzer.analyze("Anna hat am 12. März Geburtstag, in Treuchtlingen.", PAIR, USER, AS_OF)
    sent = chat_server.requests[-1]
    assert sent["path"] == "/api/chat" and sent["model"] == "gemma3:4b"
    assert sent["format"] == "json" and sent["stream"] is False
    assert sent["options"]["temperature"] == 0
    assert sent["messages"][0]["role"] == "system" and "anweisung" in sent["messages"][0]["content"]
    assert "Bezugszeitpunkt: 2026-11-29T15:00:00+00:00" in sent["messages"][1]["content"]
    a = result.analysis
    assert result.herkunft == "ollama"
    assert a.salience.salienz == pytest.approx(0.82)
    assert list(a.ei.intentionen) == ["information_teilen"]
    assert list(a.magnets.entitaet_ids) == [registry.entities["anna"], 3]
    assert registry.created == ["Anna"]
    assert a.magnets.timeline_id == 1
    assert a.inhalt == "Annas Geburtstag ist am 12. März."
    assert result.details["kanon_verworfen"] == ["intentionen=small_talk"]
    assert (result.details["input_tokens"], result.details["output_tokens"]) == (321, 87)


async def test_ollama_invalid_answer_is_unavailable(chat_server: ChatServer) -> None:
    chat_server.content = json.dumps({**GOOD, "salienz": 7})
    analyzer = OllamaChatAnalyzer(MemoryRegistry(), host=chat_server.url, model="gemma3:4b")
    with pytest.raises(Unavailable, match=r"gemma3:4b.*invalid answer: salienz must be a number within 0\.\.1"):
        await analyzer.analyze("Anna hat Geburtstag.", PAIR, USER, AS_OF)


async def test_ollama_missing_model_is_unavailable(chat_server: ChatServer) -> None:
    chat_server.status = 404
    analyzer = OllamaChatAnalyzer(MemoryRegistry(), host=chat_server.url, model="fehlt")
    with pytest.raises(Unavailable, match="HTTP 404"):
        await analyzer.analyze("Anna hat Geburtstag.", PAIR, USER, AS_OF)


async def test_ollama_unreachable_is_unavailable() -> None:
    analyzer = OllamaChatAnalyzer(MemoryRegistry(), host="http://127.0.0.1:9", model="m", timeout_s=2)
    with pytest.raises(Unavailable, match="cannot be reached"):
        await analyzer.analyze("Anna hat Geburtstag.", PAIR, USER, AS_OF)


async def test_ollama_fallback_to_offline(chat_server: ChatServer) -> None:
    chat_server.content = "kein json"
    registry = MemoryRegistry()
    analyzer = OllamaChatAnalyzer(
        registry, host=chat_server.url, model="gemma3:4b", fallback=OfflineAnalyzer(registry)
    )
    result = await analyzer.analyze("Meine Schwester Anna hat am 12. März Geburtstag.", PAIR, USER, AS_OF)
    assert result.herkunft == "offline (fallback)"
    assert "not JSON" in result.details["fallback_grund"]
    assert result.analysis.salience.salienz == pytest.approx(0.85)


async def test_ollama_below_gate_creates_no_entity(chat_server: ChatServer) -> None:
    chat_server.content = json.dumps({**GOOD, "salienz": 0.2})
    registry = MemoryRegistry()
    result = await OllamaChatAnalyzer(registry, host=chat_server.url, model="m").analyze("Anna?", PAIR, USER, AS_OF)
    assert registry.created == [] and registry.timelines == []
    assert list(result.analysis.magnets.entitaet_ids) == []
