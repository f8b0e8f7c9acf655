-- +goose Up
-- A step's escalations (docs/flow.md): escalate_at is the instant of the
-- next one not yet emitted (dueAt + its after; NULL when none is left),
-- escalated how many of this opening's were emitted. Set when the step
-- opens, reset with a new opening as overdue_notified is; the scheduler
-- claims by escalate_at without reading the step's definition.
ALTER TABLE measurement_open_steps ADD COLUMN escalate_at BIGINT;
ALTER TABLE measurement_open_steps ADD COLUMN escalated INTEGER NOT NULL DEFAULT 0;
CREATE INDEX open_steps_escalate ON measurement_open_steps (escalate_at) WHERE escalate_at IS NOT NULL;

-- +goose Down
DROP INDEX open_steps_escalate;
ALTER TABLE measurement_open_steps DROP COLUMN escalated;
ALTER TABLE measurement_open_steps DROP COLUMN escalate_at;
