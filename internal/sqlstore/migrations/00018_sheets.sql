-- +goose Up
-- IF NOT EXISTS: an upgrade test replays the migrations from 15 over a database that has these.
-- Uploaded workbooks (semantics section 10), their bytes with them: a
-- process save checks links against them and a write recalculates them in
-- the same transaction.
CREATE TABLE IF NOT EXISTS sheets (
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    id         TEXT NOT NULL,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    pages      TEXT NOT NULL,
    sha256     TEXT NOT NULL,
    size       BIGINT NOT NULL,
    content    BYTEA NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);

-- Each measurement's filled copy of a workbook, as its last
-- recalculation left it; the SHA-256 of every copy is in its action's data.
CREATE TABLE IF NOT EXISTS measurement_sheets (
    org_id         TEXT NOT NULL,
    measurement_id TEXT NOT NULL,
    sheet_id       TEXT NOT NULL,
    action_id      TEXT NOT NULL,
    sha256         TEXT NOT NULL,
    content        BYTEA NOT NULL,
    updated_at     BIGINT NOT NULL,
    PRIMARY KEY (org_id, measurement_id, sheet_id)
);

-- +goose Down
DROP TABLE measurement_sheets;
DROP TABLE sheets;
