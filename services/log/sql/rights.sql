-- Named queries of a person's erasure in the log (services/log/rights.py, migration 002).

-- name: erase_rows
-- Every row of the pair ($2 set) or of every pair of the user ($2 NULL), turn_roh included.
WITH d AS (
    DELETE FROM pipeline_log WHERE user_id = $1 AND ($2::varchar IS NULL OR character_id = $2) RETURNING art
)
SELECT count(*) AS rows, count(*) FILTER (WHERE art = 'turn_roh') AS turn_roh FROM d;

-- name: erase_unpaired_rows
-- Maintenance rows without a pair whose content names the target's KZG keys ($1: the key prefix
-- as it appears in JSON text, e.g. kzg:<user>:<character>:).
WITH d AS (DELETE FROM pipeline_log WHERE user_id IS NULL AND strpos(inhalt::text, $1) > 0 RETURNING 1)
SELECT count(*) FROM d;

-- name: record_tombstone
INSERT INTO loeschung (schluessel, geloescht_am) VALUES ($1, clock_timestamp())
ON CONFLICT (schluessel) DO UPDATE SET geloescht_am = excluded.geloescht_am;

-- name: expire_tombstones
DELETE FROM loeschung WHERE geloescht_am <= now() - $1::interval;

-- name: active_tombstones
SELECT schluessel, geloescht_am FROM loeschung WHERE geloescht_am > now() - $1::interval;
