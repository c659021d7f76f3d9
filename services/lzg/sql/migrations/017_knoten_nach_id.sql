-- Nodes looked up by id, each statement planned once (SPEC §5.5, §5.8, §11; docs/decisions.md
-- "A node reached is looked up by its id", "Trigger 2 and the reinforcement are planned once").
--
-- knoten_am (migrations 011, 016) is inlined into the statements that call it. Inlined into a join
-- (the shells and the recall details in queries.sql), its conditions gave the planner the choice to
-- join the pair's whole node list instead of looking the one id up, and it took it: on a LoCoMo pair
-- of ~430 nodes the shell's custom plan hashed all 367 of the pair's memories, planned anew on every
-- call (0.98 ms planning), because its generic plan looked dearer; where the table's average pair is
-- small, the generic plan reads a large pair's every node on every read. ``OFFSET 0`` in the body
-- keeps the function inlined (its conditions still reach the index) but a lookup of its id, at
-- every call site.
CREATE OR REPLACE FUNCTION knoten_am(
    p_id integer, p_user text, p_character text, p_am timestamptz, p_rate float8, p_minimum float8
) RETURNS TABLE (
    id integer, inhalt text, themen text[], entitaet_ids integer[], emotion text, erstellt_am timestamptz,
    beobachter varchar, sprecher text, quell_turn_id text, kzg_quell_key text, kzg_erstellt_am timestamptz,
    gewicht_decay float8, antwort_auf text
)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT n.id, n.inhalt, n.themen, n.entitaet_ids, n.emotion, n.erstellt_am, n.beobachter, n.sprecher,
           n.quell_turn_id, n.kzg_quell_key, n.kzg_erstellt_am, w.gewicht_jetzt, n.antwort_auf
    FROM lzg_knoten AS n
    CROSS JOIN LATERAL (SELECT LEAST(n.gewicht_absolut,
                                     knoten_verfall(n.gewicht_decay, n.decay_am, p_am, p_rate)) AS gewicht_jetzt) AS w
    WHERE n.id = p_id AND n.aktiv AND n.user_id = p_user AND n.character_id = p_character
      AND n.kzg_erstellt_am <= p_am AND w.gewicht_jetzt >= p_minimum
    OFFSET 0
    $$;

-- kanten_neu_berechnen (migration 004) was planned anew on every call: PostgreSQL's generic plan of
-- its statement, not knowing how many nodes p_knoten holds, hashed every node of the table twice
-- (both anchors of each edge), so the plan cache kept a custom plan and planned it per call —
-- measured with pg_stat_statements over a turn bench: 2.1 ms of planning and 4.0 ms of execution per
-- usage reinforcement. Here each edge's two anchors and their timeline refs are looked up by id
-- (``OFFSET 0`` keeps each lookup a per-row index probe), so the generic plan is the good one, and
-- the function runs it (plan_cache_mode). The rows written are the same (tests/integration/lzg:
-- the edges equal a rebuild from scratch after Trigger 2). The reinforcement's own update (migration
-- 004) is planned once likewise: its generic plan is the same index probe by id.
CREATE OR REPLACE FUNCTION kanten_neu_berechnen(p_knoten integer[], p_schwelle float8,
                                                OUT aktualisiert bigint, OUT uebersprungen integer[])
LANGUAGE sql SET effective_io_concurrency = 0 SET plan_cache_mode = force_generic_plan AS $$
WITH berechnet AS (
    SELECT e.ctid AS zeile, e.id,
           kante_roh(a.gewicht_absolut, b.gewicht_absolut, w.faktor, w.tiefe, e.anzahl_schichten) AS roh
    FROM lzg_kanten AS e
    CROSS JOIN LATERAL (SELECT n.gewicht_absolut, n.timeline_id, n.themen FROM lzg_knoten AS n
                        WHERE n.id = e.knoten_a_id OFFSET 0) AS a
    CROSS JOIN LATERAL (SELECT n.gewicht_absolut, n.timeline_id, n.themen FROM lzg_knoten AS n
                        WHERE n.id = e.knoten_b_id OFFSET 0) AS b
    LEFT JOIN LATERAL (SELECT t.zeitpunkt, t.praezision FROM timeline AS t
                       WHERE e.verbindungs_gruende = '{timeline}' AND t.id = a.timeline_id OFFSET 0) AS ta ON TRUE
    LEFT JOIN LATERAL (SELECT t.zeitpunkt, t.praezision FROM timeline AS t
                       WHERE e.verbindungs_gruende = '{timeline}' AND t.id = b.timeline_id OFFSET 0) AS tb ON TRUE
    -- OFFSET 0 keeps faktor and tiefe plain columns, so kante_roh is inlined (an argument used
    -- twice is inlined only when it is cheap), not called as a function per row.
    CROSS JOIN LATERAL (
        SELECT schicht_faktor(e.verbindungs_gruende) AS faktor,
               schicht_tiefe(e.verbindungs_gruende, e.embedding_cosine_initial, p_schwelle,
                             cardinality(e.geteilte_themen), cardinality(a.themen), cardinality(b.themen),
                             timeline_tiefe(ta.zeitpunkt, ta.praezision, tb.zeitpunkt, tb.praezision)) AS tiefe
        OFFSET 0
    ) AS w
    WHERE e.knoten_a_id = ANY(p_knoten) OR e.knoten_b_id = ANY(p_knoten)
), geschrieben AS (
    UPDATE lzg_kanten AS k
    SET gewicht_roh = c.roh, gewicht_absolut = daempfen(c.roh)
    FROM berechnet AS c
    WHERE k.ctid = c.zeile AND c.roh IS NOT NULL
    RETURNING k.knoten_a_id, k.knoten_b_id, k.gewicht_absolut
), paare AS (
    SELECT least(knoten_a_id, knoten_b_id) AS x, greatest(knoten_a_id, knoten_b_id) AS y,
           max(gewicht_absolut) FILTER (WHERE knoten_a_id < knoten_b_id) AS xy,
           max(gewicht_absolut) FILTER (WHERE knoten_a_id > knoten_b_id) AS yx
    FROM geschrieben
    GROUP BY 1, 2
), rang AS (
    UPDATE lzg_kanten_rang AS r
    SET gewicht_xy = coalesce(p.xy, r.gewicht_xy), gewicht_yx = coalesce(p.yx, r.gewicht_yx)
    FROM paare AS p
    WHERE (r.knoten_x_id = ANY(p_knoten) OR r.knoten_y_id = ANY(p_knoten))
      AND r.knoten_x_id = p.x AND r.knoten_y_id = p.y
)
SELECT (SELECT count(*) FROM geschrieben),
       (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM berechnet WHERE roh IS NULL);
$$;

ALTER FUNCTION verwendung_verstaerken(text, text, integer[], float8, timestamptz, float8)
    SET plan_cache_mode = force_generic_plan;
