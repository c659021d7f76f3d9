-- log.pipeline_log exactly as syn §10.1 (db/init.sql as built: columns, the five built indexes),
-- plus trace_id for trace correlation (SPEC §8) and the rules of SPEC §8 as constraints.
-- Runs with search_path = log, public.

CREATE TABLE IF NOT EXISTS pipeline_log (
    id BIGSERIAL PRIMARY KEY,
    erstellt_am TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    turn_id VARCHAR(100) NOT NULL,
    span_id UUID NULL,
    quelle VARCHAR(50) NOT NULL,
    node VARCHAR(50) NOT NULL,
    art VARCHAR(30) NOT NULL,
    inhalt JSONB NOT NULL,
    user_id VARCHAR(50) NULL, -- Chat 104, Paar-Scope
    character_id VARCHAR(50) NULL, -- Chat 104, Paar-Scope
    -- OpenTelemetry trace id (32 lowercase hex) of the call that wrote the row.
    trace_id VARCHAR(32) NULL,
    CONSTRAINT pipeline_log_art_check CHECK (art IN (
        'eingang', 'prompt', 'berechnung', 'switch', 'db_write', 'db_read', 'ausgabe',
        'fehler', 'bemerkung', 'span_start', 'span_end', 'token', 'turn_roh'
    )),
    -- Both or neither: a half pair would slip through WHERE user_id = … AND character_id = … (syn §10.1).
    CONSTRAINT pipeline_log_paar_check CHECK ((user_id IS NULL) = (character_id IS NULL)),
    CONSTRAINT pipeline_log_trace_id_check CHECK (trace_id ~ '^[0-9a-f]{32}$')
);

CREATE INDEX IF NOT EXISTS idx_pipeline_log_turn ON pipeline_log (turn_id);
CREATE INDEX IF NOT EXISTS idx_pipeline_log_span ON pipeline_log (span_id);
CREATE INDEX IF NOT EXISTS idx_pipeline_log_node_art ON pipeline_log (node, art);
CREATE INDEX IF NOT EXISTS idx_pipeline_log_erstellt ON pipeline_log (erstellt_am DESC);
CREATE INDEX IF NOT EXISTS idx_pipeline_log_paar ON pipeline_log (user_id, character_id);
-- Joins a trace to its rows; rows written outside any trace stay out of the index.
CREATE INDEX IF NOT EXISTS idx_pipeline_log_trace ON pipeline_log (trace_id) WHERE trace_id IS NOT NULL;
