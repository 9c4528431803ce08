-- gc across machines (docs/decisions/0255): what each run needs, the run
-- each fork comes from, and the leases of live processes, so gc removes
-- only what no stored run and no live process uses.
-- The objects a run needs (agent, case, world manifest and files), written
-- with the run in its transaction and gone with it.
CREATE TABLE run_objects (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sha256 text NOT NULL,
    PRIMARY KEY (run_id, sha256)
);
CREATE INDEX run_objects_by_sha256 ON run_objects (sha256);
-- The run a fork was made from (its header's `parent.run`): gc keeps a
-- stored run's ancestors.
ALTER TABLE runs ADD COLUMN parent text;
-- Names (run ids, object hashes) a live process holds. A holder is alive
-- while its connection holds the session advisory lock
-- (hashtext('<schema>'), holder); gc removes the rows of one whose lock it
-- can take.
CREATE SEQUENCE lease_holders AS integer CYCLE;
CREATE TABLE leases (
    holder integer NOT NULL,
    name text NOT NULL,
    held_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (holder, name)
);
CREATE INDEX leases_by_name ON leases (name);
-- A name held is checked against the runs gc removed.
CREATE INDEX removed_by_run_id ON removed (run_id);

-- Runs stored before: their parents, and what they need, read from their
-- header line and their world's manifest (an overlaid world's record names
-- its base world, whose manifest names the files).
UPDATE runs r SET parent = (f.line::jsonb) -> 'header' -> 'parent' ->> 'run'
FROM frames f WHERE f.run_id = r.id AND f.n = 0;
INSERT INTO run_objects (run_id, sha256)
    SELECT id, agent_sha256 FROM runs
    UNION SELECT id, case_hash FROM runs
    UNION SELECT id, world_hash FROM runs;
CREATE FUNCTION pg_temp.json_of(b bytea) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN convert_from(b, 'UTF8')::jsonb;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$$;
CREATE TEMPORARY TABLE run_worlds ON COMMIT DROP AS
    SELECT r.id, pg_temp.json_of(o.bytes) AS doc
    FROM runs r JOIN objects o ON o.sha256 = r.world_hash;
INSERT INTO run_worlds
    SELECT w.id, pg_temp.json_of(o.bytes)
    FROM run_worlds w JOIN objects o ON o.sha256 = w.doc ->> 'world'
    WHERE jsonb_typeof(w.doc) = 'object' AND w.doc ? 'overlay';
INSERT INTO run_objects (run_id, sha256)
    SELECT DISTINCT w.id, e.value
    FROM run_worlds w,
         jsonb_each_text(CASE WHEN jsonb_typeof(w.doc) = 'object' THEN w.doc END) e
    WHERE e.value ~ '^[0-9a-f]{64}$'
ON CONFLICT DO NOTHING;
DROP FUNCTION pg_temp.json_of(bytea);
-- The database keeps what a stored run needs: a run whose object gc
-- removed since it was checked is refused (and sent again with it), and gc
-- cannot remove an object a run stored meanwhile needs. A run stored
-- before, whose object went missing, keeps no row for it.
DELETE FROM run_objects ro WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.sha256 = ro.sha256);
ALTER TABLE run_objects ADD FOREIGN KEY (sha256) REFERENCES objects (sha256);

-- A responder (a writer) holds leases and records what its runs need; a
-- viewer reads copies only and holds nothing.
GRANT SELECT, INSERT, DELETE ON run_objects, leases TO {schema}_responder;
GRANT USAGE ON SEQUENCE lease_holders TO {schema}_responder;
