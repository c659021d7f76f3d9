-- Named queries of a person's rights in Pixie's schema (services/pixie/app/erasure.py, app/rights.py).

-- name: insert_erasure
INSERT INTO erasures (scope, user_id, character_id, schluessel, state, reason, requested_at, replica)
VALUES ($1, $2, $3, $4, 'running', $5, $6, $7)
RETURNING *;

-- name: get_erasure
SELECT * FROM erasures WHERE id = $1;

-- name: running_erasures
SELECT id FROM erasures WHERE state = 'running' ORDER BY id;

-- name: erasure_step_done
UPDATE erasures
   SET steps_done = array_append(steps_done, $2), counts = counts || $3::jsonb,
       stream_cutoff = coalesce($4, stream_cutoff), error = ''
 WHERE id = $1 AND state = 'running' AND NOT ($2 = ANY(steps_done))
RETURNING *;

-- name: erasure_step_failed
UPDATE erasures SET error = $2 WHERE id = $1;

-- name: finish_erasure
-- Done: the ids go, the key and the counts stay as the receipt.
UPDATE erasures SET state = 'done', finished_at = $2, user_id = NULL, character_id = NULL
 WHERE id = $1
RETURNING *;

-- name: list_erasures
SELECT * FROM erasures ORDER BY id DESC LIMIT $1;

-- name: erased_jobs
-- Jobs of one pair ($2: its key and its user's key) that an erasure took: queued up to the erasure's
-- stream cutoff, or any job while the erasure has not reached the KZG yet.
SELECT j.job_id FROM unnest($1::text[]) AS j(job_id)
WHERE EXISTS (
    SELECT 1 FROM erasures e
    WHERE e.schluessel = ANY($2::text[])
      AND (e.stream_cutoff IS NULL
           OR (split_part(j.job_id, '-', 1)::numeric, split_part(j.job_id, '-', 2)::numeric)
              <= (split_part(e.stream_cutoff, '-', 1)::numeric, split_part(e.stream_cutoff, '-', 2)::numeric))
);

-- name: erase_job_attempts
WITH d AS (DELETE FROM job_attempts WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: erase_parked_jobs
WITH d AS (DELETE FROM parked_jobs WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: scrub_run_errors
-- A run's error may quote a job's KZG key ($1: the target's key prefix); the message goes.
WITH d AS (UPDATE runs SET error = $2 WHERE strpos(error, $1) > 0 RETURNING 1)
SELECT count(*) FROM d;

-- name: parked_by_ids
SELECT * FROM parked_jobs WHERE job_id = ANY($1::text[]) ORDER BY parked_at, job_id;

-- name: all_parked
SELECT * FROM parked_jobs ORDER BY parked_at, job_id LIMIT $1;

-- name: unpark_jobs
WITH gone AS (DELETE FROM job_attempts WHERE job_id = ANY($1::text[]))
DELETE FROM parked_jobs WHERE job_id = ANY($1::text[]);
