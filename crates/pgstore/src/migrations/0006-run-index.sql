-- The run index's columns, for readers of the database itself (a
-- dashboard, psql, another tool): derived from each run's redacted copy
-- (its header and footer lines), so a viewer may read them and a new
-- redaction policy, which makes every copy again, is followed at once.
-- The columns and their meaning are `runs --json`'s (index/row.rs); the
-- signature is grade/signature.rs's rule: a fault's status, else the
-- first failed assertion, else a status other than `completed` when
-- ungraded. See docs/decisions/0257.
-- When a run was created, from its id `YYYYMMDD-HHMMSS-...` (UTC); none
-- for an id that is not one (given by hand).
CREATE FUNCTION run_created(id text) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF id !~ '^[0-9]{8}-[0-9]{6}' THEN
        RETURN NULL;
    END IF;
    RETURN make_timestamptz(substr(id, 1, 4)::int, substr(id, 5, 2)::int, substr(id, 7, 2)::int,
                            substr(id, 10, 2)::int, substr(id, 12, 2)::int,
                            substr(id, 14, 2)::double precision, 'UTC');
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
CREATE VIEW run_index AS
SELECT
    r.id AS run_id,
    run_created(r.id) AS created,
    h.header ->> 'case' AS case_name,
    h.header ->> 'world' AS world,
    r.agent_sha256,
    (h.header ->> 'seed')::numeric AS seed,
    s.status,
    CASE f.footer -> 'grade' -> 'passed'
        WHEN 'true'::jsonb THEN 'passed' WHEN 'false'::jsonb THEN 'failed'
    END AS grade,
    CASE WHEN s.fault THEN 'faulted'
         WHEN g.signature IS NOT NULL THEN 'failed'
         ELSE 'passed'
    END AS outcome,
    g.signature,
    r.frames - 2 AS events,
    h.header -> 'parent' ->> 'run' AS parent,
    (h.header -> 'parent' ->> 'event')::integer AS fork_event,
    array_remove(ARRAY[
        CASE WHEN jsonb_typeof(h.header -> 'parent') = 'object' THEN 'fork' END,
        CASE WHEN coalesce(jsonb_typeof(h.header -> 'fuzz'), 'null') <> 'null' THEN 'fuzz' END
    ], NULL) AS tags,
    r.writer_user, r.writer_host, r.ci_job, r.job_index,
    r.written_at
FROM runs r
CROSS JOIN LATERAL (
    SELECT line::jsonb -> 'header' AS header
    FROM redacted_frames WHERE run_id = r.id AND n = 0
) h
CROSS JOIN LATERAL (
    SELECT line::jsonb -> 'footer' AS footer
    FROM redacted_frames WHERE run_id = r.id AND n = r.frames - 1
) f
CROSS JOIN LATERAL (
    SELECT f.footer ->> 'status' AS status,
           f.footer ->> 'status' IN ('trapped', 'out_of_fuel', 'memory_limit', 'timeout', 'exited')
               AS fault
) s
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN s.fault THEN s.status
        WHEN coalesce(jsonb_typeof(f.footer -> 'grade'), 'null') <> 'null' THEN
            CASE WHEN f.footer -> 'grade' -> 'passed' = 'true'::jsonb THEN NULL
                 ELSE 'failed: ' || coalesce((
                     SELECT CASE WHEN jsonb_typeof(a -> 'what') = 'string' THEN a ->> 'what' END
                     FROM jsonb_array_elements(CASE
                         WHEN jsonb_typeof(f.footer -> 'grade' -> 'assertions') = 'array'
                         THEN f.footer -> 'grade' -> 'assertions' ELSE '[]'::jsonb END)
                         WITH ORDINALITY AS t (a, i)
                     WHERE a -> 'passed' = 'false'::jsonb
                     ORDER BY i LIMIT 1
                 ), 'the grade')
            END
        WHEN s.status = 'completed' THEN NULL
        ELSE s.status
    END AS signature
) g;
GRANT SELECT ON run_index TO {schema}_viewer, {schema}_responder;
