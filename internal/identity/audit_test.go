package identity_test

import (
	"net/http"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Single sign-on's changes are audit events: its settings (the client
// secret recorded as changed, never shown), a sign-in with its method, a
// user made at first sign-in.
func TestSSOAuditEvents(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		configure(t, env, env.AdminKey, p, map[string]any{"emailDomains": []string{"example.com"}, "autoCreateUsers": true})
		p.AddUser("bo@example.com", true)
		a := newBrowser(t, env).signIn("org="+env.OrgID, "bo@example.com")
		if a.status != http.StatusFound || sessionOf(a) == "" {
			t.Fatalf("sign-in: %d %s", a.status, a.body)
		}
		bo := me(env, sessionOf(a)).JSON()["id"].(string)

		r := env.Call(get, "/v1/audit-events?type=sso.updated", env.AdminKey, nil, 200)
		if strings.Contains(string(r.Body), p.Secret) {
			t.Fatalf("the client secret is shown: %s", r.Body)
		}
		list := r.JSON()["data"].([]any)
		if len(list) != 1 {
			t.Fatalf("sso.updated: %v", list)
		}
		changes := list[0].(map[string]any)["changes"].(map[string]any)
		if changes["clientSecret"].(map[string]any)["changed"] != true || changes["issuer"].(map[string]any)["after"] != p.Issuer {
			t.Fatalf("sso.updated changes: %v", changes)
		}
		r = env.Call(get, "/v1/audit-events?type=session.created&actorId="+bo, env.AdminKey, nil, 200)
		list = r.JSON()["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["changes"].(map[string]any)["method"].(map[string]any)["after"] != "sso" {
			t.Fatalf("session.created: %v", list)
		}
		if strings.Contains(string(r.Body), sessionOf(a)) {
			t.Fatalf("the session's token is shown: %s", r.Body)
		}
		r = env.Call(get, "/v1/audit-events?type=user.created&targetId="+bo, env.AdminKey, nil, 200)
		if list = r.JSON()["data"].([]any); len(list) != 1 {
			t.Fatalf("user.created: %v", list)
		}

		env.Call(del, "/v1/sso", env.AdminKey, nil, 204)
		list = env.Call(get, "/v1/audit-events?type=sso.updated", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(list) != 2 || list[0].(map[string]any)["changes"].(map[string]any)["enabled"].(map[string]any)["after"] != false {
			t.Fatalf("sso turned off: %v", list)
		}
	})
}
