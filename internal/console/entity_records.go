package console

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// recordEdit is the records grid's row being edited in place (ID "" for
// a new record), or confirmed before it is deleted (Remove).
type recordEdit struct {
	ID     string
	Fields []field
	Error  string
	Remove bool
}

// recordEditor reads the grid's ?edit=ID (new: a new record) or
// ?remove=ID, for a user who may change records.
func (c *Console) recordEditor(q *req, e wps.Entity) *recordEdit {
	v := q.r.URL.Query()
	if !q.p.Can(wps.FnEntityWrite) {
		return nil
	}
	if id := v.Get("remove"); id != "" {
		return &recordEdit{ID: id, Remove: true}
	}
	switch id := v.Get("edit"); id {
	case "":
		return nil
	case "new":
		return &recordEdit{Fields: c.recordFields(q, e, nil)}
	default:
		r, err := c.svc.GetRecord(q.ctx(), q.p, e.ID, id)
		if err != nil {
			return nil
		}
		return &recordEdit{ID: id, Fields: c.recordFields(q, e, r.Values)}
	}
}

// recordParams are an entity's parameters as a form's (readForm's).
func recordParams(e wps.Entity) []wps.StepParameter {
	var out []wps.StepParameter
	for _, p := range e.Parameters {
		out = append(out, wps.StepParameter{Parameter: p})
	}
	return out
}

// recordFields are the record form's controls with values (by name).
func (c *Console) recordFields(q *req, e wps.Entity, values map[string]any) []field {
	var out []field
	for _, p := range e.Parameters {
		if hiddenInUI(p) {
			continue
		}
		f := c.field(q, p)
		val, ok := values[p.Name]
		if !ok || val == nil {
			out = append(out, f)
			continue
		}
		var items []string
		switch x := val.(type) {
		case []any:
			for _, it := range x {
				items = append(items, scalarText(it))
			}
		default:
			items = []string{scalarText(x)}
		}
		f.Values = items
		f.Value = items[0]
		f.Value = q.inputTime(p, f.Value)
		switch p.Type {
		case wps.TypeAttachment:
			for _, id := range items {
				f.Files = append(f.Files, fileLink{ID: id, Name: id})
			}
			c.nameFiles(q, f.Files)
		case wps.TypeTable:
			f.Rows = nil
			for i, it := range x2rows(val) {
				row := tableRow{Index: i}
				for _, col := range f.Columns {
					cell := col
					cell.Value = scalarText(it[col.Name])
					row.Cells = append(row.Cells, cell)
				}
				f.Rows = append(f.Rows, row)
			}
		}
		if f.ReadOnly {
			f.Display = valueText(q.words(), p, f.Value)
		}
		if f.Multiple && f.Input == "textarea" {
			f.Value = strings.Join(items, "\n")
		}
		for i := range f.Options {
			f.Options[i].Selected = slices.Contains(f.Values, f.Options[i].Value)
		}
		out = append(out, f)
	}
	for i := range out {
		if out[i].Input == "table" && len(out[i].Rows) == 0 {
			out[i].Rows = []tableRow{{Index: 0, Cells: out[i].Columns}}
		}
	}
	return out
}

// x2rows are a TABLE value's rows.
func x2rows(v any) []map[string]any {
	var out []map[string]any
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// scalarText is a JSON value as a form control holds it.
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// saveRecord adds a record (no rid) or changes one through the service,
// with the API's checks; a refusal shows the grid again with the row as
// sent and each message at its field, and nothing stored.
func (c *Console) saveRecord(q *req) error {
	id, rid := q.r.PathValue("id"), q.r.PathValue("rid")
	e, err := c.svc.RecordsEntity(q.ctx(), q.p, id)
	if err != nil {
		return err
	}
	params := recordParams(e)
	values, formErrs := c.readForm(q, params)
	if rid != "" { // a value emptied is removed (a patch merges); files unticked are readForm's
		for _, sp := range params {
			p := sp.Parameter
			if _, ok := values[p.Name]; ok || readOnly(p) || hiddenInUI(p) || p.Type == wps.TypeAttachment {
				continue
			}
			if _, sent := q.r.PostForm["p."+p.Name]; sent || p.Type == wps.TypeMultiSelect || p.Type == wps.TypeTable {
				values[p.Name] = json.RawMessage("null")
			}
		}
	}
	if len(formErrs) == 0 {
		if rid == "" {
			_, err = c.svc.CreateRecord(q.ctx(), q.p, id, values)
		} else {
			_, err = c.svc.PatchRecord(q.ctx(), q.p, id, rid, values)
		}
		if err == nil {
			return q.redirect("/entities/"+url.PathEscape(id), "saved")
		}
		if !isFormError(err) {
			return err
		}
		formErrs = q.fieldErrors(err, "values.")
	}
	ed := &recordEdit{ID: rid, Fields: c.recordFields(q, e, nil), Error: q.t("error.attention")}
	var files [][]fileLink
	for i := range ed.Fields {
		keep(&ed.Fields[i], q.r, values)
		ed.Fields[i].Error = formErrs[ed.Fields[i].Name]
		delete(formErrs, ed.Fields[i].Name)
		files = append(files, ed.Fields[i].Files)
	}
	c.nameFiles(q, files...)
	if len(q.fieldErrors(err, "values.")) == 0 && err != nil {
		ed.Error = q.message(err)
	}
	for k, v := range formErrs {
		ed.Error += " " + k + ": " + v
	}
	return c.showRecords(q, statusOf(orInvalid(err)), ed)
}

// deleteRecord deletes a record the grid asked to confirm first.
func (c *Console) deleteRecord(q *req) error {
	id := q.r.PathValue("id")
	if err := c.svc.DeleteRecord(q.ctx(), q.p, id, q.r.PathValue("rid")); err != nil {
		return err
	}
	return q.redirect("/entities/"+url.PathEscape(id), "deleted")
}
