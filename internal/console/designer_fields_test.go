package console

import (
	"testing"
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
