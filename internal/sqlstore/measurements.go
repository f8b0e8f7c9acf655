package sqlstore

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"wps/internal/wps"
)

const measurementCols = `id, org_id, process_id, version, name, seq, status, state, created_by, created_at, updated_at, action_count`

func scanMeasurement(s interface{ Scan(...any) error }) (wps.Measurement, error) {
	var m wps.Measurement
	dest, finish := measurementFields(&m)
	if err := s.Scan(dest...); err != nil {
		return m, err
	}
	finish()
	return m, nil
}

// measurementFields are the scan destinations of measurementCols into m,
// and what completes m once they are filled.
func measurementFields(m *wps.Measurement) ([]any, func()) {
	var state string
	var created, updated int64
	return []any{&m.ID, &m.OrgID, &m.ProcessID, &m.Version, &m.Name, &m.Seq, &m.Status, &state, &m.CreatedBy, &created, &updated, &m.ActionCount}, func() {
		fromJSON(state, &m.State)
		m.CreatedAt, m.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	}
}

// CreateMeasurement takes the next number, inserts the measurement, counts
// it and inserts its open steps. On PostgreSQL that is one statement, sent
// with the next read or the COMMIT (deferTop), so that the process's
// sequence row is locked only inside PostgreSQL, for the statements and the
// flush: concurrent creations of a process queue on that row. The number
// and the name are set when it has run.
func (t *tx) CreateMeasurement(m *wps.Measurement, namePrefix string, open []wps.OpenStep) error {
	if err := t.hot(m.ProcessID); err != nil {
		return err
	}
	if t.db.engine == Postgres {
		return t.createMeasurementPG(m, namePrefix, open)
	}
	err := t.queryRow(`UPDATE processes SET next_seq = next_seq + 1 WHERE org_id = ? AND id = ? RETURNING next_seq - 1`, m.OrgID, m.ProcessID).Scan(&m.Seq)
	if err != nil {
		return t.err(err, "process", "")
	}
	m.Name = namePrefix + "-" + strconv.FormatInt(m.Seq, 10)
	_, err = t.exec(`INSERT INTO measurements (`+measurementCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.OrgID, m.ProcessID, m.Version, m.Name, m.Seq, m.Status, jsonText(m.State), m.CreatedBy, m.CreatedAt.Millis(), m.UpdatedAt.Millis(), m.ActionCount)
	if err != nil {
		return t.err(err, "measurement", "measurement exists")
	}
	if err := t.count(m.OrgID, m.ProcessID, m.Status, 1); err != nil {
		return err
	}
	if len(open) == 0 {
		return nil
	}
	q, args := upsertOpenSteps(m.OrgID, m.ID, open)
	if _, err = t.exec(q, args...); err != nil {
		return t.err(err, "", "")
	}
	for _, ins := range []func(string, string, []wps.OpenStep) (string, []any){insertSeats, insertFillers} {
		if q, args := ins(m.OrgID, m.ID, open); q != "" {
			if _, err = t.exec(q, args...); err != nil {
				return t.err(err, "", "")
			}
		}
	}
	return nil
}

func (t *tx) createMeasurementPG(m *wps.Measurement, namePrefix string, open []wps.OpenStep) error {
	var q strings.Builder
	q.WriteString(`WITH s AS (UPDATE processes SET next_seq = next_seq + 1 WHERE org_id = ? AND id = ? RETURNING next_seq - 1 AS seq),
		m AS (INSERT INTO measurements (` + measurementCols + `)
			SELECT ?, ?, ?, ?, ? || '-' || s.seq, s.seq, ?, ?, ?, ?, ?, ? FROM (SELECT) one LEFT JOIN s ON true RETURNING id, seq),
		c AS (INSERT INTO measurement_counts (org_id, process_id, status, n) SELECT ?, ?, ?, 1 FROM m
			ON CONFLICT (org_id, process_id, status) DO UPDATE SET n = measurement_counts.n + 1)`)
	args := []any{m.OrgID, m.ProcessID,
		m.ID, m.OrgID, m.ProcessID, m.Version, namePrefix, m.Status, jsonText(m.State), m.CreatedBy, m.CreatedAt.Millis(), m.UpdatedAt.Millis(), m.ActionCount,
		m.OrgID, m.ProcessID, m.Status}
	if len(open) > 0 {
		q.WriteString(`, o AS (INSERT INTO measurement_open_steps (measurement_id, org_id, step_id, opening, opened_at, due_at, escalate_at)
			SELECT m.id, ?, v.step_id, v.opening, v.opened_at, v.due_at, v.escalate_at FROM m, (VALUES `)
		args = append(args, m.OrgID)
		for i, s := range open {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(`(?::text, ?::integer, ?::bigint, ?::bigint, ?::bigint)`)
			args = append(args, s.StepID, s.Opening, s.OpenedAt.Millis(), nullTime(s.DueAt), nullTime(s.EscalateAt))
		}
		q.WriteString(`) AS v (step_id, opening, opened_at, due_at, escalate_at))`)
	}
	if n, rows := seatRows(open); n > 0 {
		q.WriteString(`, os AS (INSERT INTO measurement_open_seats (org_id, measurement_id, process_id, step_id, policy_name, role)
			SELECT ?, m.id, ?, v.step_id, v.policy_name, v.role FROM m, (VALUES ` + valuesN(n, `(?::text, ?::text, ?::text)`) + `) AS v (step_id, policy_name, role))`)
		args = append(append(args, m.OrgID, m.ProcessID), rows...)
	}
	if n, rows := fillerRows(open); n > 0 {
		q.WriteString(`, sf AS (INSERT INTO measurement_step_fillers (org_id, measurement_id, step_id, user_id)
			SELECT ?, m.id, v.step_id, v.user_id FROM m, (VALUES ` + valuesN(n, `(?::text, ?::text)`) + `) AS v (step_id, user_id))`)
		args = append(append(args, m.OrgID), rows...)
	}
	q.WriteString(` SELECT seq FROM m`)
	// Without the process's row the seq is NULL and the insert fails: the
	// COMMIT sent with it must not commit the rest of the transaction.
	t.deferTop(q.String(), args, "measurement exists", func(rows pgx.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil && !isNotNull(err) {
				return t.err(err, "process", "measurement exists")
			}
			return wps.NotFound("process")
		}
		if err := rows.Scan(&m.Seq); err != nil {
			return err
		}
		m.Name = namePrefix + "-" + strconv.FormatInt(m.Seq, 10)
		return nil
	})
	return nil
}

func (t *tx) GetMeasurement(orgID, id string) (wps.Measurement, error) {
	m, err := scanMeasurement(t.queryRow(`SELECT `+measurementCols+` FROM measurements WHERE org_id = ? AND id = ?`+t.forUpdate(), orgID, id))
	return m, t.err(err, "measurement", "")
}

// readMeasurement selects a measurement's columns, its process's
// (processHead), the revision of its version, then one action per row
// (nullActionCols; one row of empty values when it has none).
// readMeasurementHooks has hooksCol's column after the revision.
var readMeasurement, readMeasurementHooks = readMeasurementSQL(""), readMeasurementSQL(hooksSelect)

func readMeasurementSQL(hooks string) string {
	return `SELECT ` + prefixed("m.", measurementCols) + `, ` + processHead + `, v.revision` + hooks + `, ` + nullActionCols + `
	FROM measurements m JOIN processes p ON p.id = m.process_id
	JOIN process_versions v ON v.process_id = m.process_id AND v.version = m.version
	LEFT JOIN actions a ON a.org_id = m.org_id AND a.measurement_id = m.id
	WHERE m.org_id = ? AND m.id = ?` // sorted in Go: with ORDER BY a planner may walk the (org_id, seq) index
}

// nullActionCols are actionCols of a LEFT JOINed a, with empty values for no row.
var nullActionCols = func() string {
	var cols []string
	for _, c := range strings.Split(actionCols, ",") {
		c = strings.TrimSpace(c)
		empty := "''"
		switch c {
		case "data":
			empty = "'{}'"
		case "user_roles":
			empty = "'[]'"
		case "opening", "seq", "created_at":
			empty = "0"
		case "reproved", "superseded":
			empty = "FALSE"
		}
		cols = append(cols, "coalesce(a."+c+", "+empty+")")
	}
	return strings.Join(cols, ", ")
}()

func prefixed(prefix, cols string) string {
	return prefix + strings.ReplaceAll(cols, ", ", ", "+prefix)
}

// ReadMeasurement reads the version's steps only when db.versions lacks
// that revision of them (versionSteps). In a PostgreSQL write transaction
// it locks the measurement's row and also reads the org's webhooks
// (hooksCol).
func (t *tx) ReadMeasurement(orgID, id string) (wps.Measurement, wps.Process, []wps.Action, error) {
	q, args, hooksText := readMeasurement, []any(nil), (*string)(nil)
	if hooks, a, text := t.hooksCol(orgID); hooks != "" {
		q, args, hooksText = readMeasurementHooks, a, text
	}
	rows, err := t.query(q+t.forUpdateOf("m"), append(args, orgID, id)...)
	if err != nil {
		return wps.Measurement{}, wps.Process{}, nil, t.err(err, "", "")
	}
	defer rows.Close()
	var m wps.Measurement
	var p wps.Process
	var rev int64
	md, mFinish := measurementFields(&m)
	pd, pFinish := processHeadFields(&p)
	head := append(append(md, pd...), &rev)
	if hooksText != nil {
		head = append(head, hooksText)
	}
	var raw sql.RawBytes
	skip := make([]any, len(head)) // later rows repeat the head: read, not decoded again
	for i := range skip {
		skip[i] = &raw
	}
	actions := []wps.Action{}
	for first := true; rows.Next(); first = false {
		var a wps.Action
		ad, aFinish := actionFields(&a)
		if !first {
			head = skip
		}
		if err := rows.Scan(append(head, ad...)...); err != nil {
			return m, p, nil, t.err(err, "", "")
		}
		if first {
			mFinish()
			pFinish()
		}
		if err := aFinish(); err != nil {
			return m, p, nil, t.err(err, "", "")
		}
		if a.ID != "" {
			actions = append(actions, a)
		}
	}
	if err := rows.Err(); err != nil {
		return m, p, nil, t.err(err, "", "")
	}
	if m.ID == "" {
		return m, p, nil, wps.NotFound("measurement")
	}
	t.keepHooks(orgID, hooksText)
	if len(actions) != m.ActionCount {
		// PostgreSQL: the statement waited for the measurement's lock and
		// returned its row as the writer that held it committed it, but
		// the actions (and the webhooks) as they were when the statement
		// began. A new statement sees that writer's actions and changes;
		// ListWebhooks reads the webhooks again.
		t.hooks = nil
		if actions, err = t.ListActions(orgID, id); err != nil {
			return m, p, nil, err
		}
	}
	slices.SortFunc(actions, func(a, b wps.Action) int { return cmp.Compare(a.Seq, b.Seq) })
	p.Steps, err = t.versionSteps(m.ProcessID, m.Version, rev)
	return m, p, actions, t.err(err, "process version", "")
}

func (t *tx) UpdateMeasurement(m wps.Measurement, oldStatus string) error {
	res, err := t.exec(`UPDATE measurements SET status = ?, state = ?, updated_at = ?, action_count = ?, version = ? WHERE org_id = ? AND id = ?`,
		m.Status, jsonText(m.State), m.UpdatedAt.Millis(), m.ActionCount, m.Version, m.OrgID, m.ID)
	if err := affected(res, err, "measurement"); err != nil || m.Status == oldStatus {
		return t.err(err, "measurement", "")
	}
	if err := t.hot(m.ProcessID); err != nil {
		return err
	}
	// The two counters in status order: two changes of opposite direction
	// in PostgreSQL at once would otherwise lock them in opposite orders.
	rows := []any{m.OrgID, m.ProcessID, oldStatus, -1, m.OrgID, m.ProcessID, m.Status, 1}
	if m.Status < oldStatus {
		rows = append(rows[4:], rows[:4]...)
	}
	if t.adds != nil { // SQLite's writer: with the batch's (appends.go)
		return t.add(countsTable, rows)
	}
	return t.err(t.later(countsTable.statement(2), rows...), "", "")
}

// countsTable is measurement_counts as the group commit writes it: the
// changes of a batch's writes summed by process and status, one upsert.
var countsTable = &appendTable{order: 4, cols: 4, upsert: func(n int) string {
	return `INSERT INTO measurement_counts (org_id, process_id, status, n) VALUES ` + valuesN(n, "(?, ?, ?, ?)") + `
		ON CONFLICT (org_id, process_id, status) DO UPDATE SET n = measurement_counts.n + excluded.n`
}, merge: func(args []any) []any {
	type key struct{ org, process, status string }
	sums := map[key]int{}
	var order []key
	for r := 0; r+4 <= len(args); r += 4 {
		k := key{args[r].(string), args[r+1].(string), args[r+2].(string)}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += args[r+3].(int)
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.org, b.org), cmp.Compare(a.process, b.process), cmp.Compare(a.status, b.status))
	})
	out := make([]any, 0, len(order)*4)
	for _, k := range order {
		if sums[k] != 0 {
			out = append(out, k.org, k.process, k.status, sums[k])
		}
	}
	return out
}}

// count adds n to the measurements of a process in a status: with the
// batch's on SQLite's writer, at once elsewhere.
func (t *tx) count(orgID, processID, status string, n int) error {
	if t.adds != nil {
		return t.add(countsTable, []any{orgID, processID, status, n})
	}
	_, err := t.exec(countsTable.statement(1), orgID, processID, status, n)
	return t.err(err, "", "")
}

// ListMeasurements takes each measurement's steps from db.versions by the
// revision the page's statement reads with it.
func (t *tx) LiveMeasurementsOf(orgID, processID string, version int) ([]string, error) {
	rows, err := t.query(`SELECT id FROM measurements WHERE org_id = ? AND process_id = ? AND version = ? AND status <> 'APPROVED' ORDER BY seq`,
		orgID, processID, version)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanString)
	return list, t.err(err, "", "")
}

func (t *tx) ListMeasurements(orgID string, q wps.MeasurementQuery) ([]wps.ListedMeasurement, int, error) {
	var where strings.Builder
	where.WriteString(`org_id = ?`)
	args := []any{orgID}
	add := func(cond string, vals ...any) {
		where.WriteString(" AND " + cond)
		args = append(args, vals...)
	}
	if q.ProcessID != "" && !q.Actionable { // actionable: the seats know it
		add(`process_id = ?`, q.ProcessID)
	}
	if q.Status != "" {
		add(`status = `+asText, q.Status)
	}
	if q.OpenStepID != "" && !q.Actionable {
		add(`id IN (SELECT measurement_id FROM measurement_open_steps WHERE org_id = ? AND step_id = ?)`, orgID, q.OpenStepID)
	}
	if q.Overdue && !q.Actionable {
		add(`id IN (SELECT measurement_id FROM measurement_open_steps WHERE org_id = ? AND due_at IS NOT NULL AND due_at < ?)`, orgID, q.Now.Millis())
	}
	if q.Name != "" {
		add(`name LIKE `+asText+` ESCAPE '\'`, likePrefix(strings.ToUpper(q.Name)))
	}
	if q.CreatedFrom != nil {
		add(`created_at >= ?`, q.CreatedFrom.Millis())
	}
	if q.CreatedBefore != nil {
		add(`created_at < ?`, q.CreatedBefore.Millis())
	}
	if q.Actionable {
		return t.listActionable(orgID, q, where.String(), args)
	}
	count, cargs := `SELECT count(*) FROM measurements WHERE `+where.String(), args
	// Only process and status: the counters answer without counting rows.
	if q.OpenStepID == "" && !q.Overdue && q.Name == "" && q.CreatedFrom == nil && q.CreatedBefore == nil {
		count, cargs = `SELECT coalesce(sum(n), 0) FROM measurement_counts WHERE org_id = ?`, []any{orgID}
		if q.ProcessID != "" {
			count, cargs = count+` AND process_id = ?`, append(cargs, q.ProcessID)
		}
		if q.Status != "" {
			count, cargs = count+` AND status = `+asText, append(cargs, q.Status)
		}
	}
	// The total and the revision of the measurement's version ride on each
	// row: the page, its total and its versions are one statement, so one
	// snapshot, even outside a transaction. The versions are joined to the
	// page only, not to the rows an OFFSET skips.
	return t.listPage(`SELECT pg.*, v.revision FROM (SELECT (`+count+`) AS total, `+measurementCols+` FROM measurements
		WHERE `+where.String()+` ORDER BY id DESC`+page(q.Page)+`) pg
		JOIN process_versions v ON v.process_id = pg.process_id AND v.version = pg.version ORDER BY pg.id DESC`,
		append(slices.Clip(cargs), args...), count, cargs)
}

// listActionable lists the measurements of the caller's open seats
// (actionable), with where (on the measurements' columns) when it filters
// more than the org. The seats the caller's keys find (open_seats_key) are
// gathered first (a MATERIALIZED CTE); one pass over them gives the page's
// ids in order and their total (a window count), looking up a measurement
// only when where needs it; then the page's rows are read by id.
//
// Each engine would otherwise pick a plan whose cost grows with more than
// the caller's seats: SQLite, which plans without statistics, walked the
// org's measurements and looked each up in the seats; PostgreSQL's generic
// plan (a prepared statement's, after a few runs) walked every open seat
// backwards in id order to stop at the page, or read them all, as it
// cannot know how few the keys select; so PostgreSQL plans this statement
// for each call's values. A measurement is looked up in a correlated
// scalar subquery, which neither engine turns into a join that could read
// the whole table: one primary key probe per measurement.
func (t *tx) listActionable(orgID string, q wps.MeasurementQuery, where string, args []any) ([]wps.ListedMeasurement, int, error) {
	seats, sargs := actionable(orgID, q)
	with := `WITH a AS MATERIALIZED (SELECT s.measurement_id ` + seats + `) `
	ids, count := `SELECT measurement_id, count(*) OVER () AS total FROM a GROUP BY measurement_id`, with+`SELECT count(DISTINCT measurement_id) FROM a`
	if len(args) > 1 {
		from := ` FROM (SELECT DISTINCT measurement_id FROM a) d WHERE (SELECT count(*) FROM measurements WHERE id = d.measurement_id AND ` + where + `) = 1`
		ids, count, sargs = `SELECT measurement_id, count(*) OVER () AS total`+from, with+`SELECT count(*)`+from, append(sargs, args...)
	}
	if t.db.engine == Postgres {
		// Planned for this call's keys, not generically: a generic plan
		// cannot know that the keys select few seats, and read them all.
		sargs = append([]any{pgx.QueryExecModeExec}, sargs...)
	}
	return t.listPage(with+`SELECT p.total, `+prefixed("m.", measurementCols)+`, v.revision
		FROM (`+ids+` ORDER BY measurement_id DESC`+page(q.Page)+`) p CROSS JOIN measurements m
		JOIN process_versions v ON v.process_id = m.process_id AND v.version = m.version
		WHERE m.id = p.measurement_id ORDER BY m.id DESC`, sargs, count, sargs)
}

// listPage runs a page's statement, whose rows are the total, a
// measurement's columns and the revision of its version; count (with
// cargs) tells the total alone when the page has no rows.
func (t *tx) listPage(query string, args []any, count string, cargs []any) ([]wps.ListedMeasurement, int, error) {
	var total int
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	type listed struct {
		m   wps.Measurement
		rev int64
	}
	got, err := collect(rows, func(s interface{ Scan(...any) error }) (listed, error) {
		var l listed
		var err error
		l.m, err = scanMeasurement(withTotal{row: s, total: &total, extra: []any{&l.rev}})
		return l, err
	})
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	if len(got) == 0 { // no rows on this page: the total alone
		err = t.queryRow(count, cargs...).Scan(&total)
		return nil, total, t.err(err, "", "")
	}
	list := make([]wps.ListedMeasurement, len(got))
	for i, l := range got {
		steps, err := t.versionSteps(l.m.ProcessID, l.m.Version, l.rev)
		if err != nil {
			return nil, 0, t.err(err, "process version", "")
		}
		list[i] = wps.ListedMeasurement{Measurement: l.m, Steps: steps}
	}
	return list, total, nil
}

// actionable is the FROM and WHERE of the open seats (s) that have one of
// the filler's keys, or of the keys of a user they fill seats for by
// delegation (Filler.For) at steps of which that user fills no seat, at
// steps of which the filler fills no seat (and, with q.ProcessID,
// q.OpenStepID or q.Overdue, of that process, at that step, or past its
// deadline).
func actionable(orgID string, q wps.MeasurementQuery) (string, []any) {
	f := q.Filler
	if len(f.Keys) == 0 && len(f.For) == 0 {
		return `FROM measurement_open_seats s WHERE 1 = 0`, nil
	}
	notFilling := ` AND NOT EXISTS (SELECT 1 FROM measurement_step_fillers f
		WHERE f.org_id = s.org_id AND f.measurement_id = s.measurement_id AND f.step_id = s.step_id AND f.user_id = ?)`
	cond, args := `FROM measurement_open_seats s WHERE s.org_id = ?`, []any{orgID}
	if len(f.For) == 0 {
		c, a := seatKeysCond(f.Keys)
		cond, args = cond+` AND `+c, append(args, a...)
	} else { // by delegation too: their keys, at steps of which they fill no seat either
		var or []string
		if len(f.Keys) > 0 {
			c, a := seatKeysCond(f.Keys)
			or, args = append(or, c), append(args, a...)
		}
		for _, g := range f.For {
			c, a := seatKeysCond(g.Keys)
			or, args = append(or, `(`+c+notFilling+`)`), append(append(args, a...), g.UserID)
		}
		cond += ` AND (` + strings.Join(or, ` OR `) + `)`
	}
	if q.ProcessID != "" {
		cond, args = cond+` AND s.process_id = ?`, append(args, q.ProcessID)
	}
	if q.OpenStepID != "" {
		cond, args = cond+` AND s.step_id = ?`, append(args, q.OpenStepID)
	}
	cond += notFilling
	args = append(args, f.UserID)
	if q.Overdue {
		cond += ` AND EXISTS (SELECT 1 FROM measurement_open_steps o
			WHERE o.org_id = s.org_id AND o.measurement_id = s.measurement_id AND o.step_id = s.step_id AND o.due_at < ?)`
		args = append(args, q.Now.Millis())
	}
	return cond, args
}

// seatKeysCond keeps the open seats (s) that have one of keys: the
// policies and roles of the keys, as two IN lists, find the seats through
// open_seats_key; the keys themselves then keep the exact pairs.
func seatKeysCond(keys []wps.SeatKey) (string, []any) {
	var policies, roles []any
	var pairs strings.Builder
	var pargs []any
	for i, k := range keys {
		if !slices.Contains(policies, any(k.Policy)) {
			policies = append(policies, k.Policy)
		}
		if !slices.Contains(roles, any(k.Role)) {
			roles = append(roles, k.Role)
		}
		if i > 0 {
			pairs.WriteString(" OR ")
		}
		pairs.WriteString(`s.policy_name = ? AND s.role = ?`)
		pargs = append(pargs, k.Policy, k.Role)
	}
	cond := `s.policy_name IN (?` + strings.Repeat(`, ?`, len(policies)-1) + `) AND s.role IN (?` + strings.Repeat(`, ?`, len(roles)-1) + `)
		AND (` + pairs.String() + `)`
	return cond, append(append(policies, roles...), pargs...)
}

// withTotal scans a row's first column into total, the next into dest,
// the last into extra.
type withTotal struct {
	row   interface{ Scan(...any) error }
	total *int
	extra []any
}

func (w withTotal) Scan(dest ...any) error {
	return w.row.Scan(append(append([]any{w.total}, dest...), w.extra...)...)
}

// SetOpenSteps keeps the rows of steps still open in the same opening (and
// so whether their overdue event was sent), drops the others, adds the new:
// two writes on disjoint rows, sent with the next statement (later).
func (t *tx) SetOpenSteps(orgID, measurementID string, steps []wps.OpenStep) error {
	q := `DELETE FROM measurement_open_steps WHERE org_id = ? AND measurement_id = ?`
	args := []any{orgID, measurementID}
	if len(steps) > 0 {
		q += ` AND step_id NOT IN (?` + strings.Repeat(`, ?`, len(steps)-1) + `)`
		for _, s := range steps {
			args = append(args, s.StepID)
		}
	}
	if err := t.later(q, args...); err != nil {
		return t.err(err, "", "")
	}
	if len(steps) > 0 {
		q, args = upsertOpenSteps(orgID, measurementID, steps) // new arguments: the delete keeps its own until sent
		if err := t.later(q, args...); err != nil {
			return t.err(err, "", "")
		}
	}
	return t.setSeats(orgID, measurementID, steps)
}

// setSeats keeps the actionable index's rows of the measurement that
// stay, drops the others and adds the new (as SetOpenSteps, disjoint rows).
func (t *tx) setSeats(orgID, measurementID string, steps []wps.OpenStep) error {
	for _, set := range []struct {
		table, key string
		rows       func([]wps.OpenStep) (int, []any)
		insert     func(string, string, []wps.OpenStep) (string, []any)
	}{
		{"measurement_open_seats", `step_id = ? AND policy_name = ? AND role = ?`, seatRows, insertSeats},
		{"measurement_step_fillers", `step_id = ? AND user_id = ?`, fillerRows, insertFillers},
	} {
		n, rows := set.rows(steps)
		q := `DELETE FROM ` + set.table + ` WHERE org_id = ? AND measurement_id = ?` + strings.Repeat(` AND NOT (`+set.key+`)`, n)
		if err := t.later(q, append([]any{orgID, measurementID}, rows...)...); err != nil {
			return t.err(err, "", "")
		}
		if q, args := set.insert(orgID, measurementID, steps); q != "" {
			if err := t.later(q, args...); err != nil {
				return t.err(err, "", "")
			}
		}
	}
	return nil
}

// seatRows are the arguments of the open steps' seat keys (step_id,
// policy_name, role), and how many.
func seatRows(steps []wps.OpenStep) (int, []any) {
	var args []any
	for _, s := range steps {
		for _, k := range s.Seats {
			args = append(args, s.StepID, k.Policy, k.Role)
		}
	}
	return len(args) / 3, args
}

// fillerRows are the arguments of the open steps' fillers (step_id,
// user_id), and how many.
func fillerRows(steps []wps.OpenStep) (int, []any) {
	var args []any
	for _, s := range steps {
		for _, u := range s.Fillers {
			args = append(args, s.StepID, u)
		}
	}
	return len(args) / 2, args
}

// insertSeats inserts the open steps' seat keys, those not there yet; ""
// when there are none.
func insertSeats(orgID, measurementID string, steps []wps.OpenStep) (string, []any) {
	var args []any
	for _, s := range steps {
		for _, k := range s.Seats {
			args = append(args, orgID, measurementID, s.ProcessID, s.StepID, k.Policy, k.Role)
		}
	}
	if len(args) == 0 {
		return "", nil
	}
	return `INSERT INTO measurement_open_seats (org_id, measurement_id, process_id, step_id, policy_name, role) VALUES ` +
		valuesN(len(args)/6, `(?, ?, ?, ?, ?, ?)`) + ` ON CONFLICT DO NOTHING`, args
}

// insertFillers inserts the open steps' fillers, those not there yet; ""
// when there are none.
func insertFillers(orgID, measurementID string, steps []wps.OpenStep) (string, []any) {
	n, rows := fillerRows(steps)
	if n == 0 {
		return "", nil
	}
	args := make([]any, 0, 4*n)
	for i := 0; i < len(rows); i += 2 {
		args = append(args, orgID, measurementID, rows[i], rows[i+1])
	}
	return `INSERT INTO measurement_step_fillers (org_id, measurement_id, step_id, user_id) VALUES ` +
		valuesN(n, `(?, ?, ?, ?)`) + ` ON CONFLICT DO NOTHING`, args
}

// valuesN is n VALUES rows of the form row, comma-separated.
func valuesN(n int, row string) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// RenameSeatPolicy renames a policy in the seat keys of open steps.
func (t *tx) HoldMeasurementWrites() error {
	if t.db.engine == SQLite {
		return nil
	}
	// EXCLUSIVE conflicts with the ROW SHARE of SELECT ... FOR UPDATE and
	// the ROW EXCLUSIVE of writes, not with plain reads. A statement waits
	// for it before it takes its snapshot, so it then sees this
	// transaction's changes.
	_, err := t.exec(`LOCK TABLE measurements IN EXCLUSIVE MODE`)
	return t.err(err, "", "")
}

func (t *tx) RenameSeatPolicy(orgID, old, name string) error {
	if _, err := t.exec(`UPDATE measurement_open_seats SET policy_name = ? WHERE org_id = ? AND policy_name = ?`, name, orgID, old); err != nil {
		return t.err(err, "", "")
	}
	// A filled seat is the policy's name as a key of a step's "seats",
	// followed by an engine.Seat, whose first field is actionId; no other
	// key of a state is followed by one. Ended measurements too: the
	// ledger's replay compares their stored states with the renamed steps.
	seat := func(policy string) string { return jsonText(policy) + `:{"actionId"` }
	_, err := t.exec(`UPDATE measurements SET state = REPLACE(state, `+asText+`, `+asText+`)
		WHERE org_id = ? AND state LIKE `+asText+` ESCAPE '\'`, seat(old), seat(name), orgID, likePattern(seat(old)))
	return t.err(err, "", "")
}

// upsertOpenSteps inserts open steps, or moves a step already open to its
// new opening (and clears its overdue and escalation marks); a step open in the same
// opening stays as it is.
func upsertOpenSteps(orgID, measurementID string, steps []wps.OpenStep) (string, []any) {
	args := make([]any, 0, 7*len(steps))
	for _, s := range steps {
		args = append(args, measurementID, orgID, s.StepID, s.Opening, s.OpenedAt.Millis(), nullTime(s.DueAt), nullTime(s.EscalateAt))
	}
	return `INSERT INTO measurement_open_steps (measurement_id, org_id, step_id, opening, opened_at, due_at, escalate_at) VALUES (?, ?, ?, ?, ?, ?, ?)` +
		strings.Repeat(`, (?, ?, ?, ?, ?, ?, ?)`, len(steps)-1) + `
		ON CONFLICT (measurement_id, step_id) DO UPDATE SET opening = excluded.opening, opened_at = excluded.opened_at,
			due_at = excluded.due_at, overdue_notified = FALSE, escalate_at = excluded.escalate_at, escalated = 0
		WHERE measurement_open_steps.opening <> excluded.opening`, args
}

const actionCols = reportActionCols + `, data_salt`

// legacyActionCols are the columns of actions as migration 23 (Go) reads
// them, before later migrations added the others.
const legacyActionCols = `id, org_id, measurement_id, step_id, opening, seq, type, user_id, username, user_roles, role, policy_name, token_id,
	observation, transaction_hash, data, reproves_action_id, reproved, superseded, prev_hash, ledger_hash, created_at, leaf_hash, route`

// reportActionCols are the columns of actions as migration 44 (Go) reads
// them, before migration 51 added data_salt (a report needs no salt).
const reportActionCols = legacyActionCols + `, signature, on_behalf_of_id, on_behalf_of_name`

// scanAction scans actionCols; scanReportAction reportActionCols and
// scanLegacyAction legacyActionCols, the first of them.
var scanAction, scanReportAction, scanLegacyAction = scanFirst(actionCols), scanFirst(reportActionCols), scanFirst(legacyActionCols)

// scanFirst scans cols, the first columns of actionCols, into an action.
func scanFirst(cols string) func(s interface{ Scan(...any) error }) (wps.Action, error) {
	n := strings.Count(cols, ",") + 1
	return func(s interface{ Scan(...any) error }) (wps.Action, error) {
		var a wps.Action
		dest, finish := actionFields(&a)
		if err := s.Scan(dest[:n]...); err != nil {
			return a, err
		}
		return a, finish()
	}
}

// actionFields are the scan destinations of actionCols into a, and what
// completes a once they are filled.
func actionFields(a *wps.Action) ([]any, func() error) {
	var roles, data, signature string
	var created int64
	return []any{&a.ID, &a.OrgID, &a.MeasurementID, &a.StepID, &a.Opening, &a.Seq, &a.Type, &a.UserID, &a.Username, &roles, &a.Role,
			&a.PolicyName, &a.TokenID, &a.Observation, &a.TransactionHash, &data, &a.ReprovesActionID, &a.Reproved, &a.Superseded,
			&a.PrevHash, &a.LedgerHash, &created, &a.LeafHash, &a.Route, &signature, &a.OnBehalfOf.UserID, &a.OnBehalfOf.Name, &a.DataSalt}, func() error {
			fromJSON(roles, &a.UserRoles)
			a.CreatedAt = wps.FromMillis(created)
			if signature != "" {
				a.Signature = &wps.ActionSignature{}
				if err := json.Unmarshal([]byte(signature), a.Signature); err != nil {
					return err
				}
			}
			return fromJSONNumbers(data, &a.Data)
		}
}

func (t *tx) GetAction(orgID, id string) (wps.Action, error) {
	a, err := scanAction(t.queryRow(`SELECT `+actionCols+` FROM actions WHERE org_id = ? AND id = ?`, orgID, id))
	return a, t.err(err, "action", "")
}

func (t *tx) ListActions(orgID, measurementID string) ([]wps.Action, error) {
	rows, err := t.query(`SELECT `+actionCols+` FROM actions WHERE org_id = ? AND measurement_id = ? ORDER BY seq`, orgID, measurementID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanAction)
	return list, t.err(err, "", "")
}

func (t *tx) MarkSuperseded(orgID, measurementID string, stepIDs []string) error {
	if len(stepIDs) == 0 {
		return nil
	}
	args := []any{true, orgID, measurementID}
	for _, s := range stepIDs {
		args = append(args, s)
	}
	_, err := t.exec(`UPDATE actions SET superseded = ? WHERE org_id = ? AND measurement_id = ? AND step_id IN (?`+
		strings.Repeat(", ?", len(stepIDs)-1)+`) AND type <> 'REJECTION'`, args...)
	return t.err(err, "", "")
}

func (t *tx) MarkReproved(orgID, actionID string) error {
	res, err := t.exec(`UPDATE actions SET reproved = ? WHERE org_id = ? AND id = ?`, true, orgID, actionID)
	return t.err(affected(res, err, "action"), "action", "")
}

func (t *tx) InsertEvents(es []wps.Event) error {
	if len(es) == 0 {
		return nil
	}
	args := make([]any, 0, 8*len(es))
	for _, e := range es {
		args = append(args, e.ID, e.OrgID, e.Type, e.MeasurementID, e.StepID, e.ActionID, string(e.Payload), e.CreatedAt.Millis())
	}
	return t.add(eventsTable, args)
}

func (t *tx) ClaimUniqueValue(orgID, processID, paramID, value, measurementID string) error {
	if _, err := t.exec(`DELETE FROM measurement_values WHERE measurement_id = ? AND param_id = ?`, measurementID, paramID); err != nil {
		return t.err(err, "", "")
	}
	_, err := t.exec(`INSERT INTO measurement_values (org_id, process_id, param_id, value, measurement_id) VALUES (?, ?, ?, ?, ?)`,
		orgID, processID, paramID, value, measurementID)
	return t.err(err, "", "value in use")
}

func (t *tx) CreateAttachment(a wps.Attachment) error {
	_, err := t.exec(`INSERT INTO attachments (id, org_id, filename, content_type, size, sha256, storage_key, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.OrgID, a.Filename, a.ContentType, a.Size, a.SHA256, a.StorageKey, a.CreatedBy, a.CreatedAt.Millis())
	return t.err(err, "attachment", "attachment exists")
}

func (t *tx) GetAttachment(orgID, id string) (wps.Attachment, error) {
	var a wps.Attachment
	var created int64
	err := t.queryRow(`SELECT id, org_id, filename, content_type, size, sha256, storage_key, created_by, created_at FROM attachments
		WHERE org_id = ? AND id = ?`, orgID, id).Scan(&a.ID, &a.OrgID, &a.Filename, &a.ContentType, &a.Size, &a.SHA256, &a.StorageKey, &a.CreatedBy, &created)
	a.CreatedAt = wps.FromMillis(created)
	return a, t.err(err, "attachment", "")
}

// LatestWithValue matches the value inside the stored action data: the
// data is JSON written by the store, so the key and value appear exactly as
// json.Marshal writes them.
func (t *tx) LatestWithValue(orgID, processID, paramID string, value any) (string, error) {
	needle := jsonText(paramID) + ":" + jsonText(value)
	var id string
	err := t.queryRow(`SELECT a.measurement_id FROM actions a JOIN measurements m ON m.id = a.measurement_id
		WHERE a.org_id = ? AND m.process_id = ? AND a.type = 'WRITE_DATA' AND a.superseded = ? AND a.reproved = ?
		AND a.data LIKE `+asText+` ESCAPE '\' ORDER BY a.seq DESC`+limitN(1), orgID, processID, false, false, likePattern(needle)).Scan(&id)
	return id, t.err(err, "measurement", "")
}

func (t *tx) AddAttachmentRefs(refs []wps.AttachmentRef) error {
	for _, r := range refs {
		_, err := t.exec(`INSERT INTO attachment_refs (org_id, attachment_id, parameter_id, measurement_id, entity_id, record_id)
			VALUES (?, ?, ?, ?, ?, ?)`, r.OrgID, r.AttachmentID, r.ParameterID, r.MeasurementID, r.EntityID, r.RecordID)
		if err != nil {
			return t.err(err, "", "")
		}
	}
	return nil
}

func (t *tx) DeleteRecordAttachmentRefs(orgID, recordID string) error {
	_, err := t.exec(`DELETE FROM attachment_refs WHERE org_id = ? AND record_id = ?`, orgID, recordID)
	return t.err(err, "", "")
}

func (t *tx) ListAttachmentRefs(orgID, attachmentID string) ([]wps.AttachmentRef, error) {
	rows, err := t.query(`SELECT parameter_id, measurement_id, entity_id, record_id FROM attachment_refs
		WHERE org_id = ? AND attachment_id = ? AND NOT EXISTS (SELECT 1 FROM entity_records r JOIN import_jobs j ON j.id = r.import_job_id
			WHERE r.id = attachment_refs.record_id AND j.status <> 'SUCCEEDED')`+limitN(1000), orgID, attachmentID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	defer rows.Close()
	var out []wps.AttachmentRef
	for rows.Next() {
		r := wps.AttachmentRef{OrgID: orgID, AttachmentID: attachmentID}
		if err := rows.Scan(&r.ParameterID, &r.MeasurementID, &r.EntityID, &r.RecordID); err != nil {
			return nil, t.err(err, "", "")
		}
		out = append(out, r)
	}
	return out, t.err(rows.Err(), "", "")
}
