package httpapi_test

import (
	"fmt"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The fields a client built against interface.md reads, filled as their
// names say (issue: every field does what its name says).
func TestFilledFields(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Writers", "roles": []string{"WRITER"}, "functions": []string{"action:write"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Approvers", "roles": []string{"APPROVER"}, "functions": []string{"action:approve"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Vendor", "steps": []map[string]any{
			{"label": "Register", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "taxId", "type": "TEXT"}}}}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "steps": []map[string]any{
			{"label": "Fill", "policyNames": []string{"Admins", "Writers", "Approvers"}, "parameters": []map[string]any{
				{"name": "kind", "type": "SELECT", "optionItems": []map[string]any{{"value": "a"}}, "advancedOptions": map[string]any{"tooltip": "pick"}},
				{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor", "searchFieldId": "taxId"}},
				{"name": "lines", "type": "TABLE", "parameters": []map[string]any{{"name": "item", "type": "TEXT"}}},
			}},
		}}, 201).JSON()
		step := p["steps"].([]any)[0].(map[string]any)
		params := step["parameters"].([]any)
		kind, vendor, lines := params[0].(map[string]any), params[1].(map[string]any), params[2].(map[string]any)
		for _, prm := range params {
			prm := prm.(map[string]any)
			if prm["parameterId"] != prm["id"] || prm["stepId"] != step["id"] {
				t.Fatalf("parameter: %v", prm)
			}
		}
		ao := kind["advancedOptions"].(map[string]any)
		opt := kind["optionItems"].([]any)[0].(map[string]any)
		if ao["parameterId"] != kind["id"] || ao["createdAt"] == nil || ao["updatedAt"] == nil || opt["parameterId"] != kind["id"] || opt["persisted"] != true || opt["createdAt"] == nil {
			t.Fatalf("parts of kind: %v / %v", ao, opt)
		}
		rf := vendor["readFromOtherMeasurementData"].(map[string]any)
		if rf["parameterId"] != vendor["id"] || vendor["readFromOtherMeasurementDataId"] != rf["id"] || rf["id"] == "" {
			t.Fatalf("vendor: %v", vendor)
		}
		col := lines["parameters"].([]any)[0].(map[string]any)
		if col["stepId"] != step["id"] || col["parameterId"] != col["id"] {
			t.Fatalf("column: %v", col)
		}

		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"kind": "a", "lines": []map[string]any{{"item": "bolt"}}}}, 201).JSON()
		action := m["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)
		for _, d := range action["data"].([]any) {
			item := d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)
			param := item["param"].(map[string]any)
			if param["name"] == "lines" {
				cols, _ := param["parameters"].([]any)
				if len(cols) != 1 || cols[0].(map[string]any)["stepId"] != step["id"] {
					t.Fatalf("a TABLE's param has no columns: %v", param)
				}
			}
		}
		perms := map[string]string{}
		for _, c := range action["counterpartsPoliciesRoles"].([]any) {
			c := c.(map[string]any)
			perms[c["name"].(string)] = c["data"].([]any)[0].(map[string]any)["permission"].(string)
		}
		if perms["Admins"] != "APPROVE" || perms["Writers"] != "WRITE" || perms["Approvers"] != "APPROVE" {
			t.Fatalf("permissions: %v", perms)
		}

		// An entity's parameters name themselves as the entity's; a part
		// keeps its times while unchanged.
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Plant", "parameters": []map[string]any{
			{"name": "code", "type": "TEXT", "advancedOptions": map[string]any{"tooltip": "the code"}}}}, 201).JSON()
		code := e["parameters"].([]any)[0].(map[string]any)
		cao := code["advancedOptions"].(map[string]any)
		if cao["entityParameterId"] != code["id"] {
			t.Fatalf("entity parameter: %v", code)
		}
		env.Clock.Advance(60e9)
		e2 := env.Call(patch, "/v1/entities/"+e["id"].(string), env.AdminKey, map[string]any{"parameters": []map[string]any{
			{"id": code["id"], "name": "code", "type": "TEXT", "advancedOptions": map[string]any{"tooltip": "the code"}},
			{"name": "city", "type": "TEXT", "advancedOptions": map[string]any{"tooltip": "where"}}}}, 200).JSON()
		ps := e2["parameters"].([]any)
		kept, added := ps[0].(map[string]any)["advancedOptions"].(map[string]any), ps[1].(map[string]any)["advancedOptions"].(map[string]any)
		if kept["updatedAt"] != cao["updatedAt"] || kept["createdAt"] != cao["createdAt"] || added["createdAt"] == cao["createdAt"] {
			t.Fatalf("times: before %v, kept %v, added %v", cao, kept, added)
		}
	})
}

// advancedOptions.sort orders a step's parameters in every answer.
func TestParameterSort(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Sorted", "steps": []map[string]any{
		{"label": "S", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
			{"name": "third", "type": "TEXT"},
			{"name": "second", "type": "TEXT", "advancedOptions": map[string]any{"sort": 2}},
			{"name": "first", "type": "TEXT", "advancedOptions": map[string]any{"sort": 1}}}}}}, 201).JSON()
	m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
		"parameters": map[string]any{"first": "1", "second": "2", "third": "3"}}, 201).JSON()
	var order []string
	for _, prm := range m["process"].(map[string]any)["steps"].([]any)[0].(map[string]any)["parameters"].([]any) {
		order = append(order, prm.(map[string]any)["name"].(string))
	}
	var data []string
	for _, d := range m["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)["data"].([]any) {
		data = append(data, d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)["value"].(string))
	}
	if fmt.Sprint(order) != "[first second third]" || fmt.Sprint(data) != "[1 2 3]" {
		t.Fatalf("order %v, data %v", order, data)
	}
}
