-- The store's own tables (the search path is the store's schema).
-- Objects: agents, services, case texts, world manifests and files, by SHA-256.
CREATE TABLE objects (
    sha256 text PRIMARY KEY,
    bytes bytea NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now()
);
-- One row per run, written with its frames in one transaction; `seq`
-- orders runs as they arrived (what a reader has already pulled).
CREATE TABLE runs (
    id text PRIMARY KEY,
    seq bigserial UNIQUE NOT NULL,
    agent_sha256 text NOT NULL,
    case_hash text NOT NULL,
    world_hash text NOT NULL,
    chain_hash text NOT NULL,
    frames integer NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);
-- The bundle's lines: the header (0), the hash-chained events, the footer.
CREATE TABLE frames (
    run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    n integer NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (run_id, n)
);
-- Runs removed (by gc), so readers' working copies drop them too.
CREATE TABLE removed (
    seq bigserial PRIMARY KEY,
    run_id text NOT NULL
);
-- Pins: runs gc keeps whatever the policy says.
CREATE TABLE pins (
    run_id text PRIMARY KEY,
    note text NOT NULL DEFAULT ''
);
