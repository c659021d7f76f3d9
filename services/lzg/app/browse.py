"""The pair's nodes, edges and statistics as stored (the Get/List RPCs); reads only."""

from __future__ import annotations

from novaberg_core.errors import InvalidArgument, NotFound
from novaberg_core.model import Pair
from services.lzg.app.context import UseCase
from services.lzg.rows import PairStats, StoredEdge, StoredNode

__all__ = ["Browse"]


class Browse(UseCase):
    """Node, nodes, edges and pair statistics of one pair; another pair's node is NotFound."""

    async def node(self, pair: Pair, node_id: int) -> StoredNode:
        """One node of the pair; another pair's node is NotFound."""
        pair.check()
        node = await self.store.node(node_id, pair.user_id, pair.character_id)
        if node is None:
            raise NotFound(f"node {node_id} is not a node of this pair")
        return node

    async def nodes(self, pair: Pair, limit: int, include_inactive: bool) -> list[StoredNode]:
        """The pair's nodes by ``gewicht_decay``, at most ``limit`` (0: 50); inactive ones only if asked."""
        pair.check()
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        return await self.store.nodes(pair.user_id, pair.character_id, include_inactive, limit or 50)

    async def edges(self, pair: Pair, node_id: int, limit: int) -> list[StoredEdge]:
        """The edges of one node of the pair (``node_id``) or of the whole pair, at most ``limit`` (0: 500)."""
        pair.check()
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        if node_id:
            await self.node(pair, node_id)
            return await self.store.edges_of_node(node_id, limit or 500)
        return await self.store.edges_of_pair(pair.user_id, pair.character_id, limit or 500)

    async def pair_stats(self, pair: Pair) -> tuple[PairStats, str]:
        """The pair's counts and the store's embedding model."""
        pair.check()
        return await self.store.pair_stats(pair.user_id, pair.character_id), await self.store.model_id()
