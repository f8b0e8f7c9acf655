package identity_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

func TestSSOSignIn(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		configure(t, env, env.AdminKey, p, map[string]any{"emailDomains": []string{"example.com"}})
		invitee(t, env, "ana@example.com", "INSPECTOR")
		p.AddUser("Ana@Example.com", true)

		// By org: the user is found whatever the case of the email, and
		// the session is the console's, good for the API.
		a := newBrowser(t, env).signIn("org="+env.OrgID, "Ana@Example.com")
		if a.status != http.StatusFound || a.location != "/" || sessionOf(a) == "" {
			t.Fatalf("callback answered %d %q %s", a.status, a.location, a.body)
		}
		r := me(env, sessionOf(a))
		if r.Status != 200 || r.JSON()["email"] != "ana@example.com" {
			t.Fatalf("me: %d %s", r.Status, r.Body)
		}
		// By email domain, with a return address on this site.
		a = newBrowser(t, env).signIn("email=ana@example.com&next=/measurements", "Ana@Example.com")
		if a.status != http.StatusFound || a.location != "/measurements" || sessionOf(a) == "" {
			t.Fatalf("callback answered %d %q %s", a.status, a.location, a.body)
		}

		// Unknown email without autoCreateUsers: 403, nobody created.
		p.AddUser("bo@example.com", true)
		users := env.RawInt(`SELECT count(*) FROM users`)
		a = newBrowser(t, env).signIn("org="+env.OrgID, "bo@example.com")
		if a.status != http.StatusForbidden || sessionOf(a) != "" || !strings.Contains(a.body, "no account") {
			t.Fatalf("unknown email: %d %s", a.status, a.body)
		}
		if n := env.RawInt(`SELECT count(*) FROM users`); n != users {
			t.Fatalf("users %d, want %d", n, users)
		}

		// With autoCreateUsers, the user is made.
		configure(t, env, env.AdminKey, p, map[string]any{"autoCreateUsers": true})
		a = newBrowser(t, env).signIn("org="+env.OrgID, "bo@example.com")
		if a.status != http.StatusFound || sessionOf(a) == "" {
			t.Fatalf("auto-create: %d %s", a.status, a.body)
		}
		bo := me(env, sessionOf(a)).JSON()
		if bo["email"] != "bo@example.com" || bo["name"] != "Pat Doe" || len(bo["roles"].([]any)) != 0 {
			t.Fatalf("created %v", bo)
		}

		// A deactivated user: 403.
		env.Call(http.MethodPatch, "/v1/users/"+bo["id"].(string), env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		a = newBrowser(t, env).signIn("org="+env.OrgID, "bo@example.com")
		if a.status != http.StatusForbidden || sessionOf(a) != "" || !strings.Contains(a.body, "deactivated") {
			t.Fatalf("deactivated: %d %s", a.status, a.body)
		}
	})
}

func TestSSORolesFromGroups(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		configure(t, env, env.AdminKey, p, map[string]any{"autoCreateUsers": true, "groupsClaim": "groups",
			"groupRoles": map[string][]string{"qa": {"INSPECTOR"}, "leads": {"INSPECTOR", "APPROVER"}, "it": {"ADMIN"}}})
		roles := func(a answer) []string {
			t.Helper()
			if a.status != http.StatusFound {
				t.Fatalf("sign-in: %d %s", a.status, a.body)
			}
			var out []string
			for _, r := range me(env, sessionOf(a)).JSON()["roles"].([]any) {
				out = append(out, r.(string))
			}
			return out
		}
		p.AddUser("cy@example.com", true, "qa", "leads", "unknown")
		if got := roles(newBrowser(t, env).signIn("org="+env.OrgID, "cy@example.com")); !slices.Equal(got, []string{"APPROVER", "INSPECTOR"}) {
			t.Fatalf("roles %v", got)
		}
		// Each sign-in sets them again: a group left takes its roles.
		p.set(func(s *opStore) { s.groups["ucy-example.com"] = []string{"qa"} })
		if got := roles(newBrowser(t, env).signIn("org="+env.OrgID, "cy@example.com")); !slices.Equal(got, []string{"INSPECTOR"}) {
			t.Fatalf("roles %v", got)
		}

		// The org's last active ADMIN keeps ADMIN whatever the groups say;
		// once another admin exists, the groups rule.
		p.AddUser("di@example.com", true, "it")
		if got := roles(newBrowser(t, env).signIn("org="+env.OrgID, "di@example.com")); !slices.Equal(got, []string{"ADMIN"}) {
			t.Fatalf("roles %v", got)
		}
		boot := env.Call(http.MethodGet, "/v1/users/me", env.AdminKey, nil, 200).JSON()
		env.Call(http.MethodPatch, "/v1/users/"+boot["id"].(string), env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		p.set(func(s *opStore) { s.groups["udi-example.com"] = []string{"qa"} })
		if got := roles(newBrowser(t, env).signIn("org="+env.OrgID, "di@example.com")); !slices.Equal(got, []string{"ADMIN", "INSPECTOR"}) {
			t.Fatalf("the last admin's roles %v", got)
		}
	})
}

func TestPasswordSignInLimits(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{Console: true})
		invitee(t, env, "admin@example.com", "ADMIN")
		invitee(t, env, "user@example.com", "INSPECTOR")
		signIn := func(email string) int {
			return env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": email, "password": "correct horse battery"}}).Status
		}
		configure(t, env, env.AdminKey, p, map[string]any{"passwordSignIn": "admins-only"})
		if a, u := signIn("admin@example.com"), signIn("user@example.com"); a != 201 || u != 403 {
			t.Fatalf("admins-only: admin %d, user %d", a, u)
		}
		configure(t, env, env.AdminKey, p, map[string]any{"passwordSignIn": "disabled"})
		if a, u := signIn("admin@example.com"), signIn("user@example.com"); a != 403 || u != 403 {
			t.Fatalf("disabled: admin %d, user %d", a, u)
		}
		// The console's sign-in page says so too.
		page := newBrowser(t, env).do(post, env.Server.URL+"/signin", url.Values{"email": {"user@example.com"}, "password": {"correct horse battery"}})
		if page.status != 403 || !strings.Contains(page.body, "single sign-on") || sessionOf(page) != "" {
			t.Fatalf("console sign-in: %d %s", page.status, page.body)
		}
		// A wrong password still answers 401: the limit says nothing of accounts.
		if s := env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "user@example.com", "password": "wrong password!"}}).Status; s != 401 {
			t.Fatalf("wrong password: %d", s)
		}
		env.Call(del, "/v1/sso", env.AdminKey, nil, 204)
		if u := signIn("user@example.com"); u != 201 {
			t.Fatalf("SSO off: user %d", u)
		}
	})
}

// TestSSOCreatesOnce: two first sign-ins of one new person at once make
// one user, and both sign in.
func TestSSOCreatesOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		configure(t, env, env.AdminKey, p, map[string]any{"autoCreateUsers": true, "groupsClaim": "groups", "groupRoles": map[string][]string{"qa": {"INSPECTOR"}}})
		p.AddUser("twice@example.com", true, "qa")
		const n = 4
		browsers, callbacks := make([]*browser, n), make([]string, n)
		for i := range n {
			browsers[i] = newBrowser(t, env)
			callbacks[i] = browsers[i].toProvider("org="+env.OrgID, "twice@example.com")
		}
		answers := make(chan answer, n)
		for i := range n {
			go func() {
				req, _ := http.NewRequest(get, callbacks[i], nil)
				res, err := browsers[i].c.Do(req)
				if err != nil {
					answers <- answer{}
					return
				}
				res.Body.Close()
				answers <- answer{status: res.StatusCode, cookies: res.Cookies()}
			}()
		}
		for range n {
			if a := <-answers; a.status != http.StatusFound || sessionOf(a) == "" {
				t.Errorf("a sign-in answered %d", a.status)
			}
		}
		if got := env.RawInt(`SELECT count(*) FROM users WHERE email = ?`, "twice@example.com"); got != 1 {
			t.Fatalf("%d users, want 1", got)
		}
	})
}
