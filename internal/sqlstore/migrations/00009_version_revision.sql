-- +goose Up
-- A version's steps change in place only before a measurement uses it, or
-- when a policy they name is renamed; revision counts those changes, so that
-- a decoded copy can be reused while its revision is current.
ALTER TABLE process_versions ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE process_versions DROP COLUMN revision;
