-- knoten_am (migration 011) also returns the question a memory answers (migration 015), so the recall
-- list and the spreading read's shells show an answer with its question (SPEC §11; docs/decisions.md
-- "An answer is found by its question"). The return type changes, so the function is dropped and made
-- again; its body is 011's with one more column, and it stays an inlined STABLE SQL function.
DROP FUNCTION knoten_am(integer, text, text, timestamptz, float8, float8);

CREATE FUNCTION knoten_am(
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
    $$;
