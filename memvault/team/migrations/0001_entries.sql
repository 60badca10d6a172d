-- memvault team memory, schema version 1: teams, members, entries, their history and audit, roles, row-level security.
-- Applied by memvault.team.schema.init_db in one transaction, as the database's admin (who owns every object here).
-- The schema `memvault` and memvault.schema_version exist already (init_db makes them).

CREATE EXTENSION IF NOT EXISTS vector;

-- The group role that holds every member's grants (roles are global to the server: created once, shared by databases).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memvault_member') THEN
        CREATE ROLE memvault_member NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA memvault TO memvault_member;
GRANT SELECT ON memvault.schema_version TO memvault_member;

CREATE TABLE memvault.teams (
    name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memvault.members (
    role_name text PRIMARY KEY,
    added_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memvault.team_members (
    team text NOT NULL REFERENCES memvault.teams ON DELETE CASCADE,
    role_name text NOT NULL REFERENCES memvault.members ON DELETE CASCADE,
    PRIMARY KEY (team, role_name)
);
CREATE INDEX team_members_role ON memvault.team_members (role_name);

-- The pull cursor: every insert or update of an entry takes the next value (see memvault.stamp_entry).
CREATE SEQUENCE memvault.change_seq;

CREATE TABLE memvault.entries (
    uid uuid PRIMARY KEY,
    scope text NOT NULL CHECK (scope IN ('team', 'org')),
    team text REFERENCES memvault.teams,
    author text NOT NULL DEFAULT current_user,   -- the role that published the first version
    editor text NOT NULL DEFAULT current_user,   -- the role that wrote this version
    kind text NOT NULL DEFAULT 'note' CHECK (length(kind) BETWEEN 1 AND 40),
    title text NOT NULL CHECK (length(title) <= 500),
    -- the mirror's file name: no folder separators, no leading dot, no control characters
    slug text NOT NULL CHECK (slug ~ '^[^/\\.[:cntrl:]][^/\\[:cntrl:]]{0,199}$'),
    body text NOT NULL CHECK (length(body) <= 1000000),
    frontmatter jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(frontmatter) = 'object'),
    content_hash text NOT NULL,
    version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    supersedes uuid REFERENCES memvault.entries (uid),
    deleted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    embedding vector(384),
    model_id text,
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', body), 'B')
    ) STORED,
    change_seq bigint NOT NULL DEFAULT 0,
    -- scope × owner: a team entry names its team, an org entry names none
    CONSTRAINT team_iff_team_scope CHECK ((scope = 'team') = (team IS NOT NULL)),
    -- a vector always says which model made it
    CONSTRAINT embedding_with_model CHECK ((embedding IS NULL) = (model_id IS NULL)),
    CONSTRAINT not_own_successor CHECK (supersedes IS DISTINCT FROM uid)
);
CREATE INDEX entries_embedding ON memvault.entries USING hnsw (embedding vector_cosine_ops);
CREATE INDEX entries_tsv ON memvault.entries USING gin (tsv);
CREATE INDEX entries_change_seq ON memvault.entries (change_seq);
CREATE UNIQUE INDEX entries_live_slug ON memvault.entries (coalesce(team, ''), slug) WHERE NOT deleted;

-- Every earlier version of an entry, kept when a newer one replaces it (nothing a member wrote is lost).
CREATE TABLE memvault.history (
    uid uuid NOT NULL,
    version integer NOT NULL,
    scope text NOT NULL,
    team text,
    editor text NOT NULL,
    kind text NOT NULL,
    title text NOT NULL,
    slug text NOT NULL,
    body text NOT NULL,
    frontmatter jsonb NOT NULL,
    content_hash text NOT NULL,
    supersedes uuid,
    deleted boolean NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (uid, version)
);

-- One row per change of an entry: who, what, when. Append-only.
CREATE TABLE memvault.audit (
    id bigserial PRIMARY KEY,
    uid uuid NOT NULL,
    scope text NOT NULL,
    team text,
    version integer NOT NULL,
    action text NOT NULL CHECK (action IN ('publish', 'edit', 'delete', 'restore', 'purge')),
    actor text NOT NULL,
    content_hash text,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX audit_uid ON memvault.audit (uid);

-- Before each write of an entry: the server, not the client, sets who and when, the version and the cursor.
-- A shared advisory lock held to the end of the writing transaction lets changes_since wait for writers in
-- flight, so no change with a lower cursor value can commit after a pull has passed it.
CREATE FUNCTION memvault.stamp_entry() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(memvault.cursor_lock_key());
    IF TG_OP = 'INSERT' THEN
        NEW.author := current_user;
        NEW.version := 1;
        NEW.created_at := now();
    ELSE
        IF NEW.uid <> OLD.uid OR NEW.scope <> OLD.scope OR NEW.team IS DISTINCT FROM OLD.team THEN
            RAISE EXCEPTION 'an entry''s uid, scope and team cannot change' USING ERRCODE = 'check_violation';
        END IF;
        NEW.author := OLD.author;
        NEW.created_at := OLD.created_at;
        NEW.version := OLD.version + 1;
    END IF;
    NEW.editor := current_user;
    NEW.updated_at := now();
    NEW.change_seq := nextval('memvault.change_seq');
    RETURN NEW;
END
$$;

-- The advisory lock key of the cursor (one per database; advisory locks are per database).
CREATE FUNCTION memvault.cursor_lock_key() RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT 7306228473920041731::bigint $$;

CREATE TRIGGER entries_stamp BEFORE INSERT OR UPDATE ON memvault.entries
    FOR EACH ROW EXECUTE FUNCTION memvault.stamp_entry();

-- After each change: the audit row and the replaced version. SECURITY DEFINER: members cannot write either
-- table themselves; the actor is the role that made the change (stamped into `editor` before the definer runs).
CREATE FUNCTION memvault.record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO memvault.audit (uid, scope, team, version, action, actor, content_hash)
        VALUES (OLD.uid, OLD.scope, OLD.team, OLD.version, 'purge', session_user, OLD.content_hash);
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO memvault.history (uid, version, scope, team, editor, kind, title, slug, body, frontmatter,
                                      content_hash, supersedes, deleted, updated_at)
        VALUES (OLD.uid, OLD.version, OLD.scope, OLD.team, OLD.editor, OLD.kind, OLD.title, OLD.slug, OLD.body,
                OLD.frontmatter, OLD.content_hash, OLD.supersedes, OLD.deleted, OLD.updated_at);
    END IF;
    INSERT INTO memvault.audit (uid, scope, team, version, action, actor, content_hash)
    VALUES (NEW.uid, NEW.scope, NEW.team, NEW.version,
            CASE WHEN TG_OP = 'INSERT' THEN 'publish'
                 WHEN NEW.deleted AND NOT OLD.deleted THEN 'delete'
                 WHEN OLD.deleted AND NOT NEW.deleted THEN 'restore'
                 ELSE 'edit' END,
            NEW.editor, NEW.content_hash);
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION memvault.record_change() FROM PUBLIC;

CREATE TRIGGER entries_record AFTER INSERT OR UPDATE OR DELETE ON memvault.entries
    FOR EACH ROW EXECUTE FUNCTION memvault.record_change();

-- The audit and the history are append-only for everyone, their owner included (a superuser can drop this).
CREATE FUNCTION memvault.append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON memvault.audit
    FOR EACH STATEMENT EXECUTE FUNCTION memvault.append_only();
CREATE TRIGGER history_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON memvault.history
    FOR EACH STATEMENT EXECUTE FUNCTION memvault.append_only();

-- Grants: members read and write entries (rows limited by the policies below), read the rest.
GRANT SELECT, INSERT, UPDATE ON memvault.entries TO memvault_member;
GRANT SELECT ON memvault.teams, memvault.team_members, memvault.history, memvault.audit TO memvault_member;
GRANT USAGE, SELECT ON SEQUENCE memvault.change_seq TO memvault_member;
GRANT EXECUTE ON FUNCTION memvault.cursor_lock_key() TO memvault_member;

-- Row-level security. A member's teams are their rows of team_members (a member sees only their own rows there).
ALTER TABLE memvault.teams ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_teams ON memvault.teams FOR SELECT TO memvault_member
    USING (name IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user));
ALTER TABLE memvault.team_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON memvault.team_members FOR SELECT TO memvault_member
    USING (role_name = current_user);

ALTER TABLE memvault.entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE memvault.entries FORCE ROW LEVEL SECURITY;
-- read: org entries and the entries of the member's teams
CREATE POLICY member_read ON memvault.entries FOR SELECT TO memvault_member
    USING (scope = 'org' OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user));
-- publish: as themselves, into org or one of their teams
CREATE POLICY member_publish ON memvault.entries FOR INSERT TO memvault_member
    WITH CHECK (author = current_user AND editor = current_user AND (scope = 'org'
        OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user)));
-- edit and tombstone: any member who can read the entry, as themselves (a new version; the audit names them)
CREATE POLICY member_edit ON memvault.entries FOR UPDATE TO memvault_member
    USING (scope = 'org' OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user))
    WITH CHECK (editor = current_user AND (scope = 'org'
        OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user)));
-- no DELETE policy: members never remove a row (a deletion is a tombstone). FORCE: the tables' owner is held to
-- the same policies (an admin who is also a member sees what a member sees); only a superuser bypasses them.

ALTER TABLE memvault.history ENABLE ROW LEVEL SECURITY;
CREATE POLICY member_read ON memvault.history FOR SELECT TO memvault_member
    USING (scope = 'org' OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user));

ALTER TABLE memvault.audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY member_read ON memvault.audit FOR SELECT TO memvault_member
    USING (scope = 'org' OR team IN (SELECT tm.team FROM memvault.team_members tm WHERE tm.role_name = current_user));
