-- The daily decay takes the pair's write lock like every other writer of a pair (SPEC §5.3, §5.7).
--
-- Every transaction that writes a node holds its pair's lock (migration 004) — except the decay,
-- whose one statement over all pairs waited for any node a writer held while holding the rows it
-- had already decayed. A writer locking two nodes in the other order closed the circle: PostgreSQL
-- aborted 4 of 5,841 decays and reinforcements run against each other for 40 s on one pair (docs/
-- decisions.md "The decay waits for no writer"). The decay now runs pair batch by pair batch and
-- takes each pair's lock without waiting (paar_sperre_versuchen); a pair a writer holds is decayed
-- after the batches, alone, once its lock is free. Holding only locks it got without waiting, or a
-- single one, the decay is never part of a circle.

-- The pair's lock key, once (migration 004's paar_sperren spelled it out).
CREATE FUNCTION paar_sperrschluessel(p_user text, p_character text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('lzg:' || p_user || chr(31) || p_character, 0);
$$;

CREATE OR REPLACE FUNCTION paar_sperren(p_user text, p_character text) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(paar_sperrschluessel(p_user, p_character));
$$;

-- The pair's lock if no other transaction holds it (true), held until this transaction ends.
CREATE FUNCTION paar_sperre_versuchen(p_user text, p_character text) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT pg_try_advisory_xact_lock(paar_sperrschluessel(p_user, p_character));
$$;
