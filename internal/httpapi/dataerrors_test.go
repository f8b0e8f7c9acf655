package httpapi_test

import (
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Data errors name what is wrong: each missing required parameter, the
// parameter a client tried to empty, a list sent for a single value, and a
// step by its label.
func TestDataErrors(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Inspection", "steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "serial", "type": "TEXT", "isRequired": true},
				{"name": "reading", "type": "NUMBER", "isRequired": true},
				{"name": "count", "type": "INT"},
				{"name": "tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "a"}}},
				{"name": "note", "type": "TEXT"}}},
			{"label": "Close", "policyNames": []string{"Admins"}},
		}}, 201).JSON()
		simplified := func(params map[string]any) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey, Body: map[string]any{"processUuid": p["id"], "parameters": params}})
		}
		count := func() float64 {
			return env.Call(get, "/v1/measurements", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64)
		}

		t.Run("consensus without required values names each one", func(t *testing.T) {
			pr := tu.Problem(t, simplified(map[string]any{"note": "x"}), 409, "parameters.serial")
			tu.Problem(t, simplified(map[string]any{"note": "x"}), 409, "parameters.reading")
			if d := pr["detail"].(string); !strings.Contains(d, `step "Inspect" (`) || !strings.Contains(d, "serial, reading") {
				t.Fatalf("detail: %s", d)
			}
		})
		t.Run("null or empty for a required parameter is refused", func(t *testing.T) {
			tu.Problem(t, simplified(map[string]any{"serial": nil, "reading": 1}), 422, "parameters.serial")
			tu.Problem(t, simplified(map[string]any{"serial": "", "reading": 1}), 422, "parameters.serial")
		})
		t.Run("a list for a single value is refused; for a list it is empty", func(t *testing.T) {
			tu.Problem(t, simplified(map[string]any{"serial": "S", "reading": 1, "count": []any{}}), 422, "parameters.count")
			tu.Problem(t, simplified(map[string]any{"serial": "S", "reading": []any{}}), 422, "parameters.reading")
			if n := count(); n != 0 {
				t.Fatalf("%v measurements after refusals", n)
			}
			env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "S", "reading": 1, "tags": []any{}}}, 201)
		})
		t.Run("a step is named by its label and id", func(t *testing.T) {
			m := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()
			closeID := m["process"].(map[string]any)["steps"].([]any)[1].(map[string]any)["id"].(string)
			pr := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + m["id"].(string) + "/actions", Key: env.AdminKey,
				Body: map[string]any{"stepId": closeID, "type": "APPROVAL"}}), 409, "")
			if d := pr["detail"].(string); !strings.Contains(d, `step "Close" (`+closeID+`) is WAITING, not open`) {
				t.Fatalf("detail: %s", d)
			}
		})
	})
}
