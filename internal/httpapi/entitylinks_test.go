package httpapi_test

import (
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// autoFillEntityRelation fills a parameter from the record an ENTITY
// parameter links to; insertOnEntityMetadata and hasMetadata write facts
// of the consensus and options' meta with the record a step writes.
func TestEntityLinks(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		asset := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Asset",
			"p": []map[string]any{{"n": "name", "t": "TEXT"}, {"n": "location", "t": "TEXT"}, {"n": "ratingCode", "t": "TEXT"}}}, 201).JSON()
		rec := env.Call(post, "/v1/entities/"+asset["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"name": "P-1", "location": "Hall 3", "ratingCode": "R7"}}, 201).JSON()
		log := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Log", "p": []map[string]any{
			{"n": "result", "t": "TEXT"}, {"n": "measurementId", "t": "TEXT"}, {"n": "actionId", "t": "TEXT"}, {"n": "username", "t": "TEXT"}, {"n": "grade", "t": "TEXT"}}}, 201).JSON()
		step := func(extra ...map[string]any) map[string]any {
			params := []map[string]any{
				{"name": "asset", "type": "ENTITY", "entityId": "Asset"},
				{"name": "location", "type": "TEXT", "autoFillEntityRelation": "asset"},
				{"name": "rating", "type": "TEXT", "autoFillEntityRelation": "asset", "advancedOptions": map[string]any{"entityParameterId": "ratingCode"}},
				{"name": "result", "type": "SELECT", "optionItems": []map[string]any{{"value": "pass", "meta": map[string]any{"grade": "A"}}, {"value": "fail"}},
					"advancedOptions": map[string]any{"hasMetadata": true, "insertOnEntity": "Log", "insertOnEntityMetadata": []string{"measurementId", "actionId", "username"}}},
			}
			params = append(params, extra...)
			return map[string]any{"label": "Check", "policyNames": []string{"Admins"}, "parameters": params}
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []any{
			step(map[string]any{"name": "x", "type": "TEXT", "autoFillEntityRelation": "location"})}}}), 422, "steps[0].parameters[4].autoFillEntityRelation")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []any{
			step(map[string]any{"name": "y", "type": "TEXT", "autoFillEntityRelation": "asset"})}}}), 422, "steps[0].parameters[4].autoFillEntityRelation")
		bad := step()
		bad["parameters"].([]map[string]any)[3]["advancedOptions"].(map[string]any)["insertOnEntityMetadata"] = []string{"bogus"}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []any{bad}}}),
			422, "steps[0].parameters[3].advancedOptions.insertOnEntityMetadata[0]")

		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Walk", "steps": []any{step()}}, 201).JSON()
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"asset": rec["id"], "result": "pass"}}, 201).JSON()
		got := actionValues(m)
		if got["location"] != "Hall 3" || got["rating"] != "R7" {
			t.Fatalf("filled: %v", got)
		}
		logs := env.Call(get, "/v1/entities/"+log["id"].(string)+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(logs) != 1 {
			t.Fatalf("log records: %v", logs)
		}
		vals := logs[0].(map[string]any)["values"].(map[string]any)
		if vals["result"] != "pass" || vals["measurementId"] != m["id"] || vals["actionId"] != m["actionId"] || vals["username"] == nil || vals["grade"] != "A" {
			t.Fatalf("written record: %v", vals)
		}
	})
}
