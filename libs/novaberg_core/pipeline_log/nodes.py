"""The pipeline-log nodes, and decisions, that more than one service writes under (SPEC §8; syn §10.2:
a record's ``node`` is the step of the turn it belongs to).

Some of the pipeline's steps are carried out by other services: the enricher's spreading read in the
LZG, the usage reinforcement (``verwendung``) in the LZG, the promotion in Pixie and the LZG. Their
records share the step's node, spelled here once; a node only one service writes stays in that service.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DECISION_PROMOTION_OUTCOME", "NODE_ENRICHER", "NODE_PROMOTION", "NODE_VERWENDUNG"]

NODE_ENRICHER: Final = "enricher"
"""Building the dossier: the pipeline's retrieval decisions and the LZG's spreading read (SPEC §5.8, §7)."""
NODE_VERWENDUNG: Final = "verwendung"
"""Usage reinforcement after the answer: the pipeline's call and the LZG's protocol (SPEC §5.6)."""
NODE_PROMOTION: Final = "promotion"
"""A KZG entry's way into the LZG: Pixie's job and the LZG's promotion (SPEC §5.3)."""

DECISION_PROMOTION_OUTCOME: Final = "promotion.ausgang"
"""The ``entscheidung`` of a promotion job's end, with its ``ausgang``: Pixie's outcomes of a job, the LZG's
of a promotion its pair's erasure cancelled (SPEC §5.3)."""
