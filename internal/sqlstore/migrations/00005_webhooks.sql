-- +goose Up
-- Org subscriptions, the per-org signing secret, one delivery per event and
-- target URL (written with the event), every attempt, and the scheduler's
-- record of recurrence occurrences (its primary key makes each one happen once).
CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    url        TEXT NOT NULL,
    events     TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhooks_org ON webhooks (org_id, id);

CREATE TABLE webhook_secrets (
    org_id          TEXT PRIMARY KEY REFERENCES orgs (id),
    secret          TEXT NOT NULL,
    previous        TEXT NOT NULL DEFAULT '',
    previous_until  BIGINT NOT NULL DEFAULT 0,
    rotated_at      BIGINT NOT NULL
);

CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES orgs (id),
    event_id        TEXT NOT NULL REFERENCES events (id),
    event_type      TEXT NOT NULL,
    webhook_id      TEXT NOT NULL DEFAULT '',
    url             TEXT NOT NULL,
    measurement_id  TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    locked_until    BIGINT,
    give_up_at      BIGINT NOT NULL,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_order ON deliveries (url, measurement_id, status, id);
CREATE INDEX deliveries_org ON deliveries (org_id, id);

CREATE TABLE delivery_attempts (
    id          TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL REFERENCES deliveries (id),
    org_id      TEXT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, attempted_at);

ALTER TABLE measurement_open_steps ADD COLUMN overdue_notified BOOLEAN NOT NULL DEFAULT FALSE;

-- The first step's frequency, so the scheduler finds recurring processes.
ALTER TABLE processes ADD COLUMN recurrence TEXT NOT NULL DEFAULT '';
CREATE INDEX processes_recurrence ON processes (recurrence) WHERE recurrence <> '';

CREATE TABLE occurrences (
    process_id     TEXT NOT NULL REFERENCES processes (id),
    occurs_at      BIGINT NOT NULL,
    org_id         TEXT NOT NULL,
    measurement_id TEXT NOT NULL,
    PRIMARY KEY (process_id, occurs_at)
);

-- +goose Down
DROP TABLE occurrences;
DROP INDEX processes_recurrence;
ALTER TABLE processes DROP COLUMN recurrence;
ALTER TABLE measurement_open_steps DROP COLUMN overdue_notified;
DROP TABLE delivery_attempts;
DROP TABLE deliveries;
DROP TABLE webhook_secrets;
DROP TABLE webhooks;
