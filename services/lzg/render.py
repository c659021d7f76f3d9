"""The memory block rendered from ``lzg_resonanz`` (SPEC §5.9, syn §8.4.4) — pure.

The seed's German wording is the default template. Weakest memory first, strongest last; no
weights, ids or shells in the text. Two readers:

- ``analysis`` — the character and the user by name (defaults ``Nova`` / ``Nutzer``);
- ``composer`` — ``Person A`` for the character and ``Person B`` for the user (the seed's
  order "Nova und Nutzer" → "Person A und Person B", syn §8.4.4).

Any other reader is an error, never a fallback. The block starts without the ``[GEDAECHTNIS]``
header, which belongs to the prompt template (syn §8.4.4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from novaberg_core.model import check_reader
from services.lzg.layers import Schicht
from services.lzg.spreading import Erinnerung, PfadSchritt

__all__ = ["ReaderNames", "reader_names", "render_memory_block"]


_ZAHLWORT = {1: "Eine", 2: "Zwei", 3: "Drei"}


@dataclass(frozen=True)
class ReaderNames:
    """How the block names the character and the user for one reader."""

    character: str
    user: str


def reader_names(reader: str, *, user_name: str = "", character_name: str = "") -> ReaderNames:
    """Names for ``reader``; unknown reader → InvalidArgument naming the choices."""
    if reader == "analysis":
        return ReaderNames(character=character_name.strip() or "Nova", user=user_name.strip() or "Nutzer")
    check_reader(reader)
    return ReaderNames(character="Person A", user="Person B")


def _speaker(beobachter: str, names: ReaderNames) -> str:
    if beobachter == "user":
        return names.user
    if beobachter == "assistant":
        return names.character
    return "unbekannt"


def _feeling(emotion: str) -> str:
    label = emotion.strip()
    return label[:1].upper() + label[1:]


def _listing(singular: str, plural: str, values: Sequence[str]) -> str:
    if not values:
        return singular
    return f"{singular if len(values) == 1 else plural} {', '.join(values)}"


def _step_reasons(step: PfadSchritt, entity_names: Mapping[int, str]) -> str:
    reasons: list[str] = []
    for grund in step.verbindungs_gruende:
        if grund == Schicht.ENTITAET:
            names = [entity_names[i] for i in step.geteilte_entitaet_ids if i in entity_names]
            reasons.append(_listing("gemeinsame Entitaet", "gemeinsame Entitaeten", names))
        elif grund == Schicht.THEMEN:
            reasons.append(_listing("gemeinsames Thema", "gemeinsame Themen", list(step.geteilte_themen)))
        elif grund == Schicht.EMBEDDING:
            reasons.append("aehnlicher Inhalt")
        elif grund == Schicht.TIMELINE:
            reasons.append("zeitliche Naehe")
    return ", ".join(reasons) or "eine Verbindung"


def render_memory_block(
    erinnerungen: Sequence[Erinnerung],
    reader: str,
    entity_names: Mapping[int, str],
    *,
    user_name: str = "",
    character_name: str = "",
) -> str:
    """The memory block for ``reader`` (SPEC §5.9); empty text when there is no memory."""
    names = reader_names(reader, user_name=user_name, character_name=character_name)
    if not erinnerungen:
        return ""
    ordered = sorted(erinnerungen, key=lambda e: (e.sortier_gewicht, -e.rang))
    count = len(ordered)
    zahl = _ZAHLWORT.get(count, str(count))
    if count == 1:
        lines = [f"{zahl} Erinnerung ist {names.character} gerade da."]
    else:
        lines = [
            f"{zahl} Erinnerungen sind {names.character} gerade da. "
            "Die am wenigsten praesente zuerst, die staerkste am Ende."
        ]
    for number, memory in enumerate(ordered, start=1):
        lines.append(f"----- Erinnerung {number} -----")
        lines.append(f'"{memory.details.inhalt}"')
        lines.append(f"Sprecher: {_speaker(memory.details.beobachter, names)}")
        if memory.details.emotion.strip():
            lines.append(f"{names.character} fuehlt dazu: {_feeling(memory.details.emotion)}")
        if memory.schale == 0 or not memory.pfad:
            lines.append(f"Sie kam {names.character} direkt zur Frage in den Sinn")
        else:
            path = " → ".join(_step_reasons(step, entity_names) for step in memory.pfad)
            lines.append(f"Sie ist {names.character} eingefallen ueber: {path}")
    return "\n".join(lines)
