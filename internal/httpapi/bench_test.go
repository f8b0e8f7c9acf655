package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

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
func benchGet(b *testing.B, env *tu.Env, paths ...string) {
	h := env.Server.Config.Handler
	var reqs []*http.Request
	for _, path := range paths {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminKey)
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
