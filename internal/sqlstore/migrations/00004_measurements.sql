-- +goose Up
-- A measurement keeps the engine's state as JSON and its derived status as a
-- column (for filters). measurement_open_steps mirrors its open steps for the
-- "open step" and "overdue" filters and for the deadline worker. actions are
-- the ledger: seq numbers each org's actions, and ledger_heads holds each
-- org's last link so that concurrent writers extend one chain. events is the
-- outbox, written in the same transaction as the change that causes it.
CREATE TABLE measurements (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    process_id TEXT NOT NULL REFERENCES processes (id),
    version    INTEGER NOT NULL,
    name       TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    status     TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (process_id, seq)
);
CREATE INDEX measurements_org_status ON measurements (org_id, status, id);
CREATE INDEX measurements_org_process ON measurements (org_id, process_id, id);
CREATE INDEX measurements_org_created ON measurements (org_id, created_at, id);

CREATE TABLE measurement_open_steps (
    measurement_id TEXT NOT NULL REFERENCES measurements (id),
    org_id         TEXT NOT NULL,
    step_id        TEXT NOT NULL,
    opening        INTEGER NOT NULL,
    opened_at      BIGINT NOT NULL,
    due_at         BIGINT,
    PRIMARY KEY (measurement_id, step_id)
);
CREATE INDEX open_steps_org_step ON measurement_open_steps (org_id, step_id);
CREATE INDEX open_steps_due ON measurement_open_steps (org_id, due_at) WHERE due_at IS NOT NULL;

CREATE TABLE actions (
    id                 TEXT PRIMARY KEY,
    org_id             TEXT NOT NULL REFERENCES orgs (id),
    measurement_id     TEXT NOT NULL REFERENCES measurements (id),
    step_id            TEXT NOT NULL,
    opening            INTEGER NOT NULL,
    seq                BIGINT NOT NULL,
    type               TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    username           TEXT NOT NULL,
    user_roles         TEXT NOT NULL DEFAULT '[]',
    role               TEXT NOT NULL DEFAULT '',
    policy_name        TEXT NOT NULL DEFAULT '',
    token_id           TEXT NOT NULL DEFAULT '',
    observation        TEXT NOT NULL DEFAULT '',
    transaction_hash   TEXT NOT NULL,
    data               TEXT NOT NULL DEFAULT '{}',
    reproves_action_id TEXT NOT NULL DEFAULT '',
    reproved           BOOLEAN NOT NULL DEFAULT FALSE,
    superseded         BOOLEAN NOT NULL DEFAULT FALSE,
    prev_hash          TEXT NOT NULL,
    ledger_hash        TEXT NOT NULL,
    created_at         BIGINT NOT NULL,
    UNIQUE (org_id, seq)
);
CREATE INDEX actions_measurement ON actions (measurement_id, seq);

CREATE TABLE ledger_heads (
    org_id TEXT PRIMARY KEY REFERENCES orgs (id),
    seq    BIGINT NOT NULL,
    hash   TEXT NOT NULL
);

CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    type           TEXT NOT NULL,
    measurement_id TEXT NOT NULL DEFAULT '',
    step_id        TEXT NOT NULL DEFAULT '',
    action_id      TEXT NOT NULL DEFAULT '',
    payload        TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX events_org ON events (org_id, created_at);

-- +goose Down
DROP TABLE events;
DROP TABLE ledger_heads;
DROP TABLE actions;
DROP TABLE measurement_open_steps;
DROP TABLE measurements;
