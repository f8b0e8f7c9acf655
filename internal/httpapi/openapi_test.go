package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// contract lists every route the service must serve: the OpenAPI document
// must describe each one, with its request and response schemas.
var contract = []string{
	"GET /healthz", "GET /readyz",
	"GET /v1/organizations", "POST /v1/organizations",
	"GET /v1/users/me", "POST /v1/users/me/api-keys", "GET /v1/users/me/api-keys", "DELETE /v1/users/me/api-keys/{id}",
	"GET /v1/users",
	"POST /v1/invites", "GET /v1/invites", "DELETE /v1/invites/{id}", "POST /v1/invites/accept",
	"POST /v1/roles/assign", "POST /v1/roles/revoke",
	"POST /v1/users/policies", "GET /v1/users/policies", "PATCH /v1/users/policies/{id}", "DELETE /v1/users/policies/{id}",
	"POST /v1/entities", "POST /v1/entities/simplified", "GET /v1/entities", "GET /v1/entities/{id}", "PATCH /v1/entities/{id}", "DELETE /v1/entities/{id}",
	"POST /v1/entities/{id}/records", "GET /v1/entities/{id}/records", "GET /v1/entities/{id}/records/{recordId}",
	"PATCH /v1/entities/{id}/records/{recordId}", "DELETE /v1/entities/{id}/records/{recordId}",
	"POST /v1/entities/{id}/records:import", "GET /v1/entities/{id}/records:export", "GET /v1/import-jobs/{id}",
	"POST /v1/process", "GET /v1/process", "GET /v1/process/{id}", "PATCH /v1/process/{id}", "DELETE /v1/process/{id}",
	"GET /v1/process/{id}/versions", "GET /v1/process/{id}/export", "POST /v1/process/import",
	"POST /v1/process/{id}/steps", "PATCH /v1/process/{id}/steps/{stepId}", "DELETE /v1/process/{id}/steps/{stepId}",
	"POST /v1/measurements", "POST /v1/measurements/simplified", "GET /v1/measurements", "GET /v1/measurements/{id}",
	"POST /v1/measurements/{id}/actions", "GET /v1/actions/{id}", "POST /v1/actions/{id}/reprove", "GET /v1/ledger/verify",
	"POST /v1/webhooks", "GET /v1/webhooks", "PATCH /v1/webhooks/{id}", "DELETE /v1/webhooks/{id}",
	"GET /v1/webhooks/secret", "POST /v1/webhooks/secret:rotate", "GET /v1/webhook-deliveries", "POST /v1/webhook-deliveries/{id}:retry",
	"POST /v1/chat-channels", "GET /v1/chat-channels", "GET /v1/chat-channels/{id}", "DELETE /v1/chat-channels/{id}",
	"GET /v1/audit-events", "GET /v1/measurements/{id}/evidence",
}

func TestOpenAPIDocument(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	doc := env.Call(get, "/v1/openapi.json", "", nil, 200).JSON()
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	paths := doc["paths"].(map[string]any)
	for _, route := range contract {
		method, path, _ := strings.Cut(route, " ")
		item, ok := paths[path].(map[string]any)
		if !ok {
			t.Errorf("%s is missing from the OpenAPI document", route)
			continue
		}
		op, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Errorf("%s is missing from the OpenAPI document", route)
			continue
		}
		responses := op["responses"].(map[string]any)
		hasSchema := false
		for code, r := range responses {
			if strings.HasPrefix(code, "2") {
				c, _ := r.(map[string]any)["content"].(map[string]any)
				hasSchema = hasSchema || c != nil || code == "204"
			}
		}
		if !hasSchema {
			t.Errorf("%s has no success response schema", route)
		}
		bodiless := strings.HasSuffix(path, ":rotate") || strings.HasSuffix(path, ":retry")
		if (method == "POST" || method == "PATCH") && op["requestBody"] == nil && !bodiless {
			t.Errorf("%s has no request body schema", route)
		}
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if _, ok := schemas["Problem"]; !ok {
		t.Errorf("the Problem schema is not documented")
	}

	t.Run("every operation declares its error statuses as problems", func(t *testing.T) {
		for path, item := range paths {
			for method, o := range item.(map[string]any) {
				op := o.(map[string]any)
				route := strings.ToUpper(method) + " " + path
				want := []string{"401", "422", "429", "500"}
				if strings.Contains(path, "{") {
					want = append(want, "404")
				}
				if op["requestBody"] != nil {
					want = append(want, "400", "413", "415")
				}
				if method != "get" {
					want = append(want, "409")
				}
				if sec, _ := op["security"].([]any); len(sec) > 0 && (op["x-wps-function"] != nil || method != "get") {
					want = append(want, "403")
				}
				responses := op["responses"].(map[string]any)
				for _, code := range want {
					r, ok := responses[code].(map[string]any)
					if !ok {
						t.Errorf("%s does not declare %s", route, code)
						continue
					}
					c, _ := r["content"].(map[string]any)
					pj, _ := c["application/problem+json"].(map[string]any)
					if ref, _ := pj["schema"].(map[string]any)["$ref"].(string); ref != "#/components/schemas/Problem" {
						t.Errorf("%s: %s is not an application/problem+json Problem: %v", route, code, r)
					}
				}
				if tags, _ := op["tags"].([]any); len(tags) != 1 {
					t.Errorf("%s has tags %v, want one (its noun)", route, op["tags"])
				}
			}
		}
	})

	t.Run("public operations say security: []", func(t *testing.T) {
		public := []string{"GET /healthz", "GET /readyz", "GET /v1/openapi.json", "GET /v1/docs", "POST /v1/invites/accept", "POST /v1/sessions",
			"POST /v1/password-resets", "POST /v1/password-resets/accept"}
		for path, item := range paths {
			for method, o := range item.(map[string]any) {
				route := strings.ToUpper(method) + " " + path
				sec, ok := o.(map[string]any)["security"].([]any)
				if !ok {
					t.Errorf("%s has no security requirement", route)
				}
				if slices.Contains(public, route) != (ok && len(sec) == 0) {
					t.Errorf("%s: security %v", route, sec)
				}
			}
		}
	})

	t.Run("every schema property has a description", func(t *testing.T) {
		for name, s := range schemas {
			props, _ := s.(map[string]any)["properties"].(map[string]any)
			for p, ps := range props {
				if d, _ := ps.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s.%s has no description (a doc tag, or an entry in fielddocs.go)", name, p)
				}
			}
		}
	})

	t.Run("pointers to objects that answer null are nullable", func(t *testing.T) {
		for _, field := range []string{"MeasurementView.currentStep", "StepView.entity", "ActionView.currentStep", "SimplifiedView.currentStep"} {
			name, prop, _ := strings.Cut(field, ".")
			p := schemas[name].(map[string]any)["properties"].(map[string]any)[prop].(map[string]any)
			if !strings.Contains(fmt.Sprint(p["anyOf"]), "type:null") {
				t.Errorf("%s is not nullable: %v", field, p)
			}
		}
	})
}

// TestDocsPage serves the reference page: every operation on one HTML
// page that loads nothing (no script, style or other host).
func TestDocsPage(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	r := env.Call(get, "/v1/docs", "", nil, 200)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("content type %q", ct)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	page := string(r.Body)
	for _, want := range []string{"<code>POST /v1/measurements/{id}/actions</code>", `id="schema-MeasurementView"`, "action:approve", `href="/v1/openapi.json"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, banned := range []string{"<script", "<style", "style=", "http://", "https://"} {
		if strings.Contains(page, banned) {
			t.Errorf("the page holds %q", banned)
		}
	}
}

// TestResponseCheck shows that the harness's check of every answer
// against the document (testutil.Contract) catches answers that drift
// from it: a field it does not list, a value of another type, an
// undeclared status or media type, a non-problem error.
func TestResponseCheck(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	c, err := tu.NewContract(env.Call(get, "/v1/openapi.json", "", nil, 200).Body)
	if err != nil {
		t.Fatal(err)
	}
	me := env.Call(get, "/v1/users/me", env.AdminKey, nil, 200)
	req := httptest.NewRequest(get, "/v1/users/me", nil)
	if err := c.Check(req, 200, me.Header, me.Body); err != nil {
		t.Fatalf("a real answer fails: %v", err)
	}
	var user map[string]any
	me.Decode(t, &user)
	delete(user, "email")
	noEmail, _ := json.Marshal(user)
	// A page of users: a schema that refers to another (User), which the
	// check validates without compiling it anew (tu.Contract's legacy).
	list := env.Call(get, "/v1/users", env.AdminKey, nil, 200)
	listReq := httptest.NewRequest(get, "/v1/users", nil)
	if err := c.Check(listReq, 200, list.Header, list.Body); err != nil {
		t.Fatalf("a real page fails: %v", err)
	}
	var page map[string]any
	list.Decode(t, &page)
	delete(page["data"].([]any)[0].(map[string]any), "email")
	pageNoEmail, _ := json.Marshal(page)
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	scimType := http.Header{"Content-Type": {"application/scim+json"}}
	wrong := []struct {
		name   string
		req    *http.Request
		status int
		header http.Header
		body   string
		want   string
	}{
		{"unknown field", req, 200, me.Header, strings.Replace(string(me.Body), `{`, `{"nickname":"x",`, 1), "nickname"},
		{"missing field", req, 200, me.Header, string(noEmail), "email"},
		{"wrong type", req, 200, me.Header, strings.Replace(string(me.Body), `"roles":[`, `"roles":7,"x":[`, 1), "roles"},
		{"missing field of an item", listReq, 200, list.Header, string(pageNoEmail), "email"},
		{"unknown field of an item", listReq, 200, list.Header, strings.Replace(string(list.Body), `"email":`, `"nickname":"x","email":`, 1), "nickname"},
		{"wrong type of an item", listReq, 200, list.Header, strings.Replace(string(list.Body), `"roles":[`, `"roles":7,"x":[`, 1), "roles"},
		{"undeclared status", req, 418, me.Header, string(me.Body), "418"},
		{"undeclared media type", req, 200, http.Header{"Content-Type": {"text/plain"}}, "hi", "text/plain"},
		{"error not a problem", req, 404, http.Header{"Content-Type": {"application/json"}}, `{"error":"x"}`, "404"},
		{"problem of the wrong shape", req, 404, problem, `{"status":"404"}`, "status"},
		{"unknown path, not a problem", httptest.NewRequest(get, "/v1/nowhere", nil), 404, http.Header{"Content-Type": {"text/plain"}}, "404 page not found", "not a problem"},
		{"unknown path answering 200", httptest.NewRequest(get, "/v1/nowhere", nil), 200, me.Header, "{}", "not in the document"},
		{"body where none is declared", httptest.NewRequest(del, "/v1/users/me/api-keys/x", nil), 204, me.Header, "{}", "body"},
		// SCIM, beside the API: SCIM's media type and error body, never a problem.
		{"SCIM answering a problem", httptest.NewRequest(get, "/scim/v2/Users", nil), 401, problem, `{"status":401}`, "not application/scim+json"},
		{"SCIM without schemas", httptest.NewRequest(get, "/scim/v2/Users", nil), 200, scimType, `{"Resources":[]}`, "schemas"},
		{"SCIM error with a number status", httptest.NewRequest(get, "/scim/v2/Users", nil), 400, scimType,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":400,"detail":"x"}`, "SCIM's error"},
		{"SCIM error of another schema", httptest.NewRequest(get, "/scim/v2/Users", nil), 404, scimType,
			`{"schemas":["urn:ietf:params:scim:api:messages:2.0:ListResponse"],"status":"404","detail":"x"}`, "SCIM's error"},
		{"SCIM 204 with a body", httptest.NewRequest(del, "/scim/v2/Users/x", nil), 204, scimType, "{}", "body"},
	}
	for _, w := range wrong {
		err := c.Check(w.req, w.status, w.header, []byte(w.body))
		if err == nil || !strings.Contains(err.Error(), w.want) {
			t.Errorf("%s: check says %v, want an error naming %q", w.name, err, w.want)
		}
	}
	scimErr := env.Do(tu.Request{Method: get, Path: "/scim/v2/Users?filter=nickname+eq+%22x%22", Key: env.AdminKey})
	if err := c.Check(httptest.NewRequest(get, "/scim/v2/Users", nil), scimErr.Status, scimErr.Header, scimErr.Body); scimErr.Status != 400 || err != nil {
		t.Errorf("a real SCIM error (%d) fails: %v", scimErr.Status, err)
	}
	// The console's pages are outside the document, and not checked.
	if err := c.Check(httptest.NewRequest(get, "/processes", nil), 200, http.Header{"Content-Type": {"text/html"}}, []byte("<p>")); err != nil {
		t.Errorf("a console page: %v", err)
	}
}
