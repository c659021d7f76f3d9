"""The pair's nodes, edges and statistics as stored (the Get/List RPCs); reads only."""

from __future__ import annotations

import asyncpg

from novaberg_core.errors import InvalidArgument, NotFound
from services.lzg.app.context import UseCase
from services.lzg.types import check_pair

__all__ = ["Browse"]


class Browse(UseCase):
    """Node, nodes, edges and pair statistics of one pair; another pair's node is NotFound."""

    async def node(self, user_id: str, character_id: str, node_id: int) -> asyncpg.Record:
        """One node of the pair; another pair's node is NotFound."""
        check_pair(user_id, character_id)
        row = await self.store.node(node_id, user_id, character_id)
        if row is None:
            raise NotFound(f"node {node_id} is not a node of this pair")
        return row

    async def nodes(
        self, user_id: str, character_id: str, limit: int, include_inactive: bool
    ) -> list[asyncpg.Record]:
        """The pair's nodes by ``gewicht_decay``, at most ``limit`` (0: 50); inactive ones only if asked."""
        check_pair(user_id, character_id)
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        return await self.store.nodes(user_id, character_id, include_inactive, limit or 50)

    async def edges(self, user_id: str, character_id: str, node_id: int, limit: int) -> list[asyncpg.Record]:
        """The edges of one node of the pair (``node_id``) or of the whole pair, at most ``limit`` (0: 500)."""
        check_pair(user_id, character_id)
        if limit < 0:
            raise InvalidArgument("limit must not be negative")
        if node_id:
            await self.node(user_id, character_id, node_id)
            return await self.store.edges_of_node(node_id, limit or 500)
        return await self.store.edges_of_pair(user_id, character_id, limit or 500)

    async def pair_stats(self, user_id: str, character_id: str) -> tuple[asyncpg.Record, str]:
        """The pair's counts and the store's embedding model."""
        check_pair(user_id, character_id)
        return await self.store.pair_stats(user_id, character_id), await self.store.model_id()
