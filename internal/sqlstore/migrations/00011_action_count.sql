-- +goose Up
-- How many actions a measurement has, kept with each change: a PostgreSQL
-- reader that waited for the measurement's lock compares it with the
-- actions its statement saw (their snapshot predates the wait).
ALTER TABLE measurements ADD COLUMN action_count INTEGER NOT NULL DEFAULT 0;
UPDATE measurements SET action_count = (SELECT count(*) FROM actions a WHERE a.org_id = measurements.org_id AND a.measurement_id = measurements.id);

-- +goose Down
ALTER TABLE measurements DROP COLUMN action_count;
