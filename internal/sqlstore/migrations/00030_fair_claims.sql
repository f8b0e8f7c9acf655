-- +goose Up
-- Fair background work (docs/events.md "Delivery", docs/api.md import jobs).
-- A delivery's queue is its org and destination (the receiver's host and
-- port, "ORG host:port"): a claim takes the first due deliveries of each
-- queue, no more of one queue than its free places (a slow or failing
-- receiver holds a few of a worker's places, not all of them), and orgs
-- take turns. Pending deliveries written before this are queued by their
-- URL; one retried by hand gets its queue then.
ALTER TABLE deliveries ADD COLUMN queue TEXT NOT NULL DEFAULT '';
UPDATE deliveries SET queue = org_id || ' ' || url WHERE status = 'PENDING';
-- The pending deliveries by queue: a claim steps from queue to queue
-- (a loose index scan), whatever the backlog of each.
CREATE INDEX deliveries_queue ON deliveries (queue, next_attempt_at, id) WHERE status = 'PENDING';
-- The deliveries leased to a worker: few, counted at each claim by queue
-- and by org.
CREATE INDEX deliveries_leased ON deliveries (locked_until, queue, org_id) WHERE status = 'PENDING' AND locked_until IS NOT NULL;
-- An import job is claimed for the org that started a job least recently.
CREATE INDEX import_jobs_org_started ON import_jobs (org_id, started_at);

-- +goose Down
DROP INDEX import_jobs_org_started;
DROP INDEX deliveries_leased;
DROP INDEX deliveries_queue;
ALTER TABLE deliveries DROP COLUMN queue;
