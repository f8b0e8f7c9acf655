package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Every 401 carries a Bearer challenge (RFC 6750); a key that was sent and
// refused says invalid_token.
func TestUnauthorizedCarriesChallenge(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		const plain = `Bearer realm="wps"`
		for _, c := range []struct {
			name string
			req  tu.Request
			want string
		}{
			{"no credential", tu.Request{Method: get, Path: "/v1/users/me"}, plain},
			{"unknown key", tu.Request{Method: get, Path: "/v1/users/me", Key: "wps_" + strings.Repeat("x", 43)}, `Bearer realm="wps", error="invalid_token"`},
			{"other scheme", tu.Request{Method: get, Path: "/v1/users/me", Header: map[string]string{"Authorization": "Basic YTpi"}}, plain},
			{"ended session", tu.Request{Method: get, Path: "/v1/process", Header: map[string]string{"Cookie": "wps_session=wpss_gone"}}, plain},
			{"wrong password", tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "nobody@example.com", "password": "nope"}}, plain},
		} {
			res := env.Do(c.req)
			tu.Problem(t, res, 401, "")
			if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, c.want) {
				t.Errorf("%s: WWW-Authenticate %q, want %q…", c.name, got, c.want)
			}
		}
		if res := env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: env.AdminKey}); res.Header.Get("WWW-Authenticate") != "" {
			t.Fatalf("a 200 with a challenge: %v", res.Header)
		}
	})
}

// Rate-limited answers carry RateLimit-Policy and RateLimit (IETF draft
// httpapi-ratelimit-headers): the bucket's burst over the seconds it takes
// to refill, and what is left.
func TestRateLimitFields(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{API: httpapi.Options{RateLimit: 0.5, RateBurst: 2}})
		var left []string
		for range 3 {
			res := env.Do(tu.Request{Method: get, Path: "/v1/users/me", Key: env.AdminKey})
			if p := res.Header.Get("RateLimit-Policy"); p != `"default";q=2;w=4` {
				t.Fatalf("RateLimit-Policy %q (status %d)", p, res.Status)
			}
			left = append(left, res.Header.Get("RateLimit"))
			if len(left) == 3 {
				tu.Problem(t, res, 429, "")
				if res.Header.Get("Retry-After") == "" {
					t.Fatal("429 without Retry-After")
				}
			}
		}
		if left[0] != `"default";r=1;t=2` || left[1] != `"default";r=0;t=4` || left[2] != `"default";r=0;t=4` {
			t.Fatalf("RateLimit: %q", left)
		}
		// Without a limit, no fields.
		off := tu.NewEnv(t, engine)
		if res := off.Call(get, "/v1/users/me", off.AdminKey, nil, 200); res.Header.Get("RateLimit") != "" || res.Header.Get("RateLimit-Policy") != "" {
			t.Fatalf("fields without a limit: %v", res.Header)
		}
	})
}

// CORS is off by default; with origins configured, a preflight is answered
// before authentication, and answers to an allowed origin say so; "*"
// allows any origin, never with credentials.
func TestCORS(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		const app = "https://app.example.com"
		preflight := func(env *tu.Env, origin string) *tu.Response {
			return env.Do(tu.Request{Method: http.MethodOptions, Path: "/v1/process", Header: map[string]string{"Origin": origin,
				"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, idempotency-key"}})
		}
		withOrigin := func(env *tu.Env, origin string) *tu.Response {
			return env.Do(tu.Request{Method: get, Path: "/v1/process", Key: env.AdminKey, Header: map[string]string{"Origin": origin}})
		}

		off := tu.NewEnv(t, engine)
		if res := withOrigin(off, app); res.Status != 200 || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("CORS is on by default: %v", res.Header)
		}
		if res := preflight(off, app); res.Status == 204 || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("preflight answered with CORS off: %d %v", res.Status, res.Header)
		}

		listed := tu.NewEnv(t, engine, tu.Options{API: httpapi.Options{CORSOrigins: []string{app, "http://localhost:3000"}}})
		res := preflight(listed, app)
		h := res.Header
		if res.Status != 204 || h.Get("Access-Control-Allow-Origin") != app || h.Get("Access-Control-Allow-Credentials") != "true" ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "PATCH") || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Idempotency-Key") ||
			!strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
			t.Fatalf("preflight: %d %v", res.Status, h)
		}
		res = withOrigin(listed, app)
		h = res.Header
		if res.Status != 200 || h.Get("Access-Control-Allow-Origin") != app || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "RateLimit") {
			t.Fatalf("answer to an allowed origin: %v", h)
		}
		for _, r := range []*tu.Response{withOrigin(listed, "https://evil.example.com"), preflight(listed, "https://evil.example.com")} {
			if r.Header.Get("Access-Control-Allow-Origin") != "" || r.Status == 204 {
				t.Fatalf("another origin allowed: %d %v", r.Status, r.Header)
			}
		}

		star := tu.NewEnv(t, engine, tu.Options{API: httpapi.Options{CORSOrigins: []string{"*"}}})
		for _, r := range []*tu.Response{preflight(star, "https://anywhere.example"), withOrigin(star, "https://anywhere.example")} {
			if r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("*: %v", r.Header)
			}
		}
	})
}

// A query parameter the operation does not declare in the OpenAPI document
// answers 422 naming it; the console's pages are not the API's and keep
// their own parameters.
func TestUnknownQueryParameters(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		p := tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process?perpage=1", Key: env.AdminKey}), 422, "perpage")
		if !strings.Contains(p["detail"].(string), "perpage") || !strings.Contains(p["errors"].([]any)[0].(map[string]any)["message"].(string), "perPage") {
			t.Fatalf("problem: %v", p)
		}
		p = tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements?statuss=OPEN&page=1&sort=name", Key: env.AdminKey}), 422, "sort")
		if len(p["errors"].([]any)) != 2 {
			t.Fatalf("both unknown parameters named: %v", p)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users/me?verbose=1", Key: env.AdminKey}), 422, "verbose")
		// Authentication comes first: an anonymous caller learns nothing.
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process?perpage=1"}), 401, "")

		env.Call(get, "/v1/process?page=1&perPage=5", env.AdminKey, nil, 200)
		env.Call(get, "/v1/measurements?processId=x&processUuid=x&status=OPEN&actionable=me", env.AdminKey, nil, 200)
		ent := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Parts", "parameters": []map[string]any{{"name": "code", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		env.Call(get, "/v1/entities/"+ent+"/records?filter[code]=A&perPage=5", env.AdminKey, nil, 200)
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/entities/" + ent + "/records?filters[code]=A", Key: env.AdminKey}), 422, "filters[code]")

		// The console: its own routes and parameters.
		if res := env.Do(tu.Request{Method: get, Path: "/signin?next=/inbox&utm_source=mail"}); res.Status != 200 {
			t.Fatalf("console sign-in page with a query: %d", res.Status)
		}
	})
}

// processId and processUuid name the same thing wherever a process is
// named: either is taken, and both must agree.
func TestProcessIDAliases(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "steps": []map[string]any{{"label": "One"}}}, 201).JSON()["id"].(string)
		other := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Other", "steps": []map[string]any{{"label": "One"}}}, 201).JSON()["id"].(string)

		env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": proc}, 201)
		env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processUuid": proc}, 201)
		env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": proc, "processUuid": proc}, 201)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements", Key: env.AdminKey, Body: map[string]any{"processId": proc, "processUuid": other}}), 422, "processUuid")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements", Key: env.AdminKey, Body: map[string]any{}}), 422, "processId")

		env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processId": proc}, 201)
		env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": other}, 201)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey, Body: map[string]any{"processUuid": proc, "processId": other}}), 422, "processId")

		for _, q := range []string{"processId=" + proc, "processUuid=" + proc, "processId=" + proc + "&processUuid=" + proc} {
			if n := env.Call(get, "/v1/measurements?"+q, env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 4.0 {
				t.Fatalf("%s: %v measurements", q, n)
			}
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements?processId=" + proc + "&processUuid=" + other, Key: env.AdminKey}), 422, "processUuid")
	})
}
