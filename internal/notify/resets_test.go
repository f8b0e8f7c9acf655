package notify_test

import (
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// signIn starts a console session and returns its cookie header.
func signIn(t *testing.T, env *tu.Env, email, password string, want int) map[string]string {
	t.Helper()
	r := env.Do(tu.Request{Method: "POST", Path: "/v1/sessions", Body: map[string]any{"email": email, "password": password}})
	if r.Status != want {
		t.Fatalf("sign-in of %s: %d, want %d: %s", email, r.Status, want, r.Body)
	}
	for _, c := range r.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(c, "wps_session="); ok {
			v, _, _ = strings.Cut(v, ";")
			return map[string]string{"Cookie": "wps_session=" + v}
		}
	}
	return nil
}

// resetLink asks for a reset of email, delivers it, and returns the token
// of the link mailed.
func resetLink(t *testing.T, env *tu.Env, srv *tu.SMTPServer, email string) string {
	t.Helper()
	to := strings.ToLower(strings.TrimSpace(email))
	before := len(srv.Mails(to))
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": email}, 202)
	drain(t, worker(t, env, env.DB, srv.URL()))
	got := srv.Mails(to)
	if len(got) != before+1 {
		t.Fatalf("%s got %d mails, want %d", email, len(got), before+1)
	}
	link := got[len(got)-1].Link(publicURL + "/reset/")
	if link == "" {
		t.Fatalf("no reset link in %q", got[len(got)-1].Body)
	}
	return strings.TrimPrefix(link, publicURL+"/reset/")
}

// A password reset by mail, end to end: the link sets the password once,
// ends every session, and unknown emails get the same 202 and no mail.
func TestPasswordResetByMail(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := mailEnv(t, engine)
		srv := tu.NewSMTP(t)
		key, _ := member(t, env, "forgot@example.com")
		drain(t, worker(t, env, env.DB, srv.URL())) // the invitation's mail
		cookie := signIn(t, env, "forgot@example.com", "a good long password", 201)
		if r := env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Header: cookie}); r.Status != 200 {
			t.Fatalf("session: %d", r.Status)
		}

		// No enumeration: the same answer, and nothing mailed or stored.
		before := env.RawInt(`SELECT count(*) FROM notifications`)
		r := env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets", Body: map[string]any{"email": "nobody@example.com"}})
		if r.Status != 202 || len(r.Body) != 0 {
			t.Fatalf("unknown email: %d %s", r.Status, r.Body)
		}
		if n := env.RawInt(`SELECT count(*) FROM notifications`); n != before {
			t.Fatal("a message was queued for an unknown email")
		}

		token := resetLink(t, env, srv, "Forgot@Example.com ")
		if n := env.RawInt(`SELECT count(*) FROM password_resets WHERE token_hash = ?`, token); n != 0 {
			t.Fatal("the token is stored as it is")
		}
		tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets/accept",
			Body: map[string]any{"token": token, "newPassword": "short"}}), 422, "newPassword")
		env.Call("POST", "/v1/password-resets/accept", "", map[string]any{"token": token, "newPassword": "a brand new password"}, 204)
		if r := env.Do(tu.Request{Method: "GET", Path: "/v1/users/me", Header: cookie}); r.Status != 401 {
			t.Fatalf("the session outlived the reset: %d", r.Status)
		}
		env.Call("GET", "/v1/users/me", key, nil, 200) // API keys stay
		signIn(t, env, "forgot@example.com", "a good long password", 401)
		signIn(t, env, "forgot@example.com", "a brand new password", 201)

		// Single use.
		tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets/accept",
			Body: map[string]any{"token": token, "newPassword": "yet another password"}}), 410, "")
		tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets/accept",
			Body: map[string]any{"token": "wpsrst_unknown", "newPassword": "yet another password"}}), 404, "")

		// Valid an hour.
		late := resetLink(t, env, srv, "forgot@example.com")
		env.Clock.Advance(61 * time.Minute)
		tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets/accept",
			Body: map[string]any{"token": late, "newPassword": "yet another password"}}), 410, "")
		signIn(t, env, "forgot@example.com", "a brand new password", 201)

		// A user deactivated after asking is mailed nothing: the message
		// ends FAILED, and the link no longer works.
		_, bob := member(t, env, "bob@example.com")
		drain(t, worker(t, env, env.DB, srv.URL()))
		env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "bob@example.com"}, 202)
		env.Call("PATCH", "/v1/users/"+bob, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		drain(t, worker(t, env, env.DB, srv.URL()))
		if l := notifications(t, env, env.AdminKey, "?userId="+bob); len(l) != 1 || l[0]["status"] != "FAILED" ||
			l[0]["lastError"] != "not sent: the user is deactivated" || len(srv.Mails("bob@example.com")) != 1 { // the invitation only
			t.Fatalf("deactivated: %v", l)
		}

		// A deactivated user is mailed nothing.
		_, id := member(t, env, "gone@example.com")
		env.Call("PATCH", "/v1/users/"+id, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
		before = env.RawInt(`SELECT count(*) FROM notifications`)
		env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "gone@example.com"}, 202)
		if n := env.RawInt(`SELECT count(*) FROM notifications`); n != before {
			t.Fatal("a deactivated user was sent a reset")
		}
	})
}

// Asking for resets is throttled per email, known or not (so a 429 says
// nothing about the account), and a link asked for later ends the others
// once one is used.
func TestPasswordResetThrottled(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	srv := tu.NewSMTP(t)
	member(t, env, "busy@example.com")
	for _, email := range []string{"busy@example.com", "unknown@example.com"} {
		for range 3 {
			env.Call("POST", "/v1/password-resets", "", map[string]any{"email": email}, 202)
		}
		r := env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets", Body: map[string]any{"email": email}})
		tu.Problem(t, r, 429, "")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
	}
	drain(t, worker(t, env, env.DB, srv.URL()))
	var got []tu.Mail
	for _, m := range srv.Mails("busy@example.com") {
		if m.Link(publicURL+"/reset/") != "" {
			got = append(got, m)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d mails, want 3", len(got))
	}
	first := strings.TrimPrefix(got[0].Link(publicURL+"/reset/"), publicURL+"/reset/")
	last := strings.TrimPrefix(got[2].Link(publicURL+"/reset/"), publicURL+"/reset/")
	env.Call("POST", "/v1/password-resets/accept", "", map[string]any{"token": last, "newPassword": "a brand new password"}, 204)
	tu.Problem(t, env.Do(tu.Request{Method: "POST", Path: "/v1/password-resets/accept",
		Body: map[string]any{"token": first, "newPassword": "yet another password"}}), 410, "")
	env.Clock.Advance(time.Hour)
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "busy@example.com"}, 202)
}

// An email with an account in two orgs gets one link per org, and each
// link sets the password of its own org's account only.
func TestPasswordResetPerOrg(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	srv := tu.NewSMTP(t)
	other := env.NewOrg("Globex")
	member(t, env, "two@example.com")
	tok := env.Call("POST", "/v1/invites", other, map[string]any{"email": "two@example.com"}, 201).JSON()["token"]
	env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": tok, "password": "the globex password"}, 201)
	drain(t, worker(t, env, env.DB, srv.URL()))
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "two@example.com"}, 202)
	drain(t, worker(t, env, env.DB, srv.URL()))
	var acme string
	n := 0
	for _, m := range srv.Mails("two@example.com") {
		if link := m.Link(publicURL + "/reset/"); link != "" {
			n++
			if strings.Contains(m.Subject, "Acme") {
				acme = strings.TrimPrefix(link, publicURL+"/reset/")
			}
		}
	}
	if n != 2 || acme == "" {
		t.Fatalf("%d reset mails, Acme's link %q", n, acme)
	}
	env.Call("POST", "/v1/password-resets/accept", "", map[string]any{"token": acme, "newPassword": "a brand new password"}, 204)
	globex := env.Call("GET", "/v1/users/me", other, nil, 200).JSON()["orgId"].(string)
	env.Call("POST", "/v1/sessions", "", map[string]any{"email": "two@example.com", "password": "the globex password", "orgId": globex}, 201)
	env.Call("POST", "/v1/sessions", "", map[string]any{"email": "two@example.com", "password": "a brand new password", "orgId": globex}, 401)
	if got := env.Call("POST", "/v1/sessions", "", map[string]any{"email": "two@example.com", "password": "a brand new password", "orgId": env.OrgID}, 201).JSON(); got["user"].(map[string]any)["orgId"] != env.OrgID {
		t.Fatalf("signed in to %v", got["user"])
	}
}
