package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// inbox is the caller's GET /v1/measurements?actionable=me (with more of
// the query in extra): each measurement as "NAME:Step,Step" (its
// actionable steps by label), newest first, and the total.
func inbox(t *testing.T, env *tu.Env, key, extra string) ([]string, int) {
	t.Helper()
	res := env.Call(get, "/v1/measurements?actionable=me"+extra, key, nil, 200).JSON()
	var out []string
	for _, m := range res["data"].([]any) {
		m := m.(map[string]any)
		var labels []string
		for _, a := range m["actionableSteps"].([]any) {
			labels = append(labels, a.(map[string]any)["label"].(string))
		}
		out = append(out, m["name"].(string)+":"+strings.Join(labels, ","))
	}
	return out, int(res["meta"].(map[string]any)["total"].(float64))
}

// wantInbox checks the caller's inbox (all of it: one page of 100).
func wantInbox(t *testing.T, env *tu.Env, who, key string, want ...string) {
	t.Helper()
	got, total := inbox(t, env, key, "&perPage=100")
	if !slices.Equal(got, want) || total != len(want) {
		t.Fatalf("%s's inbox: %q (total %d), want %q", who, got, total, want)
	}
}

// The Inbox (semantics section 13): open steps with a seat the caller can
// fill now, ordered policies respected; on the end-to-end fixture (Inspect:
// ordered Inspector then Supervisor, 2 h deadline, routes to Repair; Repair
// and Photos in parallel; Close, whose rejection re-opens Repair).
func TestInbox(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		s := newService(t, env)
		_, dual := member(t, env, "dual@example.com", "INSPECTOR", "SUPERVISOR")
		create := func(key string) string {
			return env.Call(post, "/v1/measurements", key, map[string]any{"processId": s.process["id"]}, 201).JSON()["id"].(string)
		}
		act := func(key, id, step, typ string, params map[string]any) {
			t.Helper()
			body := map[string]any{"stepId": step, "type": typ, "parameters": params, "observation": "checked"}
			env.Call(post, "/v1/measurements/"+id+"/actions", key, body, 201)
		}

		m1 := create(s.ian) // PUMP-1
		t.Run("ordered seats: the second policy waits for the first seat", func(t *testing.T) {
			wantInbox(t, env, "ian", s.ian, "PUMP-1:Inspect")
			wantInbox(t, env, "sam", s.sam)
			act(s.ian, m1, s.inspect, "WRITE_DATA", map[string]any{"kind": "repair"})
			wantInbox(t, env, "ian", s.ian)
			wantInbox(t, env, "sam", s.sam, "PUMP-1:Inspect")
		})
		t.Run("the step's due time and overdue mark", func(t *testing.T) {
			res := env.Call(get, "/v1/measurements?actionable=me", s.sam, nil, 200).JSON()
			a := res["data"].([]any)[0].(map[string]any)["actionableSteps"].([]any)[0].(map[string]any)
			opened := env.Clock.Now().UTC()
			if a["stepId"] != s.inspect || fmt.Sprint(a["policyNames"]) != "[Supervisor]" || a["overdue"] != false ||
				a["dueAt"] != opened.Add(2*time.Hour).Format("2006-01-02T15:04:05.000Z") || a["openedAt"] != opened.Format("2006-01-02T15:04:05.000Z") {
				t.Fatalf("actionable step: %v", a)
			}
			// A plain list has no actionableSteps.
			if m := env.Call(get, "/v1/measurements", s.sam, nil, 200).JSON()["data"].([]any)[0].(map[string]any); m["actionableSteps"] != nil {
				t.Fatalf("plain list: %v", m)
			}
		})
		t.Run("one user fills at most one seat of a step", func(t *testing.T) {
			m2 := create(dual) // PUMP-2
			wantInbox(t, env, "dual", dual, "PUMP-2:Inspect", "PUMP-1:Inspect")
			act(dual, m2, s.inspect, "WRITE_DATA", map[string]any{"kind": "repair"})
			// dual holds Supervisor too, the seat now next: not theirs to fill.
			wantInbox(t, env, "dual", dual, "PUMP-1:Inspect")
			wantInbox(t, env, "sam", s.sam, "PUMP-2:Inspect", "PUMP-1:Inspect")
			act(s.sam, m2, s.inspect, "APPROVAL", nil)
		})
		t.Run("parallel steps wait on each holder", func(t *testing.T) {
			act(s.sam, m1, s.inspect, "APPROVAL", nil) // routed to Repair; Photos opens beside it
			wantInbox(t, env, "ian", s.ian, "PUMP-2:Repair", "PUMP-1:Repair")
			wantInbox(t, env, "sam", s.sam, "PUMP-2:Photos", "PUMP-1:Photos")
			// One seat per step: dual's seat at PUMP-2's Inspect leaves them its other steps.
			wantInbox(t, env, "dual", dual, "PUMP-2:Repair,Photos", "PUMP-1:Repair,Photos")
		})
		t.Run("a rejection re-opens a step: actionable again", func(t *testing.T) {
			act(s.ian, m1, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced"})
			act(s.sam, m1, s.photos, "APPROVAL", nil)
			wantInbox(t, env, "ian", s.ian, "PUMP-2:Repair")
			wantInbox(t, env, "sam", s.sam, "PUMP-2:Photos", "PUMP-1:Close")
			act(s.sam, m1, s.close, "REJECTION", nil)
			wantInbox(t, env, "ian", s.ian, "PUMP-2:Repair", "PUMP-1:Repair")
			wantInbox(t, env, "sam", s.sam, "PUMP-2:Photos")
		})
		t.Run("an approved measurement is gone", func(t *testing.T) {
			act(s.ian, m1, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced again"})
			act(s.sam, m1, s.close, "APPROVAL", nil)
			if st := s.status(t, m1); st != "APPROVED" {
				t.Fatalf("status %s", st)
			}
			wantInbox(t, env, "ian", s.ian, "PUMP-2:Repair")
			wantInbox(t, env, "sam", s.sam, "PUMP-2:Photos")
			wantInbox(t, env, "dual", dual, "PUMP-2:Repair,Photos")
		})
		t.Run("with processId, status, overdue and paging", func(t *testing.T) {
			other := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Valve check", "code": "VALVE", "steps": []map[string]any{
				{"label": "Look", "policyNames": []string{"Inspector"}, "deadline": "1", "deadlineType": "HOURS"},
				{"label": "Sign", "policyNames": []string{"Supervisor"}},
			}}, 201).JSON()
			for range 3 {
				env.Call(post, "/v1/measurements", s.ian, map[string]any{"processId": other["id"]}, 201)
			}
			env.Clock.Advance(90 * time.Minute) // the Look steps are overdue; PUMP-3's Inspect (2 h) is not
			create(s.ian)                       // PUMP-3
			wantInbox(t, env, "ian", s.ian, "PUMP-3:Inspect", "VALVE-3:Look", "VALVE-2:Look", "VALVE-1:Look", "PUMP-2:Repair")
			for _, c := range []struct {
				query string
				want  []string
				total int
			}{
				{"&processId=" + other["id"].(string), []string{"VALVE-3:Look", "VALVE-2:Look", "VALVE-1:Look"}, 3},
				{"&processId=" + s.process["id"].(string), []string{"PUMP-3:Inspect", "PUMP-2:Repair"}, 2},
				{"&status=OPEN", []string{"PUMP-3:Inspect", "VALVE-3:Look", "VALVE-2:Look", "VALVE-1:Look"}, 4},
				{"&overdue=true", []string{"VALVE-3:Look", "VALVE-2:Look", "VALVE-1:Look"}, 3},
				{"&overdue=true&processId=" + s.process["id"].(string), nil, 0},
				{"&stepId=" + s.repair, []string{"PUMP-2:Repair"}, 1},
				{"&perPage=2", []string{"PUMP-3:Inspect", "VALVE-3:Look"}, 5},
				{"&perPage=2&page=2", []string{"VALVE-2:Look", "VALVE-1:Look"}, 5},
				{"&perPage=2&page=3", []string{"PUMP-2:Repair"}, 5},
				{"&perPage=2&page=4", nil, 5},
				{"&perPage=2&page=2&processId=" + other["id"].(string), []string{"VALVE-1:Look"}, 3},
			} {
				got, total := inbox(t, env, s.ian, c.query)
				if !slices.Equal(got, c.want) || total != c.total {
					t.Errorf("actionable=me%s: %q (total %d), want %q (total %d)", c.query, got, total, c.want, c.total)
				}
			}
			// The overdue mark, and the overdue filter applies to the step
			// waiting on the caller: sam's Photos of PUMP-2 has no
			// deadline, so sam has nothing overdue.
			res := env.Call(get, "/v1/measurements?actionable=me&overdue=true&perPage=1", s.ian, nil, 200).JSON()
			if a := res["data"].([]any)[0].(map[string]any)["actionableSteps"].([]any)[0].(map[string]any); a["overdue"] != true {
				t.Fatalf("overdue step: %v", a)
			}
			if got, total := inbox(t, env, s.sam, "&overdue=true"); len(got) != 0 || total != 0 {
				t.Fatalf("sam's overdue: %q %d", got, total)
			}
		})
		t.Run("actionable takes only me (empty is left out, as every query parameter)", func(t *testing.T) {
			for _, bad := range []string{"you", "ME", "true", "me,you"} {
				tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements?actionable=" + bad, Key: s.ian}), 422, "actionable")
			}
			all := env.Call(get, "/v1/measurements", s.ian, nil, 200).JSON()["meta"]
			if empty := env.Call(get, "/v1/measurements?actionable=", s.ian, nil, 200).JSON()["meta"]; fmt.Sprint(empty) != fmt.Sprint(all) {
				t.Fatalf("actionable= %v, the plain list %v", empty, all)
			}
		})
		t.Run("no seat to fill: an empty list", func(t *testing.T) {
			// The admin holds no policy: ADMIN skips function checks, not seats.
			wantInbox(t, env, "the admin", env.AdminKey)
			// A reader holds a policy of no step, and may not act.
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"measurement:read"}}, 201)
			_, reader := member(t, env, "reader@example.com", "READER")
			wantInbox(t, env, "a reader", reader)
			// A user without roles holds no policy; they may not list at all.
			_, bare := member(t, env, "bare@example.com")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements?actionable=me", Key: bare}), 403, "")
		})
		t.Run("a simplified creation fills its creator's seat", func(t *testing.T) {
			env.Call(post, "/v1/measurements/simplified", s.ian, map[string]any{"processLabel": "Pump service", "parameters": map[string]any{"Kind": "scrap"}}, 201)
			wantInbox(t, env, "sam", s.sam, "PUMP-4:Inspect", "PUMP-2:Photos")
			wantInbox(t, env, "ian", s.ian, "PUMP-3:Inspect", "VALVE-3:Look", "VALVE-2:Look", "VALVE-1:Look", "PUMP-2:Repair")
		})
	})
}

// Role narrowing, a step without policies, a renamed policy, a PENDING
// measurement, and the index written again from the measurements' states
// by the migration that adds it (a database upgraded from before it).
func TestInboxRolesAndUpgrade(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Quality", "roles": []string{"QA_LEAD", "QA_TRAINEE"}, "functions": fns}, 201)
		inspector := env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201).JSON()
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"measurement:read"}}, 201)
		_, lea := member(t, env, "lea@example.com", "QA_LEAD")
		_, tom := member(t, env, "tom@example.com", "QA_TRAINEE")
		_, ian := member(t, env, "ian@example.com", "INSPECTOR")
		_, reader := member(t, env, "reader@example.com", "READER")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "code": "AUDIT", "steps": []map[string]any{
			{"label": "Review", "policyNames": []string{"Quality", "Inspector"}, "roles": []map[string]any{{"p": "Quality", "r": []string{"QA_LEAD"}}}},
			{"label": "Anyone"},
		}}, 201).JSON()
		review := steps(proc)[0]["id"].(string)
		create := func() string {
			return env.Call(post, "/v1/measurements", ian, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
		}
		act := func(key, id, step string, want int) {
			t.Helper()
			env.Call(post, "/v1/measurements/"+id+"/actions", key, map[string]any{"stepId": step, "type": "APPROVAL"}, want)
		}

		m1 := create()
		t.Run("the step's roles narrow who holds a seat", func(t *testing.T) {
			wantInbox(t, env, "lea", lea, "AUDIT-1:Review")
			wantInbox(t, env, "tom", tom) // holds Quality, but not through QA_LEAD
			wantInbox(t, env, "ian", ian, "AUDIT-1:Review")
			act(tom, m1, review, 403) // the engine agrees
			act(lea, m1, review, 201)
			wantInbox(t, env, "lea", lea)
			wantInbox(t, env, "ian", ian, "AUDIT-1:Review")
		})
		t.Run("a step without policies waits on anyone who may act", func(t *testing.T) {
			act(ian, m1, review, 201)
			wantInbox(t, env, "ian", ian, "AUDIT-1:Anyone")
			wantInbox(t, env, "tom", tom, "AUDIT-1:Anyone")
			wantInbox(t, env, "the admin", env.AdminKey, "AUDIT-1:Anyone")
			wantInbox(t, env, "a reader", reader)
			res := env.Call(get, "/v1/measurements?actionable=me", tom, nil, 200).JSON()
			if a := res["data"].([]any)[0].(map[string]any)["actionableSteps"].([]any)[0].(map[string]any); fmt.Sprint(a["policyNames"]) != "[*]" || a["dueAt"] != nil {
				t.Fatalf("step without policies: %v", a)
			}
		})
		m2 := create()
		t.Run("a renamed policy: its seats follow", func(t *testing.T) {
			env.Call(patch, "/v1/users/policies/"+inspector["id"].(string), env.AdminKey, map[string]any{"name": "Checker"}, 200)
			wantInbox(t, env, "ian", ian, "AUDIT-2:Review", "AUDIT-1:Anyone")
			act(ian, m2, review, 201)
			wantInbox(t, env, "ian", ian, "AUDIT-1:Anyone")
			wantInbox(t, env, "lea", lea, "AUDIT-2:Review", "AUDIT-1:Anyone")
		})
		t.Run("a PENDING measurement waits on nobody until its occurrence", func(t *testing.T) {
			daily := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Daily round", "code": "DR", "steps": []map[string]any{
				{"label": "Walk", "policyNames": []string{"Quality"}, "frequency": "DAILY", "frequencyDate": "2026-01-05T12:00:00Z"},
			}}, 201).JSON()
			if n, err := env.Service.RunRecurrences(t.Context()); err != nil || n != 1 {
				t.Fatalf("recurrences: %d %v", n, err)
			}
			if got := env.Call(get, "/v1/measurements?status=PENDING&processId="+daily["id"].(string), lea, nil, 200).JSON()["meta"].(map[string]any)["total"]; got != 1.0 {
				t.Fatalf("%v PENDING", got)
			}
			wantInbox(t, env, "lea", lea, "AUDIT-2:Review", "AUDIT-1:Anyone")
			env.Clock.Advance(4 * time.Hour) // 13:00: DR-1 opens
			if _, err := env.Service.RunRecurrences(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantInbox(t, env, "lea", lea, "DR-1:Walk", "AUDIT-2:Review", "AUDIT-1:Anyone")
		})
		t.Run("an upgraded database: the migration writes the index from each state", func(t *testing.T) {
			create() // AUDIT-3: no seat filled
			inboxes := map[string][]string{}
			keys := map[string]string{"lea": lea, "tom": tom, "ian": ian, "admin": env.AdminKey, "reader": reader}
			for who, key := range keys {
				inboxes[who], _ = inbox(t, env, key, "&perPage=100")
			}
			seats := env.RawInt(`SELECT count(*) FROM measurement_open_seats`)
			fillers := env.RawInt(`SELECT count(*) FROM measurement_step_fillers`)
			if seats == 0 || fillers == 0 {
				t.Fatalf("%d seats, %d fillers", seats, fillers)
			}
			env.RawExec(`DROP TABLE measurement_step_fillers`)
			env.RawExec(`DROP TABLE measurement_open_seats`)
			env.RawExec(`DROP INDEX measurements_org_id`) // migration 17, after the index's
			// Migration 20's tables.
			for _, table := range []string{"documents", "contract_template_versions", "contract_templates"} {
				env.RawExec(`DROP TABLE ` + table)
			}
			env.RawExec(`DELETE FROM goose_db_version WHERE version_id >= 15`)
			env.RawExec(`DROP INDEX deliveries_webhook_pending`) // migration 25's, made again too
			up := env.Reopen()
			for who, key := range keys {
				if got, _ := inbox(t, up, key, "&perPage=100"); !slices.Equal(got, inboxes[who]) {
					t.Errorf("%s's inbox after the upgrade: %q, want %q", who, got, inboxes[who])
				}
			}
			if s, f := up.RawInt(`SELECT count(*) FROM measurement_open_seats`), up.RawInt(`SELECT count(*) FROM measurement_step_fillers`); s != seats || f != fillers {
				t.Errorf("after the upgrade %d seats and %d fillers, want %d and %d", s, f, seats, fillers)
			}
		})
	})
}

// The OpenAPI document declares actionable (only me) and the items' actionableSteps.
func TestInboxInOpenAPI(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	doc := env.Call(get, "/v1/openapi.json", "", nil, 200).JSON()
	declared := false
	for _, p := range doc["paths"].(map[string]any)["/v1/measurements"].(map[string]any)["get"].(map[string]any)["parameters"].([]any) {
		p := p.(map[string]any)
		if p["name"] == "actionable" && p["in"] == "query" {
			declared = fmt.Sprint(p["schema"].(map[string]any)["enum"]) == "[me]"
		}
	}
	if !declared {
		t.Fatal("GET /v1/measurements does not declare actionable with enum [me]")
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	props := schemas["MeasurementSummary"].(map[string]any)["properties"].(map[string]any)
	step, _ := schemas["ActionableStep"].(map[string]any)
	if props["actionableSteps"] == nil || step == nil || step["properties"].(map[string]any)["dueAt"] == nil {
		t.Fatalf("actionableSteps is not described: %v %v", props["actionableSteps"], step)
	}
}
