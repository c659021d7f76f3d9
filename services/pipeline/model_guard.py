"""The pipeline's model guard (SPEC §2: no turn may see two models), checked before a turn writes.

The pipeline embeds the KZG entries, the queries and the answers it sends; the KZG and the LZG
search and store with their own model. Before a turn writes or reads anything, both peers' models
(and embed-text recipes) must be the pipeline's: asked once (``GetModel``) and remembered for
``ttl_s`` seconds, so a peer restarted with another model is refused within that time — and every
vector the pipeline sends names its model too, which the peer checks on each call. A peer that does
not answer is asked again on the next call (services.pipeline.deadline).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from novaberg.common.v1 import common_pb2
from novaberg_core.embedding import ModelStamp
from novaberg_core.errors import ModelMismatch
from novaberg_core.model import model_stamp
from services.pipeline.deadline import PeerSilence, answer_or_none

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

    async def check(self, *, silence: PeerSilence | None = None) -> None:
        """Raises :class:`ModelMismatch` naming the peer when a peer serves another model.

        A peer that is out or silent (:func:`~services.pipeline.deadline.answer_or_none`: its share of
        the call's time, left out by ``silence`` after a failure) is asked again on a later call; its
        calls meanwhile still name the model of every vector they carry, which the peer checks.
        """
        if self.clock() < self._checked_until:
            return
        async with self._lock:
            if self.clock() < self._checked_until:
                return
            unanswered: list[str] = []
            answers = await asyncio.gather(
                *(answer_or_none(peer, "GetModel", ask, unanswered, silence) for peer, ask in self.peers.items())
            )
            for peer, info in zip(self.peers, answers, strict=True):
                if info is None:
                    continue
                theirs = model_stamp(info)
                if theirs != self.own:
                    raise ModelMismatch(
                        f"the {peer} service serves embedding model {theirs}, the pipeline embeds with {self.own}; "
                        "configure one model for every service (SPEC §2)"
                    )
            if not unanswered:
                self._checked_until = self.clock() + self.ttl_s
