package httpapi_test

import (
	"net/http"
	"net/http/httptest"
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
	"POST /v1/entities/{id}/records:import", "GET /v1/entities/{id}/records:export",
	"POST /v1/process", "GET /v1/process", "GET /v1/process/{id}", "PATCH /v1/process/{id}", "DELETE /v1/process/{id}",
	"GET /v1/process/{id}/versions", "GET /v1/process/{id}/export", "POST /v1/process/import",
	"POST /v1/process/{id}/steps", "PATCH /v1/process/{id}/steps/{stepId}", "DELETE /v1/process/{id}/steps/{stepId}",
	"POST /v1/measurements", "POST /v1/measurements/simplified", "GET /v1/measurements", "GET /v1/measurements/{id}",
	"POST /v1/measurements/{id}/actions", "GET /v1/actions/{id}", "POST /v1/actions/{id}/reprove", "GET /v1/ledger/verify",
	"POST /v1/webhooks", "GET /v1/webhooks", "PATCH /v1/webhooks/{id}", "DELETE /v1/webhooks/{id}",
	"GET /v1/webhooks/secret", "POST /v1/webhooks/secret:rotate", "GET /v1/webhook-deliveries", "POST /v1/webhook-deliveries/{id}:retry",
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
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	wrong := []struct {
		name   string
		req    *http.Request
		status int
		header http.Header
		body   string
		want   string
	}{
		{"unknown field", req, 200, me.Header, strings.Replace(string(me.Body), `{`, `{"nickname":"x",`, 1), "nickname"},
		{"wrong type", req, 200, me.Header, strings.Replace(string(me.Body), `"roles":[`, `"roles":7,"x":[`, 1), "roles"},
		{"undeclared status", req, 418, me.Header, string(me.Body), "418"},
		{"undeclared media type", req, 200, http.Header{"Content-Type": {"text/plain"}}, "hi", "text/plain"},
		{"error not a problem", req, 404, http.Header{"Content-Type": {"application/json"}}, `{"error":"x"}`, "404"},
		{"problem of the wrong shape", req, 404, problem, `{"status":"404"}`, "status"},
		{"unknown path, not a problem", httptest.NewRequest(get, "/v1/nowhere", nil), 404, http.Header{"Content-Type": {"text/plain"}}, "404 page not found", "not a problem"},
		{"unknown path answering 200", httptest.NewRequest(get, "/v1/nowhere", nil), 200, me.Header, "{}", "not in the document"},
		{"body where none is declared", httptest.NewRequest(del, "/v1/users/me/api-keys/x", nil), 204, me.Header, "{}", "body"},
	}
	for _, w := range wrong {
		err := c.Check(w.req, w.status, w.header, []byte(w.body))
		if err == nil || !strings.Contains(err.Error(), w.want) {
			t.Errorf("%s: check says %v, want an error naming %q", w.name, err, w.want)
		}
	}
	// The console's pages are outside the document, and not checked.
	if err := c.Check(httptest.NewRequest(get, "/processes", nil), 200, http.Header{"Content-Type": {"text/html"}}, []byte("<p>")); err != nil {
		t.Errorf("a console page: %v", err)
	}
}
