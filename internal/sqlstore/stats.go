package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"wps/internal/wps"
)

// Stats is the use of the DB's connections now, for metrics.
type Stats struct {
	Engine Engine
	// MaxOpen, InUse and Idle count PostgreSQL's pool; on SQLite the reader
	// connections (held for the DB's life: InUse is those lent to a read).
	MaxOpen, InUse, Idle int
	// Waits counts the reads or writes that waited for a connection, and
	// WaitTime their total wait, since Open.
	Waits    int64
	WaitTime time.Duration
	// WriteQueue is how many writes wait for SQLite's writer (0 on PostgreSQL).
	WriteQueue int
	// WriteStatements counts the statements write transactions sent since
	// Open (WriteStatements).
	WriteStatements int64
}

// Stats reports the use of the DB's connections.
func (db *DB) Stats() Stats {
	st := Stats{Engine: db.engine, WriteStatements: db.written.Load()}
	if db.engine == SQLite {
		st.MaxOpen, st.Idle = cap(db.readers), len(db.readers)
		st.InUse = st.MaxOpen - st.Idle
		st.Waits, st.WaitTime = db.waits.Load(), time.Duration(db.waited.Load())
		st.WriteQueue = len(db.jobs)
		return st
	}
	s := db.write.Stats()
	st.MaxOpen, st.InUse, st.Idle, st.Waits, st.WaitTime = s.MaxOpenConnections, s.InUse, s.Idle, s.WaitCount, s.WaitDuration
	return st
}

// Backlog is the work waiting in the database, across orgs, for metrics:
// what the delivery worker and the scheduler have yet to do.
type Backlog struct {
	// PendingDeliveries are deliveries not yet delivered nor given up;
	// OldestDue is the time the longest-waiting due one became due (zero
	// when none is due).
	PendingDeliveries int
	OldestDue         time.Time
	// Overdue are open steps past their deadline whose step.overdue is not
	// emitted yet, OldestOverdue the deadline of the oldest.
	Overdue       int
	OldestOverdue time.Time
	// Escalations are open steps with an escalation due and not emitted
	// yet, OldestEscalation the instant of the oldest.
	Escalations      int
	OldestEscalation time.Time
	// Occurrences are PENDING measurements whose occurrence has come
	// (not yet opened), OldestOccurrence the instant of the oldest.
	Occurrences      int
	OldestOccurrence time.Time
}

// Backlog counts the work waiting at now, in four statements of one read.
func (db *DB) Backlog(ctx context.Context, now time.Time) (Backlog, error) {
	var b Backlog
	at := now.UnixMilli()
	oldest := func(ms sql.NullInt64, due bool) time.Time {
		if !ms.Valid || !due {
			return time.Time{}
		}
		return time.UnixMilli(ms.Int64).UTC()
	}
	err := db.View(ctx, func(t wps.Tx) error {
		tx := t.(*tx)
		var first sql.NullInt64
		if err := tx.queryRow(`SELECT count(*), min(next_attempt_at) FROM deliveries WHERE status = 'PENDING'`).Scan(&b.PendingDeliveries, &first); err != nil {
			return tx.err(err, "", "")
		}
		b.OldestDue = oldest(first, first.Int64 <= at)
		if err := tx.queryRow(`SELECT count(*), min(due_at) FROM measurement_open_steps WHERE due_at IS NOT NULL AND due_at <= ? AND overdue_notified = ?`,
			at, false).Scan(&b.Overdue, &first); err != nil {
			return tx.err(err, "", "")
		}
		b.OldestOverdue = oldest(first, true)
		if err := tx.queryRow(`SELECT count(*), min(escalate_at) FROM measurement_open_steps WHERE escalate_at IS NOT NULL AND escalate_at <= ?`,
			at).Scan(&b.Escalations, &first); err != nil {
			return tx.err(err, "", "")
		}
		b.OldestEscalation = oldest(first, true)
		if err := tx.queryRow(`SELECT count(*), min(o.occurs_at) FROM measurements m JOIN occurrences o ON o.measurement_id = m.id
			WHERE m.status = 'PENDING' AND o.occurs_at <= ?`, at).Scan(&b.Occurrences, &first); err != nil {
			return tx.err(err, "", "")
		}
		b.OldestOccurrence = oldest(first, true)
		return nil
	})
	return b, err
}
