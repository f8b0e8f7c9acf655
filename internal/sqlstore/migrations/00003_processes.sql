-- +goose Up
-- A process row holds what is not versioned (name, code, the measurement
-- sequence); process_versions holds each version of its steps as one JSON
-- document. A version is locked once a measurement uses it.
CREATE TABLE processes (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    code       TEXT NOT NULL,
    name       TEXT NOT NULL,
    label      TEXT NOT NULL,
    icon_name  TEXT NOT NULL DEFAULT '',
    version    INTEGER NOT NULL,
    next_seq   BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE UNIQUE INDEX processes_org_code ON processes (org_id, code) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX processes_org_label ON processes (org_id, label) WHERE deleted_at IS NULL;
CREATE INDEX processes_org ON processes (org_id, id);

CREATE TABLE process_versions (
    process_id TEXT NOT NULL REFERENCES processes (id),
    version    INTEGER NOT NULL,
    org_id     TEXT NOT NULL,
    steps      TEXT NOT NULL,
    locked     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (process_id, version)
);
CREATE INDEX process_versions_org ON process_versions (org_id);

-- +goose Down
DROP TABLE process_versions;
DROP TABLE processes;
