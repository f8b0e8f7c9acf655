-- +goose Up
-- A random value each new action's ledger leaf takes its values' hash
-- with (dataHash = SHA-256 of salt and values), so that a proof cannot be
-- matched against guessed values a reader may not see. '' for actions
-- recorded before: their dataHash is of the values alone, as their leaves
-- were written.
ALTER TABLE actions ADD COLUMN data_salt TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE actions DROP COLUMN data_salt;
