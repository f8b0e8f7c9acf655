package httpapi_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

func TestPolicies(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const path = "/v1/users/policies"

		res := env.Call(post, path, env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR", "INSPECTOR"}, "functions": []string{"action:write", "measurement:read"}}, 201)
		pol := res.JSON()
		id := pol["id"].(string)
		if res.Header.Get("Location") != path+"/"+id || fmt.Sprint(pol["roles"]) != "[INSPECTOR]" || fmt.Sprint(pol["functions"]) != "[action:write measurement:read]" {
			t.Fatalf("created: %v %s", res.Header, res.Body)
		}

		t.Run("duplicates and bad values", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"name": "Inspector"}}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"name": "X", "functions": []string{"fly"}}}), 422, "functions[0]")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"name": "X", "roles": []string{"1ROLE"}}}), 422, "roles[0]")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"name": "  "}}), 422, "name")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"name": 5}}), 422, "name")
		})

		t.Run("rename is checked against oldPolicyName and atomic", func(t *testing.T) {
			env.Call(post, path, env.AdminKey, map[string]any{"name": "Supervisor"}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path + "/" + id, Key: env.AdminKey, Body: map[string]any{"name": "Checker", "oldPolicyName": "Wrong"}}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path + "/" + id, Key: env.AdminKey, Body: map[string]any{"name": "Supervisor", "roles": []string{"OTHER"}}}), 409, "")
			list := env.Call(get, path, env.AdminKey, nil, 200).Body
			if !strings.Contains(string(list), `"Inspector"`) || strings.Contains(string(list), "OTHER") {
				t.Fatalf("a refused rename changed something: %s", list)
			}
			upd := env.Call(patch, path+"/"+id, env.AdminKey, map[string]any{"name": "Checker", "oldPolicyName": "Inspector"}, 200).JSON()
			if upd["name"] != "Checker" || fmt.Sprint(upd["roles"]) != "[INSPECTOR]" {
				t.Fatalf("renamed: %v", upd)
			}
		})

		t.Run("concurrent renames to one name: exactly one wins", func(t *testing.T) {
			a := env.Call(post, path, env.AdminKey, map[string]any{"name": "A"}, 201).JSON()["id"].(string)
			b := env.Call(post, path, env.AdminKey, map[string]any{"name": "B"}, 201).JSON()["id"].(string)
			var wg sync.WaitGroup
			codes := make([]int, 2)
			for i, pid := range []string{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i] = env.Do(tu.Request{Method: patch, Path: path + "/" + pid, Key: env.AdminKey, Body: map[string]any{"name": "Same"}}).Status
				}()
			}
			wg.Wait()
			if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
				t.Fatalf("statuses %v", codes)
			}
		})

		t.Run("a policy grants functions to the holders of its roles", func(t *testing.T) {
			_, key := member(t, env, "pm@example.com", "PM")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: key, Body: map[string]any{"name": "P1"}}), 403, "")
			env.Call(post, path, env.AdminKey, map[string]any{"name": "Policy admins", "roles": []string{"PM"}, "functions": []string{"policies:manage"}}, 201)
			env.Call(post, path, key, map[string]any{"name": "P1"}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users", Key: key}), 403, "")
		})

		t.Run("delete", func(t *testing.T) {
			env.Call(del, path+"/"+id, env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: path + "/" + id, Key: env.AdminKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path + "/" + id, Key: env.AdminKey, Body: map[string]any{"name": "Z"}}), 404, "")
		})
	})
}

func TestCrossOrgIsolation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		other := env.NewOrg("Globex")
		pol := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector"}, 201).JSON()["id"].(string)
		inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "a@example.com"}, 201).JSON()["id"].(string)
		userID, _ := member(t, env, "m@example.com")
		keyID := env.Call(post, "/v1/users/me/api-keys", env.AdminKey, map[string]any{"name": "x"}, 201).JSON()["id"].(string)

		tu.Problem(t, env.Do(tu.Request{Method: patch, Path: "/v1/users/policies/" + pol, Key: other, Body: map[string]any{"name": "Mine"}}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/users/policies/" + pol, Key: other}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/invites/" + inv, Key: other}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/roles/assign", Key: other, Body: map[string]any{"role": "ADMIN", "userId": userID}}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/users/me/api-keys/" + keyID, Key: other}), 404, "")

		// The same names live side by side in two orgs, and lists stay apart.
		env.Call(post, "/v1/users/policies", other, map[string]any{"name": "Inspector"}, 201)
		for _, key := range []string{env.AdminKey, other} {
			if n := len(env.Call(get, "/v1/users/policies", key, nil, 200).JSON()["data"].([]any)); n != 1 {
				t.Fatalf("an org sees %d policies", n)
			}
		}
		if n := len(env.Call(get, "/v1/invites", other, nil, 200).JSON()["data"].([]any)); n != 0 {
			t.Fatalf("the other org sees %d invites", n)
		}
		if users := env.Call(get, "/v1/users", other, nil, 200).JSON()["meta"].(map[string]any)["total"]; users != 1.0 {
			t.Fatalf("the other org sees %v users", users)
		}
		if org := env.Call(get, "/v1/organizations", other, nil, 200).JSON(); org["name"] != "Globex" {
			t.Fatalf("other org: %v", org)
		}
	})
}

func TestErrors(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		k := env.AdminKey
		cases := []struct {
			name   string
			req    tu.Request
			status int
			field  string
		}{
			{"malformed JSON", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `{"name":`}, 400, ""},
			{"not an object", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `[1,2]`}, 422, ""},
			{"unknown field", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `{"name":"x","color":"red"}`}, 400, "color"},
			{"empty body", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: ``}, 400, ""},
			{"no key", tu.Request{Method: get, Path: "/v1/users/policies"}, 401, ""},
			{"unknown path", tu.Request{Method: get, Path: "/v1/nothing", Key: k}, 404, ""},
			{"wrong method", tu.Request{Method: "PUT", Path: "/v1/users/policies", Key: k}, 405, ""},
			{"body over 1 MiB", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `{"name":"` + strings.Repeat("x", 1<<20) + `"}`}, 413, ""},
			{"body over 1 MiB with an idempotency key", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, Header: map[string]string{"Idempotency-Key": "big"}}, 413, ""},
			{"not JSON", tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: `name=x`, Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 415, ""},
			{"wrong type", tu.Request{Method: post, Path: "/v1/roles/assign", Key: k, Body: `{"role":1,"userId":"x"}`}, 422, "role"},
			// PostgreSQL's text cannot hold the NUL character; both engines refuse it (bodies: TestNULInABody).
			{"NUL in the path", tu.Request{Method: get, Path: "/v1/measurements/a%00b", Key: k}, 404, ""},
			{"NUL in a query parameter", tu.Request{Method: get, Path: "/v1/measurements?status=OPEN%00", Key: k}, 422, "status"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := env.Do(c.req)
				p := tu.Problem(t, res, c.status, c.field)
				for _, leak := range []string{"goroutine", "SQL", "sqlite", "pgx", "SELECT", ".go:"} {
					if strings.Contains(string(res.Body), leak) {
						t.Fatalf("problem leaks %q: %v", leak, p)
					}
				}
			})
		}
		if n := len(env.Call(get, "/v1/users/policies", k, nil, 200).JSON()["data"].([]any)); n != 0 {
			t.Fatalf("rejected requests wrote %d policies", n)
		}
	})
}

func TestRateLimit(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite, tu.Options{API: httpapi.Options{RateLimit: 1, RateBurst: 3}})
	other := env.NewOrg("Other")
	for range 3 {
		env.Call(get, "/v1/users/me", env.AdminKey, nil, 200)
	}
	res := env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: env.AdminKey})
	tu.Problem(t, res, 429, "")
	if res.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
	// Limits are per key.
	env.Call(get, "/v1/users/me", other, nil, 200)
}

// A policy renamed while a measurement waits at a step it has a seat in:
// the seat filled under the old name stays filled, consensus completes
// with the other seat, and the ledger's replay agrees.
func TestPolicyRenamedMidConsensus(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
		quality := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Quality", "roles": []string{"QA"}, "functions": fns}, 201).JSON()
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
		_, lea := member(t, env, "lea@example.com", "QA")
		_, ian := member(t, env, "ian@example.com", "INSPECTOR")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "code": "AUDIT", "steps": []map[string]any{
			{"label": "Review", "policyNames": []string{"Quality", "Inspector"}},
			{"label": "Close", "policyNames": []string{"Inspector"}},
		}}, 201).JSON()
		review := steps(proc)[0]["id"].(string)
		m := env.Call(post, "/v1/measurements", ian, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/measurements/"+m+"/actions", lea, map[string]any{"stepId": review, "type": "APPROVAL"}, 201)

		env.Call(patch, "/v1/users/policies/"+quality["id"].(string), env.AdminKey, map[string]any{"name": "QA team"}, 200)
		// lea fills a seat already (now named "QA team"): she may not approve again.
		env.Call(post, "/v1/measurements/"+m+"/actions", lea, map[string]any{"stepId": review, "type": "APPROVAL"}, 409)
		env.Call(post, "/v1/measurements/"+m+"/actions", ian, map[string]any{"stepId": review, "type": "APPROVAL"}, 201)
		got := env.Call(get, "/v1/measurements/"+m, ian, nil, 200).JSON()
		if cur, _ := got["currentStep"].(map[string]any); cur == nil || cur["label"] != "Close" {
			t.Fatalf("after both seats: current step %v", got["currentStep"])
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("verify after the rename: %v", rep)
		}
	})
}

// TestPolicyRenamedDuringApprovals: renames of a policy while its holders
// approve many measurements at once give no spurious 403, no seat left
// under an old name (the Inbox and the ledger's verification agree), on
// both engines.
func TestPolicyRenamedDuringApprovals(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
		quality := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Quality", "roles": []string{"QA"}, "functions": fns}, 201).JSON()
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
		var qa []string
		for i := range 4 {
			_, k := member(t, env, fmt.Sprintf("qa%d@example.com", i), "QA")
			qa = append(qa, k)
		}
		_, ian := member(t, env, "ian@example.com", "INSPECTOR")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "code": "AUDIT", "steps": []map[string]any{
			{"label": "Review", "policyNames": []string{"Quality", "Inspector"}},
			{"label": "Close", "policyNames": []string{"Inspector"}},
		}}, 201).JSON()
		review := steps(proc)[0]["id"].(string)
		const n = 48
		ids := make([]string, n)
		for i := range ids {
			ids[i] = env.Call(post, "/v1/measurements", ian, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
		}
		var wg sync.WaitGroup
		var refused atomic.Int64
		for w := range qa {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += len(qa) {
					r := env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + ids[i] + "/actions", Key: qa[w], Body: map[string]any{"stepId": review, "type": "APPROVAL"}})
					if r.Status != 201 {
						refused.Add(1)
						t.Errorf("approval of %d during the renames: %d %s", i, r.Status, r.Body)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				env.Call(patch, "/v1/users/policies/"+quality["id"].(string), env.AdminKey, map[string]any{"name": fmt.Sprintf("Quality %d", i)}, 200)
			}
		}()
		wg.Wait()
		if refused.Load() > 0 {
			t.FailNow()
		}
		// Each Review waits on the inspector alone: his Inbox lists every measurement there.
		inbox := env.Call(get, "/v1/measurements?actionable=me&perPage=100", ian, nil, 200).JSON()
		if total := inbox["meta"].(map[string]any)["total"]; total != float64(n) {
			t.Fatalf("the inspector's Inbox lists %v measurements, want %d", total, n)
		}
		for _, id := range ids {
			m := env.Call(get, "/v1/measurements/"+id, ian, nil, 200).JSON()
			if u := fmt.Sprint(m["unfilledPolicies"]); !strings.Contains(u, "Inspector") || strings.Contains(u, "Quality") {
				t.Fatalf("measurement %s: unfilled %s", id, u)
			}
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("verify after the renames: %v", rep)
		}
	})
}
