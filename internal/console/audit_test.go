package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// page signs email in (POST /v1/sessions: the console's session) and
// returns a getter of console pages as that person.
func pageAs(t *testing.T, env *tu.Env, email string) func(path string) (int, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Post(env.Server.URL+"/v1/sessions", "application/json", strings.NewReader(`{"email":"`+email+`","password":"`+password+`"}`))
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("sign in %s: %v %v", email, err, res)
	}
	res.Body.Close()
	cookies := res.Cookies()
	return func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.Server.URL+path, nil)
		for _, ck := range cookies {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
}

// The Audit page lists the audit events with their changes, filtered by
// type and actor; only those with audit:read see it, or its link.
func TestConsoleAudit(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		person(t, env, "root@example.com", "ADMIN")
		person(t, env, "ines@example.com", "INSPECTOR")
		env.Call(post, "/v1/organizations", env.AdminKey, map[string]any{"themeColor": "#0A7F5A"}, 200)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": []string{"measurement:read"}}, 201)

		root := pageAs(t, env, "root@example.com")
		status, body := root("/admin")
		if status != 200 || !strings.Contains(body, `href="/admin/audit"`) {
			t.Fatalf("admin page: %d %s", status, body)
		}
		status, body = root("/admin/audit")
		if status != 200 || !strings.Contains(body, "org.updated") || !strings.Contains(body, "#0A7F5A") || !strings.Contains(body, "policy.created") ||
			!strings.Contains(body, "user.joined") {
			t.Fatalf("audit page: %d %s", status, body)
		}
		if _, body = root("/admin/audit?type=policy.created"); strings.Contains(body, "<td>org.updated</td>") || !strings.Contains(body, "<td>policy.created</td>") {
			t.Fatalf("filtered by type: %s", body)
		}
		if _, body = root("/admin/audit?from=2000-01-01&to=2000-01-02"); !strings.Contains(body, "No events.") {
			t.Fatalf("filtered by dates: %s", body)
		}

		ines := pageAs(t, env, "ines@example.com")
		if status, body := ines("/admin/audit"); status != http.StatusForbidden {
			t.Fatalf("without audit:read: %d %s", status, body)
		}
		if _, body := ines("/inbox"); strings.Contains(body, "/admin/audit") {
			t.Fatalf("the link is shown without audit:read")
		}
	})
}
