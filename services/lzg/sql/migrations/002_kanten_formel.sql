-- The edge formula of SPEC §5.2/§5.4 as inlinable SQL functions, for Trigger 2 as one set-based
-- statement (SPEC §5.5). The Python domain (services/lzg/weights.py, layers.py) is the reference;
-- tests/integration/lzg/test_lzg_sql_formula.py proves both give the same numbers (1e-12) on random
-- inputs. Every literal is float8 and every operation in the reference's order, so the results
-- agree to the last bit where both use the C library's sin/sqrt. Constants: syn §6.

-- damp(x) = CAP × sin(min(x / CAP, 1) × π/2) ^ 0.5, CAP = 10; x ≤ 0 → 0 (SPEC §5.2).
CREATE FUNCTION daempfen(x float8) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN x > 0.0::float8
        THEN 10.0::float8 * sqrt(sin(least(x / 10.0::float8, 1.0::float8) * (pi() / 2.0::float8)))
        ELSE 0.0::float8 END;

-- gewicht_roh of the directed edge A→B from the anchors A', B' (already × faktor + bonus) and the
-- winner's depth: weaker→stronger reads ZIEH_HOCH 0.444, stronger→weaker ZIEH_RUNTER 0.297.
CREATE FUNCTION kante_roh_anker(a float8, b float8, tiefe float8) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN a <= b
        THEN a + ((a + (b - a) * 0.444::float8) - a) * tiefe
        ELSE b + ((a - (a - b) * 0.297::float8) - b) * tiefe END;

-- gewicht_roh of A→B (SPEC §5.4): A' = A.gewicht_absolut × faktor + 0.1 × (anzahl − 1), B' likewise.
CREATE FUNCTION kante_roh(a_abs float8, b_abs float8, faktor float8, tiefe float8, anzahl integer) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN kante_roh_anker(
        a_abs * faktor + 0.1::float8 * (anzahl - 1)::float8,
        b_abs * faktor + 0.1::float8 * (anzahl - 1)::float8,
        tiefe);

-- Schicht-Faktor of the winning layer: the highest factor among the edge's layers.
CREATE FUNCTION schicht_faktor(gruende text[]) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN 'entitaet' = ANY (gruende) THEN 1.0::float8
        WHEN 'embedding' = ANY (gruende) THEN 0.8::float8
        WHEN 'themen' = ANY (gruende) THEN 0.5::float8
        WHEN 'timeline' = ANY (gruende) THEN 0.4::float8 END;

-- Distance of two moments in the unit of a precision (layers.timeline_distance), in UTC.
CREATE FUNCTION timeline_abstand(a timestamptz, b timestamptz, praezision text) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE praezision
        WHEN 'minute' THEN abs((extract(epoch FROM b) - extract(epoch FROM a))::float8) / 86400.0::float8
        WHEN 'stunde' THEN abs((extract(epoch FROM b) - extract(epoch FROM a))::float8) / 86400.0::float8
        WHEN 'tag' THEN abs((b AT TIME ZONE 'UTC')::date - (a AT TIME ZONE 'UTC')::date)::float8
        WHEN 'woche' THEN (abs(date_trunc('week', b AT TIME ZONE 'UTC')::date
                              - date_trunc('week', a AT TIME ZONE 'UTC')::date) / 7)::float8
        WHEN 'monat' THEN abs((extract(year FROM b AT TIME ZONE 'UTC')::integer * 12
                               + extract(month FROM b AT TIME ZONE 'UTC')::integer)
                              - (extract(year FROM a AT TIME ZONE 'UTC')::integer * 12
                               + extract(month FROM a AT TIME ZONE 'UTC')::integer))::float8
        WHEN 'quartal' THEN abs((extract(year FROM b AT TIME ZONE 'UTC')::integer * 4
                                 + (extract(month FROM b AT TIME ZONE 'UTC')::integer - 1) / 3)
                                - (extract(year FROM a AT TIME ZONE 'UTC')::integer * 4
                                 + (extract(month FROM a AT TIME ZONE 'UTC')::integer - 1) / 3))::float8
        WHEN 'jahr' THEN abs(extract(year FROM b AT TIME ZONE 'UTC')::integer
                             - extract(year FROM a AT TIME ZONE 'UTC')::integer)::float8 END;

-- Tolerance of a precision in its own unit (SPEC §5.4, all seven).
CREATE FUNCTION timeline_toleranz(praezision text) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE praezision
        WHEN 'minute' THEN 7.0::float8 WHEN 'stunde' THEN 7.0::float8 WHEN 'tag' THEN 21.0::float8
        WHEN 'woche' THEN 8.0::float8 WHEN 'monat' THEN 6.0::float8 WHEN 'quartal' THEN 4.0::float8
        WHEN 'jahr' THEN 2.0::float8 END;

-- Depth (tol − dist) / tol when both refs exist, share the precision and lie within tolerance; else NULL.
CREATE FUNCTION timeline_tiefe(za timestamptz, pa text, zb timestamptz, pb text) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN za IS NULL OR zb IS NULL OR pa IS DISTINCT FROM pb THEN NULL
        WHEN timeline_abstand(za, zb, pa) > timeline_toleranz(pa) THEN NULL
        ELSE (timeline_toleranz(pa) - timeline_abstand(za, zb, pa)) / timeline_toleranz(pa) END;

-- Depth of the winning layer from frozen edge data and the nodes' (frozen) themes / current
-- timeline refs; NULL when it cannot be reconstructed (the edge is then skipped, syn §7.9.2).
CREATE FUNCTION schicht_tiefe(
    gruende text[], cosinus float8, schwelle float8,
    n_geteilte_themen integer, n_themen_a integer, n_themen_b integer, tl_tiefe float8
) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN 'entitaet' = ANY (gruende) THEN 1.0::float8
        WHEN 'embedding' = ANY (gruende) THEN
            CASE WHEN cosinus > schwelle THEN least((cosinus - schwelle) / (1.0::float8 - schwelle), 1.0::float8) END
        WHEN 'themen' = ANY (gruende) THEN
            CASE WHEN greatest(n_themen_a, n_themen_b) > 0
                THEN n_geteilte_themen::float8 / greatest(n_themen_a, n_themen_b)::float8
                ELSE 0.0::float8 END
        WHEN 'timeline' = ANY (gruende) THEN tl_tiefe END;
