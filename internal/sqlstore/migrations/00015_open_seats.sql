-- +goose Up
-- The actionable index (GET /v1/measurements?actionable=me): for each open
-- step, the seats an action can fill now (of ordered policies only the
-- next), one row per key: the seat's policy ('' for a step without
-- policies) and, where the step narrows the roles that count for it, one
-- row per role left ('' when it does not narrow). measurement_step_fillers
-- holds the users who fill a seat of each open step (they fill no other).
-- Both are written with the open steps, in the same transaction as every
-- change of a measurement. The rows of the measurements made before this
-- migration are written by the next one (a Go migration: the domain works
-- them out from each measurement's state, see open_seats_backfill.go).
CREATE TABLE measurement_open_seats (
    org_id         TEXT NOT NULL,
    measurement_id TEXT NOT NULL REFERENCES measurements (id),
    step_id        TEXT NOT NULL,
    policy_name    TEXT NOT NULL,
    role           TEXT NOT NULL,
    process_id     TEXT NOT NULL, -- the measurement's, for the processId filter
    -- Not led by org_id: SQLite, which plans without statistics, would
    -- read all of an org's seats in this key's order for a DISTINCT over
    -- measurement ids rather than the few that open_seats_key finds.
    PRIMARY KEY (measurement_id, org_id, step_id, policy_name, role)
);
-- The caller's keys find their seats (with what the query needs of them).
CREATE INDEX open_seats_key ON measurement_open_seats (org_id, policy_name, role, measurement_id, step_id, process_id);

CREATE TABLE measurement_step_fillers (
    org_id         TEXT NOT NULL,
    measurement_id TEXT NOT NULL REFERENCES measurements (id),
    step_id        TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    PRIMARY KEY (org_id, measurement_id, step_id, user_id)
);

-- +goose Down
DROP TABLE measurement_step_fillers;
DROP TABLE measurement_open_seats;
