-- +goose Up
-- A pending idempotency record is held by its request only while that
-- request renews its lease: one whose request died (the server was killed)
-- is released when the lease runs out.
ALTER TABLE idempotency ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE idempotency DROP COLUMN lease_until;
