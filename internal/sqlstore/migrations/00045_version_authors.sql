-- +goose Up
-- Who last changed a process version's steps, and when (the designer's
-- list of versions); versions made before say nobody and their creation.
ALTER TABLE process_versions ADD COLUMN changed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE process_versions ADD COLUMN changed_at BIGINT NOT NULL DEFAULT 0;
UPDATE process_versions SET changed_at = created_at;

-- +goose Down
ALTER TABLE process_versions DROP COLUMN changed_at;
ALTER TABLE process_versions DROP COLUMN changed_by;
