package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// GenerateMeasurements copies the process's most recent measurement n times,
// in multi-row inserts, with statuses and creation times spread out: the
// dataset of the list benchmark. Only the benchmark calls it.
func (db *DB) GenerateMeasurements(ctx context.Context, orgID, processID string, n int) error {
	var version int
	var state, createdBy string
	var seq int64
	err := db.read.QueryRowContext(ctx, t(db, `SELECT m.version, m.state, m.created_by, p.next_seq FROM measurements m JOIN processes p ON p.id = m.process_id
		WHERE m.org_id = ? AND m.process_id = ? ORDER BY m.id DESC LIMIT 1`), orgID, processID).Scan(&version, &state, &createdBy, &seq)
	if err != nil {
		return fmt.Errorf("template measurement: %w", err)
	}
	var code string
	if err := db.read.QueryRowContext(ctx, t(db, `SELECT code FROM processes WHERE id = ?`), processID).Scan(&code); err != nil {
		return err
	}
	statuses := []string{"OPEN", "IN_CONSENSUS", "STAGE_OPEN", "CONSENSUS", "APPROVED", "REPROVED", "PENDING"}
	const perStmt, perTx = 500, 20000
	now := time.Now().UTC()
	for done := 0; done < n; {
		conn, err := db.write.Conn(ctx)
		if err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			conn.Close()
			return err
		}
		for inTx := 0; inTx < perTx && done < n; {
			rows := min(perStmt, n-done)
			var b strings.Builder
			args := make([]any, 0, rows*11)
			b.WriteString(`INSERT INTO measurements (id, org_id, process_id, version, name, seq, status, state, created_by, created_at, updated_at) VALUES `)
			for i := range rows {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
				created := now.Add(-time.Duration(n-done-i) * 30 * time.Second)
				s := seq + int64(done+i)
				args = append(args, newV7At(created), orgID, processID, version, fmt.Sprintf("%s-%d", code, s), s,
					statuses[(done+i)%len(statuses)], state, createdBy, created.UnixMilli(), created.UnixMilli())
			}
			if _, err := tx.ExecContext(ctx, t(db, b.String()), args...); err != nil {
				_ = tx.Rollback()
				conn.Close()
				return err
			}
			done += rows
			inTx += rows
		}
		err = tx.Commit()
		conn.Close()
		if err != nil {
			return err
		}
	}
	_, err = db.write.ExecContext(ctx, t(db, `UPDATE processes SET next_seq = next_seq + ? WHERE id = ?`), n, processID)
	if err == nil && db.engine == Postgres {
		_, err = db.write.ExecContext(ctx, `ANALYZE measurements`)
	}
	return err
}

// newV7At makes a UUIDv7 for a past instant, so ids sort like creation times.
func newV7At(at time.Time) string {
	u := uuid.New()
	ms := uint64(at.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = (u[6] & 0x0f) | 0x70
	return u.String()
}

// t rewrites placeholders for the DB's engine outside a transaction.
func t(db *DB, query string) string {
	return (&tx{db: db}).rebind(query)
}
