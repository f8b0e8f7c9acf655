package sqlstore

import (
	"database/sql"
	"strings"

	"wps/internal/wps"
)

// templateCols are a template's columns and its version's (t, v), then
// whether a document was rendered from that version.
const templateCols = `t.id, t.org_id, v.name, v.body, v.template_entity_id, v.version, t.created_at, t.updated_at, t.deleted_at,
	EXISTS (SELECT 1 FROM documents d WHERE d.org_id = t.org_id AND d.template_id = t.id AND d.template_version = v.version)`

const templateJoin = ` FROM contract_templates t JOIN contract_template_versions v ON v.template_id = t.id`

func scanTemplate(s interface{ Scan(...any) error }) (wps.Template, error) {
	var tp wps.Template
	var created, updated int64
	var deleted sql.NullInt64
	err := s.Scan(&tp.ID, &tp.OrgID, &tp.Name, &tp.Body, &tp.TemplateEntityID, &tp.Version, &created, &updated, &deleted, &tp.InUse)
	tp.CreatedAt, tp.UpdatedAt, tp.DeletedAt = wps.FromMillis(created), wps.FromMillis(updated), optTime(deleted)
	return tp, err
}

// lockTemplate takes a template's row lock in a PostgreSQL write
// transaction (mode "FOR SHARE" or "FOR UPDATE") and returns its id. A
// statement that waited for the lock sees the template's row as the
// holder committed it, but a joined version row as it was before (and an
// edit may have replaced it), so the version is read by a statement of its
// own once the lock is held: edits take the lock first (LockTemplate), so
// the version cannot change after. SQLite's one writer needs no lock.
func (t *tx) lockTemplate(orgID, col, value string, withDeleted bool, mode string) (string, error) {
	if !t.write || t.db.engine != Postgres {
		return value, nil
	}
	q := `SELECT id FROM contract_templates WHERE org_id = ? AND ` + col + ` = ?`
	if !withDeleted {
		q += ` AND deleted_at IS NULL`
	}
	var id string
	err := t.queryRow(q+` `+mode, orgID, value).Scan(&id)
	return id, t.err(err, "contract template", "")
}

func (t *tx) CreateTemplate(tp wps.Template) error {
	_, err := t.exec(`INSERT INTO contract_templates (id, org_id, name, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		tp.ID, tp.OrgID, tp.Name, tp.Version, tp.CreatedAt.Millis(), tp.UpdatedAt.Millis())
	if err != nil {
		return t.err(err, "contract template", "a contract template named "+tp.Name+" exists")
	}
	return t.insertTemplateVersion(tp)
}

func (t *tx) insertTemplateVersion(tp wps.Template) error {
	_, err := t.exec(`INSERT INTO contract_template_versions (template_id, version, org_id, name, body, template_entity_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, tp.ID, tp.Version, tp.OrgID, tp.Name, tp.Body, tp.TemplateEntityID, tp.UpdatedAt.Millis())
	return t.err(err, "contract template", "contract template version exists")
}

func (t *tx) GetTemplate(orgID, id string, version int, withDeleted bool) (wps.Template, error) {
	if _, err := t.lockTemplate(orgID, "id", id, withDeleted, "FOR SHARE"); err != nil {
		return wps.Template{}, err
	}
	return t.readTemplate(orgID, "t.id", id, version, withDeleted)
}

// readTemplate reads a template by a column of its row at version (its
// current one when 0).
func (t *tx) readTemplate(orgID, col, value string, version int, withDeleted bool) (wps.Template, error) {
	q := `SELECT ` + templateCols + templateJoin + ` AND v.version = `
	args := []any{orgID, value}
	if version > 0 {
		q += `?`
		args = []any{version, orgID, value}
	} else {
		q += `t.version`
	}
	q += ` WHERE t.org_id = ? AND ` + col + ` = ?`
	if !withDeleted {
		q += ` AND t.deleted_at IS NULL`
	}
	tp, err := scanTemplate(t.queryRow(q, args...))
	return tp, t.err(err, "contract template", "")
}

func (t *tx) LockTemplate(orgID, id string) (wps.Template, error) {
	if _, err := t.lockTemplate(orgID, "id", id, false, "FOR UPDATE"); err != nil {
		return wps.Template{}, err
	}
	return t.readTemplate(orgID, "t.id", id, 0, false)
}

func (t *tx) FindTemplateByName(orgID, name string) (wps.Template, error) {
	if _, err := t.lockTemplate(orgID, "name", name, false, "FOR SHARE"); err != nil {
		return wps.Template{}, err
	}
	return t.readTemplate(orgID, "t.name", name, 0, false)
}

func (t *tx) ListTemplates(orgID string, p wps.Page, search string) ([]wps.Template, int, error) {
	where := `t.org_id = ? AND t.deleted_at IS NULL`
	args := []any{orgID}
	if search != "" {
		where += ` AND lower(t.name) LIKE ` + asText + ` ESCAPE '\'`
		args = append(args, likePattern(strings.ToLower(search)))
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM contract_templates t WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+templateCols+templateJoin+` AND v.version = t.version WHERE `+where+` ORDER BY t.id`+page(p), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanTemplate)
	return list, total, t.err(err, "", "")
}

func (t *tx) ListTemplateVersions(orgID, id string) ([]wps.Template, error) {
	rows, err := t.query(`SELECT `+templateCols+templateJoin+` WHERE t.org_id = ? AND t.id = ? AND t.deleted_at IS NULL ORDER BY v.version DESC`, orgID, id)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanTemplate)
	return list, t.err(err, "", "")
}

func (t *tx) SaveTemplate(tp wps.Template, newVersion bool) error {
	res, err := t.exec(`UPDATE contract_templates SET name = ?, version = ?, updated_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL`,
		tp.Name, tp.Version, tp.UpdatedAt.Millis(), tp.OrgID, tp.ID)
	if err := affected(res, err, "contract template"); err != nil {
		return t.err(err, "contract template", "a contract template named "+tp.Name+" exists")
	}
	if newVersion {
		return t.insertTemplateVersion(tp)
	}
	res, err = t.exec(`UPDATE contract_template_versions SET name = ?, body = ?, template_entity_id = ?, created_at = ?
		WHERE org_id = ? AND template_id = ? AND version = ?`, tp.Name, tp.Body, tp.TemplateEntityID, tp.UpdatedAt.Millis(), tp.OrgID, tp.ID, tp.Version)
	return t.err(affected(res, err, "contract template"), "contract template", "")
}

func (t *tx) SoftDeleteTemplate(orgID, id string, at wps.Time) error {
	res, err := t.exec(`UPDATE contract_templates SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at IS NULL`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "contract template"), "contract template", "")
}

const documentCols = `id, org_id, measurement_id, step_id, opening, parameter_id, template_id, template_version, action_id, sha256, size,
	inputs, shown, superseded, created_at`

func scanDocument(s interface{ Scan(...any) error }, extra ...any) (wps.Document, error) {
	var d wps.Document
	var inputs, shown string
	var created int64
	dest := append([]any{&d.ID, &d.OrgID, &d.MeasurementID, &d.StepID, &d.Opening, &d.ParameterID, &d.TemplateID, &d.TemplateVersion,
		&d.ActionID, &d.SHA256, &d.Size, &inputs, &shown, &d.Superseded, &created}, extra...)
	if err := s.Scan(dest...); err != nil {
		return d, err
	}
	fromJSON(inputs, &d.Inputs)
	fromJSON(shown, &d.Shown)
	d.CreatedAt = wps.FromMillis(created)
	return d, nil
}

// CreateDocument is a later write: nothing reads its result, and its
// consensus's transaction commits it with the rest.
func (t *tx) CreateDocument(d wps.Document) error {
	err := t.later(`INSERT INTO documents (`+documentCols+`, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.OrgID, d.MeasurementID, d.StepID, d.Opening, d.ParameterID, d.TemplateID, d.TemplateVersion, d.ActionID, d.SHA256, d.Size,
		jsonText(d.Inputs), jsonText(d.Shown), d.Superseded, d.CreatedAt.Millis(), d.Content)
	return t.err(err, "document", "document exists")
}

func (t *tx) SupersedeDocuments(orgID, measurementID string, stepIDs []string) error {
	if len(stepIDs) == 0 {
		return nil
	}
	args := []any{true, orgID, measurementID}
	for _, s := range stepIDs {
		args = append(args, s)
	}
	args = append(args, false)
	err := t.later(`UPDATE documents SET superseded = ? WHERE org_id = ? AND measurement_id = ? AND step_id IN (?`+
		strings.Repeat(", ?", len(stepIDs)-1)+`) AND superseded = ?`, args...)
	return t.err(err, "", "")
}

func (t *tx) ListDocuments(orgID, measurementID string) ([]wps.Document, error) {
	rows, err := t.query(`SELECT `+documentCols+` FROM documents WHERE org_id = ? AND measurement_id = ? ORDER BY id`, orgID, measurementID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.Document, error) { return scanDocument(s) })
	return list, t.err(err, "", "")
}

func (t *tx) GetDocument(orgID, id string, content bool) (wps.Document, error) {
	if !content {
		d, err := scanDocument(t.queryRow(`SELECT `+documentCols+` FROM documents WHERE org_id = ? AND id = ?`, orgID, id))
		return d, t.err(err, "document", "")
	}
	var body []byte
	d, err := scanDocument(t.queryRow(`SELECT `+documentCols+`, content FROM documents WHERE org_id = ? AND id = ?`, orgID, id), &body)
	d.Content = body
	return d, t.err(err, "document", "")
}
