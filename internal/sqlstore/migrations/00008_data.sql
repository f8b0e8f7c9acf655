-- +goose Up
-- Unique step values: one row per measurement and unique parameter; the
-- unique index makes concurrent writers of the same value conflict.
CREATE TABLE measurement_values (
    org_id         TEXT NOT NULL,
    process_id     TEXT NOT NULL,
    param_id       TEXT NOT NULL,
    value          TEXT NOT NULL,
    measurement_id TEXT NOT NULL,
    PRIMARY KEY (measurement_id, param_id)
);
CREATE UNIQUE INDEX measurement_values_unique ON measurement_values (org_id, process_id, param_id, value);

-- Uploaded files: the bytes live in the blob store under storage_key.
CREATE TABLE attachments (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    sha256       TEXT NOT NULL,
    storage_key  TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX attachments_org ON attachments (org_id, id);

-- +goose Down
DROP TABLE attachments;
DROP TABLE measurement_values;
