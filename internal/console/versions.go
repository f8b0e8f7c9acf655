package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// Two versions of a process side by side: the steps and parameters added,
// removed and changed, field by field. Steps and parameters are matched
// by id, which carries over between versions.

// itemDiff is one step or parameter that differs between two versions.
type itemDiff struct {
	Kind   string // added, removed, changed
	Label  string
	Fields []fieldDiff
	Params []itemDiff // a step's parameters that differ
}

// fieldDiff is one field of a step or parameter, before and after.
type fieldDiff struct {
	Field, Before, After string
}

// compareSteps lists what differs from steps a to steps b, in b's order
// then the removed ones.
func compareSteps(a, b []wps.Step) []itemDiff {
	labels := map[string]string{}
	for _, st := range append(slices.Clone(b), a...) {
		if _, ok := labels[st.ID]; !ok {
			labels[st.ID] = st.Label
		}
	}
	byID := func(steps []wps.Step, id string) *wps.Step {
		for i := range steps {
			if steps[i].ID == id {
				return &steps[i]
			}
		}
		return nil
	}
	var out []itemDiff
	for _, st := range b {
		old := byID(a, st.ID)
		if old == nil {
			out = append(out, itemDiff{Kind: "added", Label: st.Label, Fields: fieldsOf(nil, st, labels), Params: compareParams(nil, st.Parameters, labels)})
			continue
		}
		d := itemDiff{Kind: "changed", Label: st.Label, Fields: fieldsOf(*old, st, labels), Params: compareParams(old.Parameters, st.Parameters, labels)}
		if len(d.Fields) > 0 || len(d.Params) > 0 {
			out = append(out, d)
		}
	}
	for _, st := range a {
		if byID(b, st.ID) == nil {
			out = append(out, itemDiff{Kind: "removed", Label: st.Label})
		}
	}
	return out
}

func compareParams(a, b []wps.Parameter, labels map[string]string) []itemDiff {
	name := func(p wps.Parameter) string {
		if p.Label != "" && p.Label != p.Name {
			return p.Label + " (" + p.Name + ")"
		}
		return p.Name
	}
	var out []itemDiff
	for _, p := range b {
		i := slices.IndexFunc(a, func(o wps.Parameter) bool { return o.ID == p.ID })
		if i < 0 {
			out = append(out, itemDiff{Kind: "added", Label: name(p), Fields: fieldsOf(nil, p, labels)})
		} else if f := fieldsOf(a[i], p, labels); len(f) > 0 {
			out = append(out, itemDiff{Kind: "changed", Label: name(p), Fields: f})
		}
	}
	for _, p := range a {
		if !slices.ContainsFunc(b, func(n wps.Parameter) bool { return n.ID == p.ID }) {
			out = append(out, itemDiff{Kind: "removed", Label: name(p)})
		}
	}
	return out
}

// fieldsOf compares two definitions field by field as the API shows them
// (a nil before: every field set in after), leaving out ids, edit times
// and a step's parameters (compared on their own). Step ids in values
// show as the steps' labels.
func fieldsOf(before, after any, labels map[string]string) []fieldDiff {
	fields := func(v any) map[string]any {
		m := map[string]any{}
		if v == nil {
			return m
		}
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &m)
		for _, k := range []string{"id", "index", "updatedAt", "createdAt"} { // index: the order shows it
			delete(m, k)
		}
		if _, step := v.(wps.Step); step {
			delete(m, "parameters") // compared one by one (a table's columns: as one field)
		}
		return m
	}
	a, b := fields(before), fields(after)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []fieldDiff
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, y := shown(a[k], labels), shown(b[k], labels)
		if x != y {
			out = append(out, fieldDiff{Field: k, Before: x, After: y})
		}
	}
	return out
}

// shown is a field's value as the comparison shows it: "" for empty
// values, text as is, the rest as JSON; step ids as their labels.
func shown(v any, labels map[string]string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		if l, ok := labels[x]; ok {
			return l
		}
		return x
	case bool:
		if !x {
			return ""
		}
	case []any:
		if len(x) == 0 {
			return ""
		}
	case map[string]any:
		if len(x) == 0 {
			return ""
		}
	}
	b, _ := json.Marshal(v)
	s := string(b)
	for id, l := range labels {
		s = strings.ReplaceAll(s, `"`+id+`"`, `"`+l+`"`)
	}
	return s
}

type compareData struct {
	P        wps.Process
	Versions []wps.ProcessVersion
	A, B     int
	Diff     []itemDiff
}

// compare shows two versions of a process side by side (?a=&b=; by
// default the latest and the one before).
func (c *Console) compare(q *req) error {
	id := q.r.PathValue("id")
	latest, err := c.svc.GetProcess(q.ctx(), q.p, id, 0)
	if err != nil {
		return err
	}
	versions, err := c.svc.ListProcessVersions(q.ctx(), q.p, id)
	if err != nil {
		return err
	}
	d := compareData{P: latest, Versions: versions, A: max(latest.Version-1, 1), B: latest.Version}
	if a, err := strconv.Atoi(q.r.URL.Query().Get("a")); err == nil && a >= 1 && a <= latest.Version {
		d.A = a
	}
	if b, err := strconv.Atoi(q.r.URL.Query().Get("b")); err == nil && b >= 1 && b <= latest.Version {
		d.B = b
	}
	va, err := c.svc.GetProcess(q.ctx(), q.p, id, d.A)
	if err != nil {
		return err
	}
	vb, err := c.svc.GetProcess(q.ctx(), q.p, id, d.B)
	if err != nil {
		return err
	}
	d.Diff = compareSteps(va.Steps, vb.Steps)
	c.render(q, http.StatusOK, "compare", latest.Label, d)
	return nil
}
