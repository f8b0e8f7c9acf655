package wps

import (
	"slices"
	"testing"
)

func TestSortParams(t *testing.T) {
	at := func(n int) *AdvancedOptions { return &AdvancedOptions{Sort: &n} }
	call := func(id string, sort ...string) APICallLink {
		return APICallLink{ID: id, APICall: &APICall{Sort: sort}}
	}
	params := []Parameter{
		{Name: "c", AdvancedOptions: at(2)},
		{Name: "none1"},
		{Name: "a", AdvancedOptions: at(1), APICalls: []APICallLink{call("x"), call("b", "b"), call("10", "10"), call("9", "9")}},
		{Name: "none2", AdvancedOptions: &AdvancedOptions{}},
	}
	sortParams(params)
	var names []string
	for i, p := range params {
		names = append(names, p.Name)
		if p.Index != i {
			t.Fatalf("%s has index %d at %d", p.Name, p.Index, i)
		}
	}
	if !slices.Equal(names, []string{"a", "c", "none1", "none2"}) {
		t.Fatalf("order %v", names)
	}
	var calls []string
	for _, l := range params[0].APICalls {
		calls = append(calls, l.ID)
	}
	if !slices.Equal(calls, []string{"9", "10", "b", "x"}) {
		t.Fatalf("calls %v", calls)
	}
}
