package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"wps/internal/notify"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// Preferences: off mails no work, daily mails one digest a day at 08:00
// UTC listing what the Inbox lists, once across two schedulers.
func TestNotificationPreferences(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, srv, w := mailing(t, engine) // 2026-01-05T09:00Z
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Walkers", "roles": []string{"WALKER"},
			"functions": []string{"measurement:read", "measurement:create", "action:write"}}, 201)
		keys := map[string]string{}
		for _, name := range []string{"now", "day", "off"} {
			keys[name], _ = joined(t, env, name+"@example.com", "WALKER")
		}
		if got := env.Call("GET", "/v1/users/me/notifications", keys["now"], nil, 200).JSON()["email"]; got != "immediate" {
			t.Fatalf("default: %v", got)
		}
		env.Call("PUT", "/v1/users/me/notifications", keys["day"], map[string]any{"email": "daily"}, 200)
		env.Call("PUT", "/v1/users/me/notifications", keys["off"], map[string]any{"email": "off"}, 200)
		tu.Problem(t, env.Do(tu.Request{Method: "PUT", Path: "/v1/users/me/notifications", Key: keys["off"], Body: map[string]any{"email": "weekly"}}), 422, "email")
		if got := env.Call("GET", "/v1/users/me/notifications", keys["off"], nil, 200).JSON()["email"]; got != "off" {
			t.Fatalf("off: %v", got)
		}
		proc := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Round", "code": "RD", "steps": []map[string]any{
			{"label": "Walk", "policyNames": []string{"Walkers"}}}}, 201).JSON()
		env.Call("POST", "/v1/measurements", keys["now"], map[string]any{"processId": proc["id"]}, 201)
		env.Call("POST", "/v1/measurements", keys["now"], map[string]any{"processId": proc["id"]}, 201)
		drain(t, w)
		work := func(who string) (waiting, digests []string) {
			for _, m := range srv.Mails(who + "@example.com") {
				switch {
				case strings.HasPrefix(m.Subject, "Waiting for you"):
					waiting = append(waiting, m.Subject)
				case strings.Contains(m.Subject, "wait for you"):
					digests = append(digests, m.Body)
				}
			}
			return waiting, digests
		}
		if w, _ := work("now"); len(w) != 2 {
			t.Fatalf("immediate: %q", w)
		}
		for _, who := range []string{"day", "off"} {
			if w, d := work(who); len(w) != 0 || len(d) != 0 {
				t.Fatalf("%s mailed at once: %q %q", who, w, d)
			}
		}

		// Two schedulers (replicas on PostgreSQL) at once: one digest.
		second := env.Service
		if engine == sqlstore.Postgres {
			second = env.Replica().Service
		}
		done := make(chan error, 2)
		for _, svc := range []*wps.Service{env.Service, second} {
			go func() { _, err := notify.SendDigests(context.Background(), svc); done <- err }()
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		drain(t, w)
		_, d := work("day")
		if len(d) != 1 || !strings.Contains(d[0], "RD-1: "+publicURL+"/measurements/") || !strings.Contains(d[0], "RD-2") ||
			!strings.Contains(d[0], publicURL+"/inbox") {
			t.Fatalf("digest: %q", d)
		}
		if w, d := work("off"); len(w) != 0 || len(d) != 0 {
			t.Fatalf("off mailed: %q %q", w, d)
		}
		// Not again the same day; again the next day at 08:00.
		env.Clock.Advance(22 * time.Hour) // 01-06 07:00
		if n, err := notify.SendDigests(context.Background(), env.Service); err != nil || n != 0 {
			t.Fatalf("before 08:00: %d %v", n, err)
		}
		env.Clock.Advance(time.Hour)
		if n, err := notify.SendDigests(context.Background(), env.Service); err != nil || n != 1 {
			t.Fatalf("at 08:00: %d %v", n, err)
		}
		if l := notifications(t, env, keys["day"], "?kind=work.digest"); len(l) != 2 {
			t.Fatalf("day's log: %v", l)
		}
	})
}
