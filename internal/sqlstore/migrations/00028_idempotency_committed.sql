-- +goose Up
-- A request's changes and the mark that they are committed share one
-- transaction: a retry of a request whose answer was lost (its server
-- killed after its commit) is not run again.
ALTER TABLE idempotency ADD COLUMN committed BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE idempotency DROP COLUMN committed;
