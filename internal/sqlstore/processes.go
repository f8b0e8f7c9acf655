package sqlstore

import (
	"crypto/sha256"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"

	"wps/internal/wps"
)

// processHead are a process's columns and its version's but the steps.
const processHead = `p.id, p.org_id, p.code, p.name, p.label, p.icon_name, p.version, p.created_at, p.updated_at, p.deleted_at, v.locked`

const processCols = processHead + `, v.steps`

// processOne selects one process without its steps: they come from
// db.versions by the version's revision (oneProcess).
const processOne = processHead + `, v.version, v.revision`

// processJoin selects a process with the steps of one version (?-bound).
const processJoin = `FROM processes p JOIN process_versions v ON v.process_id = p.id AND v.version = `

// stepsCache keeps decoded step lists by the hash of their JSON: the same
// definition is read on almost every request, and decoding it is the
// costliest part of the read. Callers get a fresh slice of shared values
// (the domain clones before it edits a definition).
type stepsCache struct {
	mu sync.Mutex
	m  map[[32]byte][]wps.Step
}

// versionKey names one revision of a process version's steps.
type versionKey struct {
	process  string
	version  int
	revision int64
}

// versionCache keeps decoded steps by version revision, so that reading a
// measurement's version need not read (or hash) its steps at all.
type versionCache struct {
	mu sync.Mutex
	m  map[versionKey][]wps.Step
}

func (c *versionCache) get(k versionKey) ([]wps.Step, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	steps, ok := c.m[k]
	return slices.Clone(steps), ok
}

func (c *versionCache) put(k versionKey, steps []wps.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 4096 {
		c.m = map[versionKey][]wps.Step{}
	}
	c.m[k] = steps
}

func (c *stepsCache) decode(text string) []wps.Step {
	key := sha256.Sum256([]byte(text))
	c.mu.Lock()
	steps, ok := c.m[key]
	c.mu.Unlock()
	if !ok {
		fromJSON(text, &steps)
		c.mu.Lock()
		if c.m == nil || len(c.m) >= 4096 {
			c.m = map[[32]byte][]wps.Step{}
		}
		c.m[key] = steps
		c.mu.Unlock()
	}
	return slices.Clone(steps)
}

func (t *tx) scanProcess(s interface{ Scan(...any) error }) (wps.Process, error) {
	var steps string
	p, err := scanProcessHead(s, &steps)
	if err == nil {
		p.Steps = t.db.steps.decode(steps)
	}
	return p, err
}

// scanProcessHead scans processHead, then extra.
func scanProcessHead(s interface{ Scan(...any) error }, extra ...any) (wps.Process, error) {
	var p wps.Process
	dest, finish := processHeadFields(&p)
	if err := s.Scan(append(dest, extra...)...); err != nil {
		return p, err
	}
	finish()
	return p, nil
}

// processHeadFields are the scan destinations of processHead into p, and
// what completes p once they are filled.
func processHeadFields(p *wps.Process) ([]any, func()) {
	var created, updated int64
	var deleted sql.NullInt64
	return []any{&p.ID, &p.OrgID, &p.Code, &p.Name, &p.Label, &p.IconName, &p.Version, &created, &updated, &deleted, &p.Locked}, func() {
		p.CreatedAt, p.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
		p.DeletedAt = optTime(deleted)
	}
}

func (t *tx) CreateProcess(p wps.Process) error {
	_, err := t.exec(`INSERT INTO processes (id, org_id, code, name, label, icon_name, version, recurrence, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrgID, p.Code, p.Name, p.Label, p.IconName, p.Version, recurrence(p), p.CreatedAt.Millis(), p.UpdatedAt.Millis())
	return t.err(err, "process", processDup(err, p))
}

// processDup says which unique key a process conflicts on.
func processDup(err error, p wps.Process) string {
	if err != nil && strings.Contains(err.Error(), "label") {
		return "a process labelled " + p.Label + " exists"
	}
	return "a process with code " + p.Code + " or label " + p.Label + " exists"
}

// GetProcess also reads the org's webhooks in a PostgreSQL write (hooksCol).
func (t *tx) GetProcess(orgID, id string, version int) (wps.Process, error) {
	hooks, args, hooksText := t.hooksCol(orgID)
	q := `SELECT ` + processOne + hooks + ` ` + processJoin
	if version > 0 {
		q += `?`
		args = append(args, version)
	} else {
		q += `p.version`
	}
	q += ` WHERE p.org_id = ? AND p.id = ? AND p.deleted_at IS NULL`
	var extra []any
	if hooksText != nil {
		extra = append(extra, hooksText)
	}
	p, err := t.oneProcess(q, append(args, orgID, id), extra...)
	if err == nil {
		t.keepHooks(orgID, hooksText)
	}
	return p, t.err(err, "process", "")
}

// oneProcess reads the process a processOne query selects, with the steps
// of the version it joined, and scans the query's further columns into extra.
func (t *tx) oneProcess(query string, args []any, extra ...any) (wps.Process, error) {
	var version int
	var rev int64
	p, err := scanProcessHead(t.queryRow(query, args...), append([]any{&version, &rev}, extra...)...)
	if err != nil {
		return p, err
	}
	if t.write {
		if t.revs == nil {
			t.revs = map[versionRef]int64{}
		}
		t.revs[versionRef{p.ID, version}] = rev
	}
	p.Version = version // the version whose steps it holds (the latest, unless one was asked for)
	p.Steps, err = t.versionSteps(p.ID, version, rev)
	return p, err
}

// versionSteps returns the steps of a process version at revision rev:
// decoded once, then shared (callers clone before editing). What a write
// transaction reads is kept only once it has committed, so that a change
// rolled back can never be served.
func (t *tx) versionSteps(processID string, version int, rev int64) ([]wps.Step, error) {
	key := versionKey{processID, version, rev}
	if steps, ok := t.db.versions.get(key); ok {
		return steps, nil
	}
	var text string
	if err := t.queryRow(`SELECT steps, revision FROM process_versions WHERE process_id = ? AND version = ?`, processID, version).Scan(&text, &key.revision); err != nil {
		return nil, err
	}
	steps := t.db.steps.decode(text)
	if t.write {
		t.versions = append(t.versions, versionSteps{key, slices.Clone(steps)})
	} else {
		t.db.versions.put(key, slices.Clone(steps))
	}
	return steps, nil
}

// versionSteps is a decoded version waiting for its transaction's commit.
type versionSteps struct {
	key   versionKey
	steps []wps.Step
}

// committed keeps what the transaction read once it has committed.
func (t *tx) committed() {
	for _, v := range t.versions {
		t.db.versions.put(v.key, v.steps)
	}
}

// recurrence indexes the first step's frequency (the only one that may recur).
func recurrence(p wps.Process) string {
	if len(p.Steps) == 0 {
		return ""
	}
	return p.Steps[0].Frequency
}

func (t *tx) GetProcessVersion(orgID, id string, version int) (wps.Process, error) {
	p, err := t.oneProcess(`SELECT `+processOne+` `+processJoin+`? WHERE p.org_id = ? AND p.id = ?`, []any{version, orgID, id})
	return p, t.err(err, "process version", "")
}

func (t *tx) FindProcessByLabel(orgID, label string) (wps.Process, error) {
	p, err := t.oneProcess(`SELECT `+processOne+` `+processJoin+`p.version
		WHERE p.org_id = ? AND p.label = ? AND p.deleted_at IS NULL`, []any{orgID, label})
	return p, t.err(err, "process", "")
}

func (t *tx) FindProcessByCode(orgID, code string) (wps.Process, error) {
	p, err := t.oneProcess(`SELECT `+processOne+` `+processJoin+`p.version
		WHERE p.org_id = ? AND p.code = ? AND p.deleted_at IS NULL`, []any{orgID, code})
	return p, t.err(err, "process", "")
}

func (t *tx) ListProcesses(orgID string, pg wps.Page, search string, deleted bool) ([]wps.Process, int, error) {
	where := `p.org_id = ? AND p.deleted_at IS NULL`
	if deleted {
		where = `p.org_id = ? AND p.deleted_at IS NOT NULL`
	}
	args := []any{orgID}
	if search != "" {
		where += ` AND (lower(p.name) LIKE ` + asText + ` ESCAPE '\' OR lower(p.label) LIKE ` + asText + ` ESCAPE '\')`
		pat := likePattern(strings.ToLower(search))
		args = append(args, pat, pat)
	}
	// The total rides on each row, as in ListMeasurements: one statement.
	// The steps come by revision from db.versions, not as text to decode.
	count := `SELECT count(*) FROM processes p WHERE ` + where
	rows, err := t.query(`SELECT (`+count+`), `+processOne+` `+processJoin+`p.version WHERE `+where+` ORDER BY p.id`+page(pg),
		append(slices.Clone(args), args...)...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	type head struct {
		p       wps.Process
		version int
		rev     int64
	}
	var total int
	heads, err := collect(rows, func(s interface{ Scan(...any) error }) (head, error) {
		var h head
		var err error
		h.p, err = scanProcessHead(withTotal{row: s, total: &total}, &h.version, &h.rev)
		return h, err
	})
	if err == nil && len(heads) == 0 { // no rows on this page: the total alone
		err = t.queryRow(count, args...).Scan(&total)
	}
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list := make([]wps.Process, len(heads))
	for i, h := range heads {
		if h.p.Steps, err = t.versionSteps(h.p.ID, h.version, h.rev); err != nil {
			return nil, 0, t.err(err, "process version", "")
		}
		list[i] = h.p
	}
	return list, total, nil
}

func (t *tx) UpdateProcess(p wps.Process) error {
	if err := t.hot(p.ID); err != nil {
		return err
	}
	res, err := t.exec(`UPDATE processes SET code = ?, name = ?, label = ?, icon_name = ?, version = ?, recurrence = ?, updated_at = ?
		WHERE org_id = ? AND id = ? AND deleted_at IS NULL`,
		p.Code, p.Name, p.Label, p.IconName, p.Version, recurrence(p), p.UpdatedAt.Millis(), p.OrgID, p.ID)
	return t.err(affected(res, err, "process"), "process", processDup(err, p))
}

func (t *tx) SoftDeleteProcess(orgID, id string, at wps.Time) error {
	if err := t.hot(id); err != nil {
		return err
	}
	res, err := t.exec(`UPDATE processes SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "process"), "process", "")
}

func (t *tx) GetDeletedProcess(orgID, id string) (wps.Process, error) {
	p, err := t.oneProcess(`SELECT `+processOne+` `+processJoin+`p.version
		WHERE p.org_id = ? AND p.id = ? AND p.deleted_at IS NOT NULL`, []any{orgID, id})
	return p, t.err(err, "deleted process", "")
}

func (t *tx) RestoreProcess(orgID, id string, at wps.Time) error {
	if err := t.hot(id); err != nil {
		return err
	}
	res, err := t.exec(`UPDATE processes SET deleted_at = NULL, updated_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NOT NULL`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "deleted process"), "deleted process", "a live process has its code or label")
}

// ProcessActionsMentioning matches the data as text: ids are UUIDs, so a
// quoted id is found only where it is a key (or a value) of the data.
func (t *tx) ProcessActionsMentioning(orgID, processID, text, afterID string, limit int) ([]wps.Action, error) {
	rows, err := t.query(`SELECT a.id, a.data FROM actions a JOIN measurements m ON m.id = a.measurement_id
		WHERE m.org_id = ? AND m.process_id = ? AND a.org_id = ? AND a.id > ? AND a.data LIKE `+asText+` ESCAPE '\'
		ORDER BY a.id`+limitN(limit), orgID, processID, orgID, afterID, likePattern(text))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.Action, error) {
		var a wps.Action
		var data string
		if err := s.Scan(&a.ID, &data); err != nil {
			return a, err
		}
		return a, fromJSONNumbers(data, &a.Data)
	})
	return list, t.err(err, "", "")
}

func (t *tx) CreateProcessVersion(v wps.ProcessVersion) error {
	_, err := t.exec(`INSERT INTO process_versions (process_id, version, org_id, steps, locked, created_at, changed_by, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ProcessID, v.Version, v.OrgID, jsonText(v.Steps), false, v.CreatedAt.Millis(), v.ChangedBy, v.ChangedAt.Millis())
	return t.err(err, "process version", "this version exists")
}

// versionRef names a process version.
type versionRef struct {
	processID string
	version   int
}

// UpdateProcessVersion changes the version's steps only if it is still as
// v.Locked says and, when this write read it, at the revision it read: on
// PostgreSQL an edit that read the version unlocked must not rewrite it
// once a creation has locked it, nor undo a concurrent edit unseen
// (errStale: the write runs again, and then makes a new version or edits
// the current steps).
func (t *tx) UpdateProcessVersion(v wps.ProcessVersion) error {
	ref := versionRef{v.ProcessID, v.Version}
	changed, at := `changed_by`, `changed_at` // a policy renamed in every version keeps their authors
	args := []any{jsonText(v.Steps)}
	if v.ChangedBy != "" {
		changed, at = `?`, `?`
		args = append(args, v.ChangedBy, v.ChangedAt.Millis())
	}
	err := t.versionUpdate(ref, `steps = ?, changed_by = `+changed+`, changed_at = `+at+`, revision = revision + 1
		WHERE org_id = ? AND process_id = ? AND version = ? AND locked = ?`, append(args, v.OrgID, v.ProcessID, v.Version, v.Locked)...)
	if rev, read := t.revs[ref]; read && err == nil {
		t.revs[ref] = rev + 1
	}
	return err
}

// versionUpdate runs UPDATE process_versions SET set, on the revision this
// write read (oneProcess) if it read the version. Then no row changed is
// errStale: the version exists, as the write read it.
func (t *tx) versionUpdate(ref versionRef, set string, args ...any) error {
	q := `UPDATE process_versions SET ` + set
	rev, read := t.revs[ref]
	if read {
		q, args = q+` AND revision = ?`, append(args, rev)
	}
	res, err := t.exec(q, args...)
	if err == nil && read {
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return errStale
		}
	}
	return t.err(affected(res, err, "process version"), "process version", "")
}

func (t *tx) ListProcessVersions(orgID, processID string) ([]wps.ProcessVersion, error) {
	rows, err := t.query(`SELECT process_id, version, steps, locked, created_at, changed_by, changed_at FROM process_versions
		WHERE org_id = ? AND process_id = ? ORDER BY version DESC`, orgID, processID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.ProcessVersion, error) {
		v := wps.ProcessVersion{OrgID: orgID}
		var steps string
		var created, changed int64
		if err := s.Scan(&v.ProcessID, &v.Version, &steps, &v.Locked, &created, &v.ChangedBy, &changed); err != nil {
			return v, err
		}
		fromJSON(steps, &v.Steps)
		v.StepCount, v.CreatedAt, v.ChangedAt = len(v.Steps), wps.FromMillis(created), wps.FromMillis(changed)
		return v, nil
	})
	return list, t.err(err, "", "")
}

// LockProcessVersion locks the version only at the revision this write
// read: a creation must not lock steps other than those it built its
// measurement from (errStale; see UpdateProcessVersion). Only an unlocked
// row is written: on PostgreSQL, creations that all read the version
// unlocked would otherwise each lock its row in turn, until their commits,
// one after another (a version is never unlocked, so one found locked at
// the revision read stays so).
func (t *tx) LockProcessVersion(orgID, processID string, version int) error {
	ref := versionRef{processID, version}
	err := t.versionUpdate(ref, `locked = ? WHERE org_id = ? AND process_id = ? AND version = ? AND locked = ?`,
		true, orgID, processID, version, false)
	if !errors.Is(err, errStale) && !wps.IsCode(err, wps.CodeNotFound) {
		return err
	}
	q, args := `SELECT locked FROM process_versions WHERE org_id = ? AND process_id = ? AND version = ?`, []any{orgID, processID, version}
	if rev, read := t.revs[ref]; read {
		q, args = q+` AND revision = ?`, append(args, rev)
	}
	var locked bool
	if e := t.queryRow(q, args...).Scan(&locked); e != nil || !locked {
		return err // changed since read (errStale), or gone
	}
	return nil
}

func (t *tx) ProcessVersionsMentioning(orgID, text string) ([]wps.MentioningVersion, error) {
	rows, err := t.query(`SELECT v.process_id, v.version, v.steps, v.locked, v.created_at, p.name,
			(p.deleted_at IS NULL AND p.version = v.version)
		FROM process_versions v JOIN processes p ON p.id = v.process_id
		WHERE v.org_id = ? AND v.steps LIKE `+asText+` ESCAPE '\' ORDER BY v.process_id, v.version`+t.forUpdateOf("v"), orgID, likePattern(text))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.MentioningVersion, error) {
		m := wps.MentioningVersion{ProcessVersion: wps.ProcessVersion{OrgID: orgID}}
		var steps string
		var created int64
		if err := s.Scan(&m.ProcessID, &m.Version, &steps, &m.Locked, &created, &m.ProcessName, &m.Live); err != nil {
			return m, err
		}
		fromJSON(steps, &m.Steps)
		m.StepCount, m.CreatedAt = len(m.Steps), wps.FromMillis(created)
		return m, nil
	})
	return list, t.err(err, "", "")
}
