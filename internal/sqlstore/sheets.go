package sqlstore

import (
	"encoding/json"

	"wps/internal/wps"
)

const sheetCols = `id, org_id, name, kind, pages, sha256, size, created_by, created_at`

func scanSheet(s interface{ Scan(...any) error }) (wps.Sheet, error) {
	var sh wps.Sheet
	var pages string
	var created int64
	if err := s.Scan(&sh.ID, &sh.OrgID, &sh.Name, &sh.Kind, &pages, &sh.SHA256, &sh.Size, &sh.CreatedBy, &created); err != nil {
		return sh, err
	}
	sh.CreatedAt = wps.FromMillis(created)
	return sh, json.Unmarshal([]byte(pages), &sh.Pages)
}

func (t *tx) CreateSheet(sh wps.Sheet, content []byte) error {
	pages, _ := json.Marshal(sh.Pages)
	_, err := t.exec(`INSERT INTO sheets (`+sheetCols+`, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sh.ID, sh.OrgID, sh.Name, sh.Kind, string(pages), sh.SHA256, sh.Size, sh.CreatedBy, sh.CreatedAt.Millis(), content)
	return t.err(err, "sheet", "sheet exists")
}

func (t *tx) GetSheet(orgID, id string) (wps.Sheet, error) {
	sh, err := scanSheet(t.queryRow(`SELECT `+sheetCols+` FROM sheets WHERE org_id = ? AND id = ?`, orgID, id))
	return sh, t.err(err, "sheet", "")
}

func (t *tx) SheetContent(orgID, id string) ([]byte, error) {
	var b []byte
	err := t.queryRow(`SELECT content FROM sheets WHERE org_id = ? AND id = ?`, orgID, id).Scan(&b)
	return b, t.err(err, "sheet", "")
}

func (t *tx) ListSheets(orgID string, pg wps.Page) ([]wps.Sheet, int, error) {
	var total int
	if err := t.queryRow(`SELECT count(*) FROM sheets WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+sheetCols+` FROM sheets WHERE org_id = ? ORDER BY created_at, id`+page(pg), orgID)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanSheet)
	return list, total, t.err(err, "", "")
}

func (t *tx) DeleteSheet(orgID, id string) error {
	_, err := t.exec(`DELETE FROM sheets WHERE org_id = ? AND id = ?`, orgID, id)
	return t.err(err, "sheet", "")
}

// SheetUsers finds the workbook's id, quoted, in the parameters of live
// entities and the steps of live processes' latest versions.
func (t *tx) SheetUsers(orgID, id string) ([]string, error) {
	return t.mentioning(orgID, `"`+id+`"`, "")
}

func (t *tx) PutMeasurementSheet(ms wps.MeasurementSheet) error {
	_, err := t.exec(`INSERT INTO measurement_sheets (org_id, measurement_id, sheet_id, action_id, sha256, content, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id, measurement_id, sheet_id) DO UPDATE SET
		action_id = excluded.action_id, sha256 = excluded.sha256, content = excluded.content, updated_at = excluded.updated_at`,
		ms.OrgID, ms.MeasurementID, ms.SheetID, ms.ActionID, ms.SHA256, ms.Content, ms.UpdatedAt.Millis())
	return t.err(err, "", "")
}

func (t *tx) GetMeasurementSheet(orgID, measurementID, sheetID string) (wps.MeasurementSheet, error) {
	ms := wps.MeasurementSheet{OrgID: orgID, MeasurementID: measurementID, SheetID: sheetID}
	var updated int64
	err := t.queryRow(`SELECT action_id, sha256, content, updated_at FROM measurement_sheets
		WHERE org_id = ? AND measurement_id = ? AND sheet_id = ?`, orgID, measurementID, sheetID).Scan(&ms.ActionID, &ms.SHA256, &ms.Content, &updated)
	ms.UpdatedAt = wps.FromMillis(updated)
	return ms, t.err(err, "filled sheet", "")
}
