-- Readers by role (`{schema}` is the store's schema; see docs/decisions/0246).
-- A viewer reads each run's redacted copy, never its raw lines or the
-- objects (case texts and world files hold the world's data).
CREATE TABLE redacted_frames (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n integer NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (run_id, n)
);
-- Which policy a run's copy was made under, and when (re)made: a viewer
-- pulls copies whose `copy_seq` is past its mark (a new run, or a copy
-- made again under a new policy).
CREATE SEQUENCE copy_seq;
ALTER TABLE runs
    ADD COLUMN copy_policy text,
    ADD COLUMN copy_seq bigint;
CREATE INDEX runs_copy_seq ON runs (copy_seq);
-- The store's redaction policy (a redact.toml text) and its secret salt:
-- one row, shared by every machine; the empty policy runs every built-in
-- detector.
CREATE TABLE redaction (
    id integer PRIMARY KEY CHECK (id = 1),
    policy text NOT NULL,
    policy_sha256 text NOT NULL,
    salt text NOT NULL,
    set_by text NOT NULL,
    set_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO redaction (id, policy, policy_sha256, salt, set_by)
VALUES (1, '', encode(sha256(''::bytea), 'hex'),
        replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', ''),
        session_user);
-- Every unredacted read: who (the database user, and the UI token's name),
-- when (wall clock: metadata, never a record), which run, which command.
CREATE TABLE audit (
    seq bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    db_user text NOT NULL DEFAULT session_user,
    token text,
    run_id text,
    command text NOT NULL
);
-- A partitioned suite's shard reports (`test --partition` on this store),
-- raw and redacted, for `merge --suite`.
CREATE TABLE shard_reports (
    suite text NOT NULL,
    part text NOT NULL,
    selection text NOT NULL,
    report text NOT NULL,
    redacted text NOT NULL,
    writer_user text NOT NULL DEFAULT '',
    writer_host text NOT NULL DEFAULT '',
    stored_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (suite, part)
);
-- The two group roles (cluster-wide names), made when missing.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{schema}_viewer') THEN
        CREATE ROLE {schema}_viewer NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{schema}_responder') THEN
        CREATE ROLE {schema}_responder NOLOGIN;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE EXCEPTION 'making the roles {schema}_viewer and {schema}_responder needs CREATEROLE: run `worldline migrate` once as a user who has it, or have an administrator create them (CREATE ROLE {schema}_viewer NOLOGIN; CREATE ROLE {schema}_responder NOLOGIN)';
END
$$;
REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM PUBLIC;
GRANT USAGE ON SCHEMA {schema} TO {schema}_viewer, {schema}_responder;
-- A viewer: the runs' rows (ids, hashes, writers), their redacted copies,
-- removals, pins, and the redacted column of shard reports.
GRANT SELECT ON schema_version, runs, redacted_frames, removed, pins TO {schema}_viewer;
GRANT SELECT (suite, part, selection, redacted, writer_user, writer_host, stored_at)
    ON shard_reports TO {schema}_viewer;
-- A responder: everything a writer needs, the raw lines and objects, the
-- policy; the audit only appended to and read.
GRANT SELECT, INSERT, UPDATE, DELETE
    ON runs, frames, redacted_frames, objects, removed, pins, shard_reports TO {schema}_responder;
GRANT SELECT ON schema_version TO {schema}_responder;
GRANT SELECT, UPDATE ON redaction TO {schema}_responder;
GRANT SELECT, INSERT ON audit TO {schema}_responder;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {schema}_responder;
-- The agents runs name (components, no world data), which a viewer's
-- export of a redacted copy carries; the view reads as its owner.
CREATE VIEW agents AS
    SELECT o.sha256, o.bytes FROM objects o
    WHERE EXISTS (SELECT 1 FROM runs r WHERE r.agent_sha256 = o.sha256);
GRANT SELECT ON agents TO {schema}_viewer, {schema}_responder;
