package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"wps/internal/wps"
)

// backfillOpenSeats is migration 16, the one in Go: the actionable index's
// rows (migration 15) of the measurements made before it. What they are
// depends on each measurement's state and its version's steps (ordered
// policies, role narrowing), which only the domain works out
// (wps.IndexOpenSteps), so SQL alone cannot write them. It reads the
// measurements with an open step in batches of 1,000 and inserts their rows
// 500 to a statement, in the migration's transaction.
func (db *DB) backfillOpenSeats(ctx context.Context, tx *sql.Tx) error {
	versions := map[versionRef][]wps.Step{}
	var seats, fillers rowBatch
	seats.table, seats.cols, seats.width = "measurement_open_seats", "org_id, measurement_id, process_id, step_id, policy_name, role", 6
	fillers.table, fillers.cols, fillers.width = "measurement_step_fillers", "org_id, measurement_id, step_id, user_id", 4
	for after := ""; ; {
		rows, err := tx.QueryContext(ctx, db.rebind(`SELECT `+measurementCols+` FROM measurements WHERE id IN
			(SELECT DISTINCT measurement_id FROM measurement_open_steps WHERE measurement_id > ? ORDER BY measurement_id`+limitN(1000)+`)
			ORDER BY id`), after)
		if err != nil {
			return err
		}
		batch, err := collect(rows, scanMeasurement)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			if err := seats.flush(ctx, db, tx); err != nil {
				return err
			}
			return fillers.flush(ctx, db, tx)
		}
		for _, m := range batch {
			ref := versionRef{m.ProcessID, m.Version}
			steps, ok := versions[ref]
			if !ok {
				var text string
				err := tx.QueryRowContext(ctx, db.rebind(`SELECT steps FROM process_versions WHERE process_id = ? AND version = ?`), m.ProcessID, m.Version).Scan(&text)
				if err != nil {
					return err
				}
				steps = db.steps.decode(text)
				versions[ref] = steps
			}
			for _, o := range wps.IndexOpenSteps(m, steps) {
				for _, k := range o.Seats {
					if err := seats.add(ctx, db, tx, m.OrgID, m.ID, m.ProcessID, o.StepID, k.Policy, k.Role); err != nil {
						return err
					}
				}
				for _, u := range o.Fillers {
					if err := fillers.add(ctx, db, tx, m.OrgID, m.ID, o.StepID, u); err != nil {
						return err
					}
				}
			}
		}
		after = batch[len(batch)-1].ID
	}
}

// rowBatch gathers rows of one table for a multi-row INSERT.
type rowBatch struct {
	table, cols string
	width       int
	args        []any
}

const backfillRows = 500

func (b *rowBatch) add(ctx context.Context, db *DB, tx *sql.Tx, row ...any) error {
	b.args = append(b.args, row...)
	if len(b.args) < backfillRows*b.width {
		return nil
	}
	return b.flush(ctx, db, tx)
}

func (b *rowBatch) flush(ctx context.Context, db *DB, tx *sql.Tx) error {
	if len(b.args) == 0 {
		return nil
	}
	row := "(?" + strings.Repeat(", ?", b.width-1) + ")"
	q := `INSERT INTO ` + b.table + ` (` + b.cols + `) VALUES ` + valuesN(len(b.args)/b.width, row)
	_, err := tx.ExecContext(ctx, db.rebind(q), b.args...)
	b.args = b.args[:0]
	return err
}
