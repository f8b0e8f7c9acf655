package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Moving running measurements to a new version (semantics §15): a dry run
// first changes nothing; a move keeps data and seats by id, opens what is
// ready, and is replayed by the ledger's verification; a measurement whose
// open step the new version removes is blocked and left as it is.
func TestMigrateMeasurements(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
		_, ian := member(t, env, "ian@example.com", "INSPECTOR")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Boiler check", "code": "BOIL", "steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{{"name": "temp", "type": "NUMBER"}}},
			{"label": "Review", "policyNames": []string{"Inspector"}},
		}}, 201).JSON()
		path := "/v1/process/" + proc["id"].(string)
		ids := map[string]string{}
		for _, st := range steps(proc) {
			ids[st["label"].(string)] = st["id"].(string)
		}
		start := func() string {
			return env.Call(post, "/v1/measurements", ian, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
		}
		act := func(m, step string, params map[string]any) {
			t.Helper()
			body := map[string]any{"stepId": ids[step], "type": "WRITE_DATA", "parameters": params}
			env.Call(post, "/v1/measurements/"+m+"/actions", ian, body, 201)
		}
		measurement := func(m string) map[string]any { return env.Call(get, "/v1/measurements/"+m, ian, nil, 200).JSON() }
		inReview, inInspect, done := start(), start(), start()
		act(inReview, "Inspect", map[string]any{"temp": 81})
		act(done, "Inspect", map[string]any{"temp": 79})
		act(done, "Review", nil)

		// Version 2 adds a step after Review.
		def := steps(env.Call(get, path, env.AdminKey, nil, 200).JSON())
		stepsOf := func(labels ...string) []any {
			var out []any
			for _, l := range labels {
				found := false
				for _, st := range def {
					if st["label"] == l {
						out, found = append(out, st), true
					}
				}
				if !found {
					out = append(out, map[string]any{"label": l, "policyNames": []string{"Inspector"}})
				}
			}
			return out
		}
		v2 := env.Call(patch, path, env.AdminKey, map[string]any{"steps": stepsOf("Inspect", "Review", "Sign off")}, 200).JSON()
		if v2["version"] != 2.0 {
			t.Fatalf("version %v", v2["version"])
		}
		def = steps(v2)
		vs := env.Call(get, path+"/versions", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if v := vs[0].(map[string]any); len(vs) != 2 || v["version"] != 2.0 || v["changedBy"] == "" || v["changedByName"] != "Administrator" || v["changedAt"] == nil {
			t.Fatalf("versions: %v", vs)
		}
		for _, st := range def {
			ids[st["label"].(string)] = st["id"].(string)
		}

		t.Run("a dry run says what would happen and changes nothing", func(t *testing.T) {
			got := env.Call(post, path+"/migrations", env.AdminKey, map[string]any{"fromVersion": 1, "dryRun": true}, 200).JSON()
			if got["toVersion"] != 2.0 || got["moved"] != 2.0 || got["blocked"] != 0.0 || got["dryRun"] != true {
				t.Fatalf("%v", got)
			}
			items := got["items"].([]any)
			first := items[0].(map[string]any)
			if len(items) != 2 || first["measurementId"] != inReview || items[1].(map[string]any)["measurementId"] != inInspect ||
				fmt.Sprint(first["changes"]) != fmt.Sprintf("[map[change:added label:Sign off stepId:%s]]", ids["Sign off"]) {
				t.Fatalf("items: %v", items)
			}
			if measurement(inReview)["version"] != 1.0 {
				t.Fatal("a dry run moved a measurement")
			}
		})
		t.Run("the move keeps data and seats, and the ledger verifies it", func(t *testing.T) {
			got := env.Call(post, path+"/migrations", env.AdminKey, map[string]any{"fromVersion": 1}, 200).JSON()
			if got["moved"] != 2.0 {
				t.Fatalf("%v", got)
			}
			m := measurement(inReview)
			if m["version"] != 2.0 || m["status"] != "STAGE_OPEN" || !strings.Contains(fmt.Sprint(m), "81") {
				t.Fatalf("moved: %v", m)
			}
			if measurement(done)["version"] != 1.0 {
				t.Fatal("an approved measurement moved")
			}
			ev := env.Call(get, "/v1/audit-events?type=process.migrated", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if len(ev) != 1 || !strings.Contains(fmt.Sprint(ev[0]), "after:2 before:1") || !strings.Contains(fmt.Sprint(ev[0]), "BOIL-1 BOIL-2") {
				t.Fatalf("audit events: %v", ev)
			}
			act(inReview, "Review", nil)
			act(inReview, "Sign off", nil)
			if s := measurement(inReview)["status"]; s != "APPROVED" {
				t.Fatalf("status %v", s)
			}
			integrate(t, env)
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("verify: %v", rep)
			}
		})
		t.Run("an open step removed blocks its measurement", func(t *testing.T) {
			other := start() // on version 2, Inspect open
			act(other, "Inspect", map[string]any{"temp": 70})
			env.Call(patch, path, env.AdminKey, map[string]any{"steps": stepsOf("Inspect", "Sign off")}, 200)
			got := env.Call(post, path+"/migrations", env.AdminKey, map[string]any{"fromVersion": 2}, 200).JSON()
			if got["moved"] != 1.0 || got["blocked"] != 1.0 {
				t.Fatalf("%v", got)
			}
			for _, it := range got["items"].([]any) {
				item := it.(map[string]any)
				switch item["measurementId"] {
				case other:
					if !strings.Contains(fmt.Sprint(item["blocked"]), `"Review" is open`) {
						t.Fatalf("blocked: %v", item)
					}
				case inInspect:
					if item["blocked"] != nil || !strings.Contains(fmt.Sprint(item["changes"]), "change:removed label:Review") {
						t.Fatalf("moved: %v", item)
					}
				default:
					t.Fatalf("item %v", item)
				}
			}
			if measurement(other)["version"] != 2.0 || measurement(inInspect)["version"] != 3.0 {
				t.Fatal("versions after the move")
			}
			act(inInspect, "Inspect", map[string]any{"temp": 75})
			act(inInspect, "Sign off", nil)
			integrate(t, env)
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("verify: %v", rep)
			}
		})
		t.Run("a version changed behind the ledger's back is found", func(t *testing.T) {
			env.RawExec(`UPDATE measurements SET version = 1 WHERE id = ?`, inInspect)
			rep := verify(env)
			if rep["ok"] != false || !strings.Contains(fmt.Sprint(rep), "stored version 1") {
				t.Fatalf("verify: %v", rep)
			}
			env.RawExec(`UPDATE measurements SET version = 3 WHERE id = ?`, inInspect)
		})
		t.Run("bad input", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + "/migrations", Key: env.AdminKey, Body: map[string]any{"fromVersion": 3}}), 422, "fromVersion")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + "/migrations", Key: env.AdminKey, Body: map[string]any{"fromVersion": 9}}), 422, "fromVersion")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + "/migrations", Key: ian, Body: map[string]any{"fromVersion": 1}}), 403, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/nope/migrations", Key: env.AdminKey, Body: map[string]any{"fromVersion": 1}}), 404, "")
		})
	})
}
