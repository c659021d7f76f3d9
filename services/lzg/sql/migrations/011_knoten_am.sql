-- A node as it was at an instant, written once for every read and the daily decay (SPEC §5.7, §11).
--
-- knoten_verfall: the decay of SPEC §5.7 in its incremental form, gewicht × exp(−rate × days from
-- `von` to `bis`) — the SQL twin of services/lzg/weights.py `decayed` (for bis ≥ von);
-- tests/integration/lzg/test_lzg_sql_formula.py proves both give the same numbers.
-- knoten_am: a memory of the pair as it was at `am` — made by then (turn time), active, its weight
-- then (the decay carried from decay_am, capped at gewicht_absolut) at least `minimum`; no row
-- otherwise. Used by the recall details and both directions of the spreading read's shell.
--
-- Both are STABLE SQL functions (date_part on timestamptz is STABLE): the planner inlines them, so a
-- query using them plans as if the expression were written in place (index scans unchanged).
CREATE FUNCTION knoten_verfall(gewicht float8, von timestamptz, bis timestamptz, rate float8) RETURNS float8
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT gewicht * exp(-rate * (date_part('epoch', bis) - date_part('epoch', von)) / 86400.0) $$;

CREATE FUNCTION knoten_am(
    p_id integer, p_user text, p_character text, p_am timestamptz, p_rate float8, p_minimum float8
) RETURNS TABLE (
    id integer, inhalt text, themen text[], entitaet_ids integer[], emotion text, erstellt_am timestamptz,
    beobachter varchar, sprecher text, quell_turn_id text, kzg_quell_key text, kzg_erstellt_am timestamptz,
    gewicht_decay float8
)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT n.id, n.inhalt, n.themen, n.entitaet_ids, n.emotion, n.erstellt_am, n.beobachter, n.sprecher,
           n.quell_turn_id, n.kzg_quell_key, n.kzg_erstellt_am, w.gewicht_jetzt
    FROM lzg_knoten AS n
    CROSS JOIN LATERAL (SELECT LEAST(n.gewicht_absolut,
                                     knoten_verfall(n.gewicht_decay, n.decay_am, p_am, p_rate)) AS gewicht_jetzt) AS w
    WHERE n.id = p_id AND n.aktiv AND n.user_id = p_user AND n.character_id = p_character
      AND n.kzg_erstellt_am <= p_am AND w.gewicht_jetzt >= p_minimum
    $$;
