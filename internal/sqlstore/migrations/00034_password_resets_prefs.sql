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

-- Each user's choice of mail about work (docs/notifications.md): immediate
-- (no row), daily (one digest a day at 08:00 UTC; digest_at is the last one)
-- or off.
CREATE TABLE notification_prefs (
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    user_id    TEXT NOT NULL,
    email      TEXT NOT NULL,
    digest_at  BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX notification_prefs_daily ON notification_prefs (digest_at) WHERE email = 'daily';

-- +goose Down
DROP TABLE notification_prefs;
DROP TABLE password_resets;
