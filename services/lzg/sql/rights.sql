-- Named queries of a person's rights over their memories (services/lzg/rights.py, migration 010).
-- Set-based: one statement per table. $1 = user_id; $2 = character_id, or NULL for every
-- character of the user (a user's erasure).

-- name: cache_new_nodes_generation
-- The cache's watermark read (services/lzg/cache.py) with the generation of the pair's node set in
-- the same statement: always one row for the generation, then one per node newer than $3.
-- Per node what never changes after promotion: vector, turn time, the text's terms (SPEC §11).
SELECT g.generation, k.id, k.embedding, k.zeit, k.inhalt, k.sprecher, k.sprache, k.antwort_auf
FROM (SELECT coalesce(max(generation), 0) AS generation FROM paar_generation
      WHERE schluessel IN (paar_schluessel($1, $2), nutzer_schluessel($1))) AS g
LEFT JOIN LATERAL (
    SELECT id, embedding, date_part('epoch', kzg_erstellt_am) AS zeit, inhalt, sprecher, sprache, antwort_auf
    FROM lzg_knoten
    WHERE user_id = $1 AND character_id = $2 AND id > $3
    ORDER BY id
) AS k ON TRUE
ORDER BY k.id NULLS FIRST;

-- name: pair_key
-- The pair's one-way key (equals contract.pair_token): what tombstones and generations hold.
SELECT paar_schluessel($1, $2);

-- name: user_key
SELECT nutzer_schluessel($1);

-- name: move_generation
-- A new generation for each key in $1 (pair or user keys): every cache holding them starts afresh.
INSERT INTO paar_generation (schluessel, generation)
SELECT s, nextval('knoten_generation') FROM unnest($1::text[]) AS s
ON CONFLICT (schluessel) DO UPDATE SET generation = excluded.generation;

-- name: promotion_erased
-- An erasure of the pair or its user at or after the entry's creation ($3), within the window $4.
SELECT EXISTS (
    SELECT 1 FROM loeschung
    WHERE schluessel IN (paar_schluessel($1, $2), nutzer_schluessel($1))
      AND geloescht_am >= $3 AND geloescht_am > now() - $4::interval
) AS erased;

-- name: record_tombstone
INSERT INTO loeschung (schluessel, geloescht_am) VALUES ($1, now())
ON CONFLICT (schluessel) DO UPDATE SET geloescht_am = excluded.geloescht_am;

-- name: lift_tombstone
-- An import re-creates the pair by the person's own data: promotions of its entries count again.
DELETE FROM loeschung WHERE schluessel IN (paar_schluessel($1, $2), nutzer_schluessel($1));

-- name: expire_tombstones
DELETE FROM loeschung WHERE geloescht_am <= now() - $1::interval;

-- name: characters_of_user
-- Every character the user has anything with (the pairs a user's erasure locks).
SELECT character_id FROM lzg_knoten WHERE user_id = $1
UNION SELECT character_id FROM entitaet WHERE user_id = $1
UNION SELECT character_id FROM timeline WHERE user_id = $1
UNION SELECT character_id FROM verbindung WHERE user_id = $1
UNION SELECT character_id FROM verwendung_turn WHERE user_id = $1
ORDER BY 1;

-- name: erase_verbindung
WITH d AS (DELETE FROM verbindung WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: erase_verwendung_turn
DELETE FROM verwendung_turn WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2);

-- name: erase_node_ids
-- The nodes an erasure deletes: their rank rows and edges go by forget_kanten_rang and forget_kanten.
SELECT id FROM lzg_knoten WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2);

-- name: erase_knoten
WITH d AS (DELETE FROM lzg_knoten WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: erase_entitaet
WITH d AS (DELETE FROM entitaet WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: erase_timeline
WITH d AS (DELETE FROM timeline WHERE user_id = $1 AND ($2::text IS NULL OR character_id = $2) RETURNING 1)
SELECT count(*) FROM d;

-- name: pair_is_empty
SELECT NOT EXISTS (SELECT 1 FROM lzg_knoten WHERE user_id = $1 AND character_id = $2)
   AND NOT EXISTS (SELECT 1 FROM entitaet WHERE user_id = $1 AND character_id = $2)
   AND NOT EXISTS (SELECT 1 FROM timeline WHERE user_id = $1 AND character_id = $2) AS empty;

-- name: export_entities
SELECT id, user_id, character_id, name, typ, aliases FROM entitaet
WHERE user_id = $1 AND character_id = $2 ORDER BY id;

-- name: export_timelines
SELECT id, user_id, character_id, zeitpunkt, praezision, titel, themen FROM timeline
WHERE user_id = $1 AND character_id = $2 ORDER BY id;

-- name: export_nodes
-- Every column but the vector: an import re-embeds the text.
SELECT id, kzg_quell_key, user_id, character_id, beobachter, inhalt, dimension,
       gewicht_roh, gewicht_absolut, gewicht_decay, haeufigkeit, aktiv,
       erstellt_am, verstaerkt_am, decay_am, kzg_erstellt_am,
       themen, gedaechtnistyp, entitaet_ids, timeline_id,
       emotion, arousal, emotions_vektor, intentionen, modus, sprach_stil, beziehungs_dynamik, tone,
       sprecher, sprache, quell_turn_id, antwort_auf
FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 ORDER BY id;

-- name: export_edges
SELECT e.* FROM lzg_kanten e JOIN lzg_knoten a ON a.id = e.knoten_a_id
WHERE a.user_id = $1 AND a.character_id = $2
ORDER BY e.id;

-- name: import_entity
INSERT INTO entitaet (user_id, character_id, name, typ, aliases) VALUES ($1, $2, $3, $4, $5)
RETURNING id;

-- name: import_timeline
INSERT INTO timeline (user_id, character_id, zeitpunkt, praezision, titel, themen)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id;

-- name: forget_targets
-- The pair's nodes named by id ($3) or made from a source turn's entries ($4), with every KZG key
-- and turn bridged to them.
SELECT k.id, k.kzg_quell_key,
       coalesce(array_agg(DISTINCT v.kzg_key) FILTER (WHERE v.kzg_key IS NOT NULL), '{}') AS kzg_keys,
       coalesce(array_agg(DISTINCT v.turn_id) FILTER (WHERE v.turn_id IS NOT NULL AND v.turn_id <> ''), '{}')
           AS turn_ids
FROM lzg_knoten k
LEFT JOIN verbindung v ON v.lzg_id = k.id
WHERE k.user_id = $1 AND k.character_id = $2
  AND (k.id = ANY($3::int[])
       OR ($4::text <> '' AND k.id IN (SELECT lzg_id FROM verbindung
                                       WHERE user_id = $1 AND character_id = $2 AND turn_id = $4)))
GROUP BY k.id
ORDER BY k.id;

-- name: forget_verbindung
DELETE FROM verbindung WHERE user_id = $1 AND character_id = $2 AND lzg_id = ANY($3::int[]);

-- name: forget_kanten_rang
-- The rank rows of the nodes $1 (a forget's, or an erasure's every node).
DELETE FROM lzg_kanten_rang WHERE knoten_x_id = ANY($1::int[]) OR knoten_y_id = ANY($1::int[]);

-- name: forget_kanten
WITH d AS (DELETE FROM lzg_kanten WHERE knoten_a_id = ANY($1::int[]) OR knoten_b_id = ANY($1::int[]) RETURNING 1)
SELECT count(*) FROM d;

-- name: forget_knoten
DELETE FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND id = ANY($3::int[]);

-- name: node_for_correction
SELECT k.*, t.zeitpunkt, t.praezision
FROM lzg_knoten k LEFT JOIN timeline t ON t.id = k.timeline_id
WHERE k.user_id = $1 AND k.character_id = $2 AND (k.id = $3 OR k.kzg_quell_key = $4);

-- name: correct_node
UPDATE lzg_knoten SET inhalt = $4, embedding = $5 WHERE id = $1 AND user_id = $2 AND character_id = $3;
