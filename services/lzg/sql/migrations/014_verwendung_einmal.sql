-- A turn's usage reinforcement is applied once (SPEC §5.6, §7; docs/decisions.md "A resent turn is
-- written once").
--
-- Dispatch sends ReinforceUsed once per turn; a caller that got no answer sends the turn again, and
-- each call added the boost again. The turn's id is kept with the pair, in the same statement as the
-- reinforcement: a second call for the turn finds it and changes nothing (`wiederholt`). A call
-- without a turn id reinforces as before. The marks serve resends, which come within minutes; the
-- daily decay drops those older than LZG_VERWENDUNG_MARKE_TAGE (the caller's constant), an erasure
-- drops the pair's.

CREATE TABLE verwendung_turn (
    user_id TEXT NOT NULL,
    character_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    verstaerkt_am TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, character_id, turn_id)
);
CREATE INDEX idx_verwendung_turn_am ON verwendung_turn (verstaerkt_am);

-- verwendung_verstaerken (migration 004) once per (pair, p_turn): under the pair's lock, the turn's
-- mark first; a mark that stands already is a resend, and nothing is reinforced (wiederholt).
CREATE FUNCTION verwendung_einmal_verstaerken(
    p_user text, p_character text, p_turn text, p_knoten integer[], p_boost float8, p_zeit timestamptz,
    p_schwelle float8,
    OUT verstaerkt integer[], OUT aktualisiert bigint, OUT uebersprungen integer[], OUT fehler text,
    OUT kanten_ms float8, OUT wiederholt boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM paar_sperren(p_user, p_character);
    wiederholt := FALSE;
    IF p_turn <> '' THEN
        INSERT INTO verwendung_turn (user_id, character_id, turn_id, verstaerkt_am)
        VALUES (p_user, p_character, p_turn, p_zeit)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            wiederholt := TRUE;
            verstaerkt := '{}';
            aktualisiert := 0;
            uebersprungen := '{}';
            kanten_ms := 0.0;
            RETURN;
        END IF;
    END IF;
    SELECT v.verstaerkt, v.aktualisiert, v.uebersprungen, v.fehler, v.kanten_ms
    INTO verstaerkt, aktualisiert, uebersprungen, fehler, kanten_ms
    FROM verwendung_verstaerken(p_user, p_character, p_knoten, p_boost, p_zeit, p_schwelle) AS v;
END;
$$;
