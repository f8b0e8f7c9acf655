package sqlstore

import (
	"database/sql"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/wps"
)

// The ledger's tables (migration 22): the entries waiting to be integrated
// (ledger_pending), the leaves (ledger_leaves), the tree's hashes in tiles
// (ledger_tiles), each org's log state and checkpoint (ledger_logs), the
// installation's key (ledger_keys).

// nextSeq is the number of the k-th (from 1) of the rows a statement
// inserts into table, after every other: on PostgreSQL the sequence
// ledger_seq (migration 23), which no transaction waits for and which
// grows in the order of the statements that draw from it; on SQLite, whose
// one writer runs one statement at a time, the table's largest rowid plus
// k (at least the number of its rows, so above any number of an org's
// actions of the hash chain, numbered from 1 in each org).
func (t *tx) nextSeq(table string, k int) string {
	if t.db.engine == Postgres {
		return `nextval('ledger_seq')`
	}
	return `(SELECT coalesce(max(rowid), 0) + ` + strconv.Itoa(k) + ` FROM ` + table + `)`
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
		q.WriteString(`(?, ?, ?, ?, ?, ` + seq + `, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		args = append(args, a.ID, a.OrgID, a.MeasurementID, a.StepID, a.Opening, a.Type, a.UserID, a.Username, jsonText(a.UserRoles), a.Role, a.PolicyName, a.TokenID, a.Observation,
			a.TransactionHash, jsonText(a.Data), a.ReprovesActionID, a.Reproved, a.Superseded, a.PrevHash, a.LedgerHash,
			a.CreatedAt.Millis(), a.LeafHash, a.Route, signatureText(a.Signature), a.OnBehalfOf.UserID, a.OnBehalfOf.Name, a.DataSalt)
	}
	return t.err(t.later(q.String(), args...), "action", "action exists")
}

// signatureText is an action's signature as stored: JSON, ” for none.
func signatureText(s *wps.ActionSignature) string {
	if s == nil {
		return ""
	}
	return jsonText(s)
}

// AppendLedger queues entries (ledger_pending), numbered as InsertActions
// numbers actions. It writes only new rows: no write waits for another's.
func (t *tx) AppendLedger(entries []wps.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	args := make([]any, 0, 7*len(entries))
	for _, e := range entries {
		args = append(args, e.OrgID, e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String(), e.CreatedAt.Millis())
	}
	return t.add(t.ledgerTable(), args)
}

func (t *tx) LedgerBacklog() ([]string, error) {
	rows, err := t.query(`SELECT DISTINCT org_id FROM ledger_pending UNION SELECT org_id FROM ledger_logs WHERE checkpoint_size < size`)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanString)
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

// IntegrateLedger writes the leaves and the tiles and removes the entries
// from the queue, in statements whose text does not depend on how many
// rows they write (prepared once per connection): PostgreSQL takes arrays
// (unnest), SQLite rows in runs of a power of two (inRuns).
func (t *tx) IntegrateLedger(orgID string, leaves []wps.LedgerEntry, tiles []tlog.Tile, data [][]byte) error {
	if t.db.engine == Postgres {
		return t.integratePG(orgID, leaves, tiles, data)
	}
	err := inRuns(len(tiles), func(from, n int) error {
		args := make([]any, 0, 5*n)
		for i := from; i < from+n; i++ {
			args = append(args, orgID, tiles[i].L, tiles[i].N, tiles[i].W, data[i])
		}
		_, err := t.exec(`INSERT INTO ledger_tiles (org_id, level, n, width, data) VALUES `+rowsOf(5, n)+`
			ON CONFLICT (org_id, level, n) DO UPDATE SET width = excluded.width, data = excluded.data`, args...)
		return err
	})
	if err != nil {
		return t.err(err, "", "")
	}
	err = inRuns(len(leaves), func(from, n int) error {
		args := make([]any, 0, 9*n)
		for _, e := range leaves[from : from+n] {
			args = append(args, orgID, e.Index, e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String(),
				e.CreatedAt.Millis(), e.IntegratedAt.Millis())
		}
		_, err := t.exec(`INSERT INTO ledger_leaves (org_id, leaf_index, id, kind, measurement_id, payload, leaf_hash, created_at, integrated_at)
			VALUES `+rowsOf(9, n), args...)
		return err
	})
	if err != nil {
		return t.err(err, "", "ledger leaf exists")
	}
	if len(leaves) == 0 {
		return nil
	}
	// The one writer: the entries read are all those queued up to the
	// last one's number, none other being written meanwhile.
	_, err = t.exec(`DELETE FROM ledger_pending WHERE org_id = ? AND seq <= ?`, orgID, leaves[len(leaves)-1].Seq)
	return t.err(err, "", "")
}

// integratePG is IntegrateLedger on PostgreSQL, three statements.
func (t *tx) integratePG(orgID string, leaves []wps.LedgerEntry, tiles []tlog.Tile, data [][]byte) error {
	levels, widths, ns := make([]int32, len(tiles)), make([]int32, len(tiles)), make([]int64, len(tiles))
	for i, tile := range tiles {
		levels[i], widths[i], ns[i] = int32(tile.L), int32(tile.W), tile.N
	}
	if _, err := t.exec(`INSERT INTO ledger_tiles (org_id, level, n, width, data)
		SELECT ?, unnest(?::integer[]), unnest(?::bigint[]), unnest(?::integer[]), unnest(?::bytea[])
		ON CONFLICT (org_id, level, n) DO UPDATE SET width = excluded.width, data = excluded.data`, orgID, levels, ns, widths, data); err != nil {
		return t.err(err, "", "")
	}
	n := len(leaves)
	index, seqs, created, integrated := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	ids, kinds, mids, payloads, leafHashes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range leaves {
		index[i], seqs[i], created[i], integrated[i] = e.Index, e.Seq, e.CreatedAt.Millis(), e.IntegratedAt.Millis()
		ids[i], kinds[i], mids[i], payloads[i], leafHashes[i] = e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String()
	}
	if _, err := t.exec(`INSERT INTO ledger_leaves (org_id, leaf_index, id, kind, measurement_id, payload, leaf_hash, created_at, integrated_at)
		SELECT ?, unnest(?::bigint[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]), unnest(?::text[]),
			unnest(?::bigint[]), unnest(?::bigint[])`, orgID, index, ids, kinds, mids, payloads, leafHashes, created, integrated); err != nil {
		return t.err(err, "", "ledger leaf exists")
	}
	// Exactly the entries read: one committed since with a smaller number
	// waits for the next pass.
	res, err := t.exec(`DELETE FROM ledger_pending WHERE org_id = ? AND seq = ANY(?::bigint[])`, orgID, seqs)
	if err != nil {
		return t.err(err, "", "")
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(leaves)) {
		return t.err(errStale, "", "") // another integrator took them: run again
	}
	return nil
}

// ReadLedgerTiles reads the stored data of tiles (by level and number, as
// wide as stored; nil for a tile not stored).
func (t *tx) ReadLedgerTiles(orgID string, tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	if len(tiles) == 0 {
		return out, nil
	}
	args := []any{orgID}
	for _, tile := range tiles {
		args = append(args, tile.L, tile.N)
	}
	rows, err := t.query(`SELECT level, n, data FROM ledger_tiles WHERE org_id = ? AND (level, n) IN (`+valuesN(len(tiles), `(?, ?)`)+`)`, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	defer rows.Close()
	for rows.Next() {
		var level int
		var n int64
		var data []byte
		if err := rows.Scan(&level, &n, &data); err != nil {
			return nil, t.err(err, "", "")
		}
		for i, tile := range tiles {
			if tile.L == level && tile.N == n {
				out[i] = data
			}
		}
	}
	return out, t.err(rows.Err(), "", "")
}

// withAction reads an entry's row then its action's columns (nullActionCols
// of a LEFT JOIN on a), then its audit event's leaf (auditJoin): an audit
// entry's payload is its row's.
func withAction(scan func(s interface{ Scan(...any) error }) (wps.LedgerEntry, error)) func(s interface{ Scan(...any) error }) (wps.LedgerLeaf, error) {
	return func(s interface{ Scan(...any) error }) (wps.LedgerLeaf, error) {
		var l wps.LedgerLeaf
		var a wps.Action
		var audit string
		ad, finish := actionFields(&a)
		var err error
		l.LedgerEntry, err = scan(scanTail{s, append(ad, &audit)})
		if err != nil {
			return l, err
		}
		if err := finish(); err != nil {
			return l, err
		}
		if l.Kind == wps.LeafAudit && audit != "" {
			l.Payload = []byte(audit)
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

const actionJoin = ` LEFT JOIN actions a ON a.org_id = l.org_id AND a.id = l.id AND l.kind IN ('action', 'chained-action', 'creation')` +
	` LEFT JOIN audit_events ae ON ae.org_id = l.org_id AND ae.id = l.id AND l.kind = 'audit'`

// auditCol is the leaf of an entry's audit event (” for none).
const auditCol = `, coalesce(ae.data, '')`

func (t *tx) ListLedgerLeaves(orgID string, from int64, limit int) ([]wps.LedgerLeaf, error) {
	rows, err := t.query(`SELECT l.leaf_index, l.integrated_at, `+prefixed("l.", entryCols)+`, `+nullActionCols+auditCol+`
		FROM ledger_leaves l`+actionJoin+` WHERE l.org_id = ? AND l.leaf_index >= ? ORDER BY l.leaf_index`+limitN(limit), orgID, from)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, withAction(scanLeaf(orgID)))
	return list, t.err(err, "", "")
}

func (t *tx) ListPendingLedger(orgID string, afterSeq int64, limit int) ([]wps.LedgerLeaf, error) {
	rows, err := t.query(`SELECT l.seq, `+prefixed("l.", entryCols)+`, `+nullActionCols+auditCol+`
		FROM ledger_pending l`+actionJoin+` WHERE l.org_id = ? AND l.seq > ? ORDER BY l.seq`+limitN(limit), orgID, afterSeq)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, withAction(scanPending(orgID)))
	return list, t.err(err, "", "")
}

// GetLedgerEntry finds the entry among the measurement's (index
// ledger_leaves_measurement), then among the queued ones.
func (t *tx) GetLedgerEntry(orgID, measurementID, id string) (wps.LedgerEntry, error) {
	e, err := scanLeaf(orgID)(t.queryRow(`SELECT leaf_index, integrated_at, `+entryCols+` FROM ledger_leaves
		WHERE org_id = ? AND measurement_id = ? AND id = ?`, orgID, measurementID, id))
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
	list, err := collect(rows, scanString)
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

// maxRun is the most rows inRuns gives one statement.
const maxRun = 64

// inRuns calls write for n rows in runs of a power of two, each as large
// as can be up to maxRun (from is the run's first row): a multi-row
// statement per run, and at most seven texts of it to prepare.
func inRuns(n int, write func(from, n int) error) error {
	for from := 0; from < n; {
		k := maxRun
		for k > n-from {
			k /= 2
		}
		if err := write(from, k); err != nil {
			return err
		}
		from += k
	}
	return nil
}

// rowsOf is the VALUES list of n rows of cols placeholders each.
func rowsOf(cols, n int) string {
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return row + strings.Repeat(", "+row, n-1)
}
