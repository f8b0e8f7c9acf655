package sqlstore

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strings"
)

// Rows that only ever get added (events, webhook deliveries, the ledger's
// queue, and the report facts and status counters, which add to the sums
// of their keys) are written by SQLite's writer once per group commit: the
// writes of a batch keep their rows (tx.add), and those of the writes that
// succeed are written just before the COMMIT, a multi-row INSERT per table
// (batchAdds.flush), the facts and counters summed by key first. A batch
// of n creates sends five such statements instead of 5n. A statement that names one of these tables (a read, an
// update, the ledger's integrator) first writes the rows kept so far
// (tx.addsBefore), so every statement sees what it would have seen had
// each row been written at once. PostgreSQL writes them with the
// transaction's next statement (later), as any later write.

// added are the rows a write adds to one table.
type added struct {
	table *appendTable
	rows  int
	args  []any
}

// appendTable is an append-only table's INSERT.
type appendTable struct {
	order int    // tables are written in this order (foreign keys: events before deliveries)
	head  string // INSERT INTO t (cols) VALUES
	row   func(k int) string
	cols  int
	dup   string // what a unique violation means
	// upsert, when set, is the statement of n rows that add to rows of the
	// same key (ON CONFLICT … DO UPDATE), and merge sums the rows kept of
	// one key into one, so that a batch writes each key once.
	upsert func(n int) string
	merge  func(args []any) []any
}

var (
	eventsTable = &appendTable{order: 0, cols: 8,
		head: `INSERT INTO events (id, org_id, type, measurement_id, step_id, action_id, payload, created_at) VALUES `,
		row:  func(int) string { return `(?, ?, ?, ?, ?, ?, ?, ?)` }, dup: "event exists"}
	deliveriesTable = &appendTable{order: 1, cols: 18,
		head: `INSERT INTO deliveries (id, org_id, event_id, event_type, webhook_id, url, measurement_id, status, attempts,
		next_attempt_at, locked_until, give_up_at, last_status, last_error, created_at, updated_at, delivered_at, queue) VALUES `,
		row: func(int) string { return `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` }, dup: "delivery exists"}
)

// ledgerTable is ledger_pending's INSERT, each row numbered by nextSeq.
func (t *tx) ledgerTable() *appendTable {
	return &appendTable{order: 2, cols: 7,
		head: `INSERT INTO ledger_pending (org_id, seq, id, kind, measurement_id, payload, leaf_hash, created_at) VALUES `,
		row:  func(k int) string { return `(?, ` + t.nextSeq("ledger_pending", k) + `, ?, ?, ?, ?, ?, ?)` }, dup: "ledger entry exists"}
}

// statement is the INSERT of n rows.
func (a *appendTable) statement(n int) string {
	if a.upsert != nil {
		return a.upsert(n)
	}
	var q strings.Builder
	q.WriteString(a.head)
	for k := 1; k <= n; k++ {
		if k > 1 {
			q.WriteString(", ")
		}
		q.WriteString(a.row(k))
	}
	return q.String()
}

// add writes rows (args holds each row's cols values in turn) to an
// append-only table: kept for the group commit on SQLite's writer, else
// as a later write.
func (t *tx) add(table *appendTable, args []any) error {
	rows := len(args) / table.cols
	if t.adds == nil {
		return t.err(t.later(table.statement(rows), args...), "", table.dup)
	}
	t.adds.rows = append(t.adds.rows, added{table: table, rows: rows, args: args})
	return nil
}

// batchAdds are the rows the writes of a batch added, in order; the first
// written of them are written already.
type batchAdds struct {
	rows    []added
	written int
}

// begin is where a write of the batch starts (for rollback).
func (b *batchAdds) begin() [2]int { return [2]int{len(b.rows), b.written} }

// rollback forgets what a write rolled back to its savepoint: its rows, and
// the writing of the rows written during it (undone with it).
func (b *batchAdds) rollback(at [2]int) { b.rows, b.written = b.rows[:at[0]], at[1] }

var addTables = regexp.MustCompile(`(?i)\b(FROM|INTO|UPDATE|JOIN)\s+(events|deliveries|ledger_pending|report_facts|measurement_counts)\b`)

// addsBefore writes the batch's kept rows before a statement that names
// their tables.
func (t *tx) addsBefore(query string) error {
	if t.adds == nil || t.adds.written == len(t.adds.rows) {
		return nil
	}
	if t.db.touches == nil {
		t.db.touches = map[string]bool{}
	}
	hit, ok := t.db.touches[query]
	if !ok {
		hit = addTables.MatchString(query)
		if len(t.db.touches) < maxStmts {
			t.db.touches[query] = hit
		}
	}
	if !hit {
		return nil
	}
	return t.err(t.adds.flush(t.ctx, t.q), "", "")
}

// flush writes the rows not written yet, table by table in their order, a
// multi-row INSERT per run of up to maxRun rows (inRuns: a few statement
// texts, each prepared once).
func (b *batchAdds) flush(ctx context.Context, w querier) error {
	adds := slices.Clone(b.rows[b.written:])
	slices.SortStableFunc(adds, func(a, b added) int { return cmp.Compare(a.table.order, b.table.order) })
	for len(adds) > 0 {
		table := adds[0].table
		n := 0
		for n < len(adds) && adds[n].table.order == table.order {
			n++
		}
		var args []any
		rows := 0
		for _, a := range adds[:n] {
			args = append(args, a.args...)
			rows += a.rows
		}
		adds = adds[n:]
		if table.merge != nil {
			args = table.merge(args)
			rows = len(args) / table.cols
		}
		err := inRuns(rows, func(from, k int) error {
			_, err := w.ExecContext(ctx, table.statement(k), args[from*table.cols:(from+k)*table.cols]...)
			return err
		})
		if err != nil {
			return err
		}
	}
	b.written = len(b.rows)
	return nil
}
