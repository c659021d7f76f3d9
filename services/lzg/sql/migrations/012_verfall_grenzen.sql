-- knoten_verfall (migration 011) without PostgreSQL's float errors (SPEC §5.7).
--
-- PostgreSQL raises "value out of range: underflow" where IEEE arithmetic, and so the Python twin
-- (services/lzg/weights.py `decayed`), rounds to zero: exp() of less than about −745, and a product
-- of two non-zero numbers that rounds to 0. A read as of some 1,400 years after a node's last decay
-- (an as_of the requests accept) so failed with INTERNAL (tests/e2e/test_attacks.py found it).
-- Now a decay that takes a weight below e^−700 (~1e−304, far under every minimum weight) gives 0
-- (the twin: 0, or a number below 1e−304); a read as of long before the node's last decay (the
-- weight carried back, which grows) has its exponent capped at +700. Every other weight is the same
-- number as before: tests/integration/lzg/test_lzg_sql_formula.py compares both, the extremes too.
CREATE OR REPLACE FUNCTION knoten_verfall(gewicht float8, von timestamptz, bis timestamptz, rate float8) RETURNS float8
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT CASE
        WHEN gewicht = 0.0 THEN 0.0
        WHEN ln(abs(gewicht)) - rate * (date_part('epoch', bis) - date_part('epoch', von)) / 86400.0 < -700.0 THEN 0.0
        ELSE gewicht * exp(LEAST(-rate * (date_part('epoch', bis) - date_part('epoch', von)) / 86400.0, 700.0))
    END $$;
