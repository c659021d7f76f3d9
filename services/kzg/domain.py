"""Pure formulas and checks of the KZG (SPEC §3, §4): salience curve, gates, TTL tiers, canon, themes.

No I/O here: the store and the write path call these, and the tests hold them to the spec's
worked numbers.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal

from novaberg_core.canon import Canon
from novaberg_core.contract import check_pair as check_pair  # re-exported: the shared pair rule
from novaberg_core.errors import InvalidArgument
from novaberg_core.limits import SESSION_TTL, STORE_GATE_RAW
from novaberg_core.model import check_unit_interval as check_unit_interval  # re-exported for portability

# --------------------------------------------------------------------------- salience (SPEC §4.2)

KZG_SALIENZ_CAP = 1.0
"""Top of the salience scale."""
KZG_SALIENZ_BOOST = 0.03
"""Added to the anchor per reinforcement, before the curve."""
KZG_SALIENZ_DAEMPFUNG_EXP = 1.1
"""Exponent of the curve (code-verified value since 24.08.2026; the KZG seed's 0.5 is stale)."""


def salienz_berechnen(salienz_eingang: float, haeufigkeit: int) -> float:
    """The one salience formula (SPEC §4.2): curved value from the stored score and frequency.

    Pure: ``salienz`` is never an input, so recomputation is bit-identical.
    """
    verstaerkungen = haeufigkeit - 1
    salienz_roh = salienz_eingang + verstaerkungen * KZG_SALIENZ_BOOST
    anteil = min(salienz_roh / KZG_SALIENZ_CAP, 1.0)
    return float(KZG_SALIENZ_CAP * math.sin(anteil * math.pi / 2) ** KZG_SALIENZ_DAEMPFUNG_EXP)


# --------------------------------------------------------------------------- gates and TTL (SPEC §4.3)

RAW_GATE_MINIMUM = STORE_GATE_RAW
RAW_GATE_MID = 0.5
RAW_GATE_HIGH = 0.7


def gate_constant(raw_gate: float) -> float:
    """The curve image of a raw gate, rounded DOWN to 5 decimals (SPEC §4.3).

    Rounding down keeps a score of exactly the raw gate on the passing side of ``>=``.
    Decimal(float) is the exact binary value, so the floor is exact too.
    """
    curved = Decimal(salienz_berechnen(raw_gate, 1))
    return float(curved.quantize(Decimal("0.00001"), rounding=ROUND_FLOOR))


KZG_SALIENZ_MINIMUM = gate_constant(RAW_GATE_MINIMUM)
"""0.41951: lowest gate, below it nothing is stored."""
KZG_SALIENZ_MID = gate_constant(RAW_GATE_MID)
"""0.68302: 14-day tier."""
KZG_SALIENZ_HIGH = gate_constant(RAW_GATE_HIGH)
"""0.88078: 30-day tier, promotion queue, hash_dirty."""

KZG_TTL_LOW_SEKUNDEN = 7 * 86_400
KZG_TTL_MID_SEKUNDEN = 14 * 86_400
KZG_TTL_HIGH_SEKUNDEN = 30 * 86_400


class Tier(enum.IntEnum):
    """Salience tiers of SPEC §4.3 (values equal the proto ``Tier`` numbers)."""

    MINIMUM = 1
    MID = 2
    HIGH = 3


_TIER_TTL = {
    Tier.MINIMUM: KZG_TTL_LOW_SEKUNDEN,
    Tier.MID: KZG_TTL_MID_SEKUNDEN,
    Tier.HIGH: KZG_TTL_HIGH_SEKUNDEN,
}


def tier_for(salienz: float) -> Tier | None:
    """The tier of a curved salience, compared with ``>=`` (SPEC §4.3); None below the minimum."""
    if salienz >= KZG_SALIENZ_HIGH:
        return Tier.HIGH
    if salienz >= KZG_SALIENZ_MID:
        return Tier.MID
    if salienz >= KZG_SALIENZ_MINIMUM:
        return Tier.MINIMUM
    return None


def ttl_seconds(tier: Tier) -> int:
    """TTL of a tier: 7 / 14 / 30 days (SPEC §4.3)."""
    return _TIER_TTL[tier]


@dataclass(frozen=True)
class Reinforcement:
    """What thematic reinforcement does to one neighbour (SPEC §4.4)."""

    haeufigkeit: int
    salienz: float
    ttl_seconds: int
    """The TTL of the new tier; the store applies max(remaining, this)."""
    reaches_high: bool
    """The new salience is at or above KZG_SALIENZ_HIGH (queue it unless already queued)."""


def reinforce(salienz_eingang: float, haeufigkeit: int) -> Reinforcement:
    """One reinforcement step (SPEC §4.4): ``haeufigkeit + 1``, salience recomputed by §4.2 from the
    stored score, and the TTL of the tier it now reaches (the store applies max(remaining, it)).

    The curve only rises with ``haeufigkeit``, so a stored entry never falls below MINIMUM; a
    legacy score below the gate still gets the minimum TTL rather than none.
    """
    new_h = haeufigkeit + 1
    salienz = salienz_berechnen(salienz_eingang, new_h)
    tier = tier_for(salienz) or Tier.MINIMUM
    return Reinforcement(
        haeufigkeit=new_h,
        salienz=salienz,
        ttl_seconds=ttl_seconds(tier),
        reaches_high=salienz >= KZG_SALIENZ_HIGH,
    )


# --------------------------------------------------------------------------- session (SPEC §3)

SESSION_SUMMARIZE_AT = 25
"""A list longer than this is summarised."""
SESSION_SUMMARIZE_OLDEST = 10
"""How many of the oldest turns go into the summary."""
SESSION_MAX_TURNS = 20
"""Newest turns kept when summarising fails."""
SESSION_TAKEN_KEPT = 1024
"""Turns a session remembers having taken (their turn_id and role), so a resent turn is not appended
again after it was folded into the summary: four import batches of 256. Ours, not the seeds'."""

SESSION_ROLES = ("user", "assistant")


def session_stretch_start(times: Sequence[datetime]) -> int:
    """Where the live session of turns made at ``times`` (in list order) begins (SPEC §3, §11): at the last
    turn that came more than SESSION_TTL after every turn before it, when the list had expired already.
    ``append_session.lua`` applies the same rule as it appends."""
    start, newest = 0, None
    for index, at in enumerate(times):
        if newest is not None and (at - newest).total_seconds() > SESSION_TTL:
            start = index
        newest = at if newest is None else max(newest, at)
    return start


# --------------------------------------------------------------------------- input checks (SPEC §4.1)

REINFORCEMENT_MODES = ("thema", "aus")
"""SPEC §4.4: ``thema`` (default) reinforces neighbours sharing a theme, ``aus`` disables it."""


def check_entry_id(entry_id: str) -> None:
    """An explicit entry id: non-empty, no ``:``, no whitespace."""
    if not entry_id or ":" in entry_id or any(ch.isspace() for ch in entry_id):
        raise InvalidArgument(f"entry_id must be non-empty without ':' or whitespace, got {entry_id!r}")


def normalise_theme(theme: str) -> str:
    """The matching form of a theme: trimmed and case-folded (SPEC §4.4, case-insensitive exact match).

    ``casefold`` rather than ``lower`` so that e.g. "Straße" and "STRASSE" are the same theme.
    """
    return theme.strip().casefold()


def themen_norm(themen: Iterable[str]) -> list[str]:
    """Distinct normalised themes in order of first mention."""
    return list(dict.fromkeys(n for n in (normalise_theme(t) for t in themen) if n))


def dedupe_entitaet_ids(ids: Iterable[int]) -> list[int]:
    """Each id at most once, in order of first mention (SPEC §4.1, kzg §2)."""
    return list(dict.fromkeys(ids))


@dataclass(frozen=True)
class CanonCheck:
    """Result of the canon check of ``modus`` and ``intentionen`` (SPEC §4.1)."""

    modus: str
    """The modus if in MODUS_KANON, else empty."""
    intentionen: tuple[str, ...]
    """The intentions that are in INTENT_KANON, in the given order."""
    rejections: tuple[tuple[str, str], ...]
    """(field, value) of each emptied or dropped value."""


def check_canon(modus: str, intentionen: Sequence[str], canon: Canon) -> CanonCheck:
    """Exact-match canon check (another spelling is foreign); an empty modus is not an error."""
    rejections: list[tuple[str, str]] = []
    kept_modus = modus
    if modus and modus not in canon.modus:
        rejections.append(("modus", modus))
        kept_modus = ""
    kept: list[str] = []
    for value in intentionen:
        if value in canon.intentionen:
            kept.append(value)
        else:
            rejections.append(("intentionen", value))
    return CanonCheck(modus=kept_modus, intentionen=tuple(kept), rejections=tuple(rejections))
