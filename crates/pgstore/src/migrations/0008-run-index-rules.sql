-- The rules each run ran under (decision 0423), as `runs --json` and
-- `diff --json` give them: the header's `rules`, 0 for a header without
-- them (a run recorded before there were rules). Read from each run's
-- redacted copy as the other columns are, so the runs stored before this
-- migration have theirs at once. A new column goes last (CREATE OR
-- REPLACE VIEW keeps the columns before it as they were).
CREATE OR REPLACE VIEW run_index AS
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
    coalesce((f.footer ->> 'events')::integer, r.frames - 2) AS events,
    h.header -> 'parent' ->> 'run' AS parent,
    (h.header -> 'parent' ->> 'event')::integer AS fork_event,
    array_remove(ARRAY[
        CASE WHEN jsonb_typeof(h.header -> 'parent') = 'object' THEN 'fork' END,
        CASE WHEN coalesce(jsonb_typeof(h.header -> 'fuzz'), 'null') <> 'null' THEN 'fuzz' END
    ], NULL) AS tags,
    r.writer_user, r.writer_host, r.ci_job, r.job_index,
    r.written_at,
    coalesce((h.header ->> 'rules')::integer, 0) AS rules
FROM runs r
CROSS JOIN LATERAL (
    SELECT line::jsonb -> 'header' AS header
    FROM redacted_frames WHERE run_id = r.id AND n = 0
) h
CROSS JOIN LATERAL (
    SELECT line::jsonb -> 'footer' AS footer
    FROM redacted_frames WHERE run_id = r.id ORDER BY n DESC LIMIT 1
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
