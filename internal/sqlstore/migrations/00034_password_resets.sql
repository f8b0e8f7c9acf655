-- +goose Up
-- Password reset links (docs/notifications.md): single use, valid an hour,
-- only the token's hash kept (docs/security.md).
CREATE TABLE password_resets (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX password_resets_user ON password_resets (org_id, user_id);

-- +goose Down
DROP TABLE password_resets;
