-- Named queries of Pixie's store (STYLE rule 4). Schema: pixie (search_path).

-- name: claim_daily_run
-- The once-per-day claim: only one replica's INSERT wins the partial unique index.
INSERT INTO runs (task, run_day, day_claim, forced, trigger, turn_id, started_at, heartbeat_at,
                  outcome, replica)
VALUES ($1, $2, TRUE, FALSE, $3, $4, $5, $5, 'running', $6)
ON CONFLICT (task, run_day) WHERE day_claim DO NOTHING
RETURNING *;

-- name: expire_stale_claim
-- A claim whose replica stopped heart-beating is closed as failed and its day released.
UPDATE runs
   SET outcome = 'failed', ended_at = $3, day_claim = FALSE,
       error = 'replica ' || replica || ' stopped heart-beating during the run'
 WHERE task = $1 AND run_day = $2 AND day_claim AND outcome = 'running' AND heartbeat_at < $4
RETURNING id;

-- name: insert_run
INSERT INTO runs (task, run_day, day_claim, forced, trigger, turn_id, started_at, heartbeat_at,
                  outcome, counts, error, replica, ended_at, pairs)
VALUES ($1, $2, FALSE, $3, $4, $5, $6, $6, $7, $8::jsonb, $9, $10, $11, $12::jsonb)
RETURNING *;

-- name: heartbeat_run
UPDATE runs SET heartbeat_at = $2, counts = $3::jsonb WHERE id = $1 AND outcome = 'running';

-- name: finish_run
-- A failed daily run releases its day so the scheduler may retry it later.
UPDATE runs
   SET ended_at = $2, outcome = $3, counts = $4::jsonb, error = $5, heartbeat_at = $2,
       day_claim = day_claim AND $3 <> 'failed'
 WHERE id = $1
RETURNING *;

-- name: get_run
SELECT * FROM runs WHERE id = $1;

-- name: day_run
-- The run holding the day's claim, if any.
SELECT * FROM runs WHERE task = $1 AND run_day = $2 AND day_claim;

-- name: last_failed_day_run
SELECT * FROM runs
 WHERE task = $1 AND run_day = $2 AND NOT forced AND outcome = 'failed'
 ORDER BY id DESC LIMIT 1;

-- name: list_runs
SELECT * FROM runs WHERE ($1::text IS NULL OR task = $1) ORDER BY id DESC LIMIT $2;

-- name: last_runs
-- One index descent per task (runs_task_newest), however long the history grows.
SELECT r.*
  FROM unnest($1::text[]) AS t(task)
  CROSS JOIN LATERAL (SELECT * FROM runs WHERE runs.task = t.task ORDER BY id DESC LIMIT 1) AS r;

-- name: purge_runs
-- Finished runs started before $1; the newest run of every task stays (the API's "last run").
DELETE FROM runs
 WHERE ended_at IS NOT NULL AND started_at < $1
   AND id NOT IN (SELECT max(id) FROM runs GROUP BY task);

-- name: set_paused
INSERT INTO task_state (task, paused, updated_at, updated_by) VALUES ($1, $2, $3, $4)
ON CONFLICT (task) DO UPDATE
   SET paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by;

-- name: paused_tasks
SELECT task FROM task_state WHERE paused;

-- name: job_states
SELECT j.job_id, a.attempts, a.next_attempt_at, (p.job_id IS NOT NULL) AS parked
  FROM unnest($1::text[]) AS j(job_id)
  LEFT JOIN job_attempts a ON a.job_id = j.job_id
  LEFT JOIN parked_jobs p ON p.job_id = j.job_id
 WHERE a.job_id IS NOT NULL OR p.job_id IS NOT NULL;

-- name: record_failure
INSERT INTO job_attempts (job_id, kzg_key, user_id, character_id, attempts, last_error,
                          next_attempt_at, updated_at)
VALUES ($1, $2, $3, $4, 1, $5, $6, $7)
ON CONFLICT (job_id) DO UPDATE
   SET attempts = job_attempts.attempts + 1, last_error = EXCLUDED.last_error,
       updated_at = EXCLUDED.updated_at
RETURNING attempts;

-- name: set_next_attempt
UPDATE job_attempts SET next_attempt_at = $2 WHERE job_id = $1;

-- name: clear_attempts
DELETE FROM job_attempts WHERE job_id = ANY($1::text[]);

-- name: park_job
WITH gone AS (DELETE FROM job_attempts WHERE job_id = $1)
INSERT INTO parked_jobs (job_id, kzg_key, ausloeser_turn_id, user_id, character_id, attempts,
                         last_error, parked_at, replica)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (job_id) DO NOTHING;

-- name: list_parked
SELECT * FROM parked_jobs ORDER BY parked_at DESC, job_id LIMIT $1;

-- name: parked_count
-- Parked jobs of all pairs, for the metrics (a small table: jobs that failed too often).
SELECT count(*) AS parked FROM parked_jobs;
