"""The pipeline's model guard (SPEC §2: no turn may see two models), checked before a turn writes.

The pipeline embeds the KZG entries, the queries and the answers it sends; the KZG and the LZG
search and store with their own model. Before a turn writes or reads anything, both peers' models
(and embed-text recipes) must be the pipeline's: asked once (``GetModel``) and remembered for
``ttl_s`` seconds, so a peer restarted with another model is refused within that time — and every
vector the pipeline sends names its model too, which the peer checks on each call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from novaberg.common.v1 import common_pb2
from novaberg_core.embedding import ModelStamp
from novaberg_core.errors import ModelMismatch
from novaberg_core.model import model_stamp
from novaberg_core.peers import PEER_OUTAGES
from services.pipeline.deadline import PeerSilence

__all__ = ["ModelGuard"]

GetModel = Callable[[], Awaitable[common_pb2.ModelInfo]]


class ModelGuard:
    """Each peer's model compared with the pipeline's, the answer remembered for ``ttl_s`` seconds."""

    def __init__(
        self, own: ModelStamp, peers: dict[str, GetModel], ttl_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.own = own
        self.peers = peers
        self.ttl_s = ttl_s
        self.clock = clock
        self._checked_until = 0.0
        self._lock = asyncio.Lock()

    async def check(
        self, *, skip_unanswered: bool = False, within_s: float | None = None, silence: PeerSilence | None = None
    ) -> None:
        """Raises :class:`ModelMismatch` naming the peer when a peer serves another model.

        ``skip_unanswered``: a peer that is out (:data:`~novaberg_core.peers.PEER_OUTAGES`), silent for
        ``within_s``, or left out by ``silence`` after such a failure is asked again on a later call;
        its calls meanwhile still name the model of every vector they carry, which the peer checks.
        """
        if self.clock() < self._checked_until:
            return
        async with self._lock:
            if self.clock() < self._checked_until:
                return
            asked = {
                peer: ask for peer, ask in self.peers.items()
                if not (skip_unanswered and silence is not None and silence.left_out(peer))
            }  # fmt: skip
            answers = await asyncio.gather(
                *(asyncio.wait_for(ask(), within_s) for ask in asked.values()), return_exceptions=skip_unanswered
            )
            unanswered = len(self.peers) - len(asked)
            for peer, info in zip(asked, answers, strict=True):
                if isinstance(info, (*PEER_OUTAGES, TimeoutError)):
                    unanswered += 1
                    if silence is not None:  # an outage names the peer and the method itself (call_peer)
                        silence.failed(peer, str(info) if info.args else f"{peer} GetModel: no answer within {within_s} s")
                    continue
                if isinstance(info, BaseException):
                    raise info
                theirs = model_stamp(info)
                if theirs != self.own:
                    raise ModelMismatch(
                        f"the {peer} service serves embedding model {theirs}, the pipeline embeds with {self.own}; "
                        "configure one model for every service (SPEC §2)"
                    )
            if not unanswered:
                self._checked_until = self.clock() + self.ttl_s
