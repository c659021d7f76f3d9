-- A person's erasure, orchestrated by Pixie (docs/decisions.md "Erasure"; services/pixie/erasure.py).
-- The erasure is recorded before any store is touched and each finished step is recorded, so an
-- interrupted erasure is finished by any replica (at start and periodically).
CREATE TABLE erasures (
    id             BIGSERIAL PRIMARY KEY,
    -- pair | user (every character of the user)
    scope          TEXT        NOT NULL CHECK (scope IN ('pair', 'user')),
    -- The ids, held only while the erasure runs (it needs them to finish); NULL once it is done.
    user_id        TEXT,
    character_id   TEXT,
    -- The one-way key of the pair or the user (novaberg_core.contract.pair_token / user_token):
    -- what the receipt and the promotion worker's check keep.
    schluessel     TEXT        NOT NULL,
    state          TEXT        NOT NULL CHECK (state IN ('running', 'done')),
    -- kzg, lzg, pixie, log in the order they finished.
    steps_done     TEXT[]      NOT NULL DEFAULT '{}',
    counts         JSONB       NOT NULL DEFAULT '{}'::jsonb,
    -- The promotion stream's last id when the KZG step ran: older jobs of the target that a worker
    -- still holds are dropped, newer ones are new memories.
    stream_cutoff  TEXT,
    reason         TEXT        NOT NULL DEFAULT '',
    error          TEXT        NOT NULL DEFAULT '',
    requested_at   TIMESTAMPTZ NOT NULL,
    finished_at    TIMESTAMPTZ,
    replica        TEXT        NOT NULL,
    CHECK (state = 'done' OR user_id IS NOT NULL),
    CHECK (state = 'running' OR (user_id IS NULL AND character_id IS NULL))
);
CREATE INDEX erasures_schluessel ON erasures (schluessel);
CREATE INDEX erasures_running ON erasures (id) WHERE state = 'running';
