package httpapi_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// setupPolicies creates the policies the sample process uses.
func setupPolicies(t *testing.T, env *tu.Env, key string) {
	t.Helper()
	for _, name := range []string{"Inspector", "Supervisor", "Viewer"} {
		env.Call(post, "/v1/users/policies", key, map[string]any{"name": name, "roles": []string{strings.ToUpper(name)}}, 201)
	}
}

// sampleProcess: Inspect (ordered Inspector then Supervisor, routing by
// kind) → Repair or Replace (parallel branches) → Close (join).
func sampleProcess() map[string]any {
	return map[string]any{
		"name": "Pump inspection", "iconName": "wrench",
		"steps": []map[string]any{
			{
				"label": "Inspect", "policyNames": []string{"Inspector", "Supervisor"}, "orderedPolicies": []string{"Inspector", "Supervisor"},
				"roles": []map[string]any{{"p": "Inspector", "r": []string{"INSPECTOR"}}}, "viewPolicyNames": []string{"Viewer"},
				"deadline": "24", "deadlineType": "HOURS", "frequency": "WEEKLY", "frequencyDate": "2026-01-05T08:00:00Z",
				"webhookUrls": "https://hooks.example/a, https://hooks.example/b",
				"parameters": []map[string]any{
					{"name": "kind", "type": "SELECT", "isRequired": true, "optionItems": []map[string]any{{"value": "repair"}, {"value": "replace"}}},
					{"name": "hours", "type": "NUMBER"}, {"name": "rate", "type": "NUMBER"},
					{"name": "cost", "type": "FORMULA", "computedFormula": []string{"hours", "*", "rate"}, "decimals": 2},
				},
				"routing": map[string]any{"entityParamName": "kind", "rules": []map[string]any{{"value": "repair", "stepId": "Repair"}, {"value": "*", "stepId": "Replace"}}},
			},
			{"label": "Repair", "policyNames": []string{"Inspector"}, "stepIdsDependencies": []string{"Inspect"}},
			{"label": "Replace", "policyNames": []string{"Inspector"}, "stepIdsDependencies": []string{"Inspect"}},
			{"label": "Close", "policyNames": []string{"Supervisor"}, "stepIdsDependencies": []string{"Repair", "Replace"}, "stepIdsReprovalDependencies": []string{"Inspect"}},
		},
	}
}

// param puts parameter at position i of a sample process's first step.
func param(i int, parameter map[string]any) func(p map[string]any) {
	return func(p map[string]any) {
		p["steps"].([]map[string]any)[0]["parameters"].([]map[string]any)[i] = parameter
	}
}

func steps(p map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range p["steps"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

func TestProcessCreate(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		setupPolicies(t, env, env.AdminKey)
		res := env.Call(post, "/v1/process", env.AdminKey, sampleProcess(), 201)
		p := res.JSON()
		st := steps(p)
		if res.Header.Get("Location") != "/v1/process/"+p["id"].(string) || p["code"] != "PUMPIN" || p["version"] != 1.0 || p["label"] != "Pump inspection" || len(st) != 4 {
			t.Fatalf("process: %s", res.Body)
		}
		ids := map[string]string{}
		for _, s := range st {
			ids[s["label"].(string)] = s["id"].(string)
			if s["processId"] != p["id"] || len(s["tokenIds"].([]any)) != len(s["policyNames"].([]any)) {
				t.Fatalf("step: %v", s)
			}
		}
		if fmt.Sprint(st[3]["stepIdsDependencies"]) != fmt.Sprint([]any{ids["Repair"], ids["Replace"]}) || fmt.Sprint(st[3]["stepIdsReprovalDependencies"]) != fmt.Sprint([]any{ids["Inspect"]}) {
			t.Fatalf("dependencies not resolved to ids: %v", st[3])
		}
		rules := st[0]["routing"].(map[string]any)["rules"].([]any)
		if rules[0].(map[string]any)["stepId"] != ids["Repair"] || rules[1].(map[string]any)["stepId"] != ids["Replace"] {
			t.Fatalf("routing not resolved: %v", rules)
		}
		if st[0]["webhookUrls"] != "https://hooks.example/a,https://hooks.example/b" {
			t.Fatalf("webhookUrls: %v", st[0]["webhookUrls"])
		}
		got := env.Call(get, "/v1/process/"+p["id"].(string), env.AdminKey, nil, 200).Body
		if !jsonEqual(got, res.Body) {
			t.Fatalf("GET differs from create")
		}
		// A second process with the same name gets a free code.
		two := sampleProcess()
		two["label"] = "Second"
		if code := env.Call(post, "/v1/process", env.AdminKey, two, 201).JSON()["code"]; code != "PUMPIN-2" {
			t.Fatalf("second code %v", code)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "X", "code": "PUMPIN", "steps": []map[string]any{{"label": "a"}}}}), 409, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Second", "steps": []map[string]any{{"label": "a"}}}}), 409, "")
	})
}

func TestProcessValidation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		setupPolicies(t, env, env.AdminKey)
		plant, _ := createPlant(t, env)
		_ = plant
		type mod func(p map[string]any)
		step := func(i int, p map[string]any) map[string]any { return p["steps"].([]map[string]any)[i] }
		cases := []struct {
			name  string
			mod   mod
			field string
		}{
			{"unknown policy", func(p map[string]any) { step(1, p)["policyNames"] = []string{"Ghost"} }, "steps[1].policyNames[0]"},
			{"unknown ordered policy", func(p map[string]any) { step(0, p)["orderedPolicies"] = []string{"Ghost"} }, "steps[0].orderedPolicies[0]"},
			{"ordered not a subset", func(p map[string]any) { step(0, p)["orderedPolicies"] = []string{"Viewer"} }, "steps[0].orderedPolicies[0]"},
			{"unknown view policy", func(p map[string]any) { step(2, p)["viewPolicyNames"] = []string{"Ghost"} }, "steps[2].viewPolicyNames[0]"},
			{"unknown role policy", func(p map[string]any) { step(0, p)["roles"] = []map[string]any{{"p": "Ghost", "r": []string{"X"}}} }, "steps[0].roles[0].p"},
			{"bad role name", func(p map[string]any) {
				step(0, p)["roles"] = []map[string]any{{"p": "Inspector", "r": []string{"x y"}}}
			}, "steps[0].roles[0].r[0]"},
			{"dependency cycle", func(p map[string]any) { step(0, p)["stepIdsDependencies"] = []string{"Close"} }, "stepIdsDependencies"},
			{"self dependency", func(p map[string]any) { step(1, p)["stepIdsDependencies"] = []string{"Repair"} }, "steps[1].stepIdsDependencies"},
			{"unknown dependency", func(p map[string]any) { step(1, p)["stepIdsDependencies"] = []string{"Nowhere"} }, "steps[1].stepIdsDependencies[0]"},
			{"unknown reproval dependency", func(p map[string]any) { step(3, p)["stepIdsReprovalDependencies"] = []string{"Nowhere"} }, "steps[3].stepIdsReprovalDependencies[0]"},
			{"routing to unknown step", func(p map[string]any) {
				step(0, p)["routing"].(map[string]any)["rules"] = []map[string]any{{"value": "*", "stepId": "Nowhere"}}
			}, "steps[0].routing.rules[0].stepId"},
			{"routing backwards", func(p map[string]any) {
				step(1, p)["routing"] = map[string]any{"entityParamName": "x", "entityId": "Plant", "rules": []map[string]any{{"value": "*", "stepId": "Inspect"}}}
			}, "steps[1].routing.rules[0].stepId"},
			{"routing unknown entity", func(p map[string]any) { step(0, p)["routing"].(map[string]any)["entityId"] = "Nowhere" }, "steps[0].routing.entityId"},
			{"routing unknown entity parameter", func(p map[string]any) { step(0, p)["routing"].(map[string]any)["entityId"] = "Plant" }, "steps[0].routing.entityParamName"},
			{"routing unknown step parameter", func(p map[string]any) { step(0, p)["routing"].(map[string]any)["entityParamName"] = "nope" }, "steps[0].routing.entityParamName"},
			{"bad deadline type", func(p map[string]any) { step(0, p)["deadlineType"] = "WEEKS" }, "steps[0].deadlineType"},
			{"bad deadline", func(p map[string]any) { step(0, p)["deadline"] = "soon" }, "steps[0].deadline"},
			{"bad deadline date", func(p map[string]any) { step(1, p)["deadline"] = "tomorrow"; step(1, p)["deadlineType"] = "DATE" }, "steps[1].deadline"},
			{"deadline without type", func(p map[string]any) { step(1, p)["deadline"] = "3" }, "steps[1].deadlineType"},
			{"frequency on a later step", func(p map[string]any) { step(2, p)["frequency"] = "DAILY" }, "steps[2].frequency"},
			{"bad frequency", func(p map[string]any) { step(0, p)["frequency"] = "SOMETIMES" }, "steps[0].frequency"},
			{"bad rrule", func(p map[string]any) { step(0, p)["frequency"] = "RRULE:FREQ=FORTNIGHTLY" }, "steps[0].frequency"},
			{"rrule more often than hourly", func(p map[string]any) { step(0, p)["frequency"] = "RRULE:FREQ=MINUTELY;INTERVAL=90" }, "steps[0].frequency"},
			{"bad webhook", func(p map[string]any) { step(0, p)["webhookUrls"] = "https://ok.example,ftp://bad" }, "steps[0].webhookUrls"},
			{"formula does not parse", func(p map[string]any) {
				step(0, p)["parameters"].([]map[string]any)[3]["computedFormula"] = []string{"hours", "*"}
			}, "steps[0].parameters[3].computedFormula"},
			{"formula unknown name", func(p map[string]any) {
				step(0, p)["parameters"].([]map[string]any)[3]["computedFormula"] = []string{"minutes", "*", "rate"}
			}, "steps[0].parameters[3].computedFormula"},
			{"formula cycle", func(p map[string]any) {
				ps := step(0, p)["parameters"].([]map[string]any)
				ps[1] = map[string]any{"name": "hours", "type": "FORMULA", "computedFormula": []string{"cost", "/", "rate"}}
			}, "computedFormula"},
			{"duplicate labels", func(p map[string]any) { step(2, p)["label"] = "Repair" }, "steps[2].label"},
			{"bad code", func(p map[string]any) { p["code"] = "lower" }, "code"},
			{"unknown icon", func(p map[string]any) { p["iconName"] = "rocket" }, "iconName"},
			{"no steps", func(p map[string]any) { p["steps"] = []map[string]any{} }, "steps"},
			// Options that would be kept and shown back doing nothing (api.md).
			{"date format without the year", param(1, map[string]any{"name": "on", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM"}}), "steps[0].parameters[1].advancedOptions.dateFormat"},
			{"date format of other letters", param(1, map[string]any{"name": "on", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "d/M/yyyy"}}), "steps[0].parameters[1].advancedOptions.dateFormat"},
			{"date format with a time on a DATE", param(1, map[string]any{"name": "on", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy HH:mm"}}), "steps[0].parameters[1].advancedOptions.dateFormat"},
			{"date format on a NUMBER", param(1, map[string]any{"name": "hours", "type": "NUMBER", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}}), "steps[0].parameters[1].advancedOptions.dateFormat"},
			{"unknown locale", param(1, map[string]any{"name": "hours", "type": "NUMBER", "advancedOptions": map[string]any{"locale": "tlh"}}), "steps[0].parameters[1].advancedOptions.locale"},
			{"bounds on a TEXT", param(1, map[string]any{"name": "hours", "type": "TEXT", "advancedOptions": map[string]any{"min": 5}}), "steps[0].parameters[1].advancedOptions.min"},
			{"a length on a NUMBER", param(1, map[string]any{"name": "hours", "type": "NUMBER", "advancedOptions": map[string]any{"maxLength": 5}}), "steps[0].parameters[1].advancedOptions.maxLength"},
			{"a currency on a TEXT", param(1, map[string]any{"name": "hours", "type": "TEXT", "advancedOptions": map[string]any{"currency": "EUR"}}), "steps[0].parameters[1].advancedOptions.currency"},
			{"options on a TEXT", param(1, map[string]any{"name": "hours", "type": "TEXT", "optionItems": []map[string]any{{"value": "only"}}}), "steps[0].parameters[1].optionItems"},
			{"an entity operation but WRITE", param(1, map[string]any{"name": "hours", "type": "ENTITY", "entityId": "Plant", "entityOperation": []string{"DELETE"}}), "steps[0].parameters[1].entityOperation"},
			{"writing from a TEXT", param(1, map[string]any{"name": "hours", "type": "TEXT", "advancedOptions": map[string]any{"entityOperation": []string{"WRITE"}}}), "steps[0].parameters[1].advancedOptions.entityOperation"},
			{"a unique TABLE column", param(1, map[string]any{"name": "rows", "type": "TABLE", "parameters": []map[string]any{{"name": "serial", "type": "TEXT", "isUnique": true}}}), "steps[0].parameters[1].parameters[0].isUnique"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				p := sampleProcess()
				c.mod(p)
				res := env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: p})
				if res.Status != 422 || !strings.Contains(string(res.Body), c.field) {
					t.Fatalf("%d %s", res.Status, res.Body)
				}
			})
		}
		if n := env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 0.0 {
			t.Fatalf("invalid processes were stored: %v", n)
		}
	})
}

func TestProcessListPaging(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		setupPolicies(t, env, env.AdminKey)
		empty := env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()
		if len(empty["data"].([]any)) != 0 || fmt.Sprint(empty["meta"]) != "map[currentPage:1 lastPage:1 next:<nil> perPage:20 prev:<nil> total:0]" {
			t.Fatalf("empty list: %v", empty)
		}
		for i := range 3 {
			p := sampleProcess()
			p["name"] = fmt.Sprintf("Process %d", i)
			env.Call(post, "/v1/process", env.AdminKey, p, 201)
		}
		first := env.Call(get, "/v1/process?perPage=1", env.AdminKey, nil, 200).JSON()
		if fmt.Sprint(first["meta"]) != "map[currentPage:1 lastPage:3 next:2 perPage:1 prev:<nil> total:3]" {
			t.Fatalf("perPage 1: %v", first["meta"])
		}
		item := first["data"].([]any)[0].(map[string]any)
		st := item["steps"].([]any)[3].(map[string]any)
		if _, ok := st["parameters"]; ok || st["stepIdsDependencies"] == nil || st["stepIdsReprovalDependencies"] == nil || item["orgId"] != env.OrgID || item["code"] == nil {
			t.Fatalf("list item: %v", item)
		}
		last := env.Call(get, "/v1/process?perPage=2&page=2", env.AdminKey, nil, 200).JSON()
		if len(last["data"].([]any)) != 1 || fmt.Sprint(last["meta"]) != "map[currentPage:2 lastPage:2 next:<nil> perPage:2 prev:1 total:3]" {
			t.Fatalf("last page: %v", last["meta"])
		}
		past := env.Call(get, "/v1/process?perPage=2&page=7", env.AdminKey, nil, 200).JSON()
		if len(past["data"].([]any)) != 0 || fmt.Sprint(past["meta"]) != "map[currentPage:7 lastPage:2 next:<nil> perPage:2 prev:2 total:3]" {
			t.Fatalf("page past the end: %v", past["meta"])
		}
		if n := env.Call(get, "/v1/process?search=CESS%201", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 1.0 {
			t.Fatalf("search: %v", n)
		}
		for _, q := range []string{"perPage=0", "perPage=101", "page=0", "page=x"} {
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process?" + q, Key: env.AdminKey}), 422, strings.Split(q, "=")[0])
		}
	})
}

func TestProcessVersionsAndSeats(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		setupPolicies(t, env, env.AdminKey)
		p := env.Call(post, "/v1/process", env.AdminKey, sampleProcess(), 201).JSON()
		id := p["id"].(string)
		first := steps(p)[0]
		tokens := fmt.Sprint(first["tokenIds"])

		// Before any measurement, edits change the version in place.
		upd := env.Call(patch, "/v1/process/"+id+"/steps/"+first["id"].(string), env.AdminKey, map[string]any{"description": "Look closely"}, 200).JSON()
		if upd["description"] != "Look closely" || fmt.Sprint(upd["tokenIds"]) != tokens || upd["label"] != "Inspect" || len(upd["parameters"].([]any)) != 4 {
			t.Fatalf("step patch: %v", upd)
		}
		if v := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()["version"]; v != 1.0 {
			t.Fatalf("version %v", v)
		}
		// Adding a policy keeps the other seats.
		upd = env.Call(patch, "/v1/process/"+id+"/steps/"+first["id"].(string), env.AdminKey, map[string]any{"policyNames": []string{"Inspector", "Supervisor", "Viewer"}}, 200).JSON()
		toks := upd["tokenIds"].([]any)
		if len(toks) != 3 || fmt.Sprint(toks[:2]) != tokens {
			t.Fatalf("seats after adding a policy: %v (was %s)", toks, tokens)
		}

		// Once a measurement uses version 1, an edit makes version 2.
		m := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": id}, 201).JSON()
		if m["version"] != 1.0 {
			t.Fatalf("measurement version %v", m["version"])
		}
		v2 := env.Call(patch, "/v1/process/"+id, env.AdminKey, map[string]any{"name": "Pump inspection v2"}, 200).JSON()
		if v2["version"] != 1.0 {
			t.Fatalf("a rename alone made a version: %v", v2["version"])
		}
		added := env.Call(post, "/v1/process/"+id+"/steps", env.AdminKey, map[string]any{"label": "Archive", "policyNames": []string{"Viewer"}}, 201).JSON()
		if added["label"] != "Archive" || added["id"] == "" {
			t.Fatalf("added: %v", added)
		}
		latest := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		old := env.Call(get, "/v1/process/"+id+"?version=1", env.AdminKey, nil, 200).JSON()
		if latest["version"] != 2.0 || len(steps(latest)) != 5 || len(steps(old)) != 4 || steps(latest)[0]["id"] != steps(old)[0]["id"] {
			t.Fatalf("versions: latest %v steps, old %v", len(steps(latest)), len(steps(old)))
		}
		versions := env.Call(get, "/v1/process/"+id+"/versions", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(versions) != 2 || versions[0].(map[string]any)["version"] != 2.0 || versions[1].(map[string]any)["inUse"] != true {
			t.Fatalf("versions: %v", versions)
		}
		list := env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if list[0].(map[string]any)["version"] != 2.0 {
			t.Fatalf("the list does not show the latest version")
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process/" + id + "?version=9", Key: env.AdminKey}), 404, "")
		// The running measurement keeps version 1 (four steps); a new one takes version 2.
		if got := env.Call(get, "/v1/measurements/"+m["id"].(string), env.AdminKey, nil, 200).JSON(); got["version"] != 1.0 || len(got["process"].(map[string]any)["steps"].([]any)) != 4 {
			t.Fatalf("running measurement: version %v", got["version"])
		}
		if m2 := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": id}, 201).JSON(); m2["version"] != 2.0 || len(m2["process"].(map[string]any)["steps"].([]any)) != 5 {
			t.Fatalf("new measurement: version %v", m2["version"])
		}
		// The list shows each measurement by its own version: the steps open
		// in it, as the measurement itself shows them.
		listed := env.Call(get, "/v1/measurements?processId="+id, env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(listed) != 2 {
			t.Fatalf("listed %d measurements", len(listed))
		}
		for _, l := range listed {
			l := l.(map[string]any)
			full := env.Call(get, "/v1/measurements/"+l["id"].(string), env.AdminKey, nil, 200).JSON()
			var open []any
			for _, st := range full["process"].(map[string]any)["steps"].([]any) {
				if st := st.(map[string]any); st["status"] == "OPEN" {
					open = append(open, st["id"])
				}
			}
			if l["version"] != full["version"] || len(open) == 0 || fmt.Sprint(l["openStepIds"]) != fmt.Sprint(open) {
				t.Fatalf("listed %v (version %v), shown open %v (version %v)", l["openStepIds"], l["version"], open, full["version"])
			}
		}

		t.Run("step deletion", func(t *testing.T) {
			repair := steps(latest)[1]["id"].(string)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/process/" + id + "/steps/" + repair, Key: env.AdminKey}), 409, "")
			env.Call(del, "/v1/process/"+id+"/steps/"+added["id"].(string), env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/process/" + id + "/steps/" + added["id"].(string), Key: env.AdminKey}), 404, "")
		})
	})
}

func TestPolicyReferencesFollow(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		setupPolicies(t, env, env.AdminKey)
		p := env.Call(post, "/v1/process", env.AdminKey, sampleProcess(), 201).JSON()
		// The entity a process routes by cannot be deleted.
		plant, _ := createPlant(t, env)
		q := sampleProcess()
		q["name"] = "Routed by plant"
		q["steps"].([]map[string]any)[0]["routing"] = map[string]any{"entityParamName": "code", "entityId": "Plant", "rules": []map[string]any{{"value": "*", "stepId": "Repair"}}}
		routed := env.Call(post, "/v1/process", env.AdminKey, q, 201).JSON()
		var inspector string
		for _, pol := range env.Call(get, "/v1/users/policies", env.AdminKey, nil, 200).JSON()["data"].([]any) {
			if pm := pol.(map[string]any); pm["name"] == "Inspector" {
				inspector = pm["id"].(string)
			}
		}
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/users/policies/" + inspector, Key: env.AdminKey}), 409, "")
		// A measurement's version follows too, also once it has been read.
		m := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()
		mStep := func() any {
			v := env.Call(get, "/v1/measurements/"+m["id"].(string), env.AdminKey, nil, 200).JSON()
			return v["process"].(map[string]any)["steps"].([]any)[0].(map[string]any)["policyNames"]
		}
		if fmt.Sprint(mStep()) != "[Inspector Supervisor]" {
			t.Fatalf("measurement step before rename: %v", mStep())
		}
		env.Call(patch, "/v1/users/policies/"+inspector, env.AdminKey, map[string]any{"name": "Field inspector", "oldPolicyName": "Inspector"}, 200)
		st := steps(env.Call(get, "/v1/process/"+p["id"].(string), env.AdminKey, nil, 200).JSON())
		if fmt.Sprint(st[0]["policyNames"]) != "[Field inspector Supervisor]" || fmt.Sprint(st[0]["orderedPolicies"]) != "[Field inspector Supervisor]" ||
			st[0]["roles"].([]any)[0].(map[string]any)["p"] != "Field inspector" || fmt.Sprint(st[1]["policyNames"]) != "[Field inspector]" {
			t.Fatalf("steps after rename: %v", st[0])
		}
		if fmt.Sprint(mStep()) != "[Field inspector Supervisor]" {
			t.Fatalf("measurement step after rename: %v", mStep())
		}
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/entities/" + plant, Key: env.AdminKey}), 409, "")
		env.Call(del, "/v1/process/"+routed["id"].(string), env.AdminKey, nil, 204)
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process/" + routed["id"].(string), Key: env.AdminKey}), 404, "")
		env.Call(del, "/v1/entities/"+plant, env.AdminKey, nil, 204)
	})
}

func TestProcessExportImport(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		other := env.NewOrg("Globex")
		for _, key := range []string{env.AdminKey, other} {
			setupPolicies(t, env, key)
			env.Call(post, "/v1/entities/simplified", key, map[string]any{"n": "Plant", "p": []map[string]any{{"n": "code", "t": "TEXT"}, {"n": "city", "t": "TEXT"}}}, 201)
		}
		def := sampleProcess()
		first := def["steps"].([]map[string]any)[0]
		first["parameters"] = append(first["parameters"].([]map[string]any),
			map[string]any{"name": "plant", "type": "ENTITY", "entityId": "Plant"},
			map[string]any{"name": "plantCode", "type": "TEXT", "readFromEntity": map[string]any{"entityId": "Plant", "readParameterId": "code", "targetParameterIds": []string{"city"}}},
			map[string]any{"name": "city", "type": "TEXT"})
		p := env.Call(post, "/v1/process", env.AdminKey, def, 201).JSON()
		exp := env.Call(get, "/v1/process/"+p["id"].(string)+"/export", env.AdminKey, nil, 200)
		doc := exp.JSON()
		if doc["format"] != "wps.process/v1" || strings.Contains(string(exp.Body), p["id"].(string)) || strings.Contains(string(exp.Body), env.OrgID) {
			t.Fatalf("export keeps ids: %s", exp.Body)
		}
		imported := env.Call(post, "/v1/process/import", other, doc, 201).JSON()
		again := env.Call(get, "/v1/process/"+imported["id"].(string)+"/export", other, nil, 200)
		if !jsonEqual(again.Body, exp.Body) {
			t.Fatalf("import of an export differs:\n%s\n%s", exp.Body, again.Body)
		}
		if !reflect.DeepEqual(len(steps(imported)), 4) || imported["code"] != p["code"] {
			t.Fatalf("imported: %v", imported)
		}
		// The same document as YAML, both ways.
		yexp := env.Do(tu.Request{Method: get, Path: "/v1/process/" + p["id"].(string) + "/export", Key: env.AdminKey, Header: map[string]string{"Accept": "application/yaml"}})
		asJSON, err := yaml.YAMLToJSON(yexp.Body)
		if yexp.Status != 200 || !strings.HasPrefix(yexp.Header.Get("Content-Type"), "application/yaml") || err != nil || !jsonEqual(asJSON, exp.Body) {
			t.Fatalf("YAML export: %d %s %v\n%s", yexp.Status, yexp.Header.Get("Content-Type"), err, yexp.Body)
		}
		third := env.NewOrg("Initech")
		setupPolicies(t, env, third)
		env.Call(post, "/v1/entities/simplified", third, map[string]any{"n": "Plant", "p": []map[string]any{{"n": "code", "t": "TEXT"}, {"n": "city", "t": "TEXT"}}}, 201)
		yimp := env.Do(tu.Request{Method: post, Path: "/v1/process/import", Key: third, Body: string(yexp.Body), Header: map[string]string{"Content-Type": "application/yaml"}})
		if yimp.Status != 201 {
			t.Fatalf("YAML import: %d %s", yimp.Status, yimp.Body)
		}
		yagain := env.Call(get, "/v1/process/"+yimp.JSON()["id"].(string)+"/export", third, nil, 200)
		if !jsonEqual(yagain.Body, exp.Body) {
			t.Fatalf("import of a YAML export differs:\n%s\n%s", exp.Body, yagain.Body)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/import", Key: third, Body: "format: [unclosed", Header: map[string]string{"Content-Type": "application/yaml"}}), 400, "")

		doc["format"] = "other"
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/import", Key: other, Body: doc}), 422, "format")
	})
}

func TestProcessCrossOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		other := env.NewOrg("Globex")
		setupPolicies(t, env, env.AdminKey)
		p := env.Call(post, "/v1/process", env.AdminKey, sampleProcess(), 201).JSON()
		id, step := p["id"].(string), steps(p)[1]["id"].(string)
		for _, r := range []tu.Request{
			{Method: get, Path: "/v1/process/" + id},
			{Method: patch, Path: "/v1/process/" + id, Body: map[string]any{"name": "Mine"}},
			{Method: del, Path: "/v1/process/" + id},
			{Method: get, Path: "/v1/process/" + id + "/versions"},
			{Method: get, Path: "/v1/process/" + id + "/export"},
			{Method: post, Path: "/v1/process/" + id + "/steps", Body: map[string]any{"label": "x"}},
			{Method: patch, Path: "/v1/process/" + id + "/steps/" + step, Body: map[string]any{"label": "x"}},
			{Method: del, Path: "/v1/process/" + id + "/steps/" + step},
		} {
			r.Key = other
			tu.Problem(t, env.Do(r), 404, "")
		}
		if n := env.Call(get, "/v1/process", other, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 0.0 {
			t.Fatalf("other org lists %v processes", n)
		}
		// Another org's policies are unknown here.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: other, Body: sampleProcess()}), 422, "steps[0].policyNames[0]")
	})
}
