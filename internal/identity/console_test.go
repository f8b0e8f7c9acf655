package identity_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// TestConsoleSSO: the sign-in page offers "Sign in with SSO" (by email, or
// for the org named), and an admin sets SSO up on /admin/sso, testing the
// connection first.
func TestConsoleSSO(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // the session cookie ends at a real date, which the cookie jar checks
		invitee(t, env, "root@example.com", "ADMIN")
		p.AddUser("root@example.com", true)
		b := newBrowser(t, env)

		page := b.do(get, env.Server.URL+"/signin", nil)
		if !strings.Contains(page.body, `action="/signin/sso"`) || !strings.Contains(page.body, `name="email"`) || !strings.Contains(page.body, "Sign in with SSO") {
			t.Fatalf("sign-in page: %s", page.body)
		}
		if page = b.do(get, env.Server.URL+"/signin?org="+env.OrgID, nil); !strings.Contains(page.body, `name="org" value="`+env.OrgID+`"`) {
			t.Fatalf("sign-in page for the org: %s", page.body)
		}

		// The first admin sets it up with the API; then signs in through it.
		configure(t, env, env.AdminKey, p, map[string]any{"emailDomains": []string{"example.com"}})
		a := b.signIn("email=root@example.com&next=/admin/sso", "root@example.com")
		if a.status != http.StatusFound || a.location != "/admin/sso" {
			t.Fatalf("sign-in: %d %s", a.status, a.body)
		}
		csrf := wps.CSRFToken(sessionOf(a))
		page = b.do(get, env.Server.URL+"/admin/sso", nil)
		if page.status != 200 || !strings.Contains(page.body, "Single sign-on is on") || !strings.Contains(page.body, p.Issuer) || strings.Contains(page.body, p.Secret) {
			t.Fatalf("admin page: %d %s", page.status, page.body)
		}

		form := func(action, issuer string) url.Values {
			return url.Values{"csrf": {csrf}, "action": {action}, "issuer": {issuer}, "clientId": {p.ClientID}, "emailDomains": {"example.com, example.org"},
				"groupsClaim": {"groups"}, "groupRoles": {"qa: INSPECTOR, APPROVER\nit: ADMIN"}, "autoCreateUsers": {"on"}, "passwordSignIn": {"admins-only"}, "on": {"true"}, "secretSet": {"true"}}
		}
		// Test connection: works, or names the issuer; nothing saved either way.
		if page = b.do(post, env.Server.URL+"/admin/sso", form("test", p.Issuer)); page.status != 200 || !strings.Contains(page.body, "Connection works") {
			t.Fatalf("test connection: %d %s", page.status, page.body)
		}
		if page = b.do(post, env.Server.URL+"/admin/sso", form("test", p.Issuer+"/missing")); page.status != 422 || !strings.Contains(page.body, "could not be fetched") {
			t.Fatalf("test connection to nothing: %d %s", page.status, page.body)
		}
		// Save: the secret kept, the groups' roles read line by line.
		if page = b.do(post, env.Server.URL+"/admin/sso", form("save", p.Issuer)); page.status != http.StatusSeeOther {
			t.Fatalf("save: %d %s", page.status, page.body)
		}
		got := env.Call(get, "/v1/sso", env.AdminKey, nil, 200).JSON()
		if got["clientSecretSet"] != true || got["passwordSignIn"] != "admins-only" || got["autoCreateUsers"] != true ||
			len(got["emailDomains"].([]any)) != 2 || len(got["groupRoles"].(map[string]any)["qa"].([]any)) != 2 {
			t.Fatalf("saved %v", got)
		}
		// What a sign-in changed of the roles shows on the users page.
		p.AddUser("eve@example.com", true, "qa")
		if a := newBrowser(t, env).signIn("email=eve@example.com", "eve@example.com"); a.status != http.StatusFound {
			t.Fatalf("eve: %d %s", a.status, a.body)
		}
		page = b.do(get, env.Server.URL+"/admin/users", nil)
		if !strings.Contains(page.body, "Last SSO sign-in") || !strings.Contains(page.body, "+APPROVER +INSPECTOR") || !strings.Contains(page.body, "roles unchanged") {
			t.Fatalf("users page: %s", page.body)
		}
		if strings.Count(page.body, "Last SSO sign-in") != 2 {
			t.Fatalf("users page shows %d SSO sign-ins, want 2 (root and eve)", strings.Count(page.body, "Last SSO sign-in"))
		}
		if page = b.do(post, env.Server.URL+"/admin/sso", form("save", "ftp://nowhere")); page.status != 422 || !strings.Contains(page.body, "http or https") {
			t.Fatalf("bad issuer: %d %s", page.status, page.body)
		}
		// Without the CSRF token, nothing happens.
		f := form("off", p.Issuer)
		f.Del("csrf")
		if page = b.do(post, env.Server.URL+"/admin/sso", f); page.status != 403 {
			t.Fatalf("without csrf: %d", page.status)
		}
		if page = b.do(post, env.Server.URL+"/admin/sso", form("off", p.Issuer)); page.status != http.StatusSeeOther {
			t.Fatalf("off: %d %s", page.status, page.body)
		}
		env.Call(get, "/v1/sso", env.AdminKey, nil, 404)
	})
}
