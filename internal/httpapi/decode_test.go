package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWithoutIndexes(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a[0].b": "a.b", "a[1][2].b[3]": "a.b", "[0].a": ".a"} {
		if got := withoutIndexes(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestPathsFound(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"a":[{"ok":"x"},{"k\u0000":1}],"b":["y","z\u0000"]}`), &doc)
	if p, found := nulAt(doc); !found || p != `a[1].k\u0000` && p != "b[1]" {
		t.Errorf("nulAt: %q %v", p, found)
	}
	d := json.NewDecoder(strings.NewReader(`{"a":{"max":1e30,"maxLength":1e30},"n":[1,2]}`))
	d.UseNumber()
	_ = d.Decode(&doc)
	if p, found := numberAt(doc, "1e30", "a.maxLength"); !found || p != "a.maxLength" {
		t.Errorf("numberAt: %q %v", p, found)
	}
	if p, found := numberAt(doc, "2", ""); !found || p != "n[1]" {
		t.Errorf("numberAt: %q %v", p, found)
	}
}
