package httpapi_test

import (
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestStepEscalations: a step's escalations are checked at save (422
// naming the field, nothing written), echoed, follow a policy's rename
// and keep it from being deleted.
func TestStepEscalations(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		for _, name := range []string{"Workers", "Leads"} {
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": name, "roles": []string{"ADMIN"}}, 201)
		}
		step := func(esc ...map[string]any) map[string]any {
			return map[string]any{"label": "Fix", "policyNames": []string{"Workers"}, "deadline": "8", "deadlineType": "HOURS", "escalations": esc}
		}
		for field, st := range map[string]map[string]any{
			"steps[0].escalations[0].after":      step(map[string]any{"after": "4 hours", "policyName": "Leads"}),
			"steps[0].escalations[1].after":      step(map[string]any{"after": "PT4H", "policyName": "Leads"}, map[string]any{"after": "-PT1H", "policyName": "Leads"}),
			"steps[0].escalations[0].policyName": step(map[string]any{"after": "PT0S", "policyName": "Nobody"}),
			"steps[0].escalations":               {"label": "Fix", "policyNames": []string{"Workers"}, "escalations": []map[string]any{{"after": "PT0S", "policyName": "Leads"}}},
		} {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey,
				Body: map[string]any{"name": "Bad", "steps": []map[string]any{st}}}), 422, field)
		}
		for after, says := range map[string]string{"P1M": "months", "PT1H": "shorter"} {
			r := env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []map[string]any{
				step(map[string]any{"after": "PT2H", "policyName": "Leads"}, map[string]any{"after": after, "policyName": "Leads"})}}})
			if tu.Problem(t, r, 422, "steps[0].escalations[1].after"); !strings.Contains(string(r.Body), says) {
				t.Fatalf("%s: %s, want it to say %q", after, r.Body, says)
			}
		}
		if n := env.RawInt(`SELECT count(*) FROM processes`); n != 0 {
			t.Fatalf("%d processes written by refused saves", n)
		}

		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Service", "steps": []map[string]any{
			step(map[string]any{"after": "PT0S", "policyName": "Workers"}, map[string]any{"after": "P1DT2H30M", "policyName": "Leads"})}}, 201).JSON()
		got := steps(proc)[0]["escalations"].([]any)
		if len(got) != 2 || got[1].(map[string]any)["after"] != "P1DT2H30M" || got[1].(map[string]any)["policyName"] != "Leads" {
			t.Fatalf("escalations echoed: %v", got)
		}

		var leads string
		for _, p := range env.Call(get, "/v1/users/policies", env.AdminKey, nil, 200).JSON()["data"].([]any) {
			if p := p.(map[string]any); p["name"] == "Leads" {
				leads = p["id"].(string)
			}
		}
		env.Call(patch, "/v1/users/policies/"+leads, env.AdminKey, map[string]any{"name": "Team leads"}, 200)
		got = steps(env.Call(get, "/v1/process/"+proc["id"].(string), env.AdminKey, nil, 200).JSON())[0]["escalations"].([]any)
		if got[1].(map[string]any)["policyName"] != "Team leads" {
			t.Fatalf("after the rename: %v", got)
		}
		r := env.Do(tu.Request{Method: del, Path: "/v1/users/policies/" + leads, Key: env.AdminKey})
		if tu.Problem(t, r, 409, ""); !strings.Contains(string(r.Body), "Service / Fix") {
			t.Fatalf("delete of a policy an escalation names: %s", r.Body)
		}
	})
}
