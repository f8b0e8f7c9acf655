package wps

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func intp(i int) *int { return &i }

func TestNumberRounding(t *testing.T) {
	p := Parameter{Name: "n", Type: TypeNumber, Decimals: intp(1)}
	for in, want := range map[string]string{"0.25": "0.2", "0.35": "0.4", "1": "1", "-0.05": "0", "123456789012345678901234.5678": "123456789012345678901234.6"} {
		c := &valueCheck{v: &Validator{}}
		got, ok := c.value(p, json.RawMessage(in), "n")
		if !ok || string(got.(json.Number)) != want {
			t.Errorf("%s → %v (%v), want %s", in, got, ok, want)
		}
	}
}

func TestConvertValue(t *testing.T) {
	cases := []struct {
		to   string
		old  any
		want any
		ok   bool
	}{
		{TypeInt, "12", json.Number("12"), true},
		{TypeInt, "12.5", nil, false},
		{TypeText, json.Number("3.5"), "3.5", true},
		{TypeBoolean, "true", true, true},
		{TypeText, true, "true", true},
		{TypeDate, "2026-01-02", "2026-01-02", true},
		{TypeNumber, "abc", nil, false},
	}
	for _, c := range cases {
		got, ok := convertValue(Parameter{Name: "x", Type: c.to}, c.old)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%v → %s: %v %v", c.old, c.to, got, ok)
		}
	}
}

func TestIndexKey(t *testing.T) {
	if indexKey("short") != "short" {
		t.Fatal("short values are indexed as they are")
	}
	long := strings.Repeat("x", 300)
	if k := indexKey(long); len(k) != 71 || k == indexKey(long+"y") {
		t.Fatalf("long values are indexed by hash: %q", k)
	}
}

func TestNormalizeParams(t *testing.T) {
	params := []Parameter{{ID: "keep", Name: " a ", Type: TypeText}, {ID: "forged", Name: "b", Type: TypeSelect, OptionItems: []OptionItem{{Value: "x"}}}}
	var v Validator
	ids := newParamIDs(map[string]Parameter{"keep": {}})
	ids.keep(params)
	normalizeParams(&v, "parameters", params, ids, []string{""}, 0)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	if params[0].ID != "keep" || params[0].Name != "a" || params[0].Label != "a" || params[1].ID == "forged" || params[1].Index != 1 || params[1].OptionItems[0].ID == "" {
		t.Fatalf("normalized: %+v", params)
	}
}

// A parameter keeps its id while it is the same parameter: sent with it,
// or sent without it by the name of one the definition has (now, and not
// kept by another, or before it was removed) in the same place.
func TestParamIDs(t *testing.T) {
	current := []Parameter{{ID: "a", Name: "a", Type: TypeText}, {ID: "t", Name: "t", Type: TypeTable, Parameters: []Parameter{{ID: "c", Name: "c", Type: TypeText}}}}
	ids := newParamIDs(paramsByID(current, nil))
	ids.names(current, "")
	ids.name("", "gone", "g")       // removed earlier
	ids.name("t", "col", "tc")      // a column removed earlier
	ids.name("", "a", "older")      // a name taken by a current one first
	ids.name("other", "x", "other") // another place
	params := []Parameter{
		{Name: "a", Type: TypeText},          // a's name, but a is kept below: a new id
		{ID: "a", Name: "b", Type: TypeText}, // a, renamed
		{ID: "forged", Name: "gone", Type: TypeText},
		{Name: "x", Type: TypeText},
		{Name: "t", Type: TypeTable, Parameters: []Parameter{{Name: "c", Type: TypeText}, {Name: "col", Type: TypeText}}},
		{Name: "gone", Type: TypeText}, // the name twice: the id once
	}
	ids.keep(params)
	var v Validator
	normalizeParams(&v, "parameters", params, ids, []string{""}, 0)
	got := []string{params[1].ID, params[2].ID, params[4].ID, params[4].Parameters[0].ID, params[4].Parameters[1].ID}
	if !slices.Equal(got, []string{"a", "g", "t", "c", "tc"}) {
		t.Fatalf("ids: %v", got)
	}
	for _, i := range []int{0, 3, 5} {
		if slices.Contains([]string{"a", "g", "t", "c", "tc", "older", "other", "forged", ""}, params[i].ID) {
			t.Fatalf("parameters[%d] took %q", i, params[i].ID)
		}
	}
}

func TestTimeMarshalJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		tm := time.UnixMilli(r.Int64N(400_000_000_000_000) - 100_000_000_000_000).In(time.FixedZone("x", 3600))
		got, _ := Time{tm}.MarshalJSON()
		want := `"` + tm.UTC().Format(TimeFormat) + `"`
		if string(got) != want {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
	}
}
