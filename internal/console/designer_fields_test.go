package console

import (
	"net/url"
	"testing"

	"wps/internal/wps"
)

// The service's field paths land at the designer's controls, the new
// rows' included; a path with no control goes to the nearest one, or to
// the field's or step's "Other settings".
func TestDesignerControlOf(t *testing.T) {
	for field, want := range map[string]string{
		"steps[0].escalations":                                                                   "s0.escalations",
		"steps[0].escalations[1].after":                                                          "s0.e1.after",
		"steps[2].escalations[0].policyName":                                                     "s2.e0.policy",
		"steps[0].parameters[1].apiCalls[0].apiCall.url":                                         "s0.p1.c0.url",
		"steps[0].parameters[1].apiCalls[2].apiCall.type":                                        "s0.p1.c2.method",
		"steps[0].parameters[1].apiCalls[0].apiCall.parameters[1]":                               "s0.p1.c0.params",
		"steps[0].parameters[1].apiCalls[0]":                                                     "s0.p1.c0.url",
		"steps[0].parameters[1].apiCalls[0].apiCall":                                             "s0.p1.c0.url",
		"steps[1].parameters[0].sheetData.cell":                                                  "s1.p0.sheetCell",
		"steps[1].parameters[0].sheetData.sheetApiId":                                            "s1.p0.sheetId",
		"steps[1].parameters[0].sheetData":                                                       "s1.p0.sheetId",
		"steps[0].parameters[0].readFromOtherMeasurementData.processId":                          "s0.p0.romProcess",
		"steps[0].parameters[0].readFromOtherMeasurementData.searchFieldId":                      "s0.p0.romSearch",
		"steps[0].parameters[0].readFromOtherMeasurementData.selectedFields[3].readParameterId":  "s0.p0.m3.read",
		"steps[0].parameters[0].readFromOtherMeasurementData.selectedFields[0].writeParameterId": "s0.p0.m0.write",
		"steps[0].parameters[0].advancedOptions.insertOnEntity":                                  "s0.p0.insertOn",
		"steps[0].parameters[0].advancedOptions.insertOnEntityMetadata[1]":                       "s0.p0.insertMeta",
		"steps[0].parameters[0].autoFillEntityRelation":                                          "s0.p0.autoFill",
		"steps[0].parameters[0].advancedOptions.currency":                                        "s0.p0.extra",
		"steps[0].parameters[0].parameters[1].apiCalls":                                          "s0.p0.columns",
		"steps[0].somethingNew":                                                                  "s0.extra",
	} {
		if got := controlOf(field); got != want {
			t.Errorf("%s: at %q, want %q", field, got, want)
		}
	}
}

// A field's options and table columns are edited as lines (value | label
// | colour, name | label | TYPE), its API calls as rows; what they do not
// show (an option's meta, a column's settings, a call's ids and sort) comes
// back from the form unchanged, for the lines that keep their value or name.
func TestDesignerKeepsWhatLinesHide(t *testing.T) {
	dec := 2
	p := wps.Parameter{Name: "items", Type: wps.TypeTable,
		OptionItems: []wps.OptionItem{{ID: "o1", Value: "ok", Label: "Fine", Meta: map[string]any{"code": "A1"}}, {Value: "bad"}},
		Parameters: []wps.Parameter{{Name: "qty", Label: "Qty", Type: wps.TypeNumber, IsRequired: true, Decimals: &dec},
			{Name: "note", Type: wps.TypeText, AdvancedOptions: &wps.AdvancedOptions{MaxLength: &dec}}},
		APICalls: []wps.APICallLink{{ID: "l1", APICall: &wps.APICall{ID: "a1", URL: "https://fx.example.com/a", Sort: []string{"2"}, Parameters: []any{"qty"}}}}}
	dp := designParamOf(0, 0, p, 1, map[string]string{})
	f := url.Values{"s0.p0.name": {"items"}, "s0.p0.type": {wps.TypeTable}, "s0.p0.keep": {dp.Keep},
		// an option relabelled, one added; a column retyped and relabelled, one removed
		"s0.p0.options": {"ok | Good\nbad\nnew | New"}, "s0.p0.columns": {"qty | Quantity | INT"},
		// the call's URL changed in its row
		"s0.p0.calls": {"1"}, "s0.p0.c0.url": {"https://fx.example.com/b"}, "s0.p0.c0.method": {"GET"}, "s0.p0.c0.params": {"qty, note"}}
	f.Set("s0.p0.type", wps.TypeSelect) // options are a SELECT's: the form sends a TABLE none
	got := parseParam(f, "s0.p0.", map[string]badText{})
	if o := got.OptionItems; len(o) != 3 || o[0].ID != "o1" || o[0].Label != "Good" || o[0].Meta["code"] != "A1" || o[2].Value != "new" || o[2].Meta != nil {
		t.Errorf("options: %+v", o)
	}
	if l := got.APICalls; len(l) != 1 || l[0].ID != "l1" || l[0].APICall.ID != "a1" || l[0].APICall.URL != "https://fx.example.com/b" || l[0].APICall.Type != "GET" ||
		len(l[0].APICall.Sort) != 1 || len(l[0].APICall.Parameters) != 2 {
		t.Errorf("calls: %+v %+v", l, l[0].APICall)
	}
	f.Set("s0.p0.type", wps.TypeTable)
	got = parseParam(f, "s0.p0.", map[string]badText{})
	if got.OptionItems != nil {
		t.Errorf("a TABLE sent options: %+v", got.OptionItems)
	}
	if c := got.Parameters; len(c) != 1 || c[0].Label != "Quantity" || c[0].Type != wps.TypeInt || !c[0].IsRequired || c[0].Decimals == nil || *c[0].Decimals != 2 {
		t.Errorf("columns: %+v", c)
	}
}
