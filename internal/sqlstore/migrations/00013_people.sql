-- +goose Up
-- People (semantics section 8): a user is ACTIVE or DEACTIVATED, may have a
-- password (an argon2id hash) and signs in to sessions, stored as the
-- SHA-256 of their token.
ALTER TABLE users ADD COLUMN status TEXT NOT NULL DEFAULT 'ACTIVE';
ALTER TABLE users ADD COLUMN password_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN last_sign_in_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX users_email ON users (email);

CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    user_id      TEXT NOT NULL REFERENCES users (id),
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (org_id, user_id);

-- +goose Down
DROP TABLE sessions;
DROP INDEX users_email;
ALTER TABLE users DROP COLUMN last_sign_in_at;
ALTER TABLE users DROP COLUMN password_hash;
ALTER TABLE users DROP COLUMN status;
