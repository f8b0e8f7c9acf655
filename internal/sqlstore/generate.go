package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"wps/internal/wps"
)

// GenerateMeasurements copies the process's most recent measurement n times,
// in multi-row inserts, with statuses and creation times spread out: the
// dataset of the list benchmark. Only the benchmark calls it.
func (db *DB) GenerateMeasurements(ctx context.Context, orgID, processID string, n int) error {
	var version int
	var state, createdBy, code string
	var seq int64
	err := db.Read(ctx, func(wt wps.Tx) error {
		t := wt.(*tx)
		return t.queryRow(`SELECT m.version, m.state, m.created_by, p.next_seq, p.code FROM measurements m JOIN processes p ON p.id = m.process_id
			WHERE m.org_id = ? AND m.process_id = ? ORDER BY m.id DESC`+limitN(1), orgID, processID).Scan(&version, &state, &createdBy, &seq, &code)
	})
	if err != nil {
		return fmt.Errorf("template measurement: %w", err)
	}
	statuses := []string{"OPEN", "IN_CONSENSUS", "STAGE_OPEN", "CONSENSUS", "APPROVED", "REPROVED", "PENDING"}
	const perStmt, perTx = 500, 20000
	now := time.Now().UTC()
	insert := `INSERT INTO measurements (id, org_id, process_id, version, name, seq, status, state, created_by, created_at, updated_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", perStmt), ", ")
	for done := 0; done < n; {
		err := db.Write(ctx, func(wt wps.Tx) error {
			t := wt.(*tx)
			for inTx := 0; inTx < perTx && done < n; inTx += perStmt {
				args := make([]any, 0, perStmt*11)
				for i := range perStmt {
					k := done + i
					if k >= n { // pad the last statement with rows past n, skipped below
						k = done
					}
					created := now.Add(-time.Duration(n-k) * 30 * time.Second)
					s := seq + int64(k)
					args = append(args, newV7At(created), orgID, processID, version, fmt.Sprintf("%s-%d", code, s), s,
						statuses[k%len(statuses)], state, createdBy, created.UnixMilli(), created.UnixMilli())
				}
				rows := min(perStmt, n-done)
				query := insert
				if rows < perStmt {
					query = insert[:strings.Index(insert, "VALUES ")+7] + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", rows), ", ")
					args = args[:rows*11]
				}
				if _, err := t.exec(query, args...); err != nil {
					return err
				}
				done += rows
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.Write(ctx, func(wt wps.Tx) error {
		t := wt.(*tx)
		if _, err := t.exec(`UPDATE processes SET next_seq = next_seq + ? WHERE id = ?`, n, processID); err != nil {
			return err
		}
		if _, err := t.exec(`DELETE FROM measurement_counts WHERE org_id = ? AND process_id = ?`, orgID, processID); err != nil {
			return err
		}
		if _, err := t.exec(`INSERT INTO measurement_counts (org_id, process_id, status, n)
			SELECT org_id, process_id, status, count(*) FROM measurements WHERE org_id = ? AND process_id = ? GROUP BY org_id, process_id, status`, orgID, processID); err != nil {
			return err
		}
		if db.engine == Postgres {
			_, err := t.exec(`ANALYZE measurements`)
			return err
		}
		// SQLite: row counts for the planner (sqlite_stat1) without STAT4's
		// samples, as a server that never ran ANALYZE has none: with them,
		// SQLite plans a statement for the values bound to an indexed
		// column, and so re-prepares it on every run (see asText).
		for _, q := range []string{`ANALYZE`, `DELETE FROM sqlite_stat4`, `ANALYZE sqlite_schema`} {
			if _, err := t.exec(q); err != nil {
				return err
			}
		}
		return nil
	})
}

// newV7At makes a UUIDv7 for a past instant, so ids sort like creation times.
func newV7At(at time.Time) string {
	u := uuid.New()
	ms := uint64(at.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = (u[6] & 0x0f) | 0x70
	return u.String()
}
