package schedule_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"wps/internal/schedule"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/webhook"
	"wps/internal/wps"
)

func admins(env *tu.Env) {
	env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
}

func TestOverdueOncePerOpening(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		admins(env)
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Others", "roles": []string{"OTHER"}}, 201)
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Timed", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins", "Others"}, "deadline": "1", "deadlineType": "HOURS"},
		}}, 201).JSON()
		m := env.Call("POST", "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()
		sched := schedule.New(env.Service, schedule.Config{})
		overdue := func() int {
			return env.RawInt(`SELECT count(*) FROM events WHERE type = 'step.overdue' AND measurement_id = ?`, m["id"])
		}
		if err := sched.RunOnce(context.Background()); err != nil || overdue() != 0 {
			t.Fatalf("before the deadline: %v, %d", err, overdue())
		}
		env.Clock.Advance(61 * time.Minute)
		// An action that leaves the step open keeps the same opening.
		env.Call("POST", "/v1/measurements/"+m["id"].(string)+"/actions", env.AdminKey, map[string]any{"stepId": steps(p)[0], "type": "APPROVAL"}, 201)
		for range 3 {
			if err := sched.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if overdue() != 1 {
			t.Fatalf("%d step.overdue events", overdue())
		}
		list := env.Call("GET", "/v1/measurements?overdue=true", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(list) != 1 {
			t.Fatalf("overdue filter: %v", list)
		}
	})
}

func steps(p map[string]any) []string {
	var out []string
	for _, s := range p["steps"].([]any) {
		out = append(out, s.(map[string]any)["id"].(string))
	}
	return out
}

func TestRecurrenceCatchesUpExactlyOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine) // the clock reads 2026-01-05T09:00Z
		admins(env)
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Daily round", "code": "DR", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Admins"}, "frequency": "DAILY", "frequencyDate": "2026-01-02T08:00:00Z"},
		}}, 201).JSON()
		weekly := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Fortnight", "code": "FN", "steps": []map[string]any{
			{"label": "Audit", "policyNames": []string{"Admins"}, "frequency": "RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO", "frequencyDate": "2025-12-01T10:00:00Z"},
		}}, 201).JSON()
		names := func(id string) []string { // name:status
			var out []string
			for _, m := range env.Call("GET", "/v1/measurements?perPage=100&processId="+id, env.AdminKey, nil, 200).JSON()["data"].([]any) {
				out = append(out, m.(map[string]any)["name"].(string)+":"+m.(map[string]any)["status"].(string))
			}
			sort.Strings(out)
			return out
		}
		for range 2 { // downtime catch-up, then nothing more
			if _, err := env.Service.RunRecurrences(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		// 2026-01-02 to 01-05 at 08:00 are due; 01-06 is made ahead, PENDING.
		if got := names(p["id"].(string)); fmt.Sprint(got) != "[DR-1:OPEN DR-2:OPEN DR-3:OPEN DR-4:OPEN DR-5:PENDING]" {
			t.Fatalf("daily: %v", got)
		}
		// Mondays 2025-12-01, 12-15, 12-29 at 10:00; 2026-01-12 is not due yet.
		if got := names(weekly["id"].(string)); fmt.Sprint(got) != "[FN-1:OPEN FN-2:OPEN FN-3:OPEN FN-4:PENDING]" {
			t.Fatalf("every other Monday: %v", got)
		}
		if pending := env.Call("GET", "/v1/measurements?status=PENDING", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; pending != 2.0 {
			t.Fatalf("%v PENDING in the list", pending)
		}
		env.Clock.Advance(24 * time.Hour) // 01-06 09:00: DR-5 opens, 01-07 is made ahead
		if n, err := env.Service.RunRecurrences(context.Background()); err != nil || n != 1 {
			t.Fatalf("next day: %d %v", n, err)
		}
		if got := names(p["id"].(string)); fmt.Sprint(got) != "[DR-1:OPEN DR-2:OPEN DR-3:OPEN DR-4:OPEN DR-5:OPEN DR-6:PENDING]" {
			t.Fatalf("next day: %v", got)
		}
	})
}

// A recurring process restored after days deleted starts again from its
// restoration: the occurrences it missed while deleted are not made.
func TestRestoredRecurrenceSkipsWhatItMissed(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine) // the clock reads 2026-01-05T09:00Z
		admins(env)
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Daily round", "code": "DR", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Admins"}, "frequency": "DAILY", "frequencyDate": "2026-01-05T08:00:00Z"},
		}}, 201).JSON()
		id := p["id"].(string)
		run := func() {
			if _, err := env.Service.RunRecurrences(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		names := func() string {
			var out []string
			for _, m := range env.Call("GET", "/v1/measurements?perPage=100&processId="+id, env.AdminKey, nil, 200).JSON()["data"].([]any) {
				out = append(out, m.(map[string]any)["name"].(string)+":"+m.(map[string]any)["status"].(string))
			}
			sort.Strings(out)
			return fmt.Sprint(out)
		}
		run() // 01-05 is due, 01-06 made ahead
		env.Call("DELETE", "/v1/process/"+id, env.AdminKey, nil, 204)
		env.Clock.Advance(5 * 24 * time.Hour)
		run()
		env.Call("POST", "/v1/process/"+id+":restore", env.AdminKey, nil, 200)
		run()
		// DR-2 (made before the deletion) opened at its time; 01-07 to 01-10
		// were missed while deleted; 01-11 is made ahead.
		if got := names(); got != "[DR-1:OPEN DR-2:OPEN DR-3:PENDING]" {
			t.Fatalf("after the restore: %s", got)
		}
	})
}

// Two replicas on one PostgreSQL: each occurrence is created once and each
// event is delivered once, with both replicas' scheduler and worker racing.
func TestTwoReplicasOnePostgres(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.Postgres)
	admins(env)
	other, err := sqlstore.Open(context.Background(), env.URL(), sqlstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	svc2 := wps.NewService(other, wps.ServiceConfig{Now: env.Clock.Now, AllowPrivateWebhooks: true})

	var mu sync.Mutex
	seen := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
	}))
	defer rcv.Close()
	env.Call("POST", "/v1/webhooks", env.AdminKey, map[string]any{"url": rcv.URL}, 201)
	env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Shift", "code": "SH", "steps": []map[string]any{
		{"label": "Handover", "policyNames": []string{"Admins"}, "frequency": "RRULE:FREQ=HOURLY;INTERVAL=6", "frequencyDate": "2026-01-01T00:00:00Z"},
	}}, 201)

	var wg sync.WaitGroup
	for _, svc := range []*wps.Service{env.Service, svc2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := svc.RunRecurrences(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// 2026-01-01 00:00 to 2026-01-05 09:00 every 6 hours: 18 occurrences,
	// and the next one made ahead.
	if n := env.RawInt(`SELECT count(*) FROM measurements`); n != 19 {
		t.Fatalf("%d measurements for 18 occurrences and a pending one", n)
	}
	if n := env.RawInt(`SELECT count(DISTINCT name) FROM measurements`); n != 19 {
		t.Fatalf("names repeat: %d distinct", n)
	}

	workers := []*webhook.Worker{
		webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: true, Concurrency: 3}),
		webhook.New(other, webhook.Config{Now: env.Clock.Now, AllowPrivate: true, Concurrency: 3}),
	}
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := w.RunOnce(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	events := env.RawInt(`SELECT count(*) FROM events`)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != events {
		t.Fatalf("%d events, %d delivered", events, len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}
}

// A rule whose start is long past (87,000 hourly occurrences) catches up
// MaxCatchUp of them a run; the rule is walked only as far as those.
func TestCatchUpIsBounded(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine) // the clock reads 2026-01-05T09:00Z
		admins(env)
		env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Meter", "code": "MT", "steps": []map[string]any{
			{"label": "Read", "policyNames": []string{"Admins"}, "frequency": "RRULE:FREQ=HOURLY", "frequencyDate": "2016-01-01T00:00:00Z"},
		}}, 201)
		if _, err := env.Service.RunRecurrences(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := env.RawInt(`SELECT count(*) FROM measurements`); n != wps.MaxCatchUp {
			t.Fatalf("%d measurements after one run, want %d", n, wps.MaxCatchUp)
		}
	})
}

// Idempotency records past their day are swept by the scheduler, all of
// them however many there are, in bounded batches; younger ones stay.
func TestSweepIdempotencyBacklog(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const old = 2500 // more than one batch
		created := env.Clock.Now()
		err := env.Service.Store().Write(context.Background(), func(tx wps.Tx) error {
			for i := range old + 1 {
				at := created
				if i == old {
					at = created.Add(2 * time.Hour) // younger than a day when the sweep runs
				}
				rec := wps.Idempotent{Scope: "key", Key: fmt.Sprint(i), RequestHash: "h", CreatedAt: wps.At(at), LeaseUntil: wps.At(at)}
				if err := tx.ReserveIdempotent(rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sched := schedule.New(env.Service, schedule.Config{})
		if err := sched.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := env.RawInt(`SELECT count(*) FROM idempotency`); n != old+1 {
			t.Fatalf("%d records swept before their day", old+1-n)
		}
		env.Clock.Advance(wps.IdempotencyTTL + time.Hour)
		if err := sched.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := env.RawInt(`SELECT count(*) FROM idempotency`); n != 1 {
			t.Fatalf("%d records left after a sweep, want the 1 younger than a day", n)
		}
	})
}
