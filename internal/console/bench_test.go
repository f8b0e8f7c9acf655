package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// BenchmarkConsolePages times the Inbox and a measurement page through the
// whole handler (server time, no network), among WPS_BENCH_MEASUREMENTS
// (default 100,000) measurements on SQLite (WPS_BENCH_DATABASE=postgres
// for PostgreSQL), 1,000 of them waiting on the signed-in inspector; each
// page is reported next to the API's answer with the same data in the same
// run (x-api), with its p99.
//
//	WPS_BENCH_MEASUREMENTS=1000000 go test -run XXX -bench ConsolePages -benchtime 300x ./internal/console
func BenchmarkConsolePages(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("WPS_BENCH_MEASUREMENTS")); err == nil && v > 0 {
		n = v
	}
	engine := sqlstore.SQLite
	if os.Getenv("WPS_BENCH_DATABASE") == "postgres" {
		engine = sqlstore.Postgres
	}
	env := tu.NewEnv(b, engine, tu.Options{Console: true})
	env.Clock.Advance(time.Since(env.Clock.Now()))
	fns := []string{"measurement:create", "measurement:read", "process:read", "action:write", "action:approve"}
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
	key := person(b, env, "ines@example.com", "INSPECTOR")
	proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pump inspection", "code": "PUMP", "steps": []map[string]any{
		{"label": "Inspect", "policyNames": []string{"Inspector"}, "deadline": "48", "deadlineType": "HOURS", "parameters": []map[string]any{
			{"name": "temperature", "type": "NUMBER", "isRequired": true}, {"name": "notes", "type": "LONG_TEXT"},
			{"name": "condition", "type": "SELECT", "optionItems": []map[string]any{{"value": "good"}, {"value": "worn"}}}}},
		{"label": "Approve", "policyNames": []string{"Inspector"}},
	}}, 201).JSON()
	steps := proc["steps"].([]any)
	stepID, approveID := steps[0].(map[string]any)["id"].(string), steps[1].(map[string]any)["id"].(string)
	waiting := env.Call(post, "/v1/measurements", key, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
	done := env.Call(post, "/v1/measurements", key, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
	env.Call(post, "/v1/measurements/"+done+"/actions", key, map[string]any{"stepId": stepID, "type": "WRITE_DATA",
		"parameters": map[string]any{"temperature": 64.5, "notes": "fine", "condition": "good"}}, 201)
	env.Call(post, "/v1/measurements/"+done+"/actions", key, map[string]any{"stepId": approveID, "type": "APPROVAL"}, 201) // done: APPROVED
	pattern := make([]string, 0, 1000)
	for i := range 1000 { // a thousand waiting among n
		if i < max(1, 1000*1000/n) {
			pattern = append(pattern, waiting)
		} else {
			pattern = append(pattern, done)
		}
	}
	start := time.Now()
	if err := env.DB.GenerateCopies(context.Background(), env.OrgID, pattern, n, env.Clock.Now()); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d measurements generated in %s", n, time.Since(start).Round(time.Millisecond))

	c := newClient(b, env.Server.URL)
	c.signIn("ines@example.com")
	cookie := "wps_session=" + c.session()
	h := env.Server.Config.Handler
	for _, p := range []struct{ name, page, api string }{
		{"inbox", "/inbox", "/v1/measurements?actionable=me&perPage=25"},
		{"measurement", "/measurements/" + done, "/v1/measurements/" + done},
	} {
		var api time.Duration
		b.Run(p.name+"_api", func(b *testing.B) { api = serve(b, h, p.api, cookie) })
		b.Run(p.name+"_page", func(b *testing.B) {
			d := serve(b, h, p.page, cookie)
			if api > 0 {
				b.ReportMetric(float64(d)/float64(api), "x-api")
			}
		})
	}
}

// serve sends GET path b.N times through h and reports the p99; it returns
// the mean.
func serve(b *testing.B, h http.Handler, path, cookie string) time.Duration {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(get, path, nil)
		req.Header.Set("Cookie", cookie)
		w := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(w, req)
		lat = append(lat, time.Since(t0))
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	return sum / time.Duration(len(lat))
}
