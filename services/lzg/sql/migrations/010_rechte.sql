-- A person's rights over their memories (docs/decisions.md "Erasure"; services/lzg/rights.py).
-- Numbered from 010: 005–009 belong to the retrieval work.
--
-- Nothing here holds a user or character id: pairs and users are named by one-way keys, the same
-- tokens the KZG's index uses (novaberg_core.contract.pair_token / user_token; a test checks that
-- both sides compute the same value).

-- The pair's key: 32 hex digits of sha256("<len(user)>:<user>\x1f<character>").
CREATE FUNCTION paar_schluessel(p_user text, p_character text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT left(encode(sha256(convert_to(length(p_user)::text || ':' || p_user || chr(31) || p_character, 'UTF8')), 'hex'), 32);
$$;

-- The user's key (all characters): 32 hex digits of sha256("user\x1f<user>").
CREATE FUNCTION nutzer_schluessel(p_user text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT left(encode(sha256(convert_to('user' || chr(31) || p_user, 'UTF8')), 'hex'), 32);
$$;

-- The generation of a pair's (or a user's) node set. The in-process embedding cache holds only ids
-- and vectors and assumed nodes are never deleted (services/lzg/cache.py); a deletion (erasure,
-- forget) or a rewritten vector (correct) moves the generation, drawn from one sequence so every
-- move is new, and every replica reads it with its watermark query and drops what it held.
CREATE SEQUENCE knoten_generation;
CREATE TABLE paar_generation (
    schluessel TEXT PRIMARY KEY,
    generation BIGINT NOT NULL
);

-- Tombstones of erasures: a Promote of an entry written at or before geloescht_am is dropped
-- (an in-flight promotion must not bring an erased pair back). Kept for a day, then removed.
CREATE TABLE loeschung (
    schluessel TEXT PRIMARY KEY,
    geloescht_am TIMESTAMPTZ NOT NULL
);
