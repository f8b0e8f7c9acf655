-- +goose Up
-- An org's business calendar, kept in versions: a step's business deadline
-- counts over the calendar in force when the step opened (docs/flow.md).
-- spec is the calendar as the API takes it (JSON).
CREATE TABLE org_calendars (
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    valid_from BIGINT NOT NULL,
    spec       TEXT NOT NULL,
    PRIMARY KEY (org_id, valid_from)
);

-- +goose Down
DROP TABLE org_calendars;
