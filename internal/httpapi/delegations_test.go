package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// delegations is a fixture of section 17's delegation: Bruno (SUPERVISOR
// and LEAD) is away; Ana (INSPECTOR) fills his seats. The process has one
// step, Review, with a Supervisor and a Lead seat; Lea holds Lead.
type delegations struct {
	env                    *tu.Env
	process                string
	review                 string
	bruno, ana, lea, carl  string // keys
	brunoID, anaID, carlID string
}

func newDelegations(t *testing.T, env *tu.Env) *delegations {
	t.Helper()
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
	for name, role := range map[string]string{"Inspector": "INSPECTOR", "Supervisor": "SUPERVISOR", "Lead": "LEAD"} {
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": name, "roles": []string{role}, "functions": fns}, 201)
	}
	d := &delegations{env: env}
	d.brunoID, d.bruno = member(t, env, "bruno@example.com", "SUPERVISOR", "LEAD")
	d.anaID, d.ana = member(t, env, "ana@example.com", "INSPECTOR")
	_, d.lea = member(t, env, "lea@example.com", "LEAD")
	d.carlID, d.carl = member(t, env, "carl@example.com", "INSPECTOR")
	for id, name := range map[string]string{d.brunoID: "Bruno", d.anaID: "Ana"} {
		env.Call(patch, "/v1/users/"+id, env.AdminKey, map[string]any{"name": name}, 200)
	}
	p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Check", "code": "CHK", "steps": []map[string]any{
		{"label": "Review", "policyNames": []string{"Supervisor", "Lead"}},
	}}, 201).JSON()
	d.process, d.review = p["id"].(string), steps(p)[0]["id"].(string)
	return d
}

// delegate posts a delegation from the caller (key) and returns it.
func (d *delegations) delegate(t *testing.T, key string, body map[string]any) map[string]any {
	t.Helper()
	return d.env.Call(post, "/v1/users/me/delegations", key, body, 201).JSON()
}

func (d *delegations) measurement(t *testing.T) string {
	t.Helper()
	return d.env.Call(post, "/v1/measurements", d.lea, map[string]any{"processId": d.process}, 201).JSON()["id"].(string)
}

func (d *delegations) approve(key, id string, want int) *tu.Response {
	d.env.T.Helper()
	r := d.env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: key,
		Body: map[string]any{"stepId": d.review, "type": "APPROVAL"}})
	if r.Status != want {
		d.env.T.Fatalf("approve: status %d, want %d: %s", r.Status, want, r.Body)
	}
	return r
}

func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// inboxFor lists the caller's Inbox as "NAME:for WHO" ("NAME:" for their own).
func inboxFor(t *testing.T, env *tu.Env, key string) []string {
	t.Helper()
	var out []string
	for _, m := range env.Call(get, "/v1/measurements?actionable=me&perPage=100", key, nil, 200).JSON()["data"].([]any) {
		m := m.(map[string]any)
		for _, a := range m["actionableSteps"].([]any) {
			who := ""
			if o, ok := a.(map[string]any)["onBehalfOf"].(map[string]any); ok {
				who = "for " + o["name"].(string)
			}
			out = append(out, m["name"].(string)+":"+who)
		}
	}
	return out
}

func TestDelegation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		d := newDelegations(t, env)
		now := env.Clock.Now()

		t.Run("bad input: 422 naming the field, nothing written", func(t *testing.T) {
			otherAdmin := env.NewOrg("Initech")
			stranger := env.Call(get, "/v1/users/me", otherAdmin, nil, 200).JSON()["id"].(string)
			_, gone := member(t, env, "gone@example.com", "INSPECTOR")
			goneID := env.Call(get, "/v1/users/me", gone, nil, 200).JSON()["id"].(string)
			env.Call(patch, "/v1/users/"+goneID, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
			ok := map[string]any{"toUserId": d.anaID, "endsAt": at(now.Add(48 * time.Hour)), "reason": "holidays"}
			with := func(k string, v any) map[string]any {
				b := map[string]any{}
				for k, v := range ok {
					b[k] = v
				}
				if v == nil {
					delete(b, k)
				} else {
					b[k] = v
				}
				return b
			}
			for _, c := range []struct {
				name  string
				body  map[string]any
				field string
			}{
				{"to oneself", with("toUserId", d.brunoID), "toUserId"},
				{"to an unknown user", with("toUserId", "0190c0de-0000-7000-8000-000000000000"), "toUserId"},
				{"to another org's user", with("toUserId", stranger), "toUserId"},
				{"to a deactivated user", with("toUserId", goneID), "toUserId"},
				{"ending in the past", with("endsAt", at(now.Add(-time.Hour))), "endsAt"},
				{"ending before it starts", with("startsAt", at(now.Add(72*time.Hour))), "endsAt"},
				{"a date that is not RFC 3339", with("endsAt", "next monday"), "endsAt"},
				{"an unknown policy", with("policyNames", []string{"Nobody"}), "policyNames[0]"},
				{"a policy the delegator does not hold", with("policyNames", []string{"Inspector"}), "policyNames[0]"},
				{"a blank reason", with("reason", "  "), "reason"},
			} {
				t.Run(c.name, func(t *testing.T) {
					tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/delegations", Key: d.bruno, Body: c.body}), 422, c.field)
				})
			}
			if l := env.Call(get, "/v1/users/me/delegations", d.bruno, nil, 200).JSON(); fmt.Sprint(l) != "map[given:[] received:[]]" {
				t.Fatalf("written: %v", l)
			}
		})

		var all map[string]any
		t.Run("created and listed, given and received", func(t *testing.T) {
			all = d.delegate(t, d.bruno, map[string]any{"toUserId": d.anaID, "endsAt": at(now.Add(48 * time.Hour)), "reason": "holidays"})
			if all["fromUserId"] != d.brunoID || all["toUserId"] != d.anaID || all["startsAt"] != now.Format("2006-01-02T15:04:05.000Z") ||
				fmt.Sprint(all["policyNames"]) != "[]" || all["reason"] != "holidays" || all["createdAt"] == nil || all["id"] == nil {
				t.Fatalf("created: %v", all)
			}
			given := env.Call(get, "/v1/users/me/delegations", d.bruno, nil, 200).JSON()
			received := env.Call(get, "/v1/users/me/delegations", d.ana, nil, 200).JSON()
			if len(given["given"].([]any)) != 1 || len(given["received"].([]any)) != 0 || len(received["received"].([]any)) != 1 ||
				received["received"].([]any)[0].(map[string]any)["id"] != all["id"] {
				t.Fatalf("given %v, received %v", given, received)
			}
		})

		t.Run("overlapping seats and received seats are refused", func(t *testing.T) {
			body := map[string]any{"toUserId": d.carlID, "startsAt": at(now.Add(24 * time.Hour)), "endsAt": at(now.Add(96 * time.Hour)),
				"policyNames": []string{"Lead"}, "reason": "second week"}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/delegations", Key: d.bruno, Body: body}), 422, "startsAt")
			// Ana received Bruno's Lead seats: she cannot pass them on.
			body["policyNames"] = []string{"Lead"}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/me/delegations", Key: d.ana, Body: body}), 422, "policyNames[0]")
			// Her own seats she may delegate; they are not Bruno's.
			delete(body, "policyNames")
			mine := d.delegate(t, d.ana, body)
			env.Call(del, "/v1/delegations/"+mine["id"].(string), d.ana, nil, 204)
			// Both are in the audit trail (semantics §19), by the delegation's id.
			events := env.Call(get, "/v1/audit-events?targetId="+mine["id"].(string), env.AdminKey, nil, 200).JSON()["data"].([]any)
			var types []string
			for _, e := range events {
				types = append(types, e.(map[string]any)["type"].(string))
			}
			if !slices.Equal(types, []string{"delegation.revoked", "delegation.created"}) || events[1].(map[string]any)["reason"] != mine["reason"] {
				t.Fatalf("audit events: %v", events)
			}
		})

		var m1, onBehalf string
		t.Run("the delegate fills the delegator's seat, on his behalf", func(t *testing.T) {
			m1 = d.measurement(t) // CHK-1
			if got := inboxFor(t, env, d.ana); !slices.Equal(got, []string{"CHK-1:for Bruno"}) {
				t.Fatalf("Ana's inbox: %q", got)
			}
			a := d.approve(d.ana, m1, 201).JSON()
			onBehalf = a["id"].(string)
			if o := a["onBehalfOf"].(map[string]any); o["userId"] != d.brunoID || o["name"] != "Bruno" || a["userId"] != d.anaID || a["policyName"] != "Supervisor" {
				t.Fatalf("action: %v", a)
			}
			hist := env.Call(get, "/v1/measurements/"+m1, d.lea, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any)
			if o := hist[0].(map[string]any)["onBehalfOf"].(map[string]any); o["name"] != "Bruno" {
				t.Fatalf("history: %v", hist[0])
			}
		})

		t.Run("one seat per person, counting seats filled on behalf of others", func(t *testing.T) {
			tu.Problem(t, d.approve(d.ana, m1, 409), 409, "")   // Ana fills one seat already
			tu.Problem(t, d.approve(d.bruno, m1, 409), 409, "") // Bruno's seat is filled, by Ana
			if got := inboxFor(t, env, d.bruno); len(got) != 0 {
				t.Fatalf("Bruno's inbox: %q", got)
			}
			if got := inboxFor(t, env, d.ana); len(got) != 0 {
				t.Fatalf("Ana's inbox: %q", got)
			}
			d.approve(d.lea, m1, 201)
			if st := env.Call(get, "/v1/measurements/"+m1, d.lea, nil, 200).JSON()["status"]; st != "APPROVED" {
				t.Fatalf("status %v", st)
			}
			// Bruno filling a seat himself leaves Ana nothing to fill for him.
			m2 := d.measurement(t)
			d.approve(d.bruno, m2, 201)
			if got := inboxFor(t, env, d.ana); len(got) != 0 {
				t.Fatalf("Ana's inbox after Bruno's seat: %q", got)
			}
			tu.Problem(t, d.approve(d.ana, m2, 409), 409, "")
		})

		t.Run("the ledger leaf holds onBehalfOf, and the ledger verifies", func(t *testing.T) {
			integrate(t, env)
			proof := env.Call(get, "/v1/actions/"+onBehalf+"/proof", env.AdminKey, nil, 200).JSON()
			raw, err := base64.StdEncoding.DecodeString(proof["leaf"].(string))
			if err != nil {
				t.Fatal(err)
			}
			var leaf map[string]any
			if err := json.Unmarshal(raw, &leaf); err != nil {
				t.Fatal(err)
			}
			if o, _ := leaf["onBehalfOf"].(map[string]any); o["userId"] != d.brunoID || o["name"] != "Bruno" {
				t.Fatalf("leaf: %s", raw)
			}
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("verify: %v", rep)
			}
		})

		t.Run("revoked: at once", func(t *testing.T) {
			m := d.measurement(t)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/delegations/" + all["id"].(string), Key: d.carl}), 404, "")
			env.Call(del, "/v1/delegations/"+all["id"].(string), d.bruno, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/delegations/" + all["id"].(string), Key: d.bruno}), 404, "")
			if got := inboxFor(t, env, d.ana); len(got) != 0 {
				t.Fatalf("Ana's inbox: %q", got)
			}
			tu.Problem(t, d.approve(d.ana, m, 403), 403, "")
			if l := env.Call(get, "/v1/users/me/delegations", d.ana, nil, 200).JSON(); len(l["received"].([]any)) != 0 {
				t.Fatalf("still listed: %v", l)
			}
		})

		t.Run("limited to policyNames; starts later; ends by the clock", func(t *testing.T) {
			now := env.Clock.Now()
			lead := d.delegate(t, d.bruno, map[string]any{"toUserId": d.anaID, "startsAt": at(now.Add(time.Hour)), "endsAt": at(now.Add(3 * time.Hour)),
				"policyNames": []string{"Lead"}, "reason": "afternoon off"})
			if fmt.Sprint(lead["policyNames"]) != "[Lead]" {
				t.Fatalf("created: %v", lead)
			}
			m := d.measurement(t)
			tu.Problem(t, d.approve(d.ana, m, 403), 403, "") // not started
			env.Clock.Advance(time.Hour)
			a := d.approve(d.ana, m, 201).JSON()
			if a["policyName"] != "Lead" || a["onBehalfOf"] == nil {
				t.Fatalf("action: %v", a)
			}
			m = d.measurement(t)
			env.Clock.Advance(2 * time.Hour) // ended
			tu.Problem(t, d.approve(d.ana, m, 403), 403, "")
			if got := inboxFor(t, env, d.ana); len(got) != 0 {
				t.Fatalf("Ana's inbox: %q", got)
			}
		})

		t.Run("a deactivated delegator ends it; users:manage delegates for someone away", func(t *testing.T) {
			now := env.Clock.Now()
			body := map[string]any{"toUserId": d.anaID, "endsAt": at(now.Add(24 * time.Hour)), "reason": "sick leave"}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/" + d.brunoID + "/delegations", Key: d.carl, Body: body}), 403, "")
			got := env.Call(post, "/v1/users/"+d.brunoID+"/delegations", env.AdminKey, body, 201).JSON()
			if got["fromUserId"] != d.brunoID {
				t.Fatalf("created: %v", got)
			}
			m := d.measurement(t)
			if got := inboxFor(t, env, d.ana); !slices.Contains(got, "CHK-6:for Bruno") {
				t.Fatalf("Ana's inbox: %q", got)
			}
			env.Call(patch, "/v1/users/"+d.brunoID, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
			if got := inboxFor(t, env, d.ana); len(got) != 0 {
				t.Fatalf("Ana's inbox: %q", got)
			}
			tu.Problem(t, d.approve(d.ana, m, 403), 403, "")
			env.Call(patch, "/v1/users/"+d.brunoID, env.AdminKey, map[string]any{"status": "ACTIVE"}, 200)
			d.approve(d.ana, m, 201)
			// The delegate may revoke it too; the admin, with users:manage, as well.
			env.Call(del, "/v1/delegations/"+got["id"].(string), d.ana, nil, 204)
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("verify: %v", rep)
			}
		})
	})
}
