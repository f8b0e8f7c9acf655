-- +goose Up
-- A user's own settings (semantics section 21): the console's language and
-- the time zone times are shown in; '' is not set (the browser's language;
-- UTC).
ALTER TABLE users ADD COLUMN locale TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN time_zone TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE users DROP COLUMN time_zone;
ALTER TABLE users DROP COLUMN locale;
