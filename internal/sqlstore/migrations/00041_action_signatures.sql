-- +goose Up
-- An action's electronic signature (docs/flow.md, "Signatures"): JSON of
-- {meaning, signerName, signerEmail, signedAt, method}, '' when unsigned.
-- Its ledger leaf covers it.
ALTER TABLE actions ADD COLUMN signature TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE actions DROP COLUMN signature;
