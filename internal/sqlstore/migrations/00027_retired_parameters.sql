-- +goose Up
-- A parameter removed from an entity keeps its values in the records that
-- hold them (semantics section 14); retired_parameters is JSON: each removed
-- parameter's id, name, type and TABLE, so that one of the same name added
-- back takes its id, and its values show again.
ALTER TABLE entities ADD COLUMN retired_parameters TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE entities DROP COLUMN retired_parameters;
