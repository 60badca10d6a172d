-- memvault team memory, schema version 2: keyword search that can use the GIN index under row-level security.
--
-- PostgreSQL never uses an index for a condition whose operator is not LEAKPROOF on a table with row-level
-- security (it could leak rows the policy hides), and the full-text match `@@` is not: a member's own keyword
-- query reads every row. These SECURITY DEFINER functions run the keyword side as the tables' owner with the
-- member's visibility written out (org entries and the teams of the login role, `session_user`, which a member
-- cannot change), so the GIN index serves them. They return only uids, ranks and counts; the rows themselves
-- are then read under the member's own policies.

-- The owner reads every entry (the definer functions below need it; FORCE keeps the owner's writes to the policies).
CREATE POLICY owner_read ON memvault.entries FOR SELECT TO CURRENT_USER USING (true);

-- Entries a member can see, counted from the index alone.
CREATE INDEX entries_live_visibility ON memvault.entries (scope, team) WHERE NOT deleted;

-- The teams of the logged-in member (narrowed to `only_teams` unless that is null).
CREATE FUNCTION memvault.session_teams(only_teams text[]) RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(array_agg(tm.team), '{}') FROM memvault.team_members tm
    WHERE tm.role_name = session_user::text AND (only_teams IS NULL OR tm.team = ANY(only_teams))
$$;

-- Any (or, with `every`, all) of the words, each as plainto_tsquery 'simple' reads it, as one tsquery.
CREATE FUNCTION memvault.words_query(terms text[], every boolean) RETURNS tsquery
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(nullif(array_to_string(ARRAY(
        SELECT '(' || plainto_tsquery('simple', t)::text || ')' FROM unnest(terms) t
        WHERE plainto_tsquery('simple', t)::text <> ''), CASE WHEN every THEN ' & ' ELSE ' | ' END), ''), '')::tsquery
$$;

-- [entries the member sees, then for each term how many of them contain it]: exact up to `cap`, above it
-- estimated from a sample of about `sample_rows` rows (a common word's weight needs no more precision).
CREATE FUNCTION memvault.term_stats(terms text[], only_teams text[], cap integer, sample_rows integer)
RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    mine text[] := memvault.session_teams(only_teams);
    total bigint;
    counts bigint[] := '{}';
    capped integer[] := '{}';
    found bigint;
    sampled bigint;
    estimates bigint[];
    pct float8;
BEGIN
    SELECT (SELECT count(*) FROM memvault.entries e WHERE NOT e.deleted AND e.scope = 'org')
         + (SELECT count(*) FROM memvault.entries e WHERE NOT e.deleted AND e.scope = 'team' AND e.team = ANY(mine))
      INTO total;
    FOR i IN 1 .. coalesce(array_length(terms, 1), 0) LOOP
        SELECT count(*) INTO found FROM (
            SELECT 1 FROM memvault.entries e
            WHERE e.tsv @@ plainto_tsquery('simple', terms[i]) AND NOT e.deleted
              AND (e.scope = 'org' OR e.team = ANY(mine))
            LIMIT cap) s;
        counts := counts || found;
        IF found >= cap THEN
            capped := capped || i;
        END IF;
    END LOOP;
    IF coalesce(array_length(capped, 1), 0) > 0 THEN
        pct := least(100.0, 100.0 * sample_rows / greatest(1.0, (
            SELECT reltuples FROM pg_class WHERE oid = 'memvault.entries'::regclass)));
        WITH s AS MATERIALIZED (
            SELECT e.tsv FROM memvault.entries e TABLESAMPLE SYSTEM (pct) REPEATABLE (7)
            WHERE NOT e.deleted AND (e.scope = 'org' OR e.team = ANY(mine)))
        SELECT (SELECT count(*) FROM s),
               array_agg((SELECT count(*) FROM s WHERE s.tsv @@ plainto_tsquery('simple', terms[c])) ORDER BY n)
          INTO sampled, estimates
          FROM unnest(capped) WITH ORDINALITY AS u(c, n);
        FOR k IN 1 .. array_length(capped, 1) LOOP
            counts[capped[k]] := greatest(cap, round(estimates[k]::float8 * total / greatest(sampled, 1)));
        END LOOP;
    END IF;
    RETURN total || counts;
END
$$;

-- The `lim` best keyword matches the member sees: entries with any of `match_terms` (all of them with
-- `match_all`), ranked by ts_rank (length-normalised) against all of `rank_terms`.
CREATE FUNCTION memvault.keyword_candidates(
    match_terms text[], match_all boolean, rank_terms text[], only_teams text[], lim integer)
RETURNS TABLE (uid uuid, rank real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.uid, ts_rank(e.tsv, q.ranked, 1)
    FROM memvault.entries e,
         (SELECT memvault.words_query(match_terms, match_all) AS matched,
                 memvault.words_query(rank_terms, false) AS ranked,
                 memvault.session_teams(only_teams) AS mine) q
    WHERE e.tsv @@ q.matched AND NOT e.deleted AND (e.scope = 'org' OR e.team = ANY(q.mine))
    ORDER BY 2 DESC
    LIMIT lim
$$;

REVOKE ALL ON FUNCTION memvault.session_teams(text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION memvault.term_stats(text[], text[], integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION memvault.keyword_candidates(text[], boolean, text[], text[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memvault.session_teams(text[]) TO memvault_member;
GRANT EXECUTE ON FUNCTION memvault.term_stats(text[], text[], integer, integer) TO memvault_member;
GRANT EXECUTE ON FUNCTION memvault.keyword_candidates(text[], boolean, text[], text[], integer) TO memvault_member;
