package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"wps/internal/reports"
	"wps/internal/wps"
)

// reportFactsTable is the table of migration 44: the aggregates reports
// read (docs/reports.md), one row per process, UTC day, kind, step, seat
// policy and duration bucket, summed by the writes. Migration 50 orders
// its key by kind before day (reportFactsKeyed).
const reportFactsTable = `CREATE TABLE report_facts (
    org_id      TEXT NOT NULL,
    process_id  TEXT NOT NULL,
    level       INTEGER NOT NULL,
    day         BIGINT NOT NULL,
    kind        INTEGER NOT NULL,
    step_id     TEXT NOT NULL,
    policy_name TEXT NOT NULL,
    bucket      BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    sum_ms      BIGINT NOT NULL,
    PRIMARY KEY (org_id, process_id, level, day, kind, step_id, policy_name, bucket)
)`

// factColumns are report_facts' columns, in the order of both layouts'
// definitions.
const factColumns = `org_id, process_id, level, day, kind, step_id, policy_name, bucket, n, sum_ms`

// reportFactsKeyed is report_facts as migration 50 makes it (named name,
// its key constraint pk): keyed by process, level, kind, then day, so
// that a day range of one kind (the counts of a report, level 0) reads
// those rows only, not every timed fact of those days; on SQLite without
// a rowid (the rows are the key's b-tree: one seek, not two, per row).
func reportFactsKeyed(engine Engine, name, pk, key string) string {
	q := `CREATE TABLE ` + name + ` (
    org_id      TEXT NOT NULL,
    process_id  TEXT NOT NULL,
    level       INTEGER NOT NULL,
    day         BIGINT NOT NULL,
    kind        INTEGER NOT NULL,
    step_id     TEXT NOT NULL,
    policy_name TEXT NOT NULL,
    bucket      BIGINT NOT NULL,
    n           BIGINT NOT NULL,
    sum_ms      BIGINT NOT NULL,
    CONSTRAINT ` + pk + ` PRIMARY KEY (` + key + `)
)`
	if engine == SQLite {
		q += ` WITHOUT ROWID`
	}
	return q
}

const (
	factKeyByKind = `org_id, process_id, level, kind, day, step_id, policy_name, bucket`
	factKeyByDay  = `org_id, process_id, level, day, kind, step_id, policy_name, bucket`
)

// rekeyReportFacts is migration 50 (and, with the key of 44, its undoing):
// report_facts copied into a table of that key, in its order.
func (db *DB) rekeyReportFacts(pk, key string) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{
			reportFactsKeyed(db.engine, "report_facts_next", pk, key),
			`INSERT INTO report_facts_next (` + factColumns + `) SELECT ` + factColumns + ` FROM report_facts ORDER BY ` + key,
			`DROP TABLE report_facts`,
			`ALTER TABLE report_facts_next RENAME TO report_facts`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
}

const factCols = 10

func factRow(f reports.Fact) []any {
	return []any{f.OrgID, f.ProcessID, f.Level, f.Day, f.Kind, f.StepID, f.Policy, f.Bucket, f.N, f.SumMillis}
}

// factsTable is report_facts as the group commit writes it: the facts of
// a batch's writes summed by key (a batch of creates of one process adds to
// the same few keys), one upsert per run.
var factsTable = &appendTable{order: 3, cols: factCols, upsert: upsertFacts, merge: func(args []any) []any {
	facts := make([]reports.Fact, 0, len(args)/factCols)
	for r := 0; r+factCols <= len(args); r += factCols {
		a := args[r:]
		facts = append(facts, reports.Fact{OrgID: a[0].(string), ProcessID: a[1].(string), Level: a[2].(int), Day: a[3].(int64), Kind: a[4].(int),
			StepID: a[5].(string), Policy: a[6].(string), Bucket: a[7].(int64), N: a[8].(int64), SumMillis: a[9].(int64)})
	}
	out := make([]any, 0, len(args))
	for _, f := range reports.MergeFacts(facts) {
		out = append(out, factRow(f)...)
	}
	return out
}}

func upsertFacts(rows int) string {
	return `INSERT INTO report_facts (org_id, process_id, level, day, kind, step_id, policy_name, bucket, n, sum_ms) VALUES ` +
		valuesN(rows, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") + `
		ON CONFLICT (org_id, process_id, level, day, kind, step_id, policy_name, bucket)
		DO UPDATE SET n = report_facts.n + excluded.n, sum_ms = report_facts.sum_ms + excluded.sum_ms`
}

// RecordChanges adds the facts of a write's changes (reports.FactsOf).
func (t *tx) RecordChanges(changes []wps.Change) error { return t.AddFacts(reports.FactsOf(changes)) }

// AddFacts adds facts to the aggregates in one statement, their rows in
// key order (reports.MergeFacts). On PostgreSQL it is sent with the COMMIT,
// after the process's contended rows: a transaction holding these rows
// locks nothing after them.
func (t *tx) AddFacts(facts []reports.Fact) error {
	if len(facts) == 0 {
		return nil
	}
	facts = reports.MergeFacts(facts)
	args := make([]any, 0, len(facts)*factCols)
	for _, f := range facts {
		args = append(args, factRow(f)...)
	}
	if t.db.engine == Postgres && t.write {
		t.deferTop(upsertFacts(len(facts)), args, "", nil)
		return nil
	}
	if t.adds != nil { // SQLite's writer: with the batch's (appends.go)
		return t.add(factsTable, args)
	}
	_, err := t.exec(upsertFacts(len(facts)), args...)
	return t.err(err, "", "")
}

// Facts sums the facts of q's days by process, kind, step, policy and
// bucket, or with q.ByDay by process, day and kind. A year's report reads
// some 14,000 rows into 2,000 sums: SQLite's are summed here (its GROUP BY
// sorts them, a third of its work), PostgreSQL sums them itself (a hash
// aggregate, cheaper than sending every row).
func (t *tx) Facts(q reports.Query) ([]reports.Fact, error) {
	// One part per kind, with kind = K rather than kind IN (…): the
	// planner then seeks each run of the key whatever its statistics
	// (PostgreSQL without them walked every kind of a year's days).
	kinds := []string{""}
	if len(q.Kinds) > 0 {
		kinds = kinds[:0]
		for _, k := range q.Kinds {
			kinds = append(kinds, ` AND kind = `+strconv.Itoa(k))
		}
	}
	group, values := `kind, step_id, policy_name, bucket`, `n, sum_ms`
	if q.ByDay {
		group, values = `kind, day`, `n`
	}
	if q.ProcessID == "" {
		group = `process_id, ` + group
	}
	cols := group + `, ` + values
	// Each part reads one run of the primary key (org, process, level,
	// kind, day), for each kind: a block's rows, or a level's days.
	var parts []string
	var args []any
	part := func(cond string, a ...any) {
		for _, kind := range kinds {
			where := `org_id = ?`
			args = append(args, q.OrgID)
			if q.ProcessID != "" {
				where += ` AND process_id = ?`
				args = append(args, q.ProcessID)
			}
			parts = append(parts, `SELECT `+cols+` FROM report_facts WHERE `+where+kind+cond)
			args = append(args, a...)
		}
	}
	if len(q.Blocks) == 0 {
		part(` AND level = ? AND day >= ? AND day <= ?`, q.Level, q.From, q.To)
	}
	for _, b := range q.Blocks {
		part(` AND level = ? AND day = ?`, b.Level, b.Day)
	}
	query := strings.Join(parts, ` UNION ALL `)
	if t.db.engine == Postgres { // its hash aggregate costs less than sending every row
		query = `SELECT ` + group + `, sum(` + strings.ReplaceAll(values, `, `, `), sum(`) + `) FROM (` + query + `) f GROUP BY ` + group
	}
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	defer rows.Close()
	type key struct {
		process, step, policy string
		kind                  int
		day, bucket           int64
	}
	sums := map[key]int{} // → index in out
	var out []reports.Fact
	names := map[string]string{} // the few names of steps, policies and processes, interned
	name := func(b sql.RawBytes) string {
		if s, ok := names[string(b)]; ok {
			return s
		}
		s := string(b)
		names[s] = s
		return s
	}
	var process, step, policy sql.RawBytes
	for rows.Next() {
		var k key
		var n, ms int64
		dest := []any{&k.kind, &step, &policy, &k.bucket, &n, &ms}
		if q.ByDay {
			dest = []any{&k.kind, &k.day, &n}
		}
		if q.ProcessID == "" {
			dest = append([]any{&process}, dest...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, t.err(err, "", "")
		}
		k.process, k.step, k.policy = q.ProcessID, name(step), name(policy)
		if q.ProcessID == "" {
			k.process = name(process)
		}
		if i, ok := sums[k]; ok {
			out[i].N += n
			out[i].SumMillis += ms
			continue
		}
		sums[k] = len(out)
		out = append(out, reports.Fact{OrgID: q.OrgID, ProcessID: k.process, Day: k.day, Kind: k.kind, StepID: k.step, Policy: k.policy, Bucket: k.bucket, N: n, SumMillis: ms})
	}
	return out, t.err(rows.Err(), "", "")
}

// OpenMeasurements counts the measurements of each of the org's processes
// that are not APPROVED (the status counters).
func (t *tx) OpenMeasurements(orgID string) (map[string]int64, error) {
	rows, err := t.query(`SELECT process_id, coalesce(sum(n), 0) FROM measurement_counts WHERE org_id = ? AND status <> 'APPROVED' GROUP BY process_id`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	return countsBy(rows, t)
}

// OverdueOpenSteps counts the open steps whose deadline is in [from, to),
// by process and step, of the org's measurements (of one process when
// processID is not empty).
func (t *tx) OverdueOpenSteps(orgID, processID string, from, to wps.Time) ([]reports.Fact, error) {
	q := `SELECT m.process_id, s.step_id, count(*) FROM measurement_open_steps s JOIN measurements m ON m.id = s.measurement_id
		WHERE s.org_id = ? AND s.due_at >= ? AND s.due_at < ?`
	args := []any{orgID, from.Millis(), to.Millis()}
	if processID != "" {
		q += ` AND m.process_id = ?`
		args = append(args, processID)
	}
	rows, err := t.query(q+` GROUP BY m.process_id, s.step_id`, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (reports.Fact, error) {
		f := reports.Fact{OrgID: orgID, Kind: reports.FactOverdue}
		return f, s.Scan(&f.ProcessID, &f.StepID, &f.N)
	})
	return list, t.err(err, "", "")
}

func countsBy(rows *sql.Rows, t *tx) (map[string]int64, error) {
	out := map[string]int64{}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, t.err(err, "", "")
		}
		out[k] = n
	}
	return out, t.err(rows.Err(), "", "")
}

// backfillReports is migration 44, in Go: the report aggregates
// (report_facts) of the measurements made before it, worked out by the
// domain from their recorded actions (reports.FactsFromActions), 500
// measurements at a time, in the migration's transaction.
func (db *DB) backfillReports(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, reportFactsTable); err != nil {
		return err
	}
	q := func(query string, args ...any) (*sql.Rows, error) {
		return tx.QueryContext(ctx, db.rebind(query), args...)
	}
	started := map[string]int64{} // measurement → the occurrence a PENDING one was made ahead for
	rows, err := q(`SELECT measurement_id, occurs_at FROM occurrences`)
	if err != nil {
		return err
	}
	if started, err = scanInt64s(rows, started); err != nil {
		return err
	}
	versions := map[versionRef][]wps.Step{}
	cals := map[string][]wps.CalendarVersion{}
	merged := map[reports.Fact]int{} // key (N and SumMillis zero) → index in all
	var all []reports.Fact
	for after := ""; ; {
		rows, err := q(`SELECT `+measurementCols+` FROM measurements WHERE id > ? ORDER BY id`+limitN(500), after)
		if err != nil {
			return err
		}
		batch, err := collect(rows, scanMeasurement)
		if err != nil || len(batch) == 0 {
			if err != nil {
				return err
			}
			break
		}
		ids := make([]any, len(batch))
		for i, m := range batch {
			ids[i] = m.ID
		}
		rows, err = q(`SELECT `+reportActionCols+` FROM actions WHERE measurement_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY measurement_id, seq`, ids...)
		if err != nil {
			return err
		}
		acts, err := collect(rows, scanReportAction)
		if err != nil {
			return err
		}
		byM := map[string][]wps.Action{}
		for _, a := range acts {
			byM[a.MeasurementID] = append(byM[a.MeasurementID], a)
		}
		for _, m := range batch {
			ref := versionRef{m.ProcessID, m.Version}
			steps, ok := versions[ref]
			if !ok {
				var text string
				if err := tx.QueryRowContext(ctx, db.rebind(`SELECT steps FROM process_versions WHERE process_id = ? AND version = ?`), m.ProcessID, m.Version).Scan(&text); err != nil {
					return fmt.Errorf("steps of %s: %w", m.ID, err)
				}
				steps = db.steps.decode(text)
				versions[ref] = steps
			}
			cal, ok := cals[m.OrgID]
			if !ok {
				rows, err := q(`SELECT valid_from, spec FROM org_calendars WHERE org_id = ? ORDER BY valid_from`, m.OrgID)
				if err != nil {
					return err
				}
				if cal, err = collect(rows, scanCalendar); err != nil {
					return err
				}
				cals[m.OrgID] = cal
			}
			start := m.CreatedAt
			if at, ok := started[m.ID]; ok && at > start.Millis() {
				start = wps.FromMillis(at)
			}
			facts, _ := reports.FactsFromActions(m, steps, byM[m.ID], start, cal) // a replay the engine refuses keeps the facts before (the ledger's verification names it)
			for _, f := range facts {
				n, ms := f.N, f.SumMillis
				f.N, f.SumMillis = 0, 0
				if i, ok := merged[f]; ok {
					all[i].N += n
					all[i].SumMillis += ms
					continue
				}
				merged[f] = len(all)
				f.N, f.SumMillis = n, ms
				all = append(all, f)
			}
		}
		after = batch[len(batch)-1].ID
	}
	all = reports.MergeFacts(all)
	for len(all) > 0 {
		n := min(len(all), 500)
		args := make([]any, 0, n*factCols)
		for _, f := range all[:n] {
			args = append(args, factRow(f)...)
		}
		if _, err := tx.ExecContext(ctx, db.rebind(upsertFacts(n)), args...); err != nil {
			return err
		}
		all = all[n:]
	}
	return nil
}

// dropReportFacts undoes migration 44.
func dropReportFacts(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DROP TABLE report_facts`)
	return err
}

func scanInt64s(rows *sql.Rows, into map[string]int64) (map[string]int64, error) {
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		into[k] = v
	}
	return into, rows.Err()
}
