-- Pixie's own store (SPEC §9): run history, task state, promotion-job attempts, parked jobs.

CREATE TABLE runs (
    id           BIGSERIAL PRIMARY KEY,
    task         TEXT        NOT NULL,
    -- The UTC day a daily run belongs to; NULL for continuous work.
    run_day      DATE,
    -- This row holds the task's once-per-day claim (unique below). Released when the run fails
    -- so a later tick may retry the day; never set on forced runs.
    day_claim    BOOLEAN     NOT NULL DEFAULT FALSE,
    forced       BOOLEAN     NOT NULL DEFAULT FALSE,
    -- schedule | manual | worker
    trigger      TEXT        NOT NULL,
    turn_id      TEXT        NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    ended_at     TIMESTAMPTZ,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    outcome      TEXT        NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'skipped')),
    counts       JSONB       NOT NULL DEFAULT '{}'::jsonb,
    error        TEXT        NOT NULL DEFAULT '',
    replica      TEXT        NOT NULL,
    CHECK (NOT day_claim OR run_day IS NOT NULL),
    CHECK (NOT (day_claim AND forced))
);

-- One actor per daily task and day, across replicas: the INSERT that wins this index runs it.
CREATE UNIQUE INDEX runs_one_claim_per_day ON runs (task, run_day) WHERE day_claim;
CREATE INDEX runs_task_newest ON runs (task, id DESC);
CREATE INDEX runs_task_day ON runs (task, run_day) WHERE run_day IS NOT NULL;

CREATE TABLE task_state (
    task       TEXT PRIMARY KEY,
    paused     BOOLEAN     NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMPTZ NOT NULL,
    updated_by TEXT        NOT NULL
);

-- Failures of promotion jobs still in the stream (retry with backoff, SPEC §4.6 at-least-once).
CREATE TABLE job_attempts (
    job_id            TEXT PRIMARY KEY,
    kzg_key           TEXT        NOT NULL,
    user_id           TEXT        NOT NULL,
    character_id      TEXT        NOT NULL,
    attempts          INTEGER     NOT NULL CHECK (attempts >= 1),
    last_error        TEXT        NOT NULL,
    next_attempt_at   TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL
);

-- Jobs that failed max_attempts times: acked in the stream so they block nothing, kept here.
CREATE TABLE parked_jobs (
    job_id            TEXT PRIMARY KEY,
    kzg_key           TEXT        NOT NULL,
    ausloeser_turn_id TEXT        NOT NULL,
    user_id           TEXT        NOT NULL,
    character_id      TEXT        NOT NULL,
    attempts          INTEGER     NOT NULL,
    last_error        TEXT        NOT NULL,
    parked_at         TIMESTAMPTZ NOT NULL,
    replica           TEXT        NOT NULL
);
CREATE INDEX parked_jobs_newest ON parked_jobs (parked_at DESC);
