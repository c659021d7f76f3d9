"""The record kinds of SPEC §8 as keyword helpers over one ``write``: decisions, DB reads and
writes, errors, tokens, the raw turn, spans. ``write`` stamps the record (time, source, trace id)
and hands it to the writer's buffer (:meth:`RecordKinds._enqueue`)."""

from __future__ import annotations

import abc
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

from novaberg_core.pipeline_log.records import TURN_ROH, PendingRecord

_get_current_span = trace.get_current_span


class RecordKinds(abc.ABC):
    """The helpers of :class:`~novaberg_core.pipeline_log.PipelineLog`, one per record kind; each
    builds a fresh ``inhalt`` and hands it to :meth:`write`."""

    quelle: str
    """The ``quelle`` of a record that names none (the writing service)."""

    @abc.abstractmethod
    def _enqueue(self, record: PendingRecord) -> None:
        """Buffer one stamped record: :class:`novaberg_core.pipeline_log.writer.PipelineLog`."""

    def write(
        self,
        *,
        turn_id: str,
        node: str,
        art: str,
        inhalt: Any,
        quelle: str | None = None,
        span_id: str | None = None,
        user_id: str | None = None,
        character_id: str | None = None,
        erstellt_am: datetime | None = None,
    ) -> None:
        """Enqueue one record and return at once (no I/O, never raises for a log problem).

        ``erstellt_am`` defaults to now; pass the request's ``as_of`` to place a replayed step at
        its simulated time. The current OpenTelemetry trace id is stored with the record.
        """
        ctx = _get_current_span().get_span_context()
        self._enqueue(
            PendingRecord(
                erstellt_am or datetime.now(UTC),
                turn_id,
                node,
                art,
                inhalt,
                quelle or self.quelle,
                span_id,
                user_id,
                character_id,
                format(ctx.trace_id, "032x") if ctx.is_valid else None,
            )
        )

    def decision(
        self,
        *,
        turn_id: str,
        node: str,
        entscheidung: str,
        ausgang: Any,
        eingang: Any = None,
        massstab: Any = None,
        **kwargs: Any,
    ) -> None:
        """A ``switch`` entry in the decision shape of SPEC §8.

        ``entscheidung`` is ``<node>.<weiche>``; a bare ``<weiche>`` is prefixed with ``node``.
        """
        if "." not in entscheidung:
            entscheidung = f"{node}.{entscheidung}"
        self.write(
            turn_id=turn_id,
            node=node,
            art="switch",
            inhalt={
                "entscheidung": entscheidung,
                "ausgang": ausgang,
                "eingang": eingang,
                "massstab": massstab,
            },
            **kwargs,
        )

    def db_write(self, *, turn_id: str, node: str, tabelle: str, operation: str, **details: Any) -> None:
        """A ``db_write`` entry (insert/update/delete); extra keywords go into ``inhalt``."""
        self._store_access(turn_id, node, "db_write", {"tabelle": tabelle, "operation": operation}, details)

    def db_read(self, *, turn_id: str, node: str, tabelle: str, treffer: int, **details: Any) -> None:
        """A ``db_read`` entry (SELECT, Redis read, cache lookup); extra keywords go into ``inhalt``."""
        self._store_access(turn_id, node, "db_read", {"tabelle": tabelle, "treffer": treffer}, details)

    def _store_access(
        self, turn_id: str, node: str, art: str, inhalt: dict[str, Any], details: dict[str, Any]
    ) -> None:
        """A ``db_*`` entry: the record's own keywords (``quelle``, ``span_id`` …) taken out of
        ``details``, the rest added to ``inhalt``."""
        kwargs = _split_kwargs(details)
        self.write(turn_id=turn_id, node=node, art=art, inhalt={**inhalt, **details}, **kwargs)

    def error(self, *, turn_id: str, node: str, typ: str, message: str, **kwargs: Any) -> None:
        """A ``fehler`` entry: exception type name and message."""
        self.write(
            turn_id=turn_id, node=node, art="fehler", inhalt={"typ": typ, "message": message}, **kwargs
        )

    def token(
        self,
        *,
        turn_id: str,
        node: str,
        modell: str,
        input_tokens: int,
        output_tokens: int,
        kosten_usd: float,
        **kwargs: Any,
    ) -> None:
        """A ``token`` entry: tokens and cost of one LLM call (syn §10.2)."""
        self.write(
            turn_id=turn_id,
            node=node,
            art="token",
            inhalt={
                "modell": modell,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "kosten_usd": kosten_usd,
            },
            **kwargs,
        )

    def turn_roh(self, *, turn_id: str, node: str, inhalt: dict[str, Any], **kwargs: Any) -> None:
        """The turn's stimulus-response pair; never dropped, never purged (syn §10.5)."""
        self.write(turn_id=turn_id, node=node, art=TURN_ROH, inhalt=inhalt, **kwargs)

    @contextlib.asynccontextmanager
    async def span(self, *, turn_id: str, node: str, **kwargs: Any) -> AsyncIterator[str]:
        """Writes ``span_start``/``span_end`` with one ``span_id`` (syn §10.2); yields the span_id.

        Pass the span_id to the records written inside so ``WHERE span_id = X`` shows the run.
        """
        span_id = str(uuid.uuid4())
        self.write(turn_id=turn_id, node=node, art="span_start", inhalt=None, span_id=span_id, **kwargs)
        status = "ok"
        try:
            yield span_id
        except BaseException as exc:
            status = f"error: {type(exc).__name__}"
            raise
        finally:
            self.write(
                turn_id=turn_id,
                node=node,
                art="span_end",
                inhalt={"status": status},
                span_id=span_id,
                **kwargs,
            )


def _split_kwargs(details: dict[str, Any]) -> dict[str, Any]:
    keys = ("quelle", "span_id", "user_id", "character_id", "erstellt_am")
    return {k: details.pop(k) for k in keys if k in details}
