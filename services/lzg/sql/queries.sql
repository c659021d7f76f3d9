-- Named queries of the LZG store (STYLE rule 4). $n placeholders; every query is scoped to one
-- pair wherever it reads or writes pair data.

-- name: lock_pair
-- Serialises every write of one pair (promotion, reinforcement + Trigger 2, Trigger 3); other
-- pairs run in parallel (migration 004).
SELECT paar_sperren($1, $2);

-- name: model_stamp
SELECT model_id, dimension, rezept FROM modell WHERE id;

-- name: record_model_stamp
INSERT INTO modell (id, model_id, dimension, rezept) VALUES (TRUE, $1, $2, $3) ON CONFLICT (id) DO NOTHING;

-- name: vector_column_dimension
SELECT atttypmod FROM pg_attribute
WHERE attrelid = 'lzg_knoten'::regclass AND attname = 'embedding';

-- name: node_by_quell_key
SELECT id, user_id, character_id FROM lzg_knoten WHERE kzg_quell_key = $1;

-- name: known_entity_ids
SELECT id FROM entitaet WHERE user_id = $1 AND character_id = $2 AND id = ANY($3::int[]);

-- name: timeline_ref
SELECT zeitpunkt, praezision FROM timeline WHERE user_id = $1 AND character_id = $2 AND id = $3;

-- name: timelines_of_precision
-- The pair's timelines of one precision inside a window that covers the tolerance; the exact
-- distance is checked by the caller.
SELECT id, zeitpunkt FROM timeline
WHERE user_id = $1 AND character_id = $2 AND praezision = $3 AND zeitpunkt BETWEEN $4 AND $5;

-- name: node_activity
-- Whether a promotion's hit is a memory at the promotion's instant $4 as every read judges it
-- (SPEC §5.3 step 4 with §11; migration 011 ``knoten_am``: active, its weight then at least $6, $5
-- the decay rate per day) — a node faded under the minimum since its last decay is asleep before the
-- daily decay turns its flag — and its gewicht_absolut. A hit made after $4 (an entry promoted late)
-- is judged at its making.
SELECT EXISTS (
           SELECT 1 FROM knoten_am(k.id, k.user_id, k.character_id, GREATEST($4, k.kzg_erstellt_am), $5, $6)
       ) AS aktiv,
       k.gewicht_absolut
FROM lzg_knoten AS k WHERE k.id = $1 AND k.user_id = $2 AND k.character_id = $3;

-- name: half_reactivate
-- SPEC §5.7 for a hit node_activity found asleep, in the same transaction under the pair's lock (its
-- flag may still be set: the daily decay had not yet turned it).
UPDATE lzg_knoten
SET gewicht_decay = $2, verstaerkt_am = $3, decay_am = $3, aktiv = TRUE
WHERE id = $1;

-- name: promotion_candidates
-- Fresh data of every node that may connect to a new node: the ones the cache found close by
-- embedding, plus those sharing a theme, an entity (GIN indexes) or a timeline within tolerance.
SELECT id, gewicht_absolut, themen, entitaet_ids, timeline_id
FROM lzg_knoten
WHERE user_id = $1 AND character_id = $2
  AND (id = ANY($3::int[]) OR themen && $4::text[] OR entitaet_ids && $5::int[] OR timeline_id = ANY($6::int[]));

-- name: insert_node
-- A node with every column: a promotion passes aktiv TRUE and its creation time as verstaerkt_am
-- and decay_am (SPEC §5.3 step 5); an import passes them as exported (not a promotion: no formula
-- runs, services/lzg/rights.py).
INSERT INTO lzg_knoten (
    kzg_quell_key, user_id, character_id, beobachter, inhalt, embedding, dimension,
    gewicht_roh, gewicht_absolut, gewicht_decay, haeufigkeit, aktiv,
    erstellt_am, verstaerkt_am, decay_am, kzg_erstellt_am,
    themen, gedaechtnistyp, entitaet_ids, timeline_id,
    emotion, arousal, emotions_vektor, intentionen, modus, sprach_stil, beziehungs_dynamik, tone,
    sprecher, sprache, quell_turn_id, antwort_auf
) VALUES (
    $1, $2, $3, $4, $5, $6, $7,
    $8, $9, $10, $11, $12,
    $13, $14, $15, $16,
    $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27, $28,
    $29, $30, $31, $32
) RETURNING id;

-- name: insert_bridge
INSERT INTO verbindung (turn_id, kzg_key, lzg_id, user_id, character_id, ausgang, ausloeser_turn_id, erstellt_am)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (kzg_key, lzg_id) DO NOTHING;

-- name: node
SELECT * FROM lzg_knoten WHERE id = $1 AND user_id = $2 AND character_id = $3;

-- name: nodes
SELECT * FROM lzg_knoten
WHERE user_id = $1 AND character_id = $2 AND (aktiv OR $3)
ORDER BY gewicht_decay DESC, id
LIMIT $4;

-- name: edges_of_node
SELECT * FROM lzg_kanten WHERE knoten_a_id = $1 OR knoten_b_id = $1 ORDER BY id LIMIT $2;

-- name: edges_of_pair
SELECT e.* FROM lzg_kanten e JOIN lzg_knoten a ON a.id = e.knoten_a_id
WHERE a.user_id = $1 AND a.character_id = $2
ORDER BY e.id
LIMIT $3;

-- name: pair_stats
SELECT
    (SELECT count(*) FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND aktiv) AS nodes_active,
    (SELECT count(*) FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND NOT aktiv) AS nodes_inactive,
    (SELECT count(*) FROM lzg_kanten e JOIN lzg_knoten a ON a.id = e.knoten_a_id
      WHERE a.user_id = $1 AND a.character_id = $2) AS edges,
    (SELECT count(*) FROM entitaet WHERE user_id = $1 AND character_id = $2) AS entities,
    (SELECT count(*) FROM timeline WHERE user_id = $1 AND character_id = $2) AS timelines;

-- name: recall_details
-- Memories of the pair as they were at $4 (SPEC §11, ``knoten_am`` of migrations 011 and 017, each id
-- looked up by itself: made by then, active, the weight SPEC §5.7's decay gives them at $4 at least $6;
-- $5 the decay rate per day).
-- Ids missing here are not memories of the pair at $4.
SELECT n.*
FROM unnest($1::int[]) AS i(id)
CROSS JOIN LATERAL knoten_am(i.id, $2, $3, $4, $5, $6) AS n;

-- name: entity_candidates
-- Memories of the pair carrying one of the entities a question names (GIN on entitaet_ids).
SELECT id FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND entitaet_ids && $3::int[];

-- name: timeline_candidates
-- Memories whose turn time or timeline ref lies within a window around a date a question names:
-- its first and last instant, the whole calendar units within the SPEC §5.4 tolerance
-- (``novaberg_core.timeline.timeline_window``); nearest to a window's middle first (SPEC §11).
WITH fenster AS (
    SELECT von, bis, (date_part('epoch', von) + date_part('epoch', bis)) / 2.0 AS mitte
    FROM unnest($3::timestamptz[], $4::timestamptz[]) AS f(von, bis)
), treffer AS (
    SELECT n.id, abs(date_part('epoch', n.kzg_erstellt_am) - f.mitte) AS abstand
    FROM fenster AS f
    JOIN lzg_knoten AS n ON n.user_id = $1 AND n.character_id = $2
     AND n.kzg_erstellt_am BETWEEN f.von AND f.bis
    UNION ALL
    SELECT n.id, abs(date_part('epoch', t.zeitpunkt) - f.mitte)
    FROM fenster AS f
    JOIN timeline AS t ON t.user_id = $1 AND t.character_id = $2
     AND t.zeitpunkt BETWEEN f.von AND f.bis
    JOIN lzg_knoten AS n ON n.timeline_id = t.id
)
SELECT id, min(abstand) AS abstand FROM treffer GROUP BY id ORDER BY abstand, id LIMIT $5;

-- name: active_pairs
-- The pairs with an active node (the daily decay's work, SPEC §5.7): one descent of the partial
-- index of active nodes per pair, not a scan of every node.
WITH RECURSIVE paare AS (
    (SELECT user_id, character_id FROM lzg_knoten WHERE aktiv ORDER BY user_id, character_id LIMIT 1)
    UNION ALL
    SELECT n.user_id, n.character_id
    FROM paare AS p
    CROSS JOIN LATERAL (
        SELECT user_id, character_id FROM lzg_knoten
        WHERE aktiv AND (user_id, character_id) > (p.user_id, p.character_id)
        ORDER BY user_id, character_id LIMIT 1
    ) AS n
)
SELECT user_id, character_id FROM paare;

-- name: decay_pairs
-- SPEC §5.7, incremental form, one statement for the pairs $4/$5 (user and character ids,
-- index-aligned; the pairs' partial index of active nodes serves it) whose write lock this
-- transaction gets without waiting (migration 013: the decay waits for no writer); returns the
-- counts and the pairs a writer held, for the caller to decay once they are free. Only
-- gewicht_decay, decay_am and aktiv change; none of them is indexed except through the partial
-- index's predicate, which changes only for the few nodes that fall asleep — so the rest are HOT
-- updates. Nodes already decayed at or after $1 are left alone (a replayed or repeated run).
WITH gesperrt AS (
    SELECT u, c FROM unnest($4::text[], $5::text[]) AS p(u, c) WHERE paar_sperre_versuchen(u, c)
), decayed AS (
    UPDATE lzg_knoten
    SET gewicht_decay = knoten_verfall(gewicht_decay, decay_am, $1::timestamptz, $2::float8),
        decay_am = $1,
        aktiv = knoten_verfall(gewicht_decay, decay_am, $1::timestamptz, $2::float8) >= $3::float8
    WHERE aktiv AND decay_am < $1
      AND user_id = ANY($4::text[])
      AND (user_id, character_id) IN (SELECT u, c FROM gesperrt)
    RETURNING aktiv
), besetzt AS (
    SELECT u, c FROM unnest($4::text[], $5::text[]) AS p(u, c)
    EXCEPT SELECT u, c FROM gesperrt
)
SELECT (SELECT count(*) FROM decayed) AS decayed,
       (SELECT count(*) FROM decayed WHERE NOT aktiv) AS deactivated,
       ARRAY(SELECT u FROM besetzt ORDER BY u, c) AS busy_users,
       ARRAY(SELECT c FROM besetzt ORDER BY u, c) AS busy_characters;

-- name: shell
-- One shell of the spreading read (SPEC §5.8 step 3): for each frontier item the top K outgoing
-- edges by gewicht_absolut, not back to the node it came from, the target a memory of the pair as
-- of $7 (``knoten_am`` of migrations 011 and 017, a lookup by id: weight at $7 per SPEC §5.7 at least
-- $9; $8 the decay rate).
-- A node's outgoing edges are its rank rows under x (x→y) and under y (y→x), each branch in index
-- order; the K best of both branches are the K best of all (migration 003).
SELECT f.ord, x.kante_id, x.knoten_b_id, e.verbindungs_gruende, e.geteilte_entitaet_ids, e.geteilte_themen,
       x.inhalt, x.themen, x.entitaet_ids, x.emotion, x.erstellt_am, x.gewicht_decay, x.beobachter,
       x.sprecher, x.quell_turn_id, x.kzg_quell_key, x.kzg_erstellt_am, x.antwort_auf
FROM unnest($1::int[], $2::int[], $3::int[]) AS f(ord, src, pred)
CROSS JOIN LATERAL (
    SELECT beide.* FROM (
        (SELECT r.kante_xy_id AS kante_id, r.knoten_y_id AS knoten_b_id, r.gewicht_xy AS gewicht_absolut, n.*
         FROM lzg_kanten_rang AS r CROSS JOIN LATERAL knoten_am(r.knoten_y_id, $5, $6, $7, $8, $9) AS n
         WHERE r.knoten_x_id = f.src AND r.knoten_y_id <> f.pred
         ORDER BY r.gewicht_xy DESC, r.kante_xy_id LIMIT $4)
        UNION ALL
        (SELECT r.kante_yx_id, r.knoten_x_id, r.gewicht_yx, n.*
         FROM lzg_kanten_rang AS r CROSS JOIN LATERAL knoten_am(r.knoten_x_id, $5, $6, $7, $8, $9) AS n
         WHERE r.knoten_y_id = f.src AND r.knoten_x_id <> f.pred
         ORDER BY r.gewicht_yx DESC, r.kante_yx_id LIMIT $4)
    ) AS beide
    ORDER BY beide.gewicht_absolut DESC, beide.kante_id
    LIMIT $4
) AS x
JOIN lzg_kanten AS e ON e.id = x.kante_id
ORDER BY f.ord, x.gewicht_absolut DESC, x.kante_id;

-- name: served_nodes
-- The served nodes that belong to the pair, with their vectors (an id missing here is foreign).
SELECT id, embedding FROM lzg_knoten WHERE id = ANY($1::int[]) AND user_id = $2 AND character_id = $3;

-- name: reinforce_used
-- SPEC §5.6 + §5.5: the nodes reinforced and their edges recomputed in one call (migration 004),
-- once per turn $3 (migration 014; '' = no turn, reinforced on every call).
SELECT * FROM verwendung_einmal_verstaerken($1, $2, $3, $4::int[], $5, $6, $7);

-- name: expire_usage_marks
-- The turns' usage marks (migration 014) made before $1: a resend comes within minutes.
WITH d AS (DELETE FROM verwendung_turn WHERE verstaerkt_am < $1 RETURNING 1)
SELECT count(*) FROM d;

-- name: trigger2
-- Trigger 2 (SPEC §5.5) for the nodes $1 in the caller's transaction (migration 004); $2 is the
-- embedding-layer threshold of the model profile.
SELECT aktualisiert, uebersprungen FROM kanten_neu_berechnen($1::int[], $2);

-- name: nodes_for_layers
-- What re-evaluating all four layers needs of a set of nodes (Trigger 3).
SELECT k.id, k.gewicht_absolut, k.themen, k.entitaet_ids, k.timeline_id, k.embedding, t.zeitpunkt, t.praezision
FROM lzg_knoten k
LEFT JOIN timeline t ON t.id = k.timeline_id
WHERE k.id = ANY($1::int[]) AND k.user_id = $2 AND k.character_id = $3;

-- name: edges_among
SELECT id, knoten_a_id, knoten_b_id, embedding_cosine_initial
FROM lzg_kanten
WHERE knoten_a_id = ANY($1::int[]) AND knoten_b_id = ANY($1::int[]);

-- name: upsert_edge
INSERT INTO lzg_kanten (
    knoten_a_id, knoten_b_id, gewicht_roh, gewicht_absolut, erstellt_am, verbindungs_gruende,
    geteilte_entitaet_ids, geteilte_themen, timeline_naehe_tage, embedding_cosine_initial, anzahl_schichten
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (knoten_a_id, knoten_b_id) DO UPDATE SET  -- the weights, the layers, what they share
    gewicht_roh = excluded.gewicht_roh, gewicht_absolut = excluded.gewicht_absolut,
    verbindungs_gruende = excluded.verbindungs_gruende, anzahl_schichten = excluded.anzahl_schichten,
    geteilte_entitaet_ids = excluded.geteilte_entitaet_ids, geteilte_themen = excluded.geteilte_themen,
    timeline_naehe_tage = excluded.timeline_naehe_tage, embedding_cosine_initial = excluded.embedding_cosine_initial
RETURNING (xmax = 0) AS inserted;

-- name: delete_edges_between
-- Both directions of each given node pair.
DELETE FROM lzg_kanten AS e
USING unnest($1::int[], $2::int[]) AS p(x, y)
WHERE (e.knoten_a_id = p.x AND e.knoten_b_id = p.y) OR (e.knoten_a_id = p.y AND e.knoten_b_id = p.x);

-- name: rank_rows_insert
-- The rank rows (migration 003) of node pairs {x < y} whose two directed edges exist.
INSERT INTO lzg_kanten_rang (knoten_x_id, knoten_y_id, kante_xy_id, kante_yx_id, gewicht_xy, gewicht_yx)
SELECT xy.knoten_a_id, xy.knoten_b_id, xy.id, yx.id, xy.gewicht_absolut, yx.gewicht_absolut
FROM unnest($1::int[], $2::int[]) AS p(x, y)
JOIN lzg_kanten AS xy ON xy.knoten_a_id = p.x AND xy.knoten_b_id = p.y
JOIN lzg_kanten AS yx ON yx.knoten_a_id = p.y AND yx.knoten_b_id = p.x;

-- name: rank_rows_delete
DELETE FROM lzg_kanten_rang AS r
USING unnest($1::int[], $2::int[]) AS p(x, y)
WHERE r.knoten_x_id = p.x AND r.knoten_y_id = p.y;

-- name: entity
SELECT id, user_id, character_id, name, typ, aliases FROM entitaet
WHERE id = $1 AND user_id = $2 AND character_id = $3;

-- name: entity_by_name
SELECT id, user_id, character_id, name, typ, aliases FROM entitaet
WHERE user_id = $1 AND character_id = $2 AND lower(name) = lower($3);

-- name: insert_entity
INSERT INTO entitaet (user_id, character_id, name, typ, aliases) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (user_id, character_id, lower(name)) DO NOTHING
RETURNING id, user_id, character_id, name, typ, aliases;

-- name: update_entity
UPDATE entitaet SET name = $4, typ = $5, aliases = $6
WHERE id = $1 AND user_id = $2 AND character_id = $3
RETURNING id, user_id, character_id, name, typ, aliases;

-- name: entities
SELECT id, user_id, character_id, name, typ, aliases FROM entitaet
WHERE user_id = $1 AND character_id = $2 AND (cardinality($3::int[]) = 0 OR id = ANY($3::int[]))
ORDER BY id;

-- name: entity_names
SELECT id, name FROM entitaet WHERE user_id = $1 AND character_id = $2 AND id = ANY($3::int[]);

-- name: delete_entity
DELETE FROM entitaet WHERE id = $1 AND user_id = $2 AND character_id = $3;

-- name: nodes_with_entity
SELECT id FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND entitaet_ids @> ARRAY[$3::int];

-- name: replace_entity_in_nodes
-- Merge (Trigger 3): source → target in every node's entitaet_ids, each id once, first-mention order.
UPDATE lzg_knoten AS k
SET entitaet_ids = (
    SELECT coalesce(array_agg(x ORDER BY first_pos), '{}')
    FROM (SELECT x, min(pos) AS first_pos
          FROM unnest(array_replace(k.entitaet_ids, $3::int, $4::int)) WITH ORDINALITY AS u(x, pos)
          GROUP BY x) AS d
)
WHERE k.user_id = $1 AND k.character_id = $2 AND k.entitaet_ids @> ARRAY[$3::int];

-- name: remove_entity_from_nodes
UPDATE lzg_knoten SET entitaet_ids = array_remove(entitaet_ids, $3::int)
WHERE user_id = $1 AND character_id = $2 AND entitaet_ids @> ARRAY[$3::int];

-- name: edge_pairs_with_entity
SELECT DISTINCT least(e.knoten_a_id, e.knoten_b_id) AS x, greatest(e.knoten_a_id, e.knoten_b_id) AS y
FROM lzg_kanten e JOIN lzg_knoten a ON a.id = e.knoten_a_id
WHERE e.geteilte_entitaet_ids @> ARRAY[$3::int] AND a.user_id = $1 AND a.character_id = $2;

-- name: timeline
SELECT id, user_id, character_id, zeitpunkt, praezision, titel, themen FROM timeline
WHERE id = $1 AND user_id = $2 AND character_id = $3;

-- name: insert_timeline
INSERT INTO timeline (user_id, character_id, zeitpunkt, praezision, titel, themen)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, user_id, character_id, zeitpunkt, praezision, titel, themen;

-- name: update_timeline
UPDATE timeline SET zeitpunkt = $4, praezision = $5, titel = $6, themen = $7
WHERE id = $1 AND user_id = $2 AND character_id = $3
RETURNING id, user_id, character_id, zeitpunkt, praezision, titel, themen;

-- name: timelines
-- The pair's timeline refs; $3 restricts to ids (empty: all), $4/$5 to an instant and precision (NULL: any).
SELECT id, user_id, character_id, zeitpunkt, praezision, titel, themen FROM timeline
WHERE user_id = $1 AND character_id = $2 AND (cardinality($3::int[]) = 0 OR id = ANY($3::int[]))
  AND ($4::timestamptz IS NULL OR (zeitpunkt = $4 AND praezision = $5))
ORDER BY zeitpunkt, id;

-- name: node_ids_of_pair
-- Which of the ids are nodes of the pair (one call for a set; Dispatch's served ids).
SELECT id FROM lzg_knoten WHERE id = ANY($1::int[]) AND user_id = $2 AND character_id = $3;

-- name: delete_timeline
DELETE FROM timeline WHERE id = $1 AND user_id = $2 AND character_id = $3;

-- name: nodes_with_timeline
SELECT id FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND timeline_id = $3;

-- name: nodes_with_timeline_ids
SELECT id FROM lzg_knoten WHERE user_id = $1 AND character_id = $2 AND timeline_id = ANY($3::int[]);

-- name: edge_pairs_of_nodes
SELECT DISTINCT least(knoten_a_id, knoten_b_id) AS x, greatest(knoten_a_id, knoten_b_id) AS y
FROM lzg_kanten WHERE knoten_a_id = ANY($1::int[]) OR knoten_b_id = ANY($1::int[]);

-- name: graph_size
-- Nodes and edges of all pairs for the metrics: PostgreSQL's live-row estimates (statistics, not a
-- scan), cheap at any size.
SELECT coalesce(sum(n_live_tup) FILTER (WHERE relname = 'lzg_knoten'), 0) AS nodes,
       coalesce(sum(n_live_tup) FILTER (WHERE relname = 'lzg_kanten'), 0) AS edges
FROM pg_stat_user_tables
WHERE schemaname = current_schema() AND relname IN ('lzg_knoten', 'lzg_kanten');
