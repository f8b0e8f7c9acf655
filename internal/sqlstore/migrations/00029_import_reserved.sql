-- +goose Up
-- An import job holds the unique values of its rows in record_index (under
-- a claim id per row) before it writes them: reserved counts the rows
-- whose values it holds (docs/decisions.md, "Large records imports").
ALTER TABLE import_jobs ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE import_jobs DROP COLUMN reserved;
