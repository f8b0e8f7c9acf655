package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// BenchmarkEncodeMeasurement encodes the measurement response of
// benchMeasurement with the encoder the API uses and with encoding/json.
func BenchmarkEncodeMeasurement(b *testing.B) {
	env, id, p := benchMeasurement(b)
	view, err := env.Service.GetMeasurement(context.Background(), p, id)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		enc  func(v any) error
	}{
		{"goccy", func(v any) error { return gojson.NewEncoder(io.Discard).Encode(v) }},
		{"encoding_json", func(v any) error { return json.NewEncoder(io.Discard).Encode(v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.enc(view); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchMeasurement creates, on SQLite, a measurement of a two-step process
// with the first step's 8 values written, and returns it with the admin.
func benchMeasurement(b *testing.B) (*tu.Env, string, *wps.Principal) {
	b.Helper()
	env := tu.NewEnv(b, sqlstore.SQLite)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"measurement:read"}}, 201)
	proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Bench", "steps": []map[string]any{
		{"label": "Inspect", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
			{"name": "kind", "type": "SELECT", "optionItems": []map[string]any{{"value": "a"}, {"value": "b"}}},
			{"name": "hours", "type": "NUMBER"}, {"name": "rate", "type": "NUMBER", "advancedOptions": map[string]any{"hiddenFrom": []string{"Readers"}}},
			{"name": "cost", "type": "FORMULA", "computedFormula": []string{"hours", "*", "rate"}},
			{"name": "notes", "type": "TEXT"}, {"name": "ok", "type": "BOOLEAN"}, {"name": "day", "type": "DATE"}, {"name": "asset", "type": "TEXT"},
		}},
		{"label": "Close", "policyNames": []string{"Admins"}},
	}}, 201).JSON()
	m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc["id"], "parameters": map[string]any{
		"kind": "a", "hours": 2.5, "rate": 40, "notes": "fine", "ok": true, "day": "2026-01-05", "asset": "PV-1",
	}}, 201).JSON()
	p, err := env.Service.Authenticate(context.Background(), env.AdminKey)
	if err != nil {
		b.Fatal(err)
	}
	return env, m["id"].(string), p
}

// BenchmarkGetMeasurement reads the same measurement through the service
// (store read and view) and through the whole HTTP handler (authentication,
// routing, encoding), without a network in between.
func BenchmarkGetMeasurement(b *testing.B) {
	env, id, p := benchMeasurement(b)
	b.Run("service", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := env.Service.GetMeasurement(context.Background(), p, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handler", func(b *testing.B) { benchGet(b, env, "/v1/measurements/"+id) })
	// A reader who is not ADMIN: the view works out what is hidden from
	// them (here one value, and the formula reading it).
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "reader@example.com", "roles": []string{"READER"}}, 201).JSON()
	key := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()["apiKey"].(map[string]any)["key"].(string)
	reader, err := env.Service.Authenticate(context.Background(), key)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("service_reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := env.Service.GetMeasurement(context.Background(), reader, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListMeasurements lists the measurements of a status through the
// whole HTTP handler, by two statuses in turn: SQLite once re-prepared the
// statement on every run (the bound status met a partial index's WHERE).
func BenchmarkListMeasurements(b *testing.B) {
	env, _, _ := benchMeasurement(b)
	benchGet(b, env, "/v1/measurements?status=STAGE_OPEN", "/v1/measurements?status=OPEN")
}

// benchGet sends GET requests for paths in turn through env's handler as
// the admin, without a network in between.
func benchGet(b *testing.B, env *tu.Env, paths ...string) { benchGetAs(b, env, env.AdminKey, paths...) }

// BenchmarkActionableList lists inboxes (GET /v1/measurements?actionable=me)
// among WPS_BENCH_MEASUREMENTS (default 100,000) measurements on SQLite,
// next to the plain list of the same rows in the same run: each inbox
// reports its time as a multiple of the plain list's (x-plain). The
// measurements are copies of five made through the API. Whatever their
// number, WPS_BENCH_BACKLOG (default 1,000) of them wait on the Inspector
// (the first of Inspect's ordered seats) and as many on the Supervisor
// (the second), a tenth as many at Repair (the Inspector), a hundredth on
// the Auditor (another process); the rest are APPROVED. An inbox's cost
// grows with its backlog, not with the measurements. WPS_BENCH_ANALYZE=1
// gives the planner row counts first (ANALYZE), as the list benchmark of
// wps bench --dataset does; a server never runs it, and SQLite without
// them sorts all of an org's measurements for the plain list.
// WPS_BENCH_DATABASE=postgres runs it on PostgreSQL.
//
//	WPS_BENCH_MEASUREMENTS=1000000 go test -run XXX -bench ActionableList -benchtime 200x ./internal/httpapi
func BenchmarkActionableList(b *testing.B) {
	n, backlog := benchEnv("WPS_BENCH_MEASUREMENTS", 100_000), benchEnv("WPS_BENCH_BACKLOG", 1_000)
	engine := sqlstore.SQLite
	if os.Getenv("WPS_BENCH_DATABASE") == "postgres" {
		engine = sqlstore.Postgres
	}
	env := tu.NewEnv(b, engine)
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve"}
	for _, p := range [][2]string{{"Inspector", "INSPECTOR"}, {"Supervisor", "SUPERVISOR"}, {"Auditor", "AUDITOR"}} {
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p[0], "roles": []string{p[1]}, "functions": fns}, 201)
	}
	key := func(email, role string) string {
		inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": []string{role}}, 201).JSON()
		return env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"]}, 201).JSON()["apiKey"].(map[string]any)["key"].(string)
	}
	ian, sam, amy := key("ian@example.com", "INSPECTOR"), key("sam@example.com", "SUPERVISOR"), key("amy@example.com", "AUDITOR")
	pvi := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pressure vessel inspection", "code": "PVI", "steps": []map[string]any{
		{"label": "Inspect", "policyNames": []string{"Inspector", "Supervisor"}, "orderedPolicies": []string{"Inspector", "Supervisor"},
			"deadline": "48", "deadlineType": "HOURS", "parameters": []map[string]any{{"name": "kind", "type": "TEXT"}}},
		{"label": "Repair", "policyNames": []string{"Inspector"}},
		{"label": "Close", "policyNames": []string{"Supervisor"}},
	}}, 201).JSON()
	audit := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "code": "AUD", "steps": []map[string]any{
		{"label": "Audit", "policyNames": []string{"Auditor"}},
	}}, 201).JSON()
	st := steps(pvi)
	create := func(proc map[string]any) string {
		return env.Call(post, "/v1/measurements", ian, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
	}
	act := func(key, id string, step int, typ string) {
		env.Call(post, "/v1/measurements/"+id+"/actions", key, map[string]any{"stepId": st[step]["id"], "type": typ}, 201)
	}
	fresh, second, repair, approved, audited := create(pvi), create(pvi), create(pvi), create(pvi), create(audit)
	act(ian, second, 0, "WRITE_DATA")
	for _, id := range []string{repair, approved} {
		act(ian, id, 0, "WRITE_DATA")
		act(sam, id, 0, "APPROVAL")
	}
	act(ian, approved, 1, "APPROVAL")
	act(sam, approved, 2, "APPROVAL")
	// A pattern of 100,000 slots: the backlogs' share of n, the rest approved.
	var pattern []string
	waiting := 0
	for _, w := range []struct {
		id    string
		share float64
	}{{fresh, 1}, {second, 1}, {repair, 0.1}, {audited, 0.01}} {
		k := int(w.share * float64(backlog) * 100_000 / float64(n))
		waiting += k
		for range k {
			pattern = append(pattern, w.id)
		}
	}
	for range 100_000 - waiting {
		pattern = append(pattern, approved)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(pattern), func(i, j int) { pattern[i], pattern[j] = pattern[j], pattern[i] })
	start := time.Now()
	if err := env.DB.GenerateCopies(context.Background(), env.OrgID, pattern, n, env.Clock.Now()); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d measurements generated in %s", n, time.Since(start).Round(time.Millisecond))
	if os.Getenv("WPS_BENCH_ANALYZE") != "" {
		if err := env.DB.Analyze(context.Background()); err != nil {
			b.Fatal(err)
		}
	}

	var plain float64 // ns per plain list
	b.Run("plain", func(b *testing.B) {
		benchGetAs(b, env, ian, "/v1/measurements")
		plain = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	for _, c := range []struct{ name, key, query string }{
		{"inspector", ian, ""}, {"inspector_page_20", ian, "&page=20"}, {"inspector_repair_step", ian, "&stepId=" + st[1]["id"].(string)},
		{"supervisor", sam, ""}, {"supervisor_overdue", sam, "&overdue=true"}, {"supervisor_status", sam, "&status=IN_CONSENSUS"},
		{"auditor", amy, ""}, {"auditor_pvi", amy, "&processId=" + pvi["id"].(string)}, {"admin_nothing", env.AdminKey, ""},
	} {
		b.Run("actionable_"+c.name, func(b *testing.B) {
			benchGetAs(b, env, c.key, "/v1/measurements?actionable=me"+c.query)
			if plain > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/plain, "x-plain")
			}
		})
	}
}

// benchEnv is a positive count from the environment, or def.
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchGetAs is benchGet with the key given.
func benchGetAs(b *testing.B, env *tu.Env, key string, paths ...string) {
	h := env.Server.Config.Handler
	var reqs []*http.Request
	for _, path := range paths {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		reqs = append(reqs, req)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i%len(reqs)])
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
