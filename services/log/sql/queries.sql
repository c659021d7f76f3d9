-- Named queries of the log service (STYLE rule 4). The schema is on the search_path.
-- Optional filters are "$n IS NULL OR …"; the store runs the filter queries with
-- plan_cache_mode = force_custom_plan so every call is planned for the filters it has.

-- name: query
-- Rows by turn, span, node, art, pair, time range [since, until), trace and quelle; a turn's
-- story in order (erstellt_am, then id = insert order for equal timestamps). The store fills
-- {{direction}} with ASC (oldest first) or DESC (newest first) when it loads the query.
SELECT id, erstellt_am, turn_id, span_id::text AS span_id, quelle, node, art, inhalt::text AS inhalt_json,
       user_id, character_id, trace_id
FROM pipeline_log
WHERE ($1::varchar IS NULL OR turn_id = $1)
  AND ($2::uuid IS NULL OR span_id = $2)
  AND ($3::varchar IS NULL OR node = $3)
  AND ($4::varchar IS NULL OR art = $4)
  AND ($5::varchar IS NULL OR (user_id = $5 AND character_id = $6::varchar))
  AND ($7::timestamptz IS NULL OR erstellt_am >= $7)
  AND ($8::timestamptz IS NULL OR erstellt_am < $8)
  AND ($9::varchar IS NULL OR trace_id = $9)
  AND ($10::varchar IS NULL OR quelle = $10)
ORDER BY erstellt_am {{direction}}, id {{direction}}
LIMIT $11;

-- name: last_answers
-- syn §10.4 "Letzte fünf Turns von Nova": the newest answers (art = ausgabe) of one quelle.
-- inhalt is {"text": …} or a plain JSON string; $2 NULL = any node. A resent turn's answer, marked
-- {"wiederholt": true} by the pipeline's Dispatch, is the first sending's again: left out.
SELECT CASE jsonb_typeof(inhalt) WHEN 'string' THEN inhalt #>> '{}' ELSE inhalt ->> 'text' END AS text,
       erstellt_am, turn_id
FROM pipeline_log
WHERE quelle = $1
  AND art = 'ausgabe'
  AND ($2::varchar IS NULL OR node = $2)
  AND (jsonb_typeof(inhalt) = 'string' OR (inhalt ? 'text' AND NOT inhalt @> '{"wiederholt": true}'))
ORDER BY erstellt_am DESC, id DESC
LIMIT $3;

-- name: cluster_counts
-- syn §10.4 "Welche GV-Cluster wurden gewählt": count per cluster in [$1, $2), optionally one pair.
-- A cluster choice is a decision row (art = switch) named '<node>.cluster' whose ausgang is the
-- cluster (the pipeline logs entscheidung = 'pipeline.cluster'), or a gv switch row with a
-- 'cluster' key as in the seed's query.
SELECT cluster, count(*) AS anzahl
FROM (
    SELECT CASE WHEN inhalt ->> 'entscheidung' LIKE '%.cluster' THEN inhalt ->> 'ausgang'
                ELSE inhalt ->> 'cluster' END AS cluster
    FROM pipeline_log
    WHERE art = 'switch'
      AND erstellt_am >= $1 AND erstellt_am < $2
      AND ($3::varchar IS NULL OR (user_id = $3 AND character_id = $4::varchar))
      AND (inhalt ->> 'entscheidung' LIKE '%.cluster' OR (node = 'gv' AND inhalt ? 'cluster'))
) AS choices
WHERE cluster IS NOT NULL
GROUP BY cluster
ORDER BY anzahl DESC, cluster;

-- name: token_usage
-- syn §10.4 "Token-Verbrauch der letzten 24 Stunden", over [$1, $2).
SELECT COALESCE(SUM((inhalt ->> 'input_tokens')::bigint), 0)::bigint AS input_tokens,
       COALESCE(SUM((inhalt ->> 'output_tokens')::bigint), 0)::bigint AS output_tokens,
       COALESCE(SUM((inhalt ->> 'kosten_usd')::numeric), 0)::float8 AS kosten_usd,
       count(*) AS calls
FROM pipeline_log
WHERE art = 'token' AND erstellt_am >= $1 AND erstellt_am < $2;

-- name: purge
-- syn §10.5: delete rows older than the horizon except art = turn_roh; count the kept turn_roh.
WITH deleted AS (
    DELETE FROM pipeline_log
    WHERE erstellt_am < $1 AND art <> 'turn_roh'
    RETURNING 1
)
SELECT (SELECT count(*) FROM deleted) AS deleted,
       (SELECT count(*) FROM pipeline_log WHERE erstellt_am < $1 AND art = 'turn_roh') AS kept_turn_roh;

-- name: purge_pairs
-- The same retention limited to the pairs ($2 user ids, $3 character ids, index-aligned): a replay
-- on a simulated clock deletes only its own pairs' rows; maintenance rows (pair NULL) stay.
WITH deleted AS (
    DELETE FROM pipeline_log
    WHERE erstellt_am < $1 AND art <> 'turn_roh'
      AND user_id = ANY($2::text[])
      AND (user_id, character_id) IN (SELECT u, c FROM unnest($2::text[], $3::text[]) AS p(u, c))
    RETURNING 1
)
SELECT (SELECT count(*) FROM deleted) AS deleted,
       (SELECT count(*) FROM pipeline_log
         WHERE erstellt_am < $1 AND art = 'turn_roh' AND user_id = ANY($2::text[])
           AND (user_id, character_id) IN (SELECT u, c FROM unnest($2::text[], $3::text[]) AS p(u, c)))
           AS kept_turn_roh;
