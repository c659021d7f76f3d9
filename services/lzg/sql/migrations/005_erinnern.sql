-- Recall (SPEC §11): who said a memory, in which language, from which turn; which text recipe
-- filled the store.
--
-- sprecher: the speaker's display name at the time of the turn (part of the embedded text,
--   novaberg_core.embedding.texts); sprache: the pair's language code for lexical search
--   (novaberg_core.lexical); quell_turn_id: the turn the memory was made from, so a recall list
--   has one item per source turn whichever layer holds it. All immutable after promotion.
-- Nodes promoted before this migration keep '' (no speaker, no turn): their vectors are the bare
-- inhalt, which the model stamp's recipe records ('inhalt/0'), and the service refuses to serve
-- them until `novaberg reembed` rewrote every vector.
ALTER TABLE lzg_knoten
    ADD COLUMN sprecher TEXT NOT NULL DEFAULT '',
    ADD COLUMN sprache TEXT NOT NULL DEFAULT '',
    ADD COLUMN quell_turn_id TEXT NOT NULL DEFAULT '';

ALTER TABLE modell ADD COLUMN rezept TEXT NOT NULL DEFAULT 'inhalt/0';

-- Nodes whose turn time lies in a window (a date named in a question, SPEC §11), per pair.
CREATE INDEX idx_lzg_knoten_paar_kzg_erstellt_am ON lzg_knoten (user_id, character_id, kzg_erstellt_am);
-- Timeline refs of a pair by instant, whatever their precision (question windows, SPEC §11).
CREATE INDEX idx_timeline_paar_zeitpunkt ON timeline (user_id, character_id, zeitpunkt);
