-- LZG schema (SPEC §5.1; syn §4.1, §4.2, §11.2). {{dimension}} is the embedding model's vector
-- length, filled in by the migration runner from the configured provider (SPEC §2).

-- Which embedding model filled this store (SPEC §2); exactly one row, written at start-up.
CREATE TABLE modell (
    id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    model_id TEXT NOT NULL,
    dimension INTEGER NOT NULL CHECK (dimension > 0),
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

-- Entity registry of a pair (SPEC §5.1); merge and delete fire Trigger 3.
CREATE TABLE entitaet (
    id SERIAL PRIMARY KEY,
    user_id TEXT NOT NULL,
    character_id VARCHAR(50) NOT NULL,
    name TEXT NOT NULL CHECK (btrim(name) <> ''),
    typ TEXT NOT NULL DEFAULT '',
    aliases TEXT[] NOT NULL DEFAULT '{}',
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE UNIQUE INDEX idx_entitaet_paar_name ON entitaet (user_id, character_id, lower(name));

-- Timeline references of a pair (SPEC §5.1); a move, precision change or delete fires Trigger 3.
CREATE TABLE timeline (
    id SERIAL PRIMARY KEY,
    user_id TEXT NOT NULL,
    character_id VARCHAR(50) NOT NULL,
    zeitpunkt TIMESTAMPTZ NOT NULL,
    praezision TEXT NOT NULL
        CHECK (praezision IN ('minute', 'stunde', 'tag', 'woche', 'monat', 'quartal', 'jahr')),
    titel TEXT NOT NULL DEFAULT '',
    themen TEXT[] NOT NULL DEFAULT '{}',
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE INDEX idx_timeline_paar ON timeline (user_id, character_id, praezision, zeitpunkt);

-- Nodes, exactly as syn §4.1 (vector length from the model profile).
-- Storage: the daily decay rewrites every active row (SPEC §5.7). It changes no indexed column,
-- so with room on the page the new versions stay on it (HOT) and no index is touched; fillfactor
-- 50 leaves room for a full second version of every row of a page (a 384-d row is ~1.9 kB and
-- stays inline; a 768-d vector is stored out of line, the row is then a few hundred bytes).
-- The embedding is never compressed (EXTERNAL): float vectors do not compress.
CREATE TABLE lzg_knoten (
    -- Identität
    id SERIAL PRIMARY KEY,
    kzg_quell_key TEXT NOT NULL UNIQUE,
    -- Paar-Partition
    user_id TEXT NOT NULL,
    character_id VARCHAR(50) NOT NULL DEFAULT 'nova',
    beobachter VARCHAR(20) NOT NULL DEFAULT 'user',
    -- Inhalt
    inhalt TEXT NOT NULL,
    embedding vector({{dimension}}),
    dimension TEXT NOT NULL,
    -- Knoten-Dynamik
    gewicht_roh DOUBLE PRECISION NOT NULL,
    gewicht_absolut DOUBLE PRECISION NOT NULL,
    gewicht_decay DOUBLE PRECISION NOT NULL,
    haeufigkeit INTEGER NOT NULL DEFAULT 1,
    aktiv BOOLEAN NOT NULL DEFAULT TRUE,
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    verstaerkt_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    decay_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    kzg_erstellt_am TIMESTAMPTZ NOT NULL,
    -- Salienz-Anker
    themen TEXT[] NOT NULL DEFAULT '{}',
    gedaechtnistyp VARCHAR(20),
    entitaet_ids INTEGER[] NOT NULL DEFAULT '{}',
    timeline_id INTEGER REFERENCES timeline(id) ON DELETE SET NULL,
    -- Emotionale Intelligenz (volle Kopie aus KZG, unverändert)
    emotion TEXT NOT NULL DEFAULT '',
    arousal DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    emotions_vektor TEXT NOT NULL DEFAULT '',
    intentionen TEXT NOT NULL DEFAULT '[]',
    modus TEXT NOT NULL DEFAULT '',
    sprach_stil TEXT NOT NULL DEFAULT '',
    beziehungs_dynamik TEXT NOT NULL DEFAULT '',
    tone TEXT NOT NULL DEFAULT ''
) WITH (fillfactor = 50);
ALTER TABLE lzg_knoten ALTER COLUMN embedding SET STORAGE EXTERNAL;

CREATE INDEX idx_lzg_knoten_aktiv
    ON lzg_knoten (user_id, character_id) WHERE aktiv = TRUE;
-- No vector index (syn §4.1: the ivfflat index lost its recall); exact search per pair.
CREATE INDEX idx_lzg_knoten_themen
    ON lzg_knoten USING gin (themen);
CREATE INDEX idx_lzg_knoten_entitaet_ids
    ON lzg_knoten USING gin (entitaet_ids);
CREATE INDEX idx_lzg_knoten_timeline_id
    ON lzg_knoten (timeline_id);
CREATE INDEX idx_lzg_knoten_kzg_erstellt_am
    ON lzg_knoten (kzg_erstellt_am);
CREATE INDEX idx_lzg_knoten_user_id
    ON lzg_knoten (user_id);
-- A pair's nodes in id order: the in-process embedding cache reads "nodes of the pair newer than
-- the last one it holds" through this index (one descent when nothing is new).
CREATE INDEX idx_lzg_knoten_paar_id
    ON lzg_knoten (user_id, character_id, id);

-- Directed edges, exactly as syn §4.2.
CREATE TABLE lzg_kanten (
    -- Identität
    id SERIAL PRIMARY KEY,
    knoten_a_id INTEGER NOT NULL REFERENCES lzg_knoten(id) ON DELETE CASCADE,
    knoten_b_id INTEGER NOT NULL REFERENCES lzg_knoten(id) ON DELETE CASCADE,
    -- Kanten-Stärke (Cache aus aktuellen Knoten-Stärken und eingefrorenen Schicht-Werten)
    gewicht_roh DOUBLE PRECISION NOT NULL,
    gewicht_absolut DOUBLE PRECISION NOT NULL,
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    -- Verbindungs-Charakter (eingefroren bei Bildung)
    verbindungs_gruende TEXT[] NOT NULL DEFAULT '{}',
    geteilte_entitaet_ids INTEGER[] NOT NULL DEFAULT '{}',
    geteilte_themen TEXT[] NOT NULL DEFAULT '{}',
    timeline_naehe_tage INTEGER,
    embedding_cosine_initial DOUBLE PRECISION,
    anzahl_schichten INTEGER NOT NULL DEFAULT 1,
    -- Eindeutigkeit
    CHECK (knoten_a_id != knoten_b_id),
    UNIQUE (knoten_a_id, knoten_b_id)
);
-- The seed's index on knoten_a_id, widened so it also serves "top-K outgoing edges of a node by
-- gewicht_absolut" (SPEC §5.1, §5.8 step 3): the spreading read walks it in order and stops after
-- K active targets. One index instead of two: every edge insert and Trigger 2 update pays for each.
CREATE INDEX idx_lzg_kanten_a
    ON lzg_kanten (knoten_a_id, gewicht_absolut DESC, id) INCLUDE (knoten_b_id);
CREATE INDEX idx_lzg_kanten_b
    ON lzg_kanten (knoten_b_id);
CREATE INDEX idx_lzg_kanten_geteilte_entitaet_ids
    ON lzg_kanten USING gin (geteilte_entitaet_ids);
CREATE INDEX idx_lzg_kanten_geteilte_themen
    ON lzg_kanten USING gin (geteilte_themen);
CREATE INDEX idx_lzg_kanten_verbindungs_gruende
    ON lzg_kanten USING gin (verbindungs_gruende);
-- Bridge turn → KZG entry → LZG node (syn §11.2, kzg §10): one row per promotion outcome that
-- found or made a node; it outlives the KZG hash.
CREATE TABLE verbindung (
    id SERIAL PRIMARY KEY,
    turn_id TEXT NOT NULL DEFAULT '',
    kzg_key TEXT NOT NULL,
    lzg_id INTEGER NOT NULL REFERENCES lzg_knoten(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    character_id VARCHAR(50) NOT NULL,
    ausgang TEXT NOT NULL CHECK (ausgang IN ('neu', 'dublette', 'halbreaktivierung')),
    ausloeser_turn_id TEXT NOT NULL DEFAULT '',
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    UNIQUE (kzg_key, lzg_id)
);
CREATE INDEX idx_verbindung_turn_id ON verbindung (turn_id);
CREATE INDEX idx_verbindung_lzg_id ON verbindung (lzg_id);
