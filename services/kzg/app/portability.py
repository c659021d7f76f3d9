"""A pair's KZG data carried out and back in (export, import): the entries re-embedded with their
remaining TTL, expiry in turn time and queue state, the session as it was, and the pipeline's profile of the pair (the
speakers' display names are the person's data too, docs/decisions.md "Export")."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Final

import numpy as np

from novaberg_core.embedding import clean_themen, kzg_embed_text
from novaberg_core.errors import FailedPrecondition, InvalidArgument
from novaberg_core.limits import SESSION_TTL
from novaberg_core.model import Profile
from novaberg_core.pipeline_log import LogScope, count_fields, count_names
from novaberg_core.rights import rights_write
from services.kzg.app.context import RIGHTS_NODE, KzgContext, log_canon_rejections
from services.kzg.domain import (
    KZG_TTL_HIGH_SEKUNDEN,
    CanonCheck,
    check_canon,
    check_entry_id,
    check_pair,
    check_unit_interval,
)
from services.kzg.store import ImportItem, entry_fields, entry_key
from services.kzg.types import (
    EntryInput,
    ExportChunk,
    ImportCounts,
    KzgEntry,
    Pair,
    SessionTurnRecord,
    Vector,
)

__all__ = ["IMPORT_WRITER", "Portability"]

_LOG = logging.getLogger("novaberg.kzg")

IMPORT_WRITER: Final = "kzg.import"
"""The writer an import's canon ERROR lines name (SPEC §4.1)."""

_IMPORTED_COUNTS: Final = count_names(
    ImportCounts, eintraege="entries", queue="queued", session_turns="session_turns", profil="profile"
)
"""What an import's :class:`ImportCounts` are called in its record (log name → attribute)."""


def _check_import(live: Sequence[KzgEntry]) -> None:
    """Every exported entry to import: a valid id, content, salience, arousal, magnets and perspective; ids
    unique — what the LZG would refuse to promote is refused here, before it waits in the queue."""
    for index, entry in enumerate(live):
        check_entry_id(entry.entry_id)
        entry.check(f"entries[{index}]")
        if entry.salienz_eingang is not None:
            check_unit_interval(f"entries[{index}].salienz_eingang", entry.salienz_eingang)
        check_unit_interval(f"entries[{index}].ei.arousal", entry.ei.arousal)
    if len({e.entry_id for e in live}) != len(live):
        raise InvalidArgument("an entry id appears twice in the import")


def _source(pair: Pair, entry: KzgEntry, themen: Sequence[str]) -> EntryInput:
    """The write request an exported entry stands for (its measured salience as the input)."""
    return EntryInput(
        pair=pair,
        beobachter=entry.beobachter,
        inhalt=entry.inhalt,
        salienz=entry.salienz_eingang if entry.salienz_eingang is not None else entry.salienz,
        themen=tuple(themen),
        gedaechtnistyp=entry.gedaechtnistyp,
        dimension=entry.dimension,
        ei=entry.ei,
        magnets=entry.magnets,
        turn_id=entry.turn_id,
        sprecher=entry.sprecher,
        sprache=entry.sprache,
        antwort_auf=entry.antwort_auf,
        traceparent=entry.traceparent,  # its promotion still links to the turn that wrote it
    )


class Portability:
    """ExportPair and ImportPair over the shared context."""

    def __init__(self, ctx: KzgContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    async def export(self, pair: Pair, chunk: int = 200) -> AsyncIterator[ExportChunk]:
        """The pair's entries in chunks; the first chunk carries the session state and the profile."""
        check_pair(pair.user_id, pair.character_id)
        session = await self.store.session_read(pair)
        profile = await self.store.pair_profile(pair)
        keys = await self.store.pair_entry_keys(pair)
        for start in range(0, max(len(keys), 1), chunk):
            entries = [e for e in await self.store.read_entries(keys[start : start + chunk]) if e is not None]
            yield ExportChunk(entries, session, profile) if start == 0 else ExportChunk(entries)

    async def is_empty(self, pair: Pair) -> bool:
        return await self.store.pair_entry_count(pair) == 0 and not await self.store.session_exists(pair)

    def _import_item(
        self, pair: Pair, entry: KzgEntry, themen: list[str], vector: Vector
    ) -> tuple[ImportItem, CanonCheck]:
        """(key, hash, TTL, queued) of one exported entry, with its haeufigkeit, salience's origin and
        expiry in turn time; and its canon check, whose rejections are logged once it is written."""
        key = entry_key(pair, entry.entry_id)
        canon = check_canon(entry.ei.modus, entry.ei.intentionen, self.ctx.canon)
        # The remaining TTL, never past the highest tier's (an unknown one gets the session's 4 h).
        ttl = min(entry.ttl_seconds, KZG_TTL_HIGH_SEKUNDEN) if entry.ttl_seconds > 0 else SESSION_TTL
        fields = entry_fields(
            _source(pair, entry, themen),
            themen,
            canon,
            entry.salienz,
            np.asarray(vector, dtype=np.float32),
            now=entry.erstellt_am,
            queued=entry.promotion_queued,
            ttl_seconds=ttl,
            # The exported expiry in turn time, reinforcements included (SPEC §4.4, §11); a file
            # without it: the creation time plus the remaining TTL.
            ablauf_am=entry.ablauf_am,
        )
        fields["haeufigkeit"] = str(max(entry.haeufigkeit, 1))
        if entry.salienz_eingang is None:
            # None exported: none imported, so reinforcement skips the entry with its ERROR line
            # (SPEC §4.4) instead of recomputing its salience from an input nobody measured.
            del fields["salienz_eingang"]
            fields["salienz_eingang_herkunft"] = entry.salienz_eingang_herkunft
        else:
            fields["salienz_eingang_herkunft"] = entry.salienz_eingang_herkunft or "gemessen"
        return (key, fields, ttl, entry.promotion_queued), canon

    def _log_imported(self, scope: LogScope, items: Sequence[tuple[ImportItem, CanonCheck]]) -> None:
        """What the written entries lost on their way in: each canon rejection as the write path logs
        it, naming the importer as writer (SPEC §4.1), and each entry without salienz_eingang."""
        for (key, fields, _, _), canon in items:
            log_canon_rejections(
                self.ctx.log, scope, canon.rejections, node=RIGHTS_NODE, writer=IMPORT_WRITER, kzg_key=key
            )
            if "salienz_eingang" not in fields:
                _LOG.warning(
                    "kzg import: %s has no salienz_eingang; imported without, thematic reinforcement skips it",
                    key,
                )

    async def import_pair(
        self,
        pair: Pair,
        entries: Sequence[KzgEntry],
        session_turns: Sequence[SessionTurnRecord],
        session_summary: str,
        profile: Profile | None = None,
        *,
        check_empty: bool = True,
        validate_only: bool = False,
    ) -> ImportCounts:
        """Writes exported entries (re-embedded, remaining TTL, queued again), the session and the
        profile (where given; it replaces a stored one: the pair holds no memories yet).

        ``validate_only``: every check, nothing embedded or written (a caller about to write other
        stores first learns whether this part would be refused).
        """
        check_pair(pair.user_id, pair.character_id)
        if check_empty and not await self.is_empty(pair):
            raise FailedPrecondition(
                f"pair {pair.user_id} · {pair.character_id} holds KZG entries or a session; "
                "import into an empty pair"
            )
        counts = ImportCounts()
        live = [e for e in entries if e.ttl_seconds != 0]
        counts.skipped_expired = len(entries) - len(live)
        themen_of = [clean_themen(e.themen) for e in live]
        _check_import(live)
        if validate_only:
            return counts
        texts = [
            kzg_embed_text(themen, e.inhalt, e.sprecher) for themen, e in zip(themen_of, live, strict=True)
        ]
        vectors = await self.ctx.provider.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        items = [
            self._import_item(pair, entry, themen, vectors[index])
            for index, (entry, themen) in enumerate(zip(live, themen_of, strict=True))
        ]
        prepared = [item for item, _ in items]
        await self.store.import_pair_keys(pair, prepared, session_turns, session_summary, profile)
        where = LogScope.of_pair(f"import-{uuid.uuid4()}", pair)
        self._log_imported(where, items)
        counts.entries = len(prepared)
        counts.queued = sum(1 for p in prepared if p[3])
        counts.session_turns = len(session_turns)
        counts.profile = int(profile is not None)
        counted = count_fields(counts, _IMPORTED_COUNTS)
        rights_write(self.ctx.log, **where, operation="import", tabelle="kzg", **counted)
        return counts
