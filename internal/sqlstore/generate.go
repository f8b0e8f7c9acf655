package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"wps/internal/reports"
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
		return t.analyze()
	})
}

// Analyze gives the planner row counts of every table, as the list
// benchmark's dataset has them (GenerateMeasurements). The server never
// runs it. Only benchmarks call it.
func (db *DB) Analyze(ctx context.Context) error {
	return db.Write(ctx, func(wt wps.Tx) error { return wt.(*tx).analyze() })
}

func (t *tx) analyze() error {
	if t.db.engine == Postgres {
		_, err := t.exec(`ANALYZE`)
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
}

// newV7At makes a UUIDv7 for a past instant, so ids sort like creation times.
func newV7At(at time.Time) string {
	u := uuid.New()
	ms := uint64(at.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = (u[6] & 0x0f) | 0x70
	return u.String()
}

// GenerateCopies makes n measurements, the k-th a copy of pattern[k %
// len(pattern)] (a measurement id; repeat one to weigh it), with its open
// steps and its rows of the actionable index, under new ids and the next
// numbers of its process, created 30 s apart up to now (the rows of their
// open steps open then; the state keeps the copied times): the dataset of
// the actionable list's benchmark. Only benchmarks call it.
func (db *DB) GenerateCopies(ctx context.Context, orgID string, pattern []string, n int, now time.Time) error {
	type template struct {
		m              wps.Measurement
		code           string
		open           []wps.OpenStep // opened at the creation, due as long after
		seats, fillers [][]any        // rows after (org_id, measurement_id)
	}
	byID := map[string]*template{}
	next := map[string]int64{} // process → its next number
	err := db.Read(ctx, func(wt wps.Tx) error {
		t := wt.(*tx)
		for _, id := range pattern {
			if byID[id] != nil {
				continue
			}
			m, err := t.GetMeasurement(orgID, id)
			if err != nil {
				return err
			}
			tp := &template{m: m}
			var seq int64
			if err := t.queryRow(`SELECT code, next_seq FROM processes WHERE id = ?`, m.ProcessID).Scan(&tp.code, &seq); err != nil {
				return err
			}
			next[m.ProcessID] = seq
			rows, err := t.query(`SELECT step_id, opening, opened_at, due_at FROM measurement_open_steps WHERE org_id = ? AND measurement_id = ?`, orgID, id)
			if err != nil {
				return err
			}
			for rows.Next() {
				var o wps.OpenStep
				var opened int64
				var due sql.NullInt64
				if err := rows.Scan(&o.StepID, &o.Opening, &opened, &due); err != nil {
					rows.Close()
					return err
				}
				if due.Valid {
					d := wps.FromMillis(due.Int64 - opened + m.CreatedAt.Millis())
					o.DueAt = &d
				}
				tp.open = append(tp.open, o)
			}
			rows.Close()
			for _, r := range []struct {
				q    string
				into *[][]any
				cols int
			}{
				{`SELECT process_id, step_id, policy_name, role FROM measurement_open_seats WHERE org_id = ? AND measurement_id = ?`, &tp.seats, 4},
				{`SELECT step_id, user_id FROM measurement_step_fillers WHERE org_id = ? AND measurement_id = ?`, &tp.fillers, 2},
			} {
				rows, err := t.query(r.q, orgID, id)
				if err != nil {
					return err
				}
				for rows.Next() {
					row := make([]any, r.cols)
					ptrs := make([]any, r.cols)
					for i := range row {
						ptrs[i] = new(string)
					}
					if err := rows.Scan(ptrs...); err != nil {
						rows.Close()
						return err
					}
					for i := range row {
						row[i] = *ptrs[i].(*string)
					}
					*r.into = append(*r.into, row)
				}
				rows.Close()
			}
			byID[id] = tp
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	tables := []struct {
		name, cols string
		width      int
	}{
		{"measurements", measurementCols, 12},
		{"measurement_open_steps", "measurement_id, org_id, step_id, opening, opened_at, due_at", 6},
		{"measurement_open_seats", "org_id, measurement_id, process_id, step_id, policy_name, role", 6},
		{"measurement_step_fillers", "org_id, measurement_id, step_id, user_id", 4},
	}
	const perTx = 20000
	for done := 0; done < n; {
		err := db.Write(ctx, func(wt wps.Tx) error {
			t := wt.(*tx)
			batches := make([][]any, len(tables))
			flush := func(i int) error {
				w := tables[i].width
				if len(batches[i]) == 0 {
					return nil
				}
				q := `INSERT INTO ` + tables[i].name + ` (` + tables[i].cols + `) VALUES ` +
					valuesN(len(batches[i])/w, "(?"+strings.Repeat(", ?", w-1)+")")
				_, err := t.exec(q, batches[i]...)
				batches[i] = batches[i][:0]
				return err
			}
			for k := done; k < min(n, done+perTx); k++ {
				tp := byID[pattern[k%len(pattern)]]
				created := now.Add(-time.Duration(n-k) * 30 * time.Second)
				id, at := newV7At(created), created.UnixMilli()
				seq := next[tp.m.ProcessID]
				next[tp.m.ProcessID]++
				m := tp.m
				batches[0] = append(batches[0], id, orgID, m.ProcessID, m.Version, fmt.Sprintf("%s-%d", tp.code, seq), seq, m.Status,
					jsonText(m.State), m.CreatedBy, at, at, m.ActionCount)
				for _, o := range tp.open {
					var due any
					if o.DueAt != nil {
						due = o.DueAt.Millis() - m.CreatedAt.Millis() + at
					}
					batches[1] = append(batches[1], id, orgID, o.StepID, o.Opening, at, due)
				}
				for _, r := range tp.seats {
					batches[2] = append(batches[2], append([]any{orgID, id}, r...)...)
				}
				for _, r := range tp.fillers {
					batches[3] = append(batches[3], append([]any{orgID, id}, r...)...)
				}
				if len(batches[0]) < 500*tables[0].width {
					continue
				}
				for i := range tables { // the measurements first: the others refer to them
					if err := flush(i); err != nil {
						return err
					}
				}
			}
			for i := range tables {
				if err := flush(i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done = min(n, done+perTx)
	}
	return db.Write(ctx, func(wt wps.Tx) error {
		t := wt.(*tx)
		for p, seq := range next {
			if _, err := t.exec(`UPDATE processes SET next_seq = ? WHERE id = ?`, seq, p); err != nil {
				return err
			}
		}
		if _, err := t.exec(`DELETE FROM measurement_counts WHERE org_id = ?`, orgID); err != nil {
			return err
		}
		_, err := t.exec(`INSERT INTO measurement_counts (org_id, process_id, status, n)
			SELECT org_id, process_id, status, count(*) FROM measurements WHERE org_id = ? GROUP BY org_id, process_id, status`, orgID)
		return err
	})
}

// GenerateReportFacts writes report facts in bulk (summed into those there
// are), 500 to a statement: the dataset of the reports benchmark, which
// stands for measurements made through the API. Only benchmarks call it.
func (db *DB) GenerateReportFacts(ctx context.Context, facts []reports.Fact) error {
	facts = reports.MergeFacts(facts)
	const perStmt, perTx = 500, 20000
	for len(facts) > 0 {
		chunk := facts[:min(len(facts), perTx)]
		facts = facts[len(chunk):]
		err := db.Write(ctx, func(wt wps.Tx) error {
			t := wt.(*tx)
			for rows := chunk; len(rows) > 0; {
				n := min(len(rows), perStmt)
				args := make([]any, 0, n*factCols)
				for _, f := range rows[:n] {
					args = append(args, factRow(f)...)
				}
				if _, err := t.exec(upsertFacts(n), args...); err != nil {
					return err
				}
				rows = rows[n:]
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
