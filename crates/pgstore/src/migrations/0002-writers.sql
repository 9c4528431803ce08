-- Who wrote each run (outside its bundle and hash chain).
ALTER TABLE runs
    ADD COLUMN writer_user text NOT NULL DEFAULT '',
    ADD COLUMN writer_host text NOT NULL DEFAULT '',
    ADD COLUMN ci_job text,
    ADD COLUMN job_index text;
