"""Store-model guard: a store filled by one model is never served with another (SPEC §2).

Each service records a :class:`ModelStamp` in its own store when it first writes a vector
and compares it at start-up with :func:`check_store_model`; only a re-embed tool that has
rewritten every vector of the store may change the stamp.
"""

from __future__ import annotations

from dataclasses import dataclass

from novaberg_core.embedding.texts import EMBED_RECIPE
from novaberg_core.errors import ModelMismatch


@dataclass(frozen=True)
class ModelStamp:
    """Which embedding model (and vector length) filled a store."""

    model_id: str
    """The provider's ``model_id``, e.g. ``all-minilm-l6-v2-int8``."""
    dimension: int
    """Length of the stored vectors."""
    recipe: str = EMBED_RECIPE
    """Which embed texts (``novaberg_core.embedding.texts``) produced them; another recipe is another model."""

    def __str__(self) -> str:
        return f"{self.model_id} ({self.dimension}-d, texts {self.recipe})"


def check_vector_model(field: str, given: str, configured: ModelStamp) -> None:
    """A caller's vector says which model made it; another than this service's is refused (SPEC §2).

    An empty ``given`` (a caller that does not say) is accepted: the dimension check still applies.
    """
    if given and given != configured.model_id:
        raise ModelMismatch(
            f"{field} was embedded with {given!r}, this service embeds with {configured.model_id!r}; "
            "no turn may see vectors of two models — configure one model for every service"
        )


def model_info(stamp: ModelStamp) -> tuple[str, int, str]:
    """(model_id, dimension, recipe) of a stamp, as the GetModel RPCs answer it."""
    return stamp.model_id, stamp.dimension, stamp.recipe


def check_store_model(recorded: ModelStamp | None, configured: ModelStamp) -> None:
    """Refuse to serve a store filled by another model than the configured one (SPEC §2).

    ``recorded`` is None for an empty store that has no stamp yet: that is allowed, and the
    caller records ``configured`` with its first write.
    """
    if recorded is None or recorded == configured:
        return
    raise ModelMismatch(
        f"this store was filled by embedding model {recorded}, but the service is configured "
        f"with {configured}; vectors of two models (or text recipes) must never be mixed. Re-embed the "
        f"store with `novaberg reembed` (every vector, then the new stamp is recorded), or start the "
        f"service with {recorded.model_id} again."
    )
