package httpapi

import "github.com/danielgtaylor/huma/v2"

// requestExamples are example bodies of the main operations, by operation
// id, shown in the document (the lint checks each against its schema).
// The ids they hold are placeholders of the right shape.
var requestExamples = map[string]any{
	"createPolicy": map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"},
		"functions": []string{"action:write", "measurement:read"}},
	"createInvite": map[string]any{"email": "ana@example.com", "name": "Ana", "roles": []string{"INSPECTOR"}},
	"createEntity": map[string]any{"name": "Equipment", "parameters": []any{
		map[string]any{"name": "tag", "type": "TEXT", "isRequired": true, "isUnique": true, "advancedOptions": map[string]any{"maxLength": 20}},
		map[string]any{"name": "kind", "type": "SELECT", "optionItems": []any{map[string]any{"value": "pump"}, map[string]any{"value": "valve"}}},
		map[string]any{"name": "pressure", "type": "NUMBER", "decimals": 2, "advancedOptions": map[string]any{"min": 0, "max": 400}},
	}},
	"createRecord": map[string]any{"values": map[string]any{"tag": "P-101", "kind": "pump", "pressure": 12.34}},
	"createProcess": map[string]any{"name": "Pump inspection", "code": "PUMP", "steps": []any{
		map[string]any{"label": "Inspect", "policyNames": []string{"Inspector"}, "deadline": "24", "deadlineType": "HOURS",
			"parameters": []any{
				map[string]any{"name": "pressure", "type": "NUMBER", "decimals": 1, "isRequired": true},
				map[string]any{"name": "ok", "type": "BOOLEAN"},
			}},
		map[string]any{"label": "Approve", "policyNames": []string{"Supervisor"}},
	}},
	"createMeasurement": map[string]any{"processId": "0193f1c2-7a10-7c3e-9a51-2f4c8e0b6d11"},
	"createSimplifiedMeasurement": map[string]any{"processUuid": "0193f1c2-7a10-7c3e-9a51-2f4c8e0b6d11",
		"parameters": map[string]any{"pressure": 12.5, "ok": true}},
	"createAction": map[string]any{"stepId": "0193f1c2-7a11-7d02-8b6e-5a9d3c1f0e22", "type": "WRITE_DATA",
		"parameters": map[string]any{"pressure": 12.5, "ok": true}, "observation": "Seals replaced"},
	"createWebhook": map[string]any{"url": "https://hooks.example.com/wps", "events": []string{"measurement.approved"}},
}

// addExamples puts requestExamples on their operations' JSON bodies.
func addExamples(oapi *huma.OpenAPI) {
	for _, item := range oapi.Paths {
		for _, o := range []*huma.Operation{item.Post, item.Put, item.Patch} {
			if o == nil || o.RequestBody == nil || requestExamples[o.OperationID] == nil {
				continue
			}
			if mt := o.RequestBody.Content["application/json"]; mt != nil {
				mt.Examples = map[string]*huma.Example{"example": {Value: requestExamples[o.OperationID]}}
			}
		}
	}
}
