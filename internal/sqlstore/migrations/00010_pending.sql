-- +goose Up
-- The scheduler's measurements made ahead of their occurrence: few, found
-- without scanning the others.
CREATE INDEX measurements_pending ON measurements (id) WHERE status = 'PENDING';

-- +goose Down
DROP INDEX measurements_pending;
