"""The cluster table (SPEC §5.8 step 2, §6): data in ``data/clusters.json``, not code.

A cluster is the conversation mode of the previous turn (13 named + ``paradox``). Two
constants hang off it: ``CLUSTER_ENRICHER_SPRUENGE`` (hops of the LZG spreading read) and
``CLUSTER_GRAVITATION_FAKTOR`` (share of the goal direction in the perception shift). A
cluster that is not in the table is an error, never a silent fallback (SPEC §6); only a
turn *without* a stored cluster uses :data:`DEFAULT_CLUSTER` — that choice is the caller's.

    table = default_clusters()
    hops = table.enricher_spruenge("glut")        # 3
    f = table.gravitation_faktor("Bier")          # 0.20 (names match ignoring case and spaces)
    table.enricher_spruenge("disco")              # InvalidArgument: unknown cluster 'disco'; known: ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from novaberg_core.errors import InvalidArgument

__all__ = [
    "CLUSTER_ENRICHER_SPRUENGE",
    "CLUSTER_GRAVITATION_FAKTOR",
    "DEFAULT_CLUSTERS_PATH",
    "ClusterTable",
    "default_clusters",
    "load_clusters",
]

DEFAULT_CLUSTERS_PATH = Path(__file__).resolve().parent / "data" / "clusters.json"
"""The cluster table shipped with the libs."""


@dataclass(frozen=True)
class ClusterTable:
    """Per cluster: spreading hops and gravitation factor; names are lower case."""

    enricher_spruenge_by_cluster: Mapping[str, int]
    """``CLUSTER_ENRICHER_SPRUENGE`` (SPEC §5.8): 0..3 hops."""
    gravitation_faktor_by_cluster: Mapping[str, float]
    """``CLUSTER_GRAVITATION_FAKTOR`` (SPEC §6): 0..1."""
    default_cluster: str
    """The cluster of a turn that has no stored cluster (``paradox``, SPEC §6)."""

    @property
    def known(self) -> tuple[str, ...]:
        """Every cluster name, in table order."""
        return tuple(self.enricher_spruenge_by_cluster)

    def canonical(self, cluster: str, field: str = "cluster") -> str:
        """The table's spelling of ``cluster`` (trimmed, any case); InvalidArgument when unknown."""
        name = cluster.strip().lower() if isinstance(cluster, str) else ""
        if name not in self.enricher_spruenge_by_cluster:
            raise InvalidArgument(f"unknown {field} {cluster!r}; known: {', '.join(self.known)}")
        return name

    def enricher_spruenge(self, cluster: str) -> int:
        """Hops of the spreading read for ``cluster`` (SPEC §5.8 step 2)."""
        return self.enricher_spruenge_by_cluster[self.canonical(cluster)]

    def gravitation_faktor(self, cluster: str) -> float:
        """Gravitation factor ``f`` for ``cluster`` (SPEC §6)."""
        return self.gravitation_faktor_by_cluster[self.canonical(cluster)]


def load_clusters(path: Path | str = DEFAULT_CLUSTERS_PATH) -> ClusterTable:
    """Read and validate a cluster file; a malformed table fails at start-up, naming the entry."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    entries = raw.get("clusters")
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"{path}: 'clusters' must be a non-empty object")
    hops: dict[str, int] = {}
    factors: dict[str, float] = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or name != name.strip().lower() or not name:
            raise ValueError(f"{path}: cluster name {name!r} must be lower case without spaces")
        spruenge = entry.get("enricher_spruenge") if isinstance(entry, dict) else None
        faktor = entry.get("gravitation_faktor") if isinstance(entry, dict) else None
        if not isinstance(spruenge, int) or isinstance(spruenge, bool) or not 0 <= spruenge <= 3:
            raise ValueError(f"{path}: {name}.enricher_spruenge must be an integer 0..3, got {spruenge!r}")
        if not isinstance(faktor, int | float) or isinstance(faktor, bool) or not 0.0 <= faktor <= 1.0:
            raise ValueError(f"{path}: {name}.gravitation_faktor must be a number in 0..1, got {faktor!r}")
        hops[name] = spruenge
        factors[name] = float(faktor)
    default = raw.get("default_cluster")
    if default not in hops:
        raise ValueError(f"{path}: default_cluster {default!r} is not in the table")
    return ClusterTable(
        enricher_spruenge_by_cluster=MappingProxyType(hops),
        gravitation_faktor_by_cluster=MappingProxyType(factors),
        default_cluster=default,
    )


@lru_cache(maxsize=1)
def default_clusters() -> ClusterTable:
    """The shipped cluster table, read once per process."""
    return load_clusters()


CLUSTER_ENRICHER_SPRUENGE: Mapping[str, int] = default_clusters().enricher_spruenge_by_cluster
"""Hops per cluster (SPEC §5.8, syn §8.2.1); read-only."""
CLUSTER_GRAVITATION_FAKTOR: Mapping[str, float] = default_clusters().gravitation_faktor_by_cluster
"""Gravitation factor per cluster (SPEC §6, mem §11.4); read-only."""
