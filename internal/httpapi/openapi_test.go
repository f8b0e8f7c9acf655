package httpapi_test

import (
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
