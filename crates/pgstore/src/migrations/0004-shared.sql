-- What a folder store keeps as files beside its runs, kept here for every
-- machine and the UI (`{schema}` is the store's schema; see
-- docs/decisions/0250).
-- Fuzz campaign reports (`fuzz --json` documents), raw and redacted (the
-- store's policy's detectors on every string, when stored).
CREATE TABLE campaigns (
    id text PRIMARY KEY,
    report text NOT NULL,
    redacted text NOT NULL,
    writer_user text NOT NULL DEFAULT '',
    writer_host text NOT NULL DEFAULT '',
    stored_at timestamptz NOT NULL DEFAULT now()
);
-- The retention policy `gc` follows (a policy.toml text): one row, absent
-- until set (the defaults apply).
CREATE TABLE retention (
    id integer PRIMARY KEY CHECK (id = 1),
    policy text NOT NULL,
    set_by text NOT NULL DEFAULT session_user,
    set_at timestamptz NOT NULL DEFAULT now()
);
-- Grades `grade --rejudge` made of a run, 1, 2, ... (the newest is what
-- later re-grades read as the recorded one); they go with their run.
CREATE TABLE regrades (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n integer NOT NULL CHECK (n > 0),
    grade json NOT NULL,
    writer_user text NOT NULL DEFAULT '',
    writer_host text NOT NULL DEFAULT '',
    stored_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, n)
);
-- A viewer: the redacted column of campaign reports, and the retention
-- policy (no data in it). Re-grades are raw data: a responder's.
GRANT SELECT (id, redacted, writer_user, writer_host, stored_at) ON campaigns TO {schema}_viewer;
GRANT SELECT ON retention TO {schema}_viewer;
GRANT SELECT, INSERT, UPDATE, DELETE ON campaigns, regrades TO {schema}_responder;
GRANT SELECT, INSERT, UPDATE ON retention TO {schema}_responder;
