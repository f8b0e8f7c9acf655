-- +goose Up
-- An org's chat channels (docs/notifications.md, Chat): a Slack or Teams
-- incoming-webhook URL told the work.* messages. A message is written as an
-- event row of its work.* type whose payload is the chat JSON, and one
-- delivery of it to the channel (webhook_id: the channel's id), delivered
-- by the webhook worker, posted as is.
CREATE TABLE chat_channels (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    kind       TEXT NOT NULL,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX chat_channels_org ON chat_channels (org_id, id);

-- +goose Down
DROP TABLE chat_channels;
