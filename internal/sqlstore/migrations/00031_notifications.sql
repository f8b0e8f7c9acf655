-- +goose Up
-- The outbox of messages (docs/notifications.md), written in the transaction
-- of the change that causes each; internal/notify leases and sends them. The
-- body (which may hold a link with a token) is emptied once a message is
-- sent or given up; the row stays as the log.
CREATE TABLE notifications (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES orgs (id),
    kind            TEXT NOT NULL,
    user_id         TEXT NOT NULL DEFAULT '',
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    locked_until    BIGINT,
    give_up_at      BIGINT NOT NULL,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    sent_at         BIGINT
);
-- The pending messages, in the order a worker claims them.
CREATE INDEX notifications_due ON notifications (next_attempt_at, id) WHERE status = 'PENDING';
CREATE INDEX notifications_org ON notifications (org_id, id);
CREATE INDEX notifications_user ON notifications (org_id, user_id, id);

-- +goose Down
DROP TABLE notifications;
