package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"wps/internal/schedule"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/webhook"
	"wps/internal/wps"
)

// escalations counts the step.escalated events of a measurement.
func escalations(env *tu.Env, measurementID string) int {
	return env.RawInt(`SELECT count(*) FROM events WHERE type = 'step.escalated' AND measurement_id = ?`, measurementID)
}

// TestEscalationsInOrderOncePerOpening: PT0S fires at dueAt, PT4H four
// hours later, each once; nothing after the step consensed; again for a new
// opening; the step's webhookUrls receive the event with its data.
func TestEscalationsInOrderOncePerOpening(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Leads", "roles": []string{"LEAD"}}, 201)
		var mu sync.Mutex
		var got []map[string]any
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var e map[string]any
			if json.NewDecoder(r.Body).Decode(&e) == nil && e["type"] == "step.escalated" {
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
			}
		}))
		defer rcv.Close()
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "deadline": "1", "deadlineType": "HOURS", "webhookUrls": rcv.URL,
				"escalations": []map[string]any{{"after": "PT0S", "policyName": "Admins"}, {"after": "PT4H", "policyName": "Leads"}}},
			{"label": "Sign", "policyNames": []string{"Admins"}},
		}}, 201).JSON()
		check, sign := steps(p)[0], steps(p)[1]
		m := env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		opened := env.Clock.Now()
		sched := schedule.New(env.Service, schedule.Config{})
		run := func(want int, when string) {
			t.Helper()
			for range 2 {
				if err := sched.RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if n := escalations(env, m); n != want {
				t.Fatalf("%s: %d step.escalated, want %d", when, n, want)
			}
		}
		env.Clock.Advance(time.Hour - time.Millisecond)
		run(0, "just before dueAt")
		env.Clock.Advance(time.Millisecond)
		if b, err := env.DB.Backlog(context.Background(), env.Clock.Now()); err != nil || b.Escalations != 1 || !b.OldestEscalation.Equal(opened.Add(time.Hour)) {
			t.Fatalf("backlog at dueAt: %+v %v", b, err)
		}
		run(1, "at dueAt (PT0S)")
		env.Clock.Advance(4*time.Hour - time.Millisecond)
		run(1, "just before dueAt + PT4H")
		env.Clock.Advance(time.Millisecond)
		run(2, "at dueAt + PT4H")
		env.Clock.Advance(48 * time.Hour)
		run(2, "with every escalation emitted")

		// Consensed, then re-opened by a rejection: a new opening escalates again.
		act := func(step, typ string) {
			env.Call("POST", "/v1/measurements/"+m+"/actions", env.AdminKey, map[string]any{"stepId": step, "type": typ, "observation": "again"}, 201)
		}
		act(check, "APPROVAL")
		act(sign, "REJECTION")
		reopened := env.Clock.Now()
		env.Clock.Advance(time.Hour)
		run(3, "at the new opening's dueAt")
		act(check, "APPROVAL") // consensed before its PT4H
		env.Clock.Advance(5 * time.Hour)
		run(3, "after the step consensed")

		w := webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: true})
		tu.Await(t, "three step.escalated deliveries", func() error {
			if _, err := w.RunOnce(context.Background()); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) < 3 {
				return fmt.Errorf("%d received", len(got))
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		due := func(t time.Time) string { return t.Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z") }
		want := []string{
			fmt.Sprintf("%s %s 1 %s 0 PT0S Admins", m, check, due(opened)),
			fmt.Sprintf("%s %s 1 %s 1 PT4H Leads", m, check, due(opened)),
			fmt.Sprintf("%s %s 2 %s 0 PT0S Admins", m, check, due(reopened)),
		}
		seen := map[string]bool{}
		for _, e := range got {
			d := e["data"].(map[string]any)
			if d["processId"] != p["id"] {
				t.Fatalf("processId: %v", e)
			}
			seen[fmt.Sprintf("%s %s %v %s %v %s %s", d["measurementId"], d["stepId"], d["opening"], d["dueAt"], d["escalation"], d["after"], d["policyName"])] = true
		}
		for _, w := range want {
			if !seen[w] {
				t.Fatalf("no delivery of %q in %v", w, got)
			}
		}
	})
}

// TestEscalationsOnceWithTwoSchedulers: two schedulers (on PostgreSQL, two
// replicas with their own connections) racing emit each escalation once.
func TestEscalationsOnceWithTwoSchedulers(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		var db wps.Store = env.DB
		if engine == sqlstore.Postgres {
			other, err := sqlstore.Open(context.Background(), env.URL(), sqlstore.Options{MaxConns: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			db = other
		}
		svc2 := wps.NewService(db, wps.ServiceConfig{Now: env.Clock.Now, AllowPrivateWebhooks: true})
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "deadline": "2", "deadlineType": "DAYS", "escalations": []map[string]any{
				{"after": "PT0S", "policyName": "Admins"}, {"after": "PT0S", "policyName": "Admins"}, {"after": "PT30M", "policyName": "Admins"}}},
		}}, 201).JSON()
		var ms []string
		for range 8 {
			ms = append(ms, env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string))
		}
		env.Clock.Advance(49 * time.Hour)
		var wg sync.WaitGroup
		for _, svc := range []*wps.Service{env.Service, svc2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sched := schedule.New(svc, schedule.Config{})
				for range 3 {
					if err := sched.RunOnce(context.Background()); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		for _, m := range ms {
			for i := range 3 {
				if n := env.RawInt(`SELECT count(*) FROM events WHERE type = 'step.escalated' AND measurement_id = ? AND payload LIKE ?`,
					m, fmt.Sprintf(`%%"escalation":%d,%%`, i)); n != 1 {
					t.Fatalf("escalation %d of %s emitted %d times", i, m, n)
				}
			}
			if n := escalations(env, m); n != 3 {
				t.Fatalf("%s: %d step.escalated", m, n)
			}
		}
	})
}

// TestEscalationRecipients: the seam the work.escalated mail will use is
// told of each escalation once, with the active holders of its policy.
func TestEscalationRecipients(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Leads", "roles": []string{"LEAD"}}, 201)
		member := func(email, role string) string {
			inv := env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": []string{role}}, 201).JSON()
			acc := env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()
			return acc["user"].(map[string]any)["id"].(string)
		}
		lead := member("lea@example.com", "LEAD")
		gone := member("gus@example.com", "LEAD")
		member("wes@example.com", "WORKER")
		env.Call("PATCH", "/v1/users/"+gone, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		var mu sync.Mutex
		told, calls := map[string][]string{}, 0
		svc := wps.NewService(env.DB, wps.ServiceConfig{Now: env.Clock.Now, AllowPrivateWebhooks: true,
			OnEscalated: func(_ wps.Tx, e wps.Escalated, to []wps.User) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				key := fmt.Sprintf("%d %s", e.Index, e.Escalation.PolicyName)
				told[key] = nil
				for _, u := range to {
					told[key] = append(told[key], u.ID)
				}
				return nil
			}})
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "deadline": "1", "deadlineType": "HOURS",
				"escalations": []map[string]any{{"after": "PT2H", "policyName": "Leads"}}},
		}}, 201).JSON()
		env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201)
		env.Clock.Advance(3 * time.Hour)
		for range 2 {
			if _, err := svc.NotifyEscalations(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if calls != 1 || fmt.Sprint(told) != fmt.Sprint(map[string][]string{"0 Leads": {lead}}) {
			t.Fatalf("told %d times: %v, want escalation 0 to Leads for %s alone, once", calls, told, lead)
		}
	})
}

// TestEscalationsAfterMigrationRoundTrip: migration 37 goes down (the
// release before) and up again; a step that opens afterwards escalates.
func TestEscalationsAfterMigrationRoundTrip(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		if err := sqlstore.MigrateTo(context.Background(), env.URL(), 36); err != nil {
			t.Fatal(err)
		}
		if n := env.RawInt(`SELECT count(*) FROM measurement_open_steps`); n != 0 {
			t.Fatalf("%d open steps", n)
		}
		up := env.Reopen()
		p := up.Call("POST", "/v1/process", up.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "deadline": "1", "deadlineType": "HOURS",
				"escalations": []map[string]any{{"after": "PT1H", "policyName": "Admins"}}},
		}}, 201).JSON()
		m := up.Call("POST", "/v1/measurements", up.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		up.Clock.Advance(2 * time.Hour)
		if n, err := up.Service.NotifyEscalations(context.Background()); err != nil || n != 1 || escalations(up, m) != 1 {
			t.Fatalf("after the round trip: %d emitted, %v", n, err)
		}
	})
}

// TestEscalationAfterBusinessDeadline: after counts wall-clock time past a
// business deadline (docs/decisions.md): 8 working hours from Monday 09:00
// are due at 17:00, and PT1H past that is 18:00, after work.
func TestEscalationAfterBusinessDeadline(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		if now := env.Clock.Now().UTC(); now.Weekday() != time.Monday || now.Hour() != 9 || now.Minute() != 0 {
			t.Fatalf("the test clock starts at %s, not a Monday 09:00Z", now)
		}
		day := []string{"09:00-17:00"}
		env.Call("PUT", "/v1/organizations/calendar", env.AdminKey, map[string]any{"timeZone": "UTC",
			"workingHours": map[string]any{"mon": day, "tue": day, "wed": day, "thu": day, "fri": day}}, 200)
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "deadline": "8", "deadlineType": "BUSINESS_HOURS",
				"escalations": []map[string]any{{"after": "PT1H", "policyName": "Admins"}}},
		}}, 201).JSON()
		m := env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		env.Clock.Advance(9*time.Hour - time.Millisecond)
		if _, err := env.Service.NotifyEscalations(context.Background()); err != nil || escalations(env, m) != 0 {
			t.Fatalf("before 18:00: %d, %v", escalations(env, m), err)
		}
		env.Clock.Advance(time.Millisecond)
		if _, err := env.Service.NotifyEscalations(context.Background()); err != nil || escalations(env, m) != 1 {
			t.Fatalf("at 18:00: %d, %v", escalations(env, m), err)
		}
	})
}
