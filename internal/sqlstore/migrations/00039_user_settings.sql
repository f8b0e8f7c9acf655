-- +goose Up
-- A user's own setting (semantics section 21): the time zone the console
-- shows their times in; '' is not set (UTC).
ALTER TABLE users ADD COLUMN time_zone TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE users DROP COLUMN time_zone;
