-- +goose Up
-- Exact list totals without counting: measurements per org, process and
-- status, kept in the same transaction as every status change.
CREATE TABLE measurement_counts (
    org_id     TEXT NOT NULL,
    process_id TEXT NOT NULL,
    status     TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (org_id, process_id, status)
);
INSERT INTO measurement_counts (org_id, process_id, status, n)
    SELECT org_id, process_id, status, count(*) FROM measurements GROUP BY org_id, process_id, status;

-- +goose Down
DROP TABLE measurement_counts;
