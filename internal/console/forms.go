package console

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"wps/internal/wps"
)

// field is one control of a generated form.
type field struct {
	Name, Label, Type          string
	Description, Tooltip, Hint string
	Placeholder                string
	Input                      string // the control: text, textarea, number, date, datetime-local, email, url, select, multiselect, boolean, file, entity, table, readonly
	Required, Multiple         bool
	ReadOnly                   bool
	Value                      string
	Values                     []string
	Display                    string
	Options                    []option
	Files                      []fileLink
	Columns                    []field // a TABLE's columns
	Rows                       []tableRow
	More                       bool // an ENTITY picker shows only the first records
	Legend                     bool // some options have a colour: a legend shows them
	Step, Min, Max             string
	Pattern                    string // a DATE's text input: how to write it (dd/MM/yyyy)
	Zone                       string // a DATETIME's input: the time zone it is in
	MinLength, MaxLength       int
	Error                      string
}

type option struct {
	Value, Label, Color string
	Selected            bool
}

type tableRow struct {
	Index int
	Cells []field
}

// readOnly parameters are computed by wps: FORMULA and sheet OUTPUT values.
func readOnly(p wps.Parameter) bool {
	return p.Type == wps.TypeFormula || wps.IsSheetOutput(p)
}

// pickerLimit is how many records an ENTITY picker lists.
const pickerLimit = 200

// fields builds a step's form controls, filled with the current values.
// inputTime writes a stored DATE or DATE_TIME value as the form's input
// takes it: a date in the parameter's layout, a time in the reader's
// zone; any other value as it is.
func (q *req) inputTime(p wps.Parameter, v string) string {
	switch p.Type {
	case wps.TypeDate:
		if d, err := time.Parse(time.DateOnly, v); err == nil {
			layout, _ := q.words().dateLayout(p)
			return d.Format(layout)
		}
	case wps.TypeDateTime:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t.In(q.loc).Format("2006-01-02T15:04")
		}
	}
	return v
}

func (c *Console) fields(q *req, params []wps.StepParameter, cur map[string]current) []field {
	var out []field
	for _, sp := range params {
		p := sp.Parameter
		if hiddenInUI(p) {
			continue
		}
		f := c.field(q, p)
		if v, ok := cur[p.ID]; ok {
			f.Display, f.Files = v.display, v.files
			for _, it := range v.items {
				f.Values = append(f.Values, it.Value)
			}
			if len(f.Values) > 0 {
				f.Value = f.Values[0]
			}
			if f.Multiple && f.Input != "select-multiple" && f.Input != "file" {
				f.Value = strings.Join(f.Values, "\n")
			}
			f.Value = q.inputTime(p, f.Value)
			for i := range f.Options {
				f.Options[i].Selected = slices.Contains(f.Values, f.Options[i].Value)
			}
			if f.Input == "table" {
				for i, it := range v.items {
					row := tableRow{Index: i}
					for _, col := range f.Columns {
						cell := col
						for _, ci := range it.DataItems {
							if ci.ParameterID == col.Hint || ci.Label == col.Label {
								cell.Value = ci.Value
								if d, err := time.Parse(time.DateOnly, ci.Value); err == nil && col.Type == wps.TypeDate && ci.Param != nil {
									layout, _ := q.words().dateLayout(*ci.Param)
									cell.Value = d.Format(layout)
								}
							}
						}
						row.Cells = append(row.Cells, cell)
					}
					f.Rows = append(f.Rows, row)
				}
			}
		}
		if f.Input == "table" && len(f.Rows) == 0 { // one empty row to start with
			f.Rows = []tableRow{{Index: 0, Cells: f.Columns}}
		}
		out = append(out, f)
	}
	return out
}

// field is one parameter's control, without a value.
func (c *Console) field(q *req, p wps.Parameter) field {
	f := field{Name: p.Name, Label: labelOf(p), Type: p.Type, Description: p.Description, Required: p.IsRequired}
	a := p.AdvancedOptions
	if a != nil {
		f.Tooltip, f.Placeholder, f.Multiple = a.Tooltip, a.Placeholder, a.IsMultiple
		if f.Description == "" {
			f.Description = a.Description
		}
		if a.Min != nil {
			f.Min = strconv.FormatFloat(*a.Min, 'f', -1, 64)
		}
		if a.Max != nil {
			f.Max = strconv.FormatFloat(*a.Max, 'f', -1, 64)
		}
		if a.MinLength != nil {
			f.MinLength = *a.MinLength
		}
		if a.MaxLength != nil {
			f.MaxLength = *a.MaxLength
		}
	}
	if readOnly(p) {
		f.Input, f.ReadOnly = "readonly", true
		return f
	}
	colors := optionColors(p)
	for i, o := range p.OptionItems {
		l := o.Label
		if l == "" {
			l = o.Value
		}
		f.Options = append(f.Options, option{Value: o.Value, Label: l, Color: colors[i]})
		f.Legend = f.Legend || colors[i] != ""
	}
	switch p.Type {
	case wps.TypeLongText:
		f.Input = "textarea"
	case wps.TypeInt:
		f.Input, f.Step = "number", "1"
	case wps.TypeNumber:
		f.Input, f.Step = "number", "any"
		if d := decimals(p); d >= 0 {
			f.Step = "0." + strings.Repeat("0", max(d-1, 0)) + "1"
			if d == 0 {
				f.Step = "1"
			}
		}
	case wps.TypeBoolean:
		f.Input = "boolean"
	case wps.TypeDate: // a text input in the parameter's dateFormat, else the language's
		f.Input = "text"
		_, f.Pattern = q.words().dateLayout(p)
		if f.Placeholder == "" {
			f.Placeholder = f.Pattern
		}
	case wps.TypeDateTime: // in the reader's time zone
		f.Input, f.Zone = "datetime-local", q.loc.String()
	case wps.TypeEmail:
		f.Input = "email"
	case wps.TypeURL:
		f.Input = "url"
	case wps.TypeSelect:
		f.Input = "select"
	case wps.TypeMultiSelect:
		f.Input = "multiselect"
	case wps.TypeAttachment:
		f.Input = "file"
	case wps.TypeEntity:
		f.Input = "select"
		f.Options, f.More = c.recordOptions(q, p)
	case wps.TypeTable:
		f.Input = "table"
		for _, col := range p.Parameters {
			cf := c.field(q, col)
			cf.Hint = col.ID
			f.Columns = append(f.Columns, cf)
		}
	default:
		f.Input = "text"
	}
	if f.Multiple && f.Input == "select" {
		f.Input = "select-multiple"
	} else if f.Multiple && f.Input == "text" {
		f.Input = "textarea" // one value per line
	}
	return f
}

func decimals(p wps.Parameter) int {
	if p.Decimals != nil {
		return *p.Decimals
	}
	if p.AdvancedOptions != nil && p.AdvancedOptions.Decimals != nil {
		return *p.AdvancedOptions.Decimals
	}
	return -1
}

// recordOptions lists the linked entity's records the user may read, each
// labelled by the parameter's showColumns (else the record's first values).
// A page reads each entity's records once, however many fields link to it.
func (c *Console) recordOptions(q *req, p wps.Parameter) ([]option, bool) {
	key := p.EntityID + "\x00" + strings.Join(p.ShowColumns, "\x00")
	if r, ok := q.records[key]; ok {
		return r.options, r.more
	}
	opts, more := c.readRecordOptions(q, p)
	if q.records == nil {
		q.records = map[string]recordOptions{}
	}
	q.records[key] = recordOptions{opts, more}
	return opts, more
}

type recordOptions struct {
	options []option
	more    bool
}

func (c *Console) readRecordOptions(q *req, p wps.Parameter) ([]option, bool) {
	list, total, err := c.svc.ListRecords(q.ctx(), q.p, p.EntityID, wps.Page{Page: 1, PerPage: pickerLimit}, nil)
	if err != nil {
		return nil, false
	}
	e, err := c.svc.GetEntity(q.ctx(), q.p, p.EntityID)
	if err != nil {
		return nil, false
	}
	cols := labelColumns(e, p.ShowColumns)
	var out []option
	for _, r := range list {
		label := recordText(q.words(), e, r, cols)
		if label == "" {
			label = r.ID
		}
		out = append(out, option{Value: r.ID, Label: label})
	}
	return out, total > len(list)
}
