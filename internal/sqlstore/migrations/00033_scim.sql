-- +goose Up
-- SCIM provisioning (semantics section 18): the identity provider's own id
-- of a user (externalId), kept as sent and searched by its SCIM filter.
ALTER TABLE users ADD COLUMN external_id TEXT NOT NULL DEFAULT '';
CREATE INDEX users_external_id ON users (org_id, external_id);

-- +goose Down
DROP INDEX users_external_id;
ALTER TABLE users DROP COLUMN external_id;
