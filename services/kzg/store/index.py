"""Start-up of the KZG's Redis (SPEC §2, §4.5): the model stamp and the declared search index."""

from __future__ import annotations

import hashlib
import json
import logging

from redis.exceptions import ResponseError

from novaberg_core.contract import pair_token, user_token
from novaberg_core.embedding import LEGACY_RECIPE, ModelStamp, check_store_model
from services.kzg.store.base import StoreBase
from services.kzg.store.codec import text
from services.kzg.store.keys import INDEX_META_KEY, MODEL_KEY

__all__ = ["IndexStore"]

_LOG = logging.getLogger("services.kzg.store")


class IndexStore(StoreBase):
    """The index declared as data (``index_schema.json`` → FT.CREATE) and the model guard."""

    def index_arguments(self) -> list[str]:
        """The FT.CREATE arguments rendered from the declared schema (SPEC §4.5)."""
        args = ["FT.CREATE", self.index_name, "ON", "HASH", "PREFIX", "1", self.schema["prefix"]]
        if "language_field" in self.schema:
            args += ["LANGUAGE_FIELD", self.schema["language_field"]]
        args.append("SCHEMA")
        for field in self.schema["fields"]:
            args += [field["name"], field["type"]]
            if field["type"] == "TAG":
                if "separator" in field:
                    args += ["SEPARATOR", field["separator"]]
                if field.get("casesensitive"):
                    args.append("CASESENSITIVE")
            elif field["type"] == "VECTOR":
                params = ["TYPE", field["data_type"], "DIM", str(self.dimension),
                          "DISTANCE_METRIC", field["distance_metric"]]
                if self.vector_algorithm == "HNSW":
                    for name, value in self.schema["hnsw"].items():
                        params += [name, str(value)]
                args += [self.vector_algorithm, str(len(params)), *params]
        return args

    async def ensure_index(self) -> bool:
        """Create ``idx:kzg`` unless it exists with the same declaration; returns True if (re)created.

        A changed declaration (new field, other dimension or algorithm) drops the index, keeping
        the documents, and creates it again; Redis re-indexes the hashes in the background.
        """
        args = self.index_arguments()
        fingerprint = hashlib.sha256("\x1f".join(args).encode()).hexdigest()
        exists = True
        try:
            await self.redis.execute_command("FT.INFO", self.index_name)
        except ResponseError:
            exists = False
        if exists and text(await self.redis.get(INDEX_META_KEY)) == fingerprint:
            return False
        if exists:
            _LOG.warning("kzg: index %s declaration changed, rebuilding it (documents kept)", self.index_name)
            await self.redis.execute_command("FT.DROPINDEX", self.index_name)
        await self.backfill_pair_tokens()
        try:
            await self.redis.execute_command(*args)
        except ResponseError as error:
            if "already exists" not in str(error).lower():
                raise
        await self.redis.set(INDEX_META_KEY, fingerprint)
        return True

    async def backfill_pair_tokens(self, chunk: int = 500) -> int:
        """Give entries written before the token fields existed their ``paar``/``nutzer`` tokens.

        Runs only when the index declaration changed; one pipelined round trip per ``chunk`` keys.
        Returns how many entries got tokens.
        """
        written = 0
        cursor: int = 0
        while True:
            cursor, keys = await self.redis.scan(cursor, match=f"{self.schema['prefix']}*", count=chunk, _type="HASH")
            if keys:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.hmget(key, ["user_id", "character_id", "paar"])
                    rows = await pipe.execute()
                async with self.redis.pipeline(transaction=False) as pipe:
                    for key, (user_id, character_id, token) in zip(keys, rows, strict=True):
                        if token is None and user_id is not None and character_id is not None:
                            pipe.hset(key, mapping={
                                "paar": pair_token(text(user_id), text(character_id)),
                                "nutzer": user_token(text(user_id)),
                            })  # fmt: skip
                            written += 1
                    await pipe.execute()
            if cursor == 0:
                return written

    async def check_model(self, configured: ModelStamp) -> None:
        """Refuse a store filled by another model (SPEC §2); an unstamped store gets ``configured``."""
        raw = await self.redis.get(MODEL_KEY)
        recorded = None
        if raw is not None:
            data = json.loads(raw)
            recorded = ModelStamp(str(data["model_id"]), int(data["dimension"]), str(data.get("recipe", LEGACY_RECIPE)))
        check_store_model(recorded, configured)
        if recorded is None:
            stamp = json.dumps(
                {"model_id": configured.model_id, "dimension": configured.dimension, "recipe": configured.recipe}
            )
            if not await self.redis.set(MODEL_KEY, stamp, nx=True):
                await self.check_model(configured)  # another replica stamped it first
