-- Usage reinforcement and Trigger 2 in one round trip (SPEC §5.5, §5.6; bench/turn_bench.py).
--
-- The reinforcement of a turn used to be one transaction for the nodes and one more per used node
-- for its Trigger 2: ~5 round trips each, 12–22 per Dispatch, on the turn's critical path. Here
-- the pair lock, the node update and Trigger 2 of every used node run server-side in one call.

-- The pair's write lock (SPEC §5.3): serialises every write of one pair (promotion, reinforcement
-- + Trigger 2, Trigger 3); other pairs run in parallel. A hash collision only serialises two pairs.
CREATE FUNCTION paar_sperren(p_user text, p_character text) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('lzg:' || p_user || chr(31) || p_character, 0));
$$;

-- Trigger 2 (SPEC §5.5, syn §7.9.1): every edge from or to one of the nodes p_knoten recomputed from
-- its frozen layer data and both anchors' current gewicht_absolut, in one statement (formula:
-- migration 002). p_schwelle is the embedding-layer threshold of the model profile. Returns how
-- many directed edges were rewritten (an edge between two of the nodes counts once) and the ids of
-- edges whose winning layer cannot be reconstructed (left unchanged, syn §7.9.2).
-- No index of lzg_kanten holds a weight and its pages have room, so the rewrite is a HOT update;
-- the nodes' rank rows follow in the same statement (migration 003; a data-modifying WITH always
-- runs to completion).
-- effective_io_concurrency = 0: the backend reads the ~500 random heap pages of a node itself.
-- With prefetching on, PostgreSQL 18 hands each read to an I/O worker and waits for it — on this
-- 2-core machine, pages in the OS cache, 3–4 ms of process hand-offs per node (measured 20.9 →
-- 16.9 ms p50; io_method = sync gives the same).
CREATE FUNCTION kanten_neu_berechnen(p_knoten integer[], p_schwelle float8,
                                     OUT aktualisiert bigint, OUT uebersprungen integer[])
LANGUAGE sql SET effective_io_concurrency = 0 AS $$
WITH berechnet AS (
    SELECT e.ctid AS zeile, e.id,
           kante_roh(a.gewicht_absolut, b.gewicht_absolut, w.faktor, w.tiefe, e.anzahl_schichten) AS roh
    FROM lzg_kanten AS e
    JOIN lzg_knoten AS a ON a.id = e.knoten_a_id
    JOIN lzg_knoten AS b ON b.id = e.knoten_b_id
    LEFT JOIN timeline AS ta ON e.verbindungs_gruende = '{timeline}' AND ta.id = a.timeline_id
    LEFT JOIN timeline AS tb ON e.verbindungs_gruende = '{timeline}' AND tb.id = b.timeline_id
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

-- Usage reinforcement (SPEC §5.6) of the pair's nodes p_knoten, then Trigger 2 for all of them,
-- under the pair lock, in the caller's transaction (one statement = one transaction when called
-- alone). The node rule: roh += p_boost, absolut = decay = daempfen(roh), both timestamps = p_zeit,
-- aktiv, haeufigkeit + 1 — the twin of services/lzg/weights.py reinforced_weights, the boost
-- passed in from there. A failing Trigger 2 is rolled back alone (the EXCEPTION block is a
-- savepoint) and reported in fehler; the reinforcement stays (syn §7.9.2: the edges keep their old
-- weight, the error goes into the protocol record).
CREATE FUNCTION verwendung_verstaerken(
    p_user text, p_character text, p_knoten integer[], p_boost float8, p_zeit timestamptz,
    p_schwelle float8,
    OUT verstaerkt integer[], OUT aktualisiert bigint, OUT uebersprungen integer[], OUT fehler text,
    OUT kanten_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
    beginn timestamptz;
BEGIN
    PERFORM paar_sperren(p_user, p_character);
    WITH u AS (
        UPDATE lzg_knoten AS k
        SET gewicht_roh = k.gewicht_roh + p_boost,
            gewicht_absolut = daempfen(k.gewicht_roh + p_boost),
            gewicht_decay = daempfen(k.gewicht_roh + p_boost),
            verstaerkt_am = p_zeit, decay_am = p_zeit, aktiv = TRUE, haeufigkeit = k.haeufigkeit + 1
        WHERE k.id = ANY(p_knoten) AND k.user_id = p_user AND k.character_id = p_character
        RETURNING k.id
    )
    SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO verstaerkt FROM u;
    aktualisiert := 0;
    uebersprungen := '{}';
    beginn := clock_timestamp();
    IF cardinality(verstaerkt) > 0 THEN
        BEGIN
            SELECT n.aktualisiert, n.uebersprungen INTO aktualisiert, uebersprungen
            FROM kanten_neu_berechnen(verstaerkt, p_schwelle) AS n;
        EXCEPTION WHEN OTHERS THEN
            aktualisiert := 0;
            uebersprungen := '{}';
            fehler := SQLSTATE || ': ' || SQLERRM;
        END;
    END IF;
    kanten_ms := 1000.0 * extract(epoch FROM clock_timestamp() - beginn);
END;
$$;
