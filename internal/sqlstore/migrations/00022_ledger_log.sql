-- +goose Up
-- The ledger as a Merkle tree log per org (docs/ledger.md). A write queues
-- its entries in ledger_pending, in its own transaction, and locks nothing
-- that another write waits for; the org's integrator (one at a time, it
-- locks the org's ledger_logs row) moves them into ledger_leaves with their
-- index, writes the tree's hashes in tiles (golang.org/x/mod/sumdb/tlog's,
-- of height 8: a tile holds 256 hashes of one level, 32 bytes each) to
-- ledger_tiles and signs checkpoints into ledger_logs. payload is a leaf's
-- data for the entries that are not actions; an action's leaf data is made
-- from its row. Hashes are base64, as in the checkpoints.
CREATE TABLE ledger_pending (
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    seq            BIGINT NOT NULL, -- the order of integration: a measurement's entries in the order they were written
    id             TEXT NOT NULL,   -- an action's id, else the entry's own
    kind           TEXT NOT NULL,
    measurement_id TEXT NOT NULL,
    payload        TEXT NOT NULL,
    leaf_hash      TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (org_id, seq)
);

CREATE TABLE ledger_leaves (
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    leaf_index     BIGINT NOT NULL,
    id             TEXT NOT NULL,
    kind           TEXT NOT NULL,
    measurement_id TEXT NOT NULL,
    payload        TEXT NOT NULL,
    leaf_hash      TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    integrated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, leaf_index)
);
CREATE INDEX ledger_leaves_measurement ON ledger_leaves (org_id, measurement_id, leaf_index);

CREATE TABLE ledger_tiles (
    org_id TEXT NOT NULL,
    level  INTEGER NOT NULL,
    n      BIGINT NOT NULL,
    width  INTEGER NOT NULL, -- hashes it holds so far
    data   BYTEA NOT NULL,
    PRIMARY KEY (org_id, level, n)
);

CREATE TABLE ledger_logs (
    org_id          TEXT PRIMARY KEY REFERENCES orgs (id),
    size            BIGINT NOT NULL,
    root            TEXT NOT NULL,
    checkpoint_size BIGINT NOT NULL,
    checkpoint      TEXT NOT NULL, -- the latest signed note ('' before the first)
    checkpoint_at   BIGINT NOT NULL
);

-- The installation's signing key (one row), made at first start.
CREATE TABLE ledger_keys (
    id         INTEGER PRIMARY KEY,
    signer     TEXT NOT NULL,
    verifier   TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- leaf_hash: the action's leaf hash (base64). route: the routing value the
-- action's consensus used (replayed by the verification).
ALTER TABLE actions ADD COLUMN leaf_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE actions ADD COLUMN route TEXT NOT NULL DEFAULT '';

DROP TABLE ledger_heads;

-- +goose Down
CREATE TABLE ledger_heads (
    org_id TEXT PRIMARY KEY REFERENCES orgs (id),
    seq    BIGINT NOT NULL,
    hash   TEXT NOT NULL
);
INSERT INTO ledger_heads (org_id, seq, hash)
    SELECT a.org_id, a.seq, a.ledger_hash FROM actions a
    WHERE a.seq = (SELECT max(b.seq) FROM actions b WHERE b.org_id = a.org_id);
ALTER TABLE actions DROP COLUMN route;
ALTER TABLE actions DROP COLUMN leaf_hash;
DROP TABLE ledger_keys;
DROP TABLE ledger_logs;
DROP TABLE ledger_tiles;
DROP TABLE ledger_leaves;
DROP TABLE ledger_pending;
