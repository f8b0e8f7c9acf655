-- +goose Up
-- The list without filters (an org's measurements, newest first) reads this
-- index backwards and stops at the page: without it, SQLite with no
-- statistics (a server never runs ANALYZE) sorted all of an org's rows.
CREATE INDEX measurements_org_id ON measurements (org_id, id);

-- +goose Down
DROP INDEX measurements_org_id;
