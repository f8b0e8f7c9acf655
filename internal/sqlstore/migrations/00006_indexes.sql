-- +goose Up
-- Lookups by measurement always carry the org too; indexes that lead with
-- both keep the planner from scanning an org's rows (found by the benchmark).
CREATE INDEX actions_org_measurement ON actions (org_id, measurement_id, seq);
DROP INDEX actions_measurement;
CREATE INDEX open_steps_org_measurement ON measurement_open_steps (org_id, measurement_id);
CREATE INDEX measurements_org_process_status ON measurements (org_id, process_id, status, id);

-- +goose Down
DROP INDEX measurements_org_process_status;
DROP INDEX open_steps_org_measurement;
CREATE INDEX actions_measurement ON actions (measurement_id, seq);
DROP INDEX actions_org_measurement;
