-- The pairs a scoped run was limited to (TriggerTask with pairs: a replay's decay, retention or
-- promotion on a simulated clock); [] = all pairs. A list of [user_id, character_id].
ALTER TABLE runs ADD COLUMN pairs JSONB NOT NULL DEFAULT '[]'::jsonb;
