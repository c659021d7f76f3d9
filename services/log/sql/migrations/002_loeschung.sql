-- A person's erasure (docs/decisions.md "Erasure"; services/log/rights.py): tombstones of erased
-- pairs and users by one-way key (novaberg_core.contract.pair_token / user_token), never by id.
-- Records of a tombstoned target dated up to its erasure that reach the log later (writers buffer
-- for seconds, longer while the log is down) are dropped at ingest.
CREATE TABLE loeschung (
    schluessel TEXT PRIMARY KEY,
    geloescht_am TIMESTAMPTZ NOT NULL
);
