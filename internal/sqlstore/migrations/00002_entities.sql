-- +goose Up
-- An entity's parameters are one JSON document: they are read and written
-- whole, with the entity. Record values are JSON keyed by parameter id;
-- record_index holds each scalar value once more for filters, and for
-- uniqueness (the partial unique index) where the parameter is unique.
CREATE TABLE entities (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES orgs (id),
    name              TEXT NOT NULL,
    label             TEXT NOT NULL,
    view_policy_names TEXT NOT NULL DEFAULT '[]',
    parameters        TEXT NOT NULL DEFAULT '[]',
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    deleted_at        BIGINT
);
CREATE UNIQUE INDEX entities_org_name ON entities (org_id, name) WHERE deleted_at IS NULL;
CREATE INDEX entities_org ON entities (org_id, id);

CREATE TABLE entity_records (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    entity_id  TEXT NOT NULL REFERENCES entities (id),
    vals       TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX entity_records_entity ON entity_records (org_id, entity_id, id);

CREATE TABLE record_index (
    org_id    TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    record_id TEXT NOT NULL REFERENCES entity_records (id) ON DELETE CASCADE,
    param_id  TEXT NOT NULL,
    value     TEXT NOT NULL,
    uniq      BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX record_index_lookup ON record_index (org_id, entity_id, param_id, value);
CREATE INDEX record_index_record ON record_index (record_id);
CREATE UNIQUE INDEX record_index_unique ON record_index (org_id, entity_id, param_id, value) WHERE uniq;

-- +goose Down
DROP TABLE record_index;
DROP TABLE entity_records;
DROP TABLE entities;
