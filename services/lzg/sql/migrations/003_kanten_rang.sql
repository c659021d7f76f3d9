-- Trigger 2 without index churn (SPEC §5.5; measured in bench/lzg_bench.py, key trigger2_p50_ms_1k).
--
-- Trigger 2 rewrites gewicht_roh and gewicht_absolut of every edge row of a node (~1,000 rows for a
-- well-connected one). While gewicht_absolut was a key of idx_lzg_kanten_a (the top-K index of the
-- spreading read), every rewritten row was a non-HOT update: a new entry in all seven indexes of
-- lzg_kanten, three of them GIN indexes over frozen columns (33 ms p50 on this 2-core machine).
--
-- Now no index of lzg_kanten holds a weight, and its pages keep room for a second version of every
-- row, so Trigger 2's rewrite of the wide row is a HOT update that touches no index. The order the
-- spreading read needs lives in lzg_kanten_rang: one narrow row per connected node pair {x < y}
-- carrying both directions (x→y and y→x) with their gewicht_absolut, indexed once under x and once
-- under y. All rows of a node are then found by two index range scans (x = node, y = node), and
-- Trigger 2 updates ~500 narrow rows (one per neighbour) instead of ~1,000 index-wide ones.
-- The rows are derived data: every write of lzg_kanten (Trigger 1, 2, 3) rewrites them in the same
-- transaction (store.py / queries.sql), and tests/integration/lzg check they equal lzg_kanten.

-- Room for a second version of every row on its page (the rows of one node's formation lie
-- together, so Trigger 2 rewrites whole pages). Applies to pages written from now on; an existing
-- store gets it for old pages with VACUUM FULL lzg_kanten.
ALTER TABLE lzg_kanten SET (fillfactor = 50);

-- Back to the seed's index (syn §4.2): no weight in any index of lzg_kanten.
DROP INDEX idx_lzg_kanten_a;
CREATE INDEX idx_lzg_kanten_a ON lzg_kanten (knoten_a_id);

-- What the edge formula reads of a node (migration 002: gewicht_absolut, the number of themes, the
-- timeline ref), so Trigger 2 reads its ~500 neighbours from this narrow index (index-only scan)
-- instead of ~500 pages of wide node rows. Costs: reinforcement of a node is no longer a HOT
-- update (a few nodes per turn); decay and half-reactivation change none of these columns and stay
-- HOT. Right after the daily decay, until autovacuum has run over lzg_knoten, the scan visits the
-- heap as before.
CREATE INDEX idx_lzg_knoten_kantenformel ON lzg_knoten (id) INCLUDE (gewicht_absolut, timeline_id, themen);

-- Both directed edges of a connected node pair, ordered for "top K outgoing edges by
-- gewicht_absolut" (SPEC §5.8 step 3): node x's outgoing edges are the rows with knoten_x_id = x
-- (edge x→y, gewicht_xy) and those with knoten_y_id = x (edge x→other, gewicht_yx).
CREATE TABLE lzg_kanten_rang (
    knoten_x_id INTEGER NOT NULL REFERENCES lzg_knoten(id) ON DELETE CASCADE,
    knoten_y_id INTEGER NOT NULL REFERENCES lzg_knoten(id) ON DELETE CASCADE,
    kante_xy_id INTEGER NOT NULL,
    kante_yx_id INTEGER NOT NULL,
    gewicht_xy DOUBLE PRECISION NOT NULL,
    gewicht_yx DOUBLE PRECISION NOT NULL,
    CHECK (knoten_x_id < knoten_y_id)
);
CREATE INDEX idx_lzg_kanten_rang_x
    ON lzg_kanten_rang (knoten_x_id, gewicht_xy DESC, kante_xy_id) INCLUDE (knoten_y_id);
CREATE INDEX idx_lzg_kanten_rang_y
    ON lzg_kanten_rang (knoten_y_id, gewicht_yx DESC, kante_yx_id) INCLUDE (knoten_x_id);

INSERT INTO lzg_kanten_rang (knoten_x_id, knoten_y_id, kante_xy_id, kante_yx_id, gewicht_xy, gewicht_yx)
SELECT xy.knoten_a_id, xy.knoten_b_id, xy.id, yx.id, xy.gewicht_absolut, yx.gewicht_absolut
FROM lzg_kanten AS xy
JOIN lzg_kanten AS yx ON yx.knoten_a_id = xy.knoten_b_id AND yx.knoten_b_id = xy.knoten_a_id
WHERE xy.knoten_a_id < xy.knoten_b_id
ORDER BY least(xy.id, yx.id);  -- formation order, as Trigger 1 writes them
