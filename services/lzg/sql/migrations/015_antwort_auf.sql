-- The question a memory answers (SPEC §11; docs/decisions.md "An answer is found by its question").
--
-- antwort_auf: the other speaker's question the turn answered ("" for none), carried over from the
-- KZG entry at promotion and immutable after it. Lexical search reads it with the speaker and the
-- content (novaberg_core.embedding.searched_text), so a question asked alike finds the answer ("What
-- did you research?" — "Adoption agencies."); it is never part of the embedded text. Nodes promoted
-- before this migration keep '' and are found by their own words, as before.
ALTER TABLE lzg_knoten ADD COLUMN antwort_auf TEXT NOT NULL DEFAULT '';
