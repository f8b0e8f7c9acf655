-- +goose Up
-- The user's language (semantics section 21): en, pt-BR or es; '' is not
-- set (the browser's Accept-Language, else English).
ALTER TABLE users ADD COLUMN locale TEXT NOT NULL DEFAULT '';

-- The daily digest goes at 08:00 in each user's time zone: digest_due_at
-- is when the next one is due (0: at once), worked out by the domain from
-- the user's zone when one is sent. Existing rows: the next 08:00 UTC after
-- the last digest, as before.
ALTER TABLE notification_prefs ADD COLUMN digest_due_at BIGINT NOT NULL DEFAULT 0;
UPDATE notification_prefs SET digest_due_at = ((digest_at - 28800000) / 86400000 + 1) * 86400000 + 28800000
    WHERE digest_at >= 28800000;
DROP INDEX notification_prefs_daily;
CREATE INDEX notification_prefs_daily ON notification_prefs (digest_due_at) WHERE email = 'daily';

-- +goose Down
DROP INDEX notification_prefs_daily;
CREATE INDEX notification_prefs_daily ON notification_prefs (digest_at) WHERE email = 'daily';
ALTER TABLE notification_prefs DROP COLUMN digest_due_at;
ALTER TABLE users DROP COLUMN locale;
