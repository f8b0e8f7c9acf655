-- +goose Up
-- Events are read by id only (the webhook worker, redeliveries): their
-- (org_id, created_at) index was written by every change and never read.
DROP INDEX events_org;

-- +goose Down
CREATE INDEX events_org ON events (org_id, created_at);
