-- +goose Up
-- Deleting a webhook cancels its pending deliveries: this finds them among
-- the pending ones only (small), not among all of the org's deliveries.
CREATE INDEX deliveries_webhook_pending ON deliveries (webhook_id, org_id) WHERE status = 'PENDING';

-- +goose Down
DROP INDEX deliveries_webhook_pending;
