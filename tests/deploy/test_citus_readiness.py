"""Is every table and query ready to be distributed by the pair (Citus, distribution column user_id)?

Distributing PostgreSQL by the pair (docs/scaling.md) needs every pair table to carry
``user_id``/``character_id``, every primary key, unique constraint and foreign key between pair
tables to include them, and every query on a pair table to name the pair. This test parses the
migrations and the named queries and lists what breaks those rules. Today's schema cannot hold all
of them (SERIAL ids as keys, edges keyed by node id only); those findings are the documented
exceptions below — each one stands in docs/scaling.md with its migration path — and any new
violation fails the test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from novaberg_core.migrations import load_queries
from tests.deploy import chart

SERVICES_DIR = chart.REPO_ROOT / "services"
SCALING_DOC = chart.REPO_ROOT / "docs" / "scaling.md"
PAIR = ("user_id", "character_id")

# Not per pair: one row per process, task or day — Citus reference tables (or coordinator-local).
# A person's rights: erasure receipts and tombstones keyed by a one-way token, no ids by design
# (docs/decisions.md "Erasure"); small, written once per erasure, read by token.
GLOBAL_TABLES = {
    "lzg.modell", "pixie.runs", "pixie.task_state",
    "lzg.paar_generation", "lzg.loeschung", "log.loeschung", "pixie.erasures",
}

# What today's schema breaks; each line is also in docs/scaling.md (the migration path is there).
DOCUMENTED_EXCEPTIONS = {
    "lzg.entitaet: primary key (id) lacks the pair",
    "lzg.timeline: primary key (id) lacks the pair",
    "lzg.lzg_knoten: primary key (id) lacks the pair",
    "lzg.lzg_knoten: unique (kzg_quell_key) lacks the pair",
    "lzg.lzg_knoten: foreign key (timeline_id) → timeline lacks the pair",
    "lzg.lzg_kanten: no pair columns",
    "lzg.lzg_kanten_rang: no pair columns",
    "lzg.verbindung: primary key (id) lacks the pair",
    "lzg.verbindung: unique (kzg_key, lzg_id) lacks the pair",
    "lzg.verbindung: foreign key (lzg_id) → lzg_knoten lacks the pair",
    "pixie.job_attempts: primary key (job_id) lacks the pair",
    "pixie.parked_jobs: primary key (job_id) lacks the pair",
    "log.pipeline_log: primary key (id) lacks the pair",
    "log.pipeline_log: pair columns nullable",
    "lzg query node_by_quell_key: no pair",
    "lzg query half_reactivate: no pair",
    "pixie query clear_attempts: no pair",
    "pixie query job_states: no pair",
    "pixie query set_next_attempt: no pair",
}

# Queries over all pairs by design: on Citus they fan out to every shard (one statement per shard,
# in parallel), which is what they mean. Also in docs/scaling.md.
FAN_OUT_QUERIES = {
    "lzg query active_pairs: no pair",
    "lzg query vector_column_dimension: no pair",
    "log query purge: no pair",
    "log query token_usage: no pair",
    "log query last_answers: no pair",
    "pixie query list_parked: no pair",
    "pixie query all_parked: no pair",
    "pixie query parked_by_ids: no pair",
    "pixie query unpark_jobs: no pair",
    "log query erase_unpaired_rows: no pair",
    "lzg query graph_size: no pair",
    "pixie query parked_count: no pair",
    "lzg query expire_usage_marks: no pair",
}


@dataclass
class Table:
    name: str
    columns: dict[str, str] = field(default_factory=dict)  # column → its definition
    keys: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # ("primary key"|"unique", columns)
    foreign_keys: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # (columns, referenced table)


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in body:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _columns(text: str) -> tuple[str, ...]:
    return tuple(c.strip().split()[0].strip('"') for c in text.split(","))


def parse_tables(service: str, services_dir: Path = SERVICES_DIR) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    for path in sorted((services_dir / service / "sql" / "migrations").glob("*.sql")):
        sql = _strip_comments(path.read_text())
        for match in re.finditer(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)\s*\((.*?)\)\s*(?:WITH \([^)]*\))?;", sql, re.S):
            table = Table(match.group(1))
            for item in _split_top_level(match.group(2)):
                upper = item.upper()
                if upper.startswith(("PRIMARY KEY", "UNIQUE")):
                    kind = "primary key" if upper.startswith("PRIMARY") else "unique"
                    table.keys.append((kind, _columns(item[item.index("(") + 1 : item.rindex(")")])))
                elif upper.startswith(("CHECK", "CONSTRAINT", "FOREIGN KEY", "EXCLUDE")):
                    continue
                else:
                    column = item.split()[0]
                    table.columns[column] = item
                    if "PRIMARY KEY" in upper:
                        table.keys.append(("primary key", (column,)))
                    elif re.search(r"\bUNIQUE\b", upper):
                        table.keys.append(("unique", (column,)))
                    reference = re.search(r"REFERENCES (\w+)", item)
                    if reference:
                        table.foreign_keys.append(((column,), reference.group(1)))
            tables[table.name] = table
        for match in re.finditer(r"CREATE UNIQUE INDEX \w+ ON (\w+) \((.*?)\)(?: WHERE [^;]*)?;", sql, re.S):
            columns = tuple(c.strip() for c in _split_top_level(match.group(2)))
            tables[match.group(1)].keys.append(("unique", columns))
    return tables


def names_the_pair(query: str) -> bool:
    """The query filters on (or inserts) the distribution column — not merely selects it."""
    sql = _strip_comments(query)
    filtered = re.search(r"\buser_id\s*(=|IN\b)", sql, re.I)
    inserted = re.search(r"INSERT INTO \w+\s*\([^)]*\buser_id\b", sql, re.I | re.S)
    return bool(filtered or inserted)


def findings(services_dir: Path = SERVICES_DIR, services: tuple[str, ...] = ("lzg", "pixie", "log")) -> set[str]:
    """Every break of the pair rule in the services' migrations and named queries."""
    found: set[str] = set()
    for service in services:
        tables = parse_tables(service, services_dir)
        pair_tables = set()
        for table in tables.values():
            qualified = f"{service}.{table.name}"
            if qualified in GLOBAL_TABLES:
                continue
            if not all(c in table.columns for c in PAIR):
                found.add(f"{qualified}: no pair columns")
                pair_tables.add(table.name)
                continue
            pair_tables.add(table.name)
            if any("NOT NULL" not in table.columns[c].upper() for c in PAIR):
                found.add(f"{qualified}: pair columns nullable")
            for kind, columns in table.keys:
                if not set(PAIR) <= set(columns):
                    found.add(f"{qualified}: {kind} ({', '.join(columns)}) lacks the pair")
            for columns, target in table.foreign_keys:
                if not set(PAIR) <= set(columns):
                    found.add(f"{qualified}: foreign key ({', '.join(columns)}) → {target} lacks the pair")
        named: dict[str, str] = {}
        for path in sorted((services_dir / service / "sql").glob("*.sql")):  # queries.sql, rights.sql
            named.update(load_queries(path))
        for name, query in named.items():
            touched = {t for t in pair_tables if re.search(rf"\b{t}\b", query)}
            if touched and not names_the_pair(query):
                # a table without pair columns is reached only through a pair table's rows
                if touched <= {t for t in pair_tables if f"{service}.{t}: no pair columns" in found}:
                    continue
                found.add(f"{service} query {name}: no pair")
    return found


def test_tables_and_queries_hold_the_pair_except_the_documented_list() -> None:
    found = findings()
    assert found - DOCUMENTED_EXCEPTIONS - FAN_OUT_QUERIES == set(), "new violations of the pair rule"
    assert (DOCUMENTED_EXCEPTIONS | FAN_OUT_QUERIES) - found == set(), "fixed: remove them from the lists and the doc"


def test_every_exception_is_documented_with_its_migration_path() -> None:
    doc = SCALING_DOC.read_text()
    missing = [e for e in sorted(DOCUMENTED_EXCEPTIONS | FAN_OUT_QUERIES) if f"`{e}`" not in doc]
    assert missing == [], f"docs/scaling.md does not list {missing}"


def test_the_parser_sees_the_schema() -> None:
    lzg = parse_tables("lzg")
    assert {"entitaet", "timeline", "lzg_knoten", "lzg_kanten", "lzg_kanten_rang", "verbindung", "modell"} <= set(lzg)
    assert (("timeline_id",), "timeline") in lzg["lzg_knoten"].foreign_keys
    assert ("unique", ("user_id", "character_id", "lower(name)")) in lzg["entitaet"].keys
    assert set(parse_tables("pixie")) == {"runs", "task_state", "job_attempts", "parked_jobs", "erasures"}
    assert "user_id" in parse_tables("log")["pipeline_log"].columns


def test_a_new_violation_is_found(tmp_path: Path) -> None:
    """The check can fail: a copy of the LZG's SQL with one more pair-less query and table."""
    copy = tmp_path / "lzg" / "sql"
    (copy / "migrations").mkdir(parents=True)
    for path in (SERVICES_DIR / "lzg" / "sql" / "migrations").glob("*.sql"):
        (copy / "migrations" / path.name).write_text(path.read_text())
    (copy / "migrations" / "999_probe.sql").write_text("CREATE TABLE probe (id SERIAL PRIMARY KEY, x TEXT);\n")
    queries = (SERVICES_DIR / "lzg" / "sql" / "queries.sql").read_text()
    (copy / "queries.sql").write_text(queries + "\n-- name: probe_all_nodes\nSELECT id FROM lzg_knoten WHERE aktiv;\n")
    found = findings(services_dir=tmp_path, services=("lzg",))
    assert {"lzg.probe: no pair columns", "lzg query probe_all_nodes: no pair"} <= found
