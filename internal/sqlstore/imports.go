package sqlstore

import (
	"database/sql"
	"errors"

	"wps/internal/wps"
)

const importJobCols = `id, org_id, entity_id, created_by, status, total, processed, error_code, error_detail, errors,
	storage_key, entity_digest, lease_owner, lease_until, attempts, settled, created_at, started_at, finished_at, reserved`

func scanImportJob(s interface{ Scan(...any) error }) (wps.ImportJob, error) {
	var j wps.ImportJob
	var code, detail, errs string
	var leaseUntil, created int64
	var started, finished sql.NullInt64
	if err := s.Scan(&j.ID, &j.OrgID, &j.EntityID, &j.CreatedBy, &j.Status, &j.Total, &j.Processed, &code, &detail, &errs,
		&j.StorageKey, &j.EntityDigest, &j.LeaseOwner, &leaseUntil, &j.Attempts, &j.Settled, &created, &started, &finished, &j.Reserved); err != nil {
		return j, err
	}
	if code != "" {
		j.Error = &wps.ImportJobError{Code: code, Detail: detail}
	}
	j.Errors = []wps.FieldError{}
	fromJSON(errs, &j.Errors)
	j.LeaseUntil, j.CreatedAt = wps.FromMillis(leaseUntil), wps.FromMillis(created)
	j.StartedAt, j.FinishedAt = optTime(started), optTime(finished)
	return j, nil
}

// jobError is the code and detail columns of a job's error.
func jobError(j wps.ImportJob) (string, string) {
	if j.Error == nil {
		return "", ""
	}
	return j.Error.Code, j.Error.Detail
}

func (t *tx) CreateImportJob(j wps.ImportJob) error {
	code, detail := jobError(j)
	_, err := t.exec(`INSERT INTO import_jobs (`+importJobCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.OrgID, j.EntityID, j.CreatedBy, j.Status, j.Total, j.Processed, code, detail, jsonText(j.Errors),
		j.StorageKey, j.EntityDigest, j.LeaseOwner, j.LeaseUntil.Millis(), j.Attempts, j.Settled, j.CreatedAt.Millis(),
		nullTime(j.StartedAt), nullTime(j.FinishedAt), j.Reserved)
	return t.err(err, "import job", "import job exists")
}

func (t *tx) GetImportJob(orgID, id string) (wps.ImportJob, error) {
	j, err := scanImportJob(t.queryRow(`SELECT `+importJobCols+` FROM import_jobs WHERE org_id = ? AND id = ?`, orgID, id))
	return j, t.err(err, "import job", "")
}

func (t *tx) CountOpenImportJobs(orgID string) (int, error) {
	var n int
	err := t.queryRow(`SELECT count(*) FROM import_jobs WHERE NOT settled AND org_id = ? AND status IN (?, ?)`, orgID, wps.ImportPending, wps.ImportRunning).Scan(&n)
	return n, t.err(err, "", "")
}

// ClaimImportJob counts each org's leased jobs among the open ones
// (import_jobs_open, which SQLite is told: it would read every job ever
// run) and finds when it last started one through import_jobs_org_started
// (migration 30). On PostgreSQL two claims at once would each count the
// org's jobs without the other's: so a claim locks its job's org row and
// counts again (the count then sees a claim that held the row, committed),
// and if the org has no place left after all, looks once more.
func (t *tx) ClaimImportJob(now, leaseUntil wps.Time, owner string, perOrg int) (wps.ImportJob, error) {
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE OF j SKIP LOCKED`
	}
	open := `SELECT org_id AS busy_org, count(*) AS running FROM import_jobs` + t.indexedBy("import_jobs_open") + `
		WHERE NOT settled AND lease_until > ?`
	var j wps.ImportJob
	for look := 0; ; look++ {
		var err error
		j, err = scanImportJob(t.queryRow(`SELECT `+importJobCols+` FROM import_jobs j
			LEFT JOIN (`+open+` GROUP BY org_id) b ON b.busy_org = j.org_id
			WHERE NOT j.settled AND j.lease_until <= ? AND COALESCE(b.running, 0) < ?
			ORDER BY COALESCE(b.running, 0),
				COALESCE((SELECT s.started_at FROM import_jobs s WHERE s.org_id = j.org_id AND s.started_at IS NOT NULL
					ORDER BY s.started_at DESC`+limitN(1)+`), 0),
				j.created_at, j.id`+limitN(1)+skip, now.Millis(), now.Millis(), perOrg))
		if err != nil {
			return j, t.err(err, "import job", "")
		}
		if t.db.engine != Postgres {
			break // one writer: the count was the truth
		}
		if err := t.LockOrg(j.OrgID); err != nil {
			return j, err
		}
		var org string
		var running int
		if err := t.queryRow(open+` AND org_id = ? GROUP BY org_id`, now.Millis(), j.OrgID).Scan(&org, &running); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return j, t.err(err, "", "")
		}
		if running < perOrg {
			break
		}
		if look == 1 {
			return j, t.err(sql.ErrNoRows, "import job", "")
		}
	}
	if j.Status == wps.ImportPending {
		j.Status = wps.ImportRunning
	}
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	j.LeaseOwner, j.LeaseUntil = owner, leaseUntil
	j.Attempts++
	_, err := t.exec(`UPDATE import_jobs SET status = ?, started_at = ?, lease_owner = ?, lease_until = ?, attempts = ? WHERE org_id = ? AND id = ?`,
		j.Status, nullTime(j.StartedAt), owner, leaseUntil.Millis(), j.Attempts, j.OrgID, j.ID)
	return j, t.err(err, "", "")
}

func (t *tx) UpdateImportJob(j wps.ImportJob) error {
	code, detail := jobError(j)
	res, err := t.exec(`UPDATE import_jobs SET status = ?, processed = ?, error_code = ?, error_detail = ?, errors = ?, entity_digest = ?,
		lease_until = ?, settled = ?, finished_at = ?, reserved = ? WHERE org_id = ? AND id = ? AND lease_owner = ?`,
		j.Status, j.Processed, code, detail, jsonText(j.Errors), j.EntityDigest, j.LeaseUntil.Millis(), j.Settled, nullTime(j.FinishedAt),
		j.Reserved, j.OrgID, j.ID, j.LeaseOwner)
	return t.err(affected(res, err, "import job"), "import job", "")
}

// SettleImportRecords works on the first limit of the job's records by id:
// the same rows in each statement, as only the job's worker writes them.
func (t *tx) SettleImportRecords(orgID, jobID string, publish bool, limit int) (int, error) {
	some := `SELECT id FROM entity_records WHERE import_job_id = ? AND org_id = ? ORDER BY id` + limitN(limit)
	if publish {
		res, err := t.exec(`UPDATE entity_records SET import_job_id = NULL WHERE id IN (`+some+`)`, jobID, orgID)
		return rowsAffected(res, err, t)
	}
	if _, err := t.exec(`DELETE FROM attachment_refs WHERE org_id = ? AND record_id IN (`+some+`)`, orgID, jobID, orgID); err != nil {
		return 0, t.err(err, "", "")
	}
	if _, err := t.exec(`DELETE FROM record_index WHERE org_id = ? AND record_id IN (`+some+`)`, orgID, jobID, orgID); err != nil {
		return 0, t.err(err, "", "")
	}
	res, err := t.exec(`DELETE FROM entity_records WHERE id IN (`+some+`)`, jobID, orgID)
	return rowsAffected(res, err, t)
}

func rowsAffected(res sql.Result, err error, t *tx) (int, error) {
	if err != nil {
		return 0, t.err(err, "", "")
	}
	n, err := res.RowsAffected()
	return int(n), t.err(err, "", "")
}
