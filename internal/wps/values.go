package wps

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Default length limits of text values, when advancedOptions set none.
const (
	DefaultTextMax     = 10_000
	DefaultLongTextMax = 1_000_000
)

// Refs answers whether linked things exist; the store implements it.
type Refs interface {
	RecordExists(entityID, recordID string) (bool, error)
	AttachmentExists(id string) (bool, error)
}

// valueCheck validates raw values against parameters.
type valueCheck struct {
	v    *Validator
	refs Refs
	err  error // a lookup failure (internal), reported once
}

// isNull reports an absent value of p: missing, null or "", and [] for
// a parameter that takes a list (MULTI_SELECT, TABLE). [] for any other
// is a value of the wrong type.
func isNull(p Parameter, raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	switch string(t) {
	case "", "null", `""`:
		return true
	case "[]":
		return p.Type == TypeMultiSelect || p.Type == TypeTable || p.Multiple()
	}
	return false
}

// value validates raw for p and returns its canonical form: string,
// json.Number, bool, []string (MULTI_SELECT) or []map[string]any (TABLE rows
// keyed by column id). ok is false when raw is invalid (the error is in c.v).
func (c *valueCheck) value(p Parameter, raw json.RawMessage, field string) (any, bool) {
	fail := func(format string, args ...any) (any, bool) {
		c.v.Add(field, format, args...)
		return nil, false
	}
	if isOutput(p) {
		return fail("is computed by the sheet and cannot be set")
	}
	if p.Multiple() {
		return c.list(p, raw, field)
	}
	switch p.Type {
	case TypeFormula:
		return fail("is computed and cannot be set")
	case TypeText, TypeLongText, TypeEmail, TypeURL, TypeSelect, TypeAttachment, TypeEntity, TypeDate, TypeDateTime:
		s, ok := plainString(raw)
		if !ok && json.Unmarshal(raw, &s) != nil {
			return fail("must be a string")
		}
		return c.str(p, s, field)
	case TypeInt, TypeNumber:
		t := bytes.TrimSpace(raw)
		// A valid JSON value that starts so is a number, and its text is
		// the json.Number.
		if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) || !json.Valid(t) {
			return fail("must be a number")
		}
		return c.number(p, string(t), field)
	case TypeBoolean:
		switch string(bytes.TrimSpace(raw)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
		return fail("must be true or false")
	case TypeMultiSelect:
		var list []string
		if json.Unmarshal(raw, &list) != nil {
			return fail("must be a list of strings")
		}
		seen := map[string]bool{}
		for i, s := range list {
			if !hasOption(p, s) {
				return fail("item %d: %q is not an option", i, s)
			}
			if seen[s] {
				return fail("item %d: %q is listed twice", i, s)
			}
			seen[s] = true
		}
		return list, true
	case TypeTable:
		var rows []map[string]json.RawMessage
		if json.Unmarshal(raw, &rows) != nil {
			return fail("must be a list of rows (objects keyed by column name)")
		}
		out := make([]map[string]any, 0, len(rows))
		ok := true
		for i, row := range rows {
			vals, rowOK := c.values(p.Parameters, row, fieldIndex(field, i), false)
			ok = ok && rowOK
			out = append(out, vals)
		}
		return out, ok
	}
	return fail("has an unknown type %q", p.Type)
}

// list validates the value of an isMultiple parameter: a list of values
// (one value alone stands for a list of one), each valid for p, as many as
// advancedOptions.min and max allow; attachments, records and options at
// most once each. Its canonical form is []string.
func (c *valueCheck) list(p Parameter, raw json.RawMessage, field string) (any, bool) {
	var items []json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &items) != nil {
			c.v.Add(field, "must be a list of values")
			return nil, false
		}
	} else {
		items = []json.RawMessage{raw}
	}
	a := p.AdvancedOptions
	if a.Min != nil && float64(len(items)) < *a.Min {
		c.v.Add(field, "must have at least %v values", *a.Min)
		return nil, false
	}
	if a.Max != nil && float64(len(items)) > *a.Max {
		c.v.Add(field, "must have at most %v values", *a.Max)
		return nil, false
	}
	one := p
	single := *a
	single.IsMultiple, single.Min, single.Max = false, nil, nil
	one.AdvancedOptions = &single
	out := make([]string, 0, len(items))
	seen := map[string]bool{}
	ok := true
	for i, item := range items {
		f := fieldIndex(field, i)
		val, good := c.value(one, item, f)
		s, _ := val.(string)
		if good && seen[s] && p.Type != TypeText && p.Type != TypeLongText {
			c.v.Add(f, "%q is listed twice", s)
			good = false
		}
		seen[s] = true
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// str validates a string value of a string-carried type.
func (c *valueCheck) str(p Parameter, s, field string) (any, bool) {
	fail := func(format string, args ...any) (any, bool) {
		c.v.Add(field, format, args...)
		return nil, false
	}
	if !utf8.ValidString(s) {
		return fail("must be valid UTF-8")
	}
	a := p.AdvancedOptions
	switch p.Type {
	case TypeText, TypeLongText:
		n := utf8.RuneCountInString(s)
		maxLen := DefaultTextMax
		if p.Type == TypeLongText {
			maxLen = DefaultLongTextMax
		}
		if a != nil && a.MaxLength != nil {
			maxLen = *a.MaxLength
		}
		if n > maxLen {
			return fail("must be at most %d characters", maxLen)
		}
		if a != nil && a.MinLength != nil && n < *a.MinLength {
			return fail("must be at least %d characters", *a.MinLength)
		}
	case TypeEmail:
		if !validEmail(s) {
			return fail("must be an email address")
		}
	case TypeURL:
		if !validHTTPURL(s) {
			return fail("must be an absolute http or https URL")
		}
	}
	if a != nil && (p.Type == TypeEmail || p.Type == TypeURL) { // their length options, as a TEXT's
		n := utf8.RuneCountInString(s)
		if a.MaxLength != nil && n > *a.MaxLength {
			return fail("must be at most %d characters", *a.MaxLength)
		}
		if a.MinLength != nil && n < *a.MinLength {
			return fail("must be at least %d characters", *a.MinLength)
		}
	}
	switch p.Type {
	case TypeSelect:
		if !hasOption(p, s) {
			return fail("%q is not an option", s)
		}
	case TypeAttachment:
		if s == "" || len(s) > 100 {
			return fail("must be an attachment id")
		}
		if c.refs != nil {
			ok, err := c.refs.AttachmentExists(s)
			if err != nil {
				c.err = err
				return nil, false
			}
			if !ok {
				return fail("no attachment %q (upload it with POST /v1/attachments)", s)
			}
		}
	case TypeEntity:
		if s == "" || len(s) > 100 {
			return fail("must be a record id of the linked entity")
		}
		if c.refs != nil {
			ok, err := c.refs.RecordExists(p.EntityID, s)
			if err != nil {
				c.err = err
				return nil, false
			}
			if !ok {
				return fail("no record %q in the linked entity", s)
			}
		}
	case TypeDate:
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return fail("must be a date as YYYY-MM-DD")
		}
		if !c.inTimeRange(p, t, field) {
			return nil, false
		}
		return t.Format(time.DateOnly), true
	case TypeDateTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fail("must be an RFC 3339 instant")
		}
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			return fail("must be an instant of the years 0000 to 9999 in UTC")
		}
		if !c.inTimeRange(p, t, field) {
			return nil, false
		}
		return At(t).UTC().Format(TimeFormat), true
	}
	return s, true
}

// inTimeRange applies advancedOptions.min/max to dates, as Unix milliseconds.
func (c *valueCheck) inTimeRange(p Parameter, t time.Time, field string) bool {
	a := p.AdvancedOptions
	ms := float64(t.UnixMilli())
	if a != nil && a.Min != nil && ms < *a.Min {
		c.v.Add(field, "must not be before %s", time.UnixMilli(int64(*a.Min)).UTC().Format(TimeFormat))
		return false
	}
	if a != nil && a.Max != nil && ms > *a.Max {
		c.v.Add(field, "must not be after %s", time.UnixMilli(int64(*a.Max)).UTC().Format(TimeFormat))
		return false
	}
	return true
}

// maxNumber is the largest magnitude of a number value: the largest finite
// double, as JSON readers (and the store's) take numbers as doubles.
const maxNumber = "1.7976931348623157e308"

var maxNumberDec = decimal.RequireFromString(maxNumber)

// inNumberRange reports a number a double can hold.
func inNumberRange(d decimal.Decimal) bool { return d.Abs().LessThanOrEqual(maxNumberDec) }

// number validates an INT or NUMBER given as decimal text.
func (c *valueCheck) number(p Parameter, text, field string) (any, bool) {
	d, err := decimal.NewFromString(text)
	if err != nil {
		c.v.Add(field, "must be a number")
		return nil, false
	}
	if !inNumberRange(d) {
		c.v.Add(field, "must be at most %s in magnitude", maxNumber)
		return nil, false
	}
	if p.Type == TypeInt {
		if !d.IsInteger() || d.Abs().GreaterThan(decimal.NewFromInt(1<<53)) {
			c.v.Add(field, "must be a whole number between -2^53 and 2^53")
			return nil, false
		}
	} else if places := decimalsOf(p); places >= 0 {
		d = d.RoundBank(places)
	}
	if a := p.AdvancedOptions; a != nil {
		if a.Min != nil && d.LessThan(decimal.NewFromFloat(*a.Min)) {
			c.v.Add(field, "must be at least %v", *a.Min)
			return nil, false
		}
		if a.Max != nil && d.GreaterThan(decimal.NewFromFloat(*a.Max)) {
			c.v.Add(field, "must be at most %v", *a.Max)
			return nil, false
		}
	}
	return json.Number(d.String()), true
}

func hasOption(p Parameter, s string) bool {
	return slices.ContainsFunc(p.OptionItems, func(o OptionItem) bool { return o.Value == s })
}

// values validates a map of values keyed by parameter name (or label)
// against params, returning them keyed by parameter id. With partial, only
// the given keys are checked (a merge); otherwise required parameters must
// have a value. Unknown keys are errors.
func (c *valueCheck) values(params []Parameter, in map[string]json.RawMessage, field string, partial bool) (map[string]any, bool) {
	out := map[string]any{}
	ok := true
	byKey := map[string]*Parameter{}
	for i := range params {
		byKey[params[i].Label] = &params[i]
	}
	for i := range params {
		byKey[params[i].Name] = &params[i]
	}
	for key, raw := range in {
		p := byKey[key]
		f := joinPath(field, key)
		if p == nil {
			c.v.Add(f, "is not a parameter")
			ok = false
			continue
		}
		if isNull(*p, raw) {
			if partial && p.IsRequired {
				c.v.Add(f, "is required; it cannot be emptied")
				ok = false
			}
			out[p.ID] = nil
			continue
		}
		val, good := c.value(*p, raw, f)
		ok = ok && good
		out[p.ID] = val
	}
	if !partial {
		for _, p := range params {
			if p.IsRequired && out[p.ID] == nil {
				c.v.Add(joinPath(field, p.Name), "is required")
				ok = false
			}
		}
	}
	return out, ok
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// itemStrings is the DataItem form of a canonical value: one string per
// item (several for MULTI_SELECT, none for TABLE and null).
func itemStrings(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []string{x}
	case json.Number:
		return []string{string(x)}
	case bool:
		if x {
			return []string{"true"}
		}
		return []string{"false"}
	case []string:
		return x
	case []any: // a stored MULTI_SELECT read back from JSON
		out := make([]string, 0, len(x))
		for _, s := range x {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// indexKey is how a value is indexed for filters and uniqueness: itself
// when short, else a hash of it (equality is all an index needs).
func indexKey(s string) string {
	if len(s) <= 200 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// convertValue carries a stored value over to a parameter whose type
// changed, the way a user would expect ("12" becomes 12, 12 becomes "12").
func convertValue(p Parameter, old any) (any, bool) {
	if old == nil {
		return nil, true
	}
	raw, _ := json.Marshal(old)
	candidates := []json.RawMessage{raw}
	switch x := old.(type) {
	case string:
		candidates = append(candidates, json.RawMessage(strings.TrimSpace(x)))
	case json.Number, bool, float64:
		s, _ := json.Marshal(strings.Trim(string(raw), `"`))
		candidates = append(candidates, s)
	}
	for _, cand := range candidates {
		if !json.Valid(cand) {
			continue
		}
		c := &valueCheck{v: &Validator{}}
		if val, ok := c.value(p, cand, p.Name); ok {
			return val, true
		}
	}
	return nil, false
}

// holdsValue reports whether vals (stored values, by parameter id) hold a
// value for the parameter id: its own, or a cell of a TABLE's rows.
func holdsValue(vals map[string]any, id string) bool {
	for k, v := range vals {
		if v == nil {
			continue
		}
		if k == id {
			return true
		}
		for _, row := range tableRows(v) {
			if holdsValue(row, id) {
				return true
			}
		}
	}
	return false
}

// tableRows reads a TABLE value's rows (cells by column id) in either form
// it takes: as validated ([]map[string]any) or as read back ([]any).
func tableRows(v any) []map[string]any {
	switch rows := v.(type) {
	case []map[string]any:
		return rows
	case []any:
		out := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			m, _ := r.(map[string]any)
			out = append(out, m)
		}
		return out
	}
	return nil
}

// plainString is a JSON string without escapes, as most values are,
// without decoding it (json.Unmarshal takes the others).
func plainString(raw json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", false
	}
	t = t[1 : len(t)-1]
	for _, b := range t {
		if b < 0x20 || b == '"' || b == '\\' || b >= 0x80 {
			return "", false // escapes, control characters, and UTF-8 (checked by json.Unmarshal)
		}
	}
	return string(t), true
}
