"""The demo's words for what the services answered: paths, dossiers, usage protocols and run counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from novaberg.common.v1 import common_pb2
from novaberg.lzg.v1 import lzg_pb2
from novaberg.pipeline.v1 import pipeline_pb2
from novaberg.pixie.v1 import pixie_pb2

__all__ = [
    "LAYER_WORDS",
    "describe_path",
    "describe_step",
    "format_dossier",
    "format_protokoll",
    "quote",
    "run_counts",
]

LAYER_WORDS = {"entitaet": "entity", "themen": "theme", "timeline": "time", "embedding": "similarity"}


def _names(ids: Iterable[int], names: Mapping[int, str]) -> str:
    return ", ".join(names.get(i, f"#{i}") for i in ids)


def describe_step(step: lzg_pb2.PfadSchritt, names: Mapping[int, str]) -> str:
    """One path step in words, e.g. ``shared entity Anna, shared theme Anna`` (syn §8.4.4)."""
    parts: list[str] = []
    for grund in step.verbindungs_gruende:
        if grund == "entitaet":
            parts.append(f"shared entity {_names(step.geteilte_entitaet_ids, names)}".rstrip())
        elif grund == "themen":
            word = "shared themes" if len(step.geteilte_themen) > 1 else "shared theme"
            parts.append(f"{word} {', '.join(step.geteilte_themen)}".rstrip())
        elif grund == "timeline":
            parts.append("close in time")
        elif grund == "embedding":
            parts.append("similar content")
        else:
            parts.append(grund)
    return ", ".join(parts) or "?"


def describe_path(pfad: Sequence[lzg_pb2.PfadSchritt], names: Mapping[int, str]) -> str:
    """A whole path, steps joined by arrows (syn §8.4.4: the full chain, not a summary)."""
    return " → ".join(describe_step(step, names) for step in pfad)


def quote(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return f"“{text if len(text) <= limit else text[: limit - 1] + '…'}”"


def format_dossier(
    dossier: pipeline_pb2.BuildDossierResponse,
    names: Mapping[int, str],
    node_texts: Mapping[int, str] | None = None,
    *,
    reader: str = "analysis",
) -> list[str]:
    """The dossier for a person: KZG hits, LZG memories with their paths, the memory block."""
    texts = dict(node_texts or {})
    resonanz = dossier.lzg_resonanz
    for e in resonanz.erinnerungen:
        texts.setdefault(e.knoten_id, e.inhalt)
    lines = [
        f"cluster {dossier.cluster} (sprung_tiefe {resonanz.sprung_tiefe}), gravitation_faktor "
        f"{dossier.gravitation_faktor:.2f}, {resonanz.anker_anzahl} anchors, "
        f"{len(dossier.kzg_hits)} KZG hits, "
        f"{dossier.memory_ms:.0f} ms (model {dossier.model_ms:.0f} ms)"
    ]
    if dossier.kzg_hits:
        lines.append("KZG (short-term memory):")
        for hit in dossier.kzg_hits[:5]:
            entry = hit.hit.entry
            who = "user" if entry.beobachter == common_pb2.BEOBACHTER_USER else "assistant"
            lines.append(
                f"  {hit.score:.2f}  {quote(entry.inhalt)} (beobachter {who}, salienz {entry.salienz:.2f})"
            )
    if resonanz.erinnerungen:
        lines.append("lzg_resonanz (long-term memory):")
    else:
        lines.append("lzg_resonanz: no memory above the anchor threshold")
    for e in resonanz.erinnerungen:
        lines.append(
            f"  {e.rang}. #{e.knoten_id} {quote(e.inhalt)} — schale {e.schale}, "
            f"gewicht_decay {e.gewicht_decay:.2f}, sortier_gewicht {e.sortier_gewicht:.2f}"
        )
        if not e.pfad:
            lines.append("       direct hit (schale 0)")
            continue
        start = e.pfad[0].von_knoten_id
        lines.append(f"       came to mind via: {describe_path(e.pfad, names)}")
        chain = [f"#{start} {quote(texts.get(start, '?'), 50)}"]
        for step in e.pfad[1:]:
            chain.append(f"#{step.von_knoten_id} {quote(texts.get(step.von_knoten_id, '?'), 50)}")
        chain.append(f"#{e.knoten_id}")
        lines.append(f"       path: {' → '.join(chain)}")
    block = dossier.memory_blocks.get(reader, "")
    if block:
        lines.append(f"memory block (reader {reader}):")
        lines.extend(f"  | {line}" for line in block.splitlines())
    return lines


def format_protokoll(protokoll: lzg_pb2.VerwendungsProtokoll, node_texts: Mapping[int, str]) -> list[str]:
    """The usage-reinforcement protocol of one answer (SPEC §5.6) in a few lines."""
    ausgang = lzg_pb2.VerwendungAusgang.Name(protokoll.ausgang).removeprefix("VERWENDUNG_AUSGANG_").lower()
    lines = [
        f"usage reinforcement (verwendung): ausgang {ausgang}, geprueft {protokoll.geprueft}, schwelle "
        f"{protokoll.schwelle:.2f}, deckel {protokoll.deckel}"
    ]
    for naehe in sorted(protokoll.naehen_alle, key=lambda n: -n.naehe):
        mark = "used → reinforced" if naehe.knoten_id in protokoll.verwendet else "not used"
        lines.append(
            f"  #{naehe.knoten_id} naehe {naehe.naehe:.3f}  {mark}  "
            f"{quote(node_texts.get(naehe.knoten_id, ''), 60)}"
        )
    if protokoll.verwendet:
        lines.append(
            f"  verwendet {list(protokoll.verwendet)}; kanten_neu (edges recomputed) {protokoll.kanten_neu} "
            f"({protokoll.kanten_dauer_ms:.1f} ms)"
        )
    if protokoll.error:
        lines.append(f"  error: {protokoll.error}")
    return lines


def run_counts(run: pixie_pb2.Run, keys: Sequence[str]) -> str:
    shown = [f"{key} {run.counts[key]}" for key in keys if run.counts.get(key)]
    return ", ".join(shown) or "nothing to do"
