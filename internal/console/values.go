package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"wps/internal/lang"
	"wps/internal/wps"
)

// How the console shows a stored value, in words people read (semantics
// §14): an option by its label, a boolean as Yes or No, a file by its name
// and size, a linked record by its columns, anything else as its
// displayValue (number and date formats).

// words are how a page writes values: its language and time zone.
type words struct {
	*lang.Printer
	loc *time.Location
}

// words are the request's language and time zone.
func (q *req) words() words { return words{q.lang, q.loc} }

// dateLayout is how a DATE or DATETIME value of p is written: the
// parameter's dateFormat (dd, MM, yyyy, HH, mm, ss), else the language's.
func (w words) dateLayout(p wps.Parameter) (layout, pattern string) {
	if a := p.AdvancedOptions; a != nil && a.DateFormat != "" {
		if layout, ok := wps.DateLayout(a.DateFormat, p.Type == wps.TypeDateTime); ok {
			return layout, a.DateFormat
		}
	}
	return w.DateLayout(), w.DatePattern()
}

// valueText is one stored value of p as people read it: dates in the
// parameter's dateFormat, else the language's; instants in the reader's
// time zone.
func valueText(w words, p wps.Parameter, v string) string {
	switch p.Type {
	case wps.TypeSelect, wps.TypeMultiSelect:
		for _, o := range p.OptionItems {
			if o.Value == v && o.Label != "" {
				return o.Label
			}
		}
		return v
	case wps.TypeBoolean:
		switch v {
		case "true":
			return w.T("field.yes")
		case "false":
			return w.T("field.no")
		}
		return v
	case wps.TypeDate:
		if d, err := time.Parse(time.DateOnly, v); err == nil {
			layout, _ := w.dateLayout(p)
			return d.Format(layout)
		}
		return v
	case wps.TypeDateTime:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return v
		}
		if a := p.AdvancedOptions; a != nil && a.DateFormat != "" {
			layout, _ := w.dateLayout(p) // a dateFormat that says no date: the language's
			return t.In(w.loc).Format(layout)
		}
		return w.When(t, w.loc)
	}
	return wps.DisplayValue(p, v)
}

// palette is the console's own colours for options, used unless the
// parameter's advancedOptions.hasCustomColor says to use the options'
// own: dark enough for a dot beside text on white (3:1 or more).
var palette = []string{"#1f6feb", "#b54708", "#067647", "#b42318", "#6941c6", "#0e7490", "#c11574", "#475467"}

// optionColors are the colours of p's options in order: the options' own
// when advancedOptions.hasCustomColor is true (none for an option without
// one), else the palette's.
func optionColors(p wps.Parameter) []string {
	custom := p.AdvancedOptions != nil && p.AdvancedOptions.HasCustomColor
	out := make([]string, len(p.OptionItems))
	for i, o := range p.OptionItems {
		if !custom {
			out[i] = palette[i%len(palette)]
		} else if c, ok := parseHex(o.Color); ok {
			out[i] = "#" + c.hex()
		}
	}
	return out
}

// optionColor is the colour of the option with value v, or "".
func optionColor(p wps.Parameter, v string) string {
	cols := optionColors(p)
	for i, o := range p.OptionItems {
		if o.Value == v {
			return cols[i]
		}
	}
	return ""
}

// byteSize is a file's size as people read it: 512 B, 12.5 KB, 3.1 MB.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}

// nameFiles gives the file links of lists their names and sizes, from the
// attachments the user may download (one lookup for the page); a file the
// user may not download keeps its id and has no size.
func (c *Console) nameFiles(q *req, lists ...[]fileLink) {
	var ids []string
	for _, l := range lists {
		for _, f := range l {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	found, err := c.svc.DescribeAttachments(q.ctx(), q.p, ids)
	if err != nil {
		return
	}
	for _, l := range lists {
		for i := range l {
			if a, ok := found[l[i].ID]; ok {
				l[i].Name, l[i].Size = a.Filename, byteSize(a.Size)
			}
		}
	}
}

// recordLabel is a linked record as the reader sees it: the values of the
// parameter's viewColumns (else showColumns, else the record's first two
// values) joined by " · ". A reader who may not read the entity's records
// gets false (the page then shows the id alone).
func (c *Console) recordLabel(q *req, p wps.Parameter, id string) (string, bool) {
	key := p.EntityID + "\x00" + id
	if l, ok := q.labels[key]; ok {
		return l, l != ""
	}
	if q.labels == nil {
		q.labels = map[string]string{}
	}
	q.labels[key] = ""
	e, err := c.svc.RecordsEntity(q.ctx(), q.p, p.EntityID)
	if err != nil {
		return "", false
	}
	rec, err := c.svc.GetRecord(q.ctx(), q.p, p.EntityID, id)
	if err != nil {
		return "", false
	}
	l := recordText(q.words(), e, rec, labelColumns(e, p.ViewColumns, p.ShowColumns))
	if l == "" {
		l = id
	}
	q.labels[key] = l
	return l, true
}

// labelColumns are the columns that name a linked record: the first of
// lists that is not empty (a parameter's viewColumns, showColumns), else
// the entity's first two parameters.
func labelColumns(e wps.Entity, lists ...[]string) []string {
	for _, l := range lists {
		if len(l) > 0 {
			return l
		}
	}
	var cols []string
	for i, ep := range e.Parameters {
		if i < 2 {
			cols = append(cols, ep.Name)
		}
	}
	return cols
}

// recordText names record r by the values of cols, as people read them,
// joined by " · "; "" when it has none of them.
func recordText(w words, e wps.Entity, r wps.Record, cols []string) string {
	var parts []string
	for _, col := range cols {
		ep, ok := e.ParamByName(col)
		if v, has := r.Values[col]; ok && has && v != nil {
			parts = append(parts, valueText(w, ep, fmt.Sprint(v)))
		}
	}
	return strings.Join(parts, " · ")
}
