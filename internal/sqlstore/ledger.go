package sqlstore

import (
	"database/sql"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/wps"
)

// The ledger's tables (migration 22): the entries waiting to be integrated
// (ledger_pending), the leaves (ledger_leaves), the tree's stored hashes
// (ledger_hashes), each org's log state and checkpoint (ledger_logs), the
// installation's key (ledger_keys).

// nextSeq is the number of the k-th (from 1) of the rows a statement
// inserts into table for an org, after its others: on PostgreSQL the
// sequence ledger_seq (migration 23), which no transaction waits for and
// which grows in the order of the statements that draw from it; on SQLite,
// whose one writer runs one statement at a time, the org's largest plus k.
// It takes the org's id as an argument on SQLite only.
func (t *tx) nextSeq(table string, k int) string {
	if t.db.engine == Postgres {
		return `nextval('ledger_seq')`
	}
	return `(SELECT coalesce(max(seq), 0) + ` + strconv.Itoa(k) + ` FROM ` + table + ` WHERE org_id = ?)`
}

// InsertActions writes new actions, numbered after the org's others
// (nextSeq): a measurement's actions are written one transaction after
// another, under its lock, so their numbers follow their order. On
// PostgreSQL the statement goes with the transaction's next one (later).
func (t *tx) InsertActions(actions []wps.Action) error {
	if len(actions) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO actions (` + actionCols + `) VALUES `)
	var args []any
	for i, a := range actions {
		if i > 0 {
			q.WriteString(", ")
		}
		seq := t.nextSeq("actions", i+1)
		q.WriteString(`(?, ?, ?, ?, ?, ` + seq + `, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		args = append(args, a.ID, a.OrgID, a.MeasurementID, a.StepID, a.Opening)
		if t.db.engine == SQLite {
			args = append(args, a.OrgID)
		}
		args = append(args, a.Type, a.UserID, a.Username, jsonText(a.UserRoles), a.Role, a.PolicyName, a.TokenID, a.Observation,
			a.TransactionHash, jsonText(a.Data), a.ReprovesActionID, a.Reproved, a.Superseded, a.PrevHash, a.LedgerHash,
			a.CreatedAt.Millis(), a.LeafHash, a.Route)
	}
	return t.err(t.later(q.String(), args...), "action", "action exists")
}

// AppendLedger queues entries (ledger_pending), numbered as InsertActions
// numbers actions. It writes only new rows: no write waits for another's.
func (t *tx) AppendLedger(entries []wps.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO ledger_pending (org_id, seq, id, kind, measurement_id, payload, leaf_hash, created_at) VALUES `)
	var args []any
	for i, e := range entries {
		if i > 0 {
			q.WriteString(", ")
		}
		seq := t.nextSeq("ledger_pending", i+1)
		q.WriteString(`(?, ` + seq + `, ?, ?, ?, ?, ?, ?)`)
		args = append(args, e.OrgID)
		if t.db.engine == SQLite {
			args = append(args, e.OrgID)
		}
		args = append(args, e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String(), e.CreatedAt.Millis())
	}
	return t.err(t.later(q.String(), args...), "", "ledger entry exists")
}

func (t *tx) LedgerBacklog() ([]string, error) {
	rows, err := t.query(`SELECT DISTINCT org_id FROM ledger_pending UNION SELECT org_id FROM ledger_logs WHERE checkpoint_size < size`)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	return list, t.err(err, "", "")
}

const logCols = `org_id, size, root, checkpoint_size, checkpoint, checkpoint_at`

func scanLog(s interface{ Scan(...any) error }) (wps.LedgerLog, error) {
	var l wps.LedgerLog
	var root string
	var at int64
	if err := s.Scan(&l.OrgID, &l.Size, &root, &l.CheckpointSize, &l.Checkpoint, &at); err != nil {
		return l, err
	}
	l.CheckpointAt = wps.FromMillis(at)
	var err error
	l.Root, err = tlog.ParseHash(root)
	return l, err
}

// LockLedgerLog locks the org's ledger_logs row, which only integrators
// write: on PostgreSQL with SKIP LOCKED, so that while another integrator
// (of another replica) holds it, this one moves on at once. SQLite's one
// writer runs one integration at a time anyway.
func (t *tx) LockLedgerLog(orgID string) (wps.LedgerLog, bool, error) {
	lock := ""
	if t.db.engine == Postgres {
		lock = ` FOR UPDATE SKIP LOCKED`
	}
	for try := 0; ; try++ {
		l, err := scanLog(t.queryRow(`SELECT `+logCols+` FROM ledger_logs WHERE org_id = ?`+lock, orgID))
		if err == nil {
			return l, true, nil
		}
		if err != sql.ErrNoRows {
			return l, false, t.err(err, "", "")
		}
		if try == 1 {
			return l, false, nil // no row after the insert: another holds it
		}
		if _, err := t.exec(`INSERT INTO ledger_logs (`+logCols+`) VALUES (?, 0, ?, 0, '', 0) ON CONFLICT (org_id) DO NOTHING`,
			orgID, tlog.Hash{}.String()); err != nil {
			return l, false, t.err(err, "", "")
		}
	}
}

func (t *tx) GetLedgerLog(orgID string) (wps.LedgerLog, error) {
	l, err := scanLog(t.queryRow(`SELECT `+logCols+` FROM ledger_logs WHERE org_id = ?`, orgID))
	if err == sql.ErrNoRows {
		return wps.LedgerLog{OrgID: orgID}, nil
	}
	return l, t.err(err, "", "")
}

func (t *tx) SaveLedgerLog(l wps.LedgerLog) error {
	res, err := t.exec(`UPDATE ledger_logs SET size = ?, root = ?, checkpoint_size = ?, checkpoint = ?, checkpoint_at = ? WHERE org_id = ?`,
		l.Size, l.Root.String(), l.CheckpointSize, l.Checkpoint, l.CheckpointAt.Millis(), l.OrgID)
	return t.err(affected(res, err, "ledger log"), "ledger log", "")
}

const entryCols = `id, kind, measurement_id, payload, leaf_hash, created_at`

// entryFields are the scan destinations of entryCols into e, and what
// completes e once they are filled.
func entryFields(e *wps.LedgerEntry) ([]any, func() error) {
	var payload, hash string
	var created int64
	return []any{&e.ID, &e.Kind, &e.MeasurementID, &payload, &hash, &created}, func() error {
		if payload != "" {
			e.Payload = []byte(payload)
		}
		e.CreatedAt = wps.FromMillis(created)
		var err error
		e.LeafHash, err = tlog.ParseHash(hash)
		return err
	}
}

// scanPending scans seq then entryCols.
func scanPending(orgID string) func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error) {
	return func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error) {
		e := wps.LedgerEntry{OrgID: orgID, Index: -1}
		dest, finish := entryFields(&e)
		if err := s.Scan(append([]any{&e.Seq}, dest...)...); err != nil {
			return e, err
		}
		return e, finish()
	}
}

// scanLeaf scans leaf_index, integrated_at then entryCols.
func scanLeaf(orgID string) func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error) {
	return func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error) {
		e := wps.LedgerEntry{OrgID: orgID}
		var integrated int64
		dest, finish := entryFields(&e)
		if err := s.Scan(append([]any{&e.Index, &integrated}, dest...)...); err != nil {
			return e, err
		}
		e.IntegratedAt = wps.FromMillis(integrated)
		return e, finish()
	}
}

func (t *tx) PendingLedger(orgID string, limit int) ([]wps.LedgerEntry, error) {
	rows, err := t.query(`SELECT seq, `+entryCols+` FROM ledger_pending WHERE org_id = ? ORDER BY seq`+limitN(limit), orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanPending(orgID))
	return list, t.err(err, "", "")
}

// IntegrateLedger writes the leaves and the stored hashes and removes the
// entries from the queue, a few hundred rows to a statement.
func (t *tx) IntegrateLedger(orgID string, leaves []wps.LedgerEntry, from int64, hashes []tlog.Hash) error {
	for i := 0; i < len(hashes); i += 1000 {
		chunk := hashes[i:min(i+1000, len(hashes))]
		args := make([]any, 0, 3*len(chunk))
		for j, h := range chunk {
			args = append(args, orgID, from+int64(i+j), h.String())
		}
		if _, err := t.exec(`INSERT INTO ledger_hashes (org_id, idx, hash) VALUES `+valuesN(len(chunk), `(?, ?, ?)`), args...); err != nil {
			return t.err(err, "", "ledger hash exists")
		}
	}
	for i := 0; i < len(leaves); i += 500 {
		chunk := leaves[i:min(i+500, len(leaves))]
		args := make([]any, 0, 9*len(chunk))
		seqs := make([]any, 0, len(chunk)+1)
		seqs = append(seqs, orgID)
		for _, e := range chunk {
			args = append(args, orgID, e.Index, e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String(), e.CreatedAt.Millis(), e.IntegratedAt.Millis())
			seqs = append(seqs, e.Seq)
		}
		if _, err := t.exec(`INSERT INTO ledger_leaves (org_id, leaf_index, id, kind, measurement_id, payload, leaf_hash, created_at, integrated_at)
			VALUES `+valuesN(len(chunk), `(?, ?, ?, ?, ?, ?, ?, ?, ?)`), args...); err != nil {
			return t.err(err, "", "ledger leaf exists")
		}
		res, err := t.exec(`DELETE FROM ledger_pending WHERE org_id = ? AND seq IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`)`, seqs...)
		if err != nil {
			return t.err(err, "", "")
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(chunk)) {
			return t.err(errStale, "", "") // another integrator took them: run again
		}
	}
	return nil
}

func (t *tx) ReadLedgerHashes(orgID string, indexes []int64) ([]tlog.Hash, error) {
	got := make(map[int64]tlog.Hash, len(indexes))
	for i := 0; i < len(indexes); i += 500 {
		chunk := indexes[i:min(i+500, len(indexes))]
		args := []any{orgID}
		for _, x := range chunk {
			args = append(args, x)
		}
		rows, err := t.query(`SELECT idx, hash FROM ledger_hashes WHERE org_id = ? AND idx IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, t.err(err, "", "")
		}
		if err := scanHashes(rows, func(idx int64, h tlog.Hash) { got[idx] = h }); err != nil {
			return nil, t.err(err, "", "")
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := got[x]
		if !ok {
			return nil, wps.NotFound("ledger hash")
		}
		out[i] = h
	}
	return out, nil
}

// ListLedgerHashes reads the stored hashes from index from on, placed by
// index (a missing one is the zero hash).
func (t *tx) ListLedgerHashes(orgID string, from int64, limit int) ([]tlog.Hash, error) {
	rows, err := t.query(`SELECT idx, hash FROM ledger_hashes WHERE org_id = ? AND idx >= ? AND idx < ? ORDER BY idx`, orgID, from, from+int64(limit))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	var out []tlog.Hash
	err = scanHashes(rows, func(idx int64, h tlog.Hash) {
		for int64(len(out)) < idx-from {
			out = append(out, tlog.Hash{})
		}
		out = append(out, h)
	})
	return out, t.err(err, "", "")
}

func scanHashes(rows *sql.Rows, each func(int64, tlog.Hash)) error {
	defer rows.Close()
	for rows.Next() {
		var idx int64
		var text string
		if err := rows.Scan(&idx, &text); err != nil {
			return err
		}
		h, err := tlog.ParseHash(text)
		if err != nil {
			h = tlog.Hash{} // an edited row: the verification reports it
		}
		each(idx, h)
	}
	return rows.Err()
}

// withAction reads an entry's row then its action's columns (nullActionCols
// of a LEFT JOIN on a).
func withAction(scan func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error)) func(s interface{ Scan(...any) error }) (wps.LedgerLeaf, error) {
	return func(s interface{ Scan(...any) error }) (wps.LedgerLeaf, error) {
		var l wps.LedgerLeaf
		var a wps.Action
		ad, finish := actionFields(&a)
		var err error
		l.LedgerEntry, err = scan(scanTail{s, ad})
		if err != nil {
			return l, err
		}
		if err := finish(); err != nil {
			return l, err
		}
		if a.ID != "" {
			l.Action = &a
		}
		return l, nil
	}
}

// scanTail scans a row into the destinations asked for, then tail.
type scanTail struct {
	row  interface{ Scan(...any) error }
	tail []any
}

func (s scanTail) Scan(dest ...any) error { return s.row.Scan(append(dest, s.tail...)...) }

const actionJoin = ` LEFT JOIN actions a ON a.org_id = l.org_id AND a.id = l.id AND l.kind IN ('action', 'chained-action')`

func (t *tx) ListLedgerLeaves(orgID string, from int64, limit int) ([]wps.LedgerLeaf, error) {
	rows, err := t.query(`SELECT l.leaf_index, l.integrated_at, `+prefixed("l.", entryCols)+`, `+nullActionCols+`
		FROM ledger_leaves l`+actionJoin+` WHERE l.org_id = ? AND l.leaf_index >= ? ORDER BY l.leaf_index`+limitN(limit), orgID, from)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, withAction(scanLeaf(orgID)))
	return list, t.err(err, "", "")
}

func (t *tx) ListPendingLedger(orgID string, afterSeq int64, limit int) ([]wps.LedgerLeaf, error) {
	rows, err := t.query(`SELECT l.seq, `+prefixed("l.", entryCols)+`, `+nullActionCols+`
		FROM ledger_pending l`+actionJoin+` WHERE l.org_id = ? AND l.seq > ? ORDER BY l.seq`+limitN(limit), orgID, afterSeq)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, withAction(scanPending(orgID)))
	return list, t.err(err, "", "")
}

func (t *tx) GetLedgerEntry(orgID, id string) (wps.LedgerEntry, error) {
	e, err := scanLeaf(orgID)(t.queryRow(`SELECT leaf_index, integrated_at, `+entryCols+` FROM ledger_leaves WHERE org_id = ? AND id = ?`, orgID, id))
	if err == sql.ErrNoRows {
		e, err = scanPending(orgID)(t.queryRow(`SELECT seq, `+entryCols+` FROM ledger_pending WHERE org_id = ? AND id = ?`, orgID, id))
	}
	return e, t.err(err, "ledger entry", "")
}

func (t *tx) MeasurementLedger(orgID, measurementID string) ([]wps.LedgerEntry, error) {
	rows, err := t.query(`SELECT leaf_index, integrated_at, `+entryCols+` FROM ledger_leaves WHERE org_id = ? AND measurement_id = ? ORDER BY leaf_index`,
		orgID, measurementID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	leaves, err := collect(rows, scanLeaf(orgID))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	rows, err = t.query(`SELECT seq, `+entryCols+` FROM ledger_pending WHERE org_id = ? AND measurement_id = ? ORDER BY seq`, orgID, measurementID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	pending, err := collect(rows, scanPending(orgID))
	return append(leaves, pending...), t.err(err, "", "")
}

func (t *tx) ListMeasurementIDs(orgID, after string, limit int) ([]string, error) {
	rows, err := t.query(`SELECT id FROM measurements WHERE org_id = ? AND id > ? ORDER BY id`+limitN(limit), orgID, after)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	return list, t.err(err, "", "")
}

func (t *tx) GetLedgerKey() (wps.LedgerKey, error) {
	var k wps.LedgerKey
	var created int64
	err := t.queryRow(`SELECT signer, verifier, created_at FROM ledger_keys WHERE id = 1`).Scan(&k.Signer, &k.Verifier, &created)
	k.CreatedAt = wps.FromMillis(created)
	return k, t.err(err, "ledger key", "")
}

func (t *tx) CreateLedgerKey(k wps.LedgerKey) error {
	_, err := t.exec(`INSERT INTO ledger_keys (id, signer, verifier, created_at) VALUES (1, ?, ?, ?)`, k.Signer, k.Verifier, k.CreatedAt.Millis())
	return t.err(err, "", "ledger key exists")
}
