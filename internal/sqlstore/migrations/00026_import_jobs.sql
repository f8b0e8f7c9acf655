-- +goose Up
-- A large records import runs as a job (docs/decisions.md, "Imports as
-- jobs"). Its rows are written in chunks with import_job_id set and stay
-- hidden until the job's status is SUCCEEDED (one small write); then the
-- worker clears import_job_id in chunks (settled), or deletes the rows of a
-- failed job. errors is JSON: the field errors of a failed job.
CREATE TABLE import_jobs (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    entity_id     TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    status        TEXT NOT NULL,
    total         INTEGER NOT NULL,
    processed     INTEGER NOT NULL DEFAULT 0,
    error_code    TEXT NOT NULL DEFAULT '',
    error_detail  TEXT NOT NULL DEFAULT '',
    errors        TEXT NOT NULL DEFAULT '[]',
    storage_key   TEXT NOT NULL,
    entity_digest TEXT NOT NULL DEFAULT '',
    lease_owner   TEXT NOT NULL DEFAULT '',
    lease_until   BIGINT NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    settled       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    BIGINT NOT NULL,
    started_at    BIGINT,
    finished_at   BIGINT
);
-- The worker's queue: jobs not yet settled.
CREATE INDEX import_jobs_open ON import_jobs (lease_until, created_at) WHERE NOT settled;

ALTER TABLE entity_records ADD COLUMN import_job_id TEXT;
-- Lists and counts filter on import_job_id: keep them on the index alone.
CREATE INDEX entity_records_entity_job ON entity_records (org_id, entity_id, id, import_job_id);
DROP INDEX entity_records_entity;
CREATE INDEX entity_records_import_job ON entity_records (import_job_id, id);

-- +goose Down
DROP INDEX entity_records_import_job;
CREATE INDEX entity_records_entity ON entity_records (org_id, entity_id, id);
DROP INDEX entity_records_entity_job;
ALTER TABLE entity_records DROP COLUMN import_job_id;
DROP TABLE import_jobs;
