-- +goose Up
-- Contract templates (semantics section 11). A template row holds its name
-- and current version; each version's body is a row of its own, kept for
-- ever: documents name the version they were rendered from. A deleted
-- template keeps its rows (deleted_at), as the versions of processes that
-- name it still render it.
CREATE TABLE contract_templates (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT
);
CREATE UNIQUE INDEX contract_templates_org_name ON contract_templates (org_id, name) WHERE deleted_at IS NULL;
CREATE INDEX contract_templates_org ON contract_templates (org_id, id);

CREATE TABLE contract_template_versions (
    template_id        TEXT NOT NULL REFERENCES contract_templates (id),
    version            INTEGER NOT NULL,
    org_id             TEXT NOT NULL,
    name               TEXT NOT NULL,
    body               TEXT NOT NULL,
    template_entity_id TEXT NOT NULL DEFAULT '',
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (template_id, version)
);

-- Documents rendered at a step's consensus, with their bytes: written in
-- the transaction of the consensus, so a document exists exactly when its
-- consensus does. inputs is what it was rendered from besides the
-- template's body (re-rendering them gives the same bytes); shown lists the
-- parameters and entities whose values it shows (who may read it).
CREATE TABLE documents (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL,
    measurement_id   TEXT NOT NULL,
    step_id          TEXT NOT NULL,
    opening          INTEGER NOT NULL,
    parameter_id     TEXT NOT NULL DEFAULT '',
    template_id      TEXT NOT NULL,
    template_version INTEGER NOT NULL,
    action_id        TEXT NOT NULL,
    sha256           TEXT NOT NULL,
    size             BIGINT NOT NULL,
    content          BYTEA NOT NULL,
    inputs           TEXT NOT NULL,
    shown            TEXT NOT NULL,
    superseded       BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       BIGINT NOT NULL
);
CREATE INDEX documents_measurement ON documents (org_id, measurement_id);
CREATE INDEX documents_template ON documents (org_id, template_id, template_version);

-- +goose Down
DROP TABLE documents;
DROP TABLE contract_template_versions;
DROP TABLE contract_templates;
