package sqlstore

import (
	"database/sql"
	"strings"

	"wps/internal/wps"
)

const entityCols = `id, org_id, name, label, view_policy_names, parameters, created_at, updated_at, deleted_at, retired_parameters`

func scanEntity(s interface{ Scan(...any) error }) (wps.Entity, error) {
	var e wps.Entity
	var vpn, params, retired string
	var created, updated int64
	var deleted sql.NullInt64
	if err := s.Scan(&e.ID, &e.OrgID, &e.Name, &e.Label, &vpn, &params, &created, &updated, &deleted, &retired); err != nil {
		return e, err
	}
	fromJSON(vpn, &e.ViewPolicyNames)
	fromJSON(params, &e.Parameters)
	fromJSON(retired, &e.Retired)
	e.CreatedAt, e.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	e.DeletedAt = optTime(deleted)
	return e, nil
}

func (t *tx) CreateEntity(e wps.Entity) error {
	_, err := t.exec(`INSERT INTO entities (`+entityCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
		e.ID, e.OrgID, e.Name, e.Label, jsonText(e.ViewPolicyNames), jsonText(e.Parameters), e.CreatedAt.Millis(), e.UpdatedAt.Millis(), retiredText(e.Retired))
	return t.err(err, "entity", "an entity named "+e.Name+" exists")
}

func (t *tx) GetEntity(orgID, id string) (wps.Entity, error) {
	e, err := scanEntity(t.queryRow(`SELECT `+entityCols+` FROM entities WHERE org_id = ? AND id = ? AND deleted_at IS NULL`+t.forUpdate(), orgID, id))
	return e, t.err(err, "entity", "")
}

// retiredText is an entity's removed parameters as stored: [] for none.
func retiredText(r []wps.RetiredParam) string {
	if len(r) == 0 {
		return "[]"
	}
	return jsonText(r)
}

func (t *tx) GetDeletedEntity(orgID, id string) (wps.Entity, error) {
	e, err := scanEntity(t.queryRow(`SELECT `+entityCols+` FROM entities WHERE org_id = ? AND id = ? AND deleted_at IS NOT NULL`+t.forUpdate(), orgID, id))
	return e, t.err(err, "deleted entity", "")
}

func (t *tx) RestoreEntity(orgID, id string, at wps.Time) error {
	res, err := t.exec(`UPDATE entities SET deleted_at = NULL, updated_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NOT NULL`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "deleted entity"), "deleted entity", "a live entity has its name")
}

func (t *tx) FindEntityByName(orgID, name string) (wps.Entity, error) {
	e, err := scanEntity(t.queryRow(`SELECT `+entityCols+` FROM entities WHERE org_id = ? AND name = ? AND deleted_at IS NULL`, orgID, name))
	return e, t.err(err, "entity", "")
}

// likePattern matches s anywhere, with LIKE's wildcards escaped; bind it
// as asText.
func likePattern(s string) string { return "%" + likeEscaper.Replace(s) + "%" }

// likePrefix is a LIKE pattern of the strings that start with s.
func likePrefix(s string) string { return likeEscaper.Replace(s) + "%" }

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

func (t *tx) ListEntities(orgID string, p wps.Page, search string, deleted bool) ([]wps.Entity, int, error) {
	where := `org_id = ? AND deleted_at IS NULL`
	if deleted {
		where = `org_id = ? AND deleted_at IS NOT NULL`
	}
	args := []any{orgID}
	if search != "" {
		where += ` AND (lower(name) LIKE ` + asText + ` ESCAPE '\' OR lower(label) LIKE ` + asText + ` ESCAPE '\')`
		pat := likePattern(strings.ToLower(search))
		args = append(args, pat, pat)
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM entities WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+entityCols+` FROM entities WHERE `+where+` ORDER BY id`+page(p), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanEntity)
	return list, total, t.err(err, "", "")
}

func (t *tx) UpdateEntity(e wps.Entity) error {
	res, err := t.exec(`UPDATE entities SET name = ?, label = ?, view_policy_names = ?, parameters = ?, retired_parameters = ?, updated_at = ?
		WHERE org_id = ? AND id = ?`,
		e.Name, e.Label, jsonText(e.ViewPolicyNames), jsonText(e.Parameters), retiredText(e.Retired), e.UpdatedAt.Millis(), e.OrgID, e.ID)
	return t.err(affected(res, err, "entity"), "entity", "an entity named "+e.Name+" exists")
}

func (t *tx) SoftDeleteEntity(orgID, id string, at wps.Time) error {
	res, err := t.exec(`UPDATE entities SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "entity"), "entity", "")
}

func (t *tx) EntitiesMentioning(orgID, text string) ([]wps.Entity, error) {
	rows, err := t.query(`SELECT `+entityCols+` FROM entities WHERE org_id = ?
		AND (parameters LIKE `+asText+` ESCAPE '\' OR view_policy_names LIKE `+asText+` ESCAPE '\') ORDER BY id`, orgID, likePattern(text), likePattern(text))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanEntity)
	return list, t.err(err, "", "")
}

// EntityReferrers finds the id in the stored definitions of other live
// entities: ids are UUIDs, so a text match is exact.
func (t *tx) EntityReferrers(orgID, entityID string) ([]string, error) {
	return t.mentioning(orgID, `"`+entityID+`"`, entityID)
}

// mentioning names the live entities (other than except) whose parameters
// contain text, then the live processes whose latest version's steps do.
func (t *tx) mentioning(orgID, text, except string) ([]string, error) {
	rows, err := t.query(`SELECT name FROM entities WHERE org_id = ? AND deleted_at IS NULL AND id <> ? AND parameters LIKE `+asText+` ESCAPE '\'
		ORDER BY name`, orgID, except, likePattern(text))
	if err != nil {
		return nil, t.err(err, "", "")
	}
	names, err := collect(rows, func(s interface{ Scan(...any) error }) (string, error) {
		var n string
		err := s.Scan(&n)
		return "entity " + n, err
	})
	if err != nil {
		return nil, t.err(err, "", "")
	}
	versions, err := t.ProcessVersionsMentioning(orgID, text)
	for _, v := range versions {
		if v.Live {
			names = append(names, "process "+v.ProcessName)
		}
	}
	return names, err
}

const recordCols = `id, org_id, entity_id, vals, created_at, updated_at`

func scanRecord(s interface{ Scan(...any) error }) (wps.Record, error) {
	var r wps.Record
	var vals string
	var created, updated int64
	if err := s.Scan(&r.ID, &r.OrgID, &r.EntityID, &vals, &created, &updated); err != nil {
		return r, err
	}
	if err := fromJSONNumbers(vals, &r.Values); err != nil { // numbers stay exact decimals
		return r, err
	}
	r.CreatedAt, r.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	return r, nil
}

// visibleRecord is the condition of the entity_records rows that every
// read sees: not written by an import job, or by one that succeeded (its
// rows keep the job's id until the job is settled).
const visibleRecord = `(entity_records.import_job_id IS NULL OR EXISTS (SELECT 1 FROM import_jobs j
	WHERE j.id = entity_records.import_job_id AND j.status = 'SUCCEEDED'))`

func (t *tx) CreateRecord(r wps.Record) error {
	var job any
	if r.ImportJobID != "" {
		job = r.ImportJobID
	}
	_, err := t.exec(`INSERT INTO entity_records (`+recordCols+`, import_job_id) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.OrgID, r.EntityID, jsonText(r.Values), r.CreatedAt.Millis(), r.UpdatedAt.Millis(), job)
	return t.err(err, "record", "record exists")
}

func (t *tx) GetRecord(orgID, entityID, id string) (wps.Record, error) {
	r, err := scanRecord(t.queryRow(`SELECT `+recordCols+` FROM entity_records WHERE org_id = ? AND entity_id = ? AND id = ? AND `+visibleRecord, orgID, entityID, id))
	return r, t.err(err, "record", "")
}

func (t *tx) UpdateRecord(r wps.Record) error {
	res, err := t.exec(`UPDATE entity_records SET vals = ?, updated_at = ? WHERE org_id = ? AND entity_id = ? AND id = ? AND `+visibleRecord,
		jsonText(r.Values), r.UpdatedAt.Millis(), r.OrgID, r.EntityID, r.ID)
	return t.err(affected(res, err, "record"), "record", "")
}

func (t *tx) DeleteRecord(orgID, entityID, id string) error {
	res, err := t.exec(`DELETE FROM entity_records WHERE org_id = ? AND entity_id = ? AND id = ? AND `+visibleRecord, orgID, entityID, id)
	return t.err(affected(res, err, "record"), "record", "")
}

func (t *tx) ListRecords(orgID, entityID string, q wps.RecordQuery) ([]wps.Record, int, error) {
	where := `org_id = ? AND entity_id = ? AND ` + visibleRecord
	args := []any{orgID, entityID}
	for _, f := range q.Filters {
		where += ` AND id IN (SELECT record_id FROM record_index WHERE org_id = ? AND entity_id = ? AND param_id = ? AND value = ?)`
		args = append(args, orgID, entityID, f.ParamID, f.Value)
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM entity_records WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+recordCols+` FROM entity_records WHERE `+where+` ORDER BY id`+page(q.Page), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanRecord)
	return list, total, t.err(err, "", "")
}

func (t *tx) ListRecordsAfter(orgID, entityID, afterID string, limit int) ([]wps.Record, error) {
	rows, err := t.query(`SELECT `+recordCols+` FROM entity_records WHERE org_id = ? AND entity_id = ? AND id > ? AND `+visibleRecord+` ORDER BY id`+limitN(limit),
		orgID, entityID, afterID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanRecord)
	return list, t.err(err, "", "")
}

func (t *tx) ListRecordIDs(orgID, entityID string) ([]string, error) {
	rows, err := t.query(`SELECT id FROM entity_records WHERE org_id = ? AND entity_id = ? AND `+visibleRecord+` ORDER BY id`, orgID, entityID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	ids, err := collect(rows, scanString)
	return ids, t.err(err, "", "")
}

func (t *tx) InsertRecordIndex(r wps.IndexRow) error {
	_, err := t.exec(`INSERT INTO record_index (org_id, entity_id, record_id, param_id, value, uniq) VALUES (?, ?, ?, ?, ?, ?)`,
		r.OrgID, r.EntityID, r.RecordID, r.ParamID, r.Value, r.Unique)
	return t.err(err, "", "value in use")
}

func (t *tx) DeleteHiddenRecord(orgID, id string) error {
	_, err := t.exec(`DELETE FROM entity_records WHERE org_id = ? AND id = ? AND import_job_id IS NOT NULL`, orgID, id)
	return t.err(err, "", "")
}

func (t *tx) DeleteRecordIndexValue(r wps.IndexRow) error {
	_, err := t.exec(`DELETE FROM record_index WHERE org_id = ? AND entity_id = ? AND param_id = ? AND value = ? AND record_id = ?`,
		r.OrgID, r.EntityID, r.ParamID, r.Value, r.RecordID)
	return t.err(err, "", "")
}

func (t *tx) DeleteRecordIndex(orgID, recordID string) error {
	_, err := t.exec(`DELETE FROM record_index WHERE org_id = ? AND record_id = ?`, orgID, recordID)
	return t.err(err, "", "")
}
