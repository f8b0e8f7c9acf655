-- +goose Up
-- Audit events (docs/api.md, Audit events): every change that is not an
-- action. data is the event's ledger leaf (canonical JSON): its ledger
-- entry (kind 'audit', same id) keeps no payload, its leaf data is made from
-- this row, as an action's from its row, so the ledger's verification
-- checks the rows. The other columns are what lists filter on.
CREATE TABLE audit_events (
    org_id      TEXT NOT NULL REFERENCES orgs (id),
    id          TEXT NOT NULL,
    type        TEXT NOT NULL,
    at          BIGINT NOT NULL,
    actor_id    TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    leaf_hash   TEXT NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX audit_events_at ON audit_events (org_id, at, id);
CREATE INDEX audit_events_target ON audit_events (org_id, target_id, at);

-- +goose Down
DROP TABLE audit_events;
