package wps

import (
	"encoding/json"
	"math/rand/v2"
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
	normalizeParams(&v, "parameters", params, map[string]Parameter{"keep": {}}, 0)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	if params[0].ID != "keep" || params[0].Name != "a" || params[0].Label != "a" || params[1].ID == "forged" || params[1].Index != 1 || params[1].OptionItems[0].ID == "" {
		t.Fatalf("normalized: %+v", params)
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
