package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wps/internal/wps"
)

type entitiesData struct {
	Items   []wps.Entity
	Deleted []wps.Entity // to a user who may restore them
	CanEdit bool         // the user may design entities
}

func (c *Console) entities(q *req) error {
	list, _, err := c.svc.ListEntities(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 200}, q.r.URL.Query().Get("q"))
	if err != nil {
		return err
	}
	d := entitiesData{Items: list, CanEdit: q.p.Can(wps.FnEntityWrite)}
	if d.CanEdit {
		if d.Deleted, _, err = c.svc.ListDeletedEntities(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 200}, ""); err != nil {
			return err
		}
	}
	c.render(q, http.StatusOK, "entities", q.t("nav.entities"), d)
	return nil
}

// restoreEntity brings a deleted entity back, with its records.
func (c *Console) restoreEntity(q *req) error {
	e, err := c.svc.RestoreEntity(q.ctx(), q.p, q.r.PathValue("id"))
	if err != nil {
		return err
	}
	return q.redirect("/entities/"+url.PathEscape(e.ID), "restored")
}

// recordsData is an entity's records grid.
type recordsData struct {
	E       wps.Entity
	Columns []column
	Rows    []gridRow
	Total   int
	Page    int
	Prev    string
	Next    string
	Filter  map[string]string // the filters as typed, shown back
	Error   string
	Refused bool // a filter is refused at its box: no records listed
	CanEdit bool
	// Edit is the row edited in place or confirmed before deletion (nil: none).
	Edit *recordEdit
	Span int // the grid's columns, with the row actions'
}

// column is a grid column: frozen to the left or right edge, or not.
type column struct {
	Name, Label, Type string
	Left, Right       int // position among the left- (right-) frozen columns, from 1; 0 when not frozen
	Class             string
	// Filter is the column's filter box: "text", "select" (Options, an
	// empty one first: any), "boolean", "date" (typed as the grid writes
	// it, Pattern) or "" (none); FilterError refuses what was typed.
	Filter, Pattern, FilterError string
	Options                      []option
}

// filterBox sets col's filter box for p: options by label, a boolean in
// words, a date in the grid's format, the value as typed otherwise.
func filterBox(w words, col *column, p wps.Parameter, typed string) {
	switch p.Type {
	case wps.TypeText, wps.TypeInt, wps.TypeNumber, wps.TypeEmail:
		col.Filter = "text"
	case wps.TypeSelect, wps.TypeMultiSelect:
		col.Filter = "select"
		for _, o := range p.OptionItems {
			col.Options = append(col.Options, option{Value: o.Value, Label: or(o.Label, o.Value), Selected: o.Value == typed})
		}
	case wps.TypeBoolean:
		col.Filter = "boolean"
	case wps.TypeDate:
		col.Filter = "date"
		_, col.Pattern = w.dateLayout(p)
	}
}

// filterValue is a filter as typed turned into the value the service
// compares: a DATE typed as the grid writes it (the parameter's
// dateFormat, else the language's) or as yyyy-mm-dd becomes yyyy-mm-dd;
// false when it is no date.
func filterValue(w words, p wps.Parameter, typed string) (string, bool) {
	if p.Type != wps.TypeDate {
		return typed, true
	}
	layout, _ := w.dateLayout(p)
	for _, l := range []string{layout, time.DateOnly} {
		if d, err := time.Parse(l, typed); err == nil {
			return d.Format(time.DateOnly), true
		}
	}
	return "", false
}

type gridRow struct {
	ID    string
	Label string // the first value shown, naming the row to people
	Cells []cell
}

type cell struct {
	Text  string
	Class string
	Files []fileLink
	Color string
}

const recordsPerPage = 50

// records shows an entity's records: visible columns only (the service
// leaves out values hidden from the reader; isHidden ones are left out
// here), left-frozen columns first and right-frozen last, filtered by
// filter.NAME=VALUE like the API's filter[NAME].
func (c *Console) records(q *req) error { return c.showRecords(q, http.StatusOK, nil) }

// showRecords shows the grid with ed, a row being edited (nil: the one
// the URL asks for, if any).
func (c *Console) showRecords(q *req, status int, ed *recordEdit) error {
	id := q.r.PathValue("id")
	e, err := c.svc.RecordsEntity(q.ctx(), q.p, id)
	if err != nil {
		return err
	}
	v := q.r.URL.Query()
	page, _ := strconv.Atoi(v.Get("page"))
	page = max(page, 1)
	filters := map[string]string{}
	for k, vs := range v {
		if name, ok := strings.CutPrefix(k, "filter."); ok && len(vs) > 0 && strings.TrimSpace(vs[0]) != "" {
			filters[name] = strings.TrimSpace(vs[0])
		}
	}
	d := recordsData{E: e, Page: page, Filter: filters, CanEdit: q.p.Can(wps.FnEntityWrite), Edit: ed}
	sent, refused := map[string]string{}, map[string]string{} // as the service takes them; refusals by name
	for name, typed := range filters {
		sent[name] = typed
		if p, ok := e.ParamByName(name); ok && !hiddenInUI(p) { // a hidden one: the service's refusal
			if val, ok := filterValue(q.words(), p, typed); ok {
				sent[name] = val
			} else {
				_, pattern := q.words().dateLayout(p)
				refused[name] = q.t("r.badDate", "Pattern", pattern)
			}
		}
	}
	if d.Edit == nil {
		d.Edit = c.recordEditor(q, e)
	}
	var left, middle, right []wps.Parameter
	for _, p := range e.Parameters {
		a := p.AdvancedOptions
		switch {
		case a != nil && a.IsHidden:
		case a != nil && a.LeftFreeze:
			left = append(left, p)
		case a != nil && a.RightFreeze:
			right = append(right, p)
		default:
			middle = append(middle, p)
		}
	}
	params := append(append(append([]wps.Parameter{}, left...), middle...), right...)
	for i, p := range params {
		col := column{Name: p.Name, Label: labelOf(p), Type: p.Type, FilterError: refused[p.Name]}
		filterBox(q.words(), &col, p, filters[p.Name])
		switch {
		case i < len(left):
			col.Left, col.Class = i+1, fmt.Sprintf("freeze-l fl-%d", min(i, 7))
		case i >= len(left)+len(middle):
			k := len(params) - 1 - i
			col.Right, col.Class = k+1, fmt.Sprintf("freeze-r fr-%d", min(k, 7))
		}
		d.Columns = append(d.Columns, col)
	}
	var list []wps.Record
	var total int
	if len(refused) == 0 { // else the refusals at their filters, and no records
		list, total, err = c.svc.ListRecords(q.ctx(), q.p, id, wps.Page{Page: page, PerPage: recordsPerPage}, sent)
	}
	d.Refused = len(refused) > 0
	if err != nil {
		if !wps.IsCode(err, wps.CodeInvalid) {
			return err
		}
		d.Error = q.message(err)
	}
	d.Total = total
	d.Span = len(d.Columns) + 1
	links := map[string]map[string]string{} // entity id → record id → label, for ENTITY columns
	for _, r := range list {
		row := gridRow{ID: r.ID}
		for i, p := range params {
			cl := cell{Class: d.Columns[i].Class}
			val, ok := r.Values[p.Name]
			if ok && val != nil {
				cl.Text, cl.Files, cl.Color = c.cellText(q, p, val, links)
			}
			row.Cells = append(row.Cells, cl)
		}
		for _, cl := range row.Cells {
			if row.Label == "" {
				row.Label = cl.Text
			}
		}
		row.Label = or(row.Label, r.ID)
		d.Rows = append(d.Rows, row)
	}
	var files [][]fileLink
	for _, r := range d.Rows {
		for _, cl := range r.Cells {
			files = append(files, cl.Files)
		}
	}
	c.nameFiles(q, files...)
	if page > 1 {
		d.Prev = pageURL(q.r.URL.Path, v, page-1)
	}
	if page*recordsPerPage < total {
		d.Next = pageURL(q.r.URL.Path, v, page+1)
	}
	c.render(q, status, "records", e.Label, d)
	return nil
}

// cellText is a record's value as the grid shows it: formatted per the
// parameter, a SELECT option by its label and colour, a linked record by
// the parameter's viewColumns (else showColumns), files as links.
func (c *Console) cellText(q *req, p wps.Parameter, val any, links map[string]map[string]string) (string, []fileLink, string) {
	var items []string
	switch x := val.(type) {
	case []any:
		for _, it := range x {
			items = append(items, fmt.Sprint(it))
		}
	case []string:
		items = x
	default:
		items = []string{fmt.Sprint(x)}
	}
	switch p.Type {
	case wps.TypeAttachment:
		var files []fileLink
		for _, it := range items {
			files = append(files, fileLink{ID: it, Name: it})
		}
		return "", files, ""
	case wps.TypeEntity:
		if links[p.EntityID] == nil {
			links[p.EntityID] = c.recordLabels(q, p)
		}
		for i, it := range items {
			if l, ok := links[p.EntityID][it]; ok {
				items[i] = l
			}
		}
	case wps.TypeSelect, wps.TypeMultiSelect:
		color := ""
		if len(items) > 0 {
			color = optionColor(p, items[0])
		}
		for i, it := range items {
			items[i] = valueText(q.words(), p, it)
		}
		return strings.Join(items, ", "), nil, color
	default:
		for i, it := range items {
			items[i] = valueText(q.words(), p, it)
		}
	}
	return strings.Join(items, ", "), nil, ""
}

// recordLabels labels the linked entity's records for an ENTITY column.
func (c *Console) recordLabels(q *req, p wps.Parameter) map[string]string {
	lp := p
	if len(p.ViewColumns) > 0 {
		lp.ShowColumns = p.ViewColumns
	}
	opts, _ := c.recordOptions(q, lp)
	out := map[string]string{}
	for _, o := range opts {
		out[o.Value] = o.Label
	}
	return out
}
