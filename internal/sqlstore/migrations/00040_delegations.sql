-- +goose Up
-- Delegations (semantics section 17): while one is active (starts_at <= now
-- < ends_at, not revoked, both users active) its delegate may fill the
-- seats its delegator could fill, limited to policy_names ('[]': all).
-- A revoked one keeps its row (revoked_at > 0), for the record.
CREATE TABLE delegations (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    from_user_id TEXT NOT NULL,
    to_user_id   TEXT NOT NULL,
    starts_at    BIGINT NOT NULL,
    ends_at      BIGINT NOT NULL,
    policy_names TEXT NOT NULL DEFAULT '[]',
    reason       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX delegations_to ON delegations (org_id, to_user_id, ends_at);
CREATE INDEX delegations_from ON delegations (org_id, from_user_id, ends_at);

-- The user an action filled a seat for, by a delegation ('' for none).
ALTER TABLE actions ADD COLUMN on_behalf_of_id TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN on_behalf_of_name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE actions DROP COLUMN on_behalf_of_name;
ALTER TABLE actions DROP COLUMN on_behalf_of_id;
DROP TABLE delegations;
