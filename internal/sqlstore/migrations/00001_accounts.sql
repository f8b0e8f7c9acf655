-- +goose Up
-- Times are Unix milliseconds (BIGINT) and lists are JSON text in both
-- engines, so that the store's SQL is the same for both.
CREATE TABLE bootstrap (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    created_at BIGINT NOT NULL
);

CREATE TABLE orgs (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    logo_key    TEXT NOT NULL DEFAULT '',
    pinned_url  TEXT NOT NULL DEFAULT '',
    theme_color TEXT NOT NULL DEFAULT '',
    operations  TEXT NOT NULL DEFAULT '[]',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    email      TEXT NOT NULL DEFAULT '',
    name       TEXT NOT NULL DEFAULT '',
    roles      TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX users_org_email ON users (org_id, email) WHERE email <> '';
CREATE INDEX users_org ON users (org_id, id);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL REFERENCES users (id),
    name       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_user ON api_keys (org_id, user_id);

CREATE TABLE invites (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    email      TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    roles      TEXT NOT NULL DEFAULT '[]',
    status     TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX invites_pending ON invites (org_id, email) WHERE status = 'PENDING';
CREATE INDEX invites_org ON invites (org_id, created_at);

CREATE TABLE policies (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    name       TEXT NOT NULL,
    roles      TEXT NOT NULL DEFAULT '[]',
    functions  TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE idempotency (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    done         BOOLEAN NOT NULL DEFAULT FALSE,
    status       INTEGER NOT NULL DEFAULT 0,
    header       TEXT NOT NULL DEFAULT '{}',
    body         TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);

-- +goose Down
DROP TABLE idempotency;
DROP TABLE policies;
DROP TABLE invites;
DROP TABLE api_keys;
DROP TABLE users;
DROP TABLE orgs;
DROP TABLE bootstrap;
