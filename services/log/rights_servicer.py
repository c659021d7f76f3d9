"""gRPC ↔ domain translation of the log's erasure (mixed into ``services.log.servicer.LogServicer``)."""

from __future__ import annotations

from novaberg.log.v1 import log_pb2
from novaberg_core.servicers import EraseServicer
from services.log.rights import LogRights
from services.log.store import LogStore

__all__ = ["LogRightsServicer"]


class LogRightsServicer(EraseServicer[LogRights]):
    """The rights RPCs of LogService: ``Erase`` (the counts answered field for field)."""

    _store: LogStore
    erase_response = log_pb2.EraseResponse

    def make_rights(self) -> LogRights:
        return LogRights(self._store)
