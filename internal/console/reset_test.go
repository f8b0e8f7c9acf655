package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/notify"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// Without mail, the users page and the settings page say so.
func TestConsoleSaysMailIsOff(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite, tu.Options{Console: true})
	env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
	person(t, env, "boss@example.com", "ADMIN")
	c := newClient(t, env.Server.URL)
	c.signIn("boss@example.com")
	_, page := c.do(get, "/admin/users", nil)
	res, page := c.do(post, "/admin/invites", url.Values{"csrf": {csrf(page)}, "email": {"ana@example.com"}})
	if res.StatusCode != http.StatusCreated || !strings.Contains(page, "Mail is off on this server") || strings.Contains(page, "mailed to them") {
		t.Fatalf("invite without mail: %d", res.StatusCode)
	}

	// The settings page: mail about work, chosen here as through the API.
	res, page = c.do(get, "/settings", nil)
	if res.StatusCode != 200 || !strings.Contains(page, `value="immediate" checked`) || !strings.Contains(page, "Mail is off on this server") {
		t.Fatalf("settings: %d", res.StatusCode)
	}
	res, _ = c.do(post, "/settings", url.Values{"csrf": {csrf(page)}, "email": {"daily"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/settings?done=saved" {
		t.Fatalf("save settings: %d", res.StatusCode)
	}
	if _, page = c.do(get, "/settings", nil); !strings.Contains(page, `value="daily" checked`) {
		t.Fatal("the choice was not kept")
	}
	if res, _ = c.do(post, "/settings", url.Values{"csrf": {csrf(page)}, "email": {"hourly"}}); res.StatusCode != 422 {
		t.Fatalf("a choice that does not exist: %d", res.StatusCode)
	}
}

// The links mailed work in the console: an invitation accepted on
// /invite/{token}, a password asked for on /forgot and chosen on
// /reset/{token}, which works once.
func TestConsoleLinksByMail(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		const public = "https://wps.example.com"
		env := tu.NewEnv(t, engine, tu.Options{Console: true, Mail: wps.MailConfig{Enabled: true, PublicURL: public}})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
		srv := tu.NewSMTP(t)
		w, err := notify.New(env.DB, notify.Config{URL: srv.URL(), From: "wps@example.com", Now: env.Clock.Now, Timeout: time.Until(tu.Deadline(t))})
		if err != nil {
			t.Fatal(err)
		}
		deliver := func() {
			t.Helper()
			for {
				n, err := w.RunOnce(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					return
				}
			}
		}
		path := func(to, prefix string) string {
			t.Helper()
			deliver()
			got := srv.Mails(to)
			if len(got) == 0 {
				t.Fatalf("no mail to %s", to)
			}
			link := got[len(got)-1].Link(public + prefix)
			if link == "" {
				t.Fatalf("no %s link in %q", prefix, got[len(got)-1].Body)
			}
			return strings.TrimPrefix(link, public)
		}
		base := env.Server.URL
		c := newClient(t, base)

		env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": "rui@example.com"}, 201)
		invite := path("rui@example.com", "/invite/")
		res, body := c.do(post, invite, url.Values{"name": {"Rui"}, "password": {password}, "confirm": {password}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?done=welcome" {
			t.Fatalf("accept: %d %s", res.StatusCode, body)
		}

		_, page := c.do(get, "/signin", nil)
		if !strings.Contains(page, `href="/forgot"`) {
			t.Fatal("no forgotten password link on the sign-in page")
		}
		for _, email := range []string{"rui@example.com", "nobody@example.com"} {
			res, body := c.do(post, "/forgot", url.Values{"email": {email}})
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?done=resetsent" {
				t.Fatalf("forgot %s: %d %s", email, res.StatusCode, body)
			}
		}
		reset := path("rui@example.com", "/reset/")
		if len(srv.Mails("nobody@example.com")) != 0 {
			t.Fatal("an unknown email was mailed")
		}
		if res, page := c.do(get, reset, nil); res.StatusCode != 200 || !strings.Contains(page, "Choose a new password") {
			t.Fatalf("reset page: %d", res.StatusCode)
		}
		if res, _ := c.do(post, reset, url.Values{"password": {"a brand new password"}, "confirm": {"another one entirely"}}); res.StatusCode != 422 {
			t.Fatalf("mismatch: %d", res.StatusCode)
		}
		if res, page := c.do(post, reset, url.Values{"password": {"short"}, "confirm": {"short"}}); res.StatusCode != 422 || !strings.Contains(page, "12 to 1024") {
			t.Fatalf("short: %d %s", res.StatusCode, page)
		}
		res, body = c.do(post, reset, url.Values{"password": {"a brand new password"}, "confirm": {"a brand new password"}})
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?done=reset" {
			t.Fatalf("reset: %d %s", res.StatusCode, body)
		}
		if res, page := c.do(post, reset, url.Values{"password": {"a third password!"}, "confirm": {"a third password!"}}); res.StatusCode != 410 || !strings.Contains(page, "no longer works") {
			t.Fatalf("used twice: %d", res.StatusCode)
		}
		if res, _ := c.do(post, "/signin", url.Values{"email": {"rui@example.com"}, "password": {"a brand new password"}, "next": {"/inbox"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign in with the new password: %d", res.StatusCode)
		}

		// The admin's users page says the invitation was mailed, and lists
		// the mail with its status.
		person(t, env, "boss@example.com", "ADMIN")
		admin := newClient(t, base)
		admin.signIn("boss@example.com")
		res, page = admin.do(get, "/admin/users", nil)
		if res.StatusCode != 200 {
			t.Fatalf("users page: %d %v", res.StatusCode, res.Header)
		}
		res, page = admin.do(post, "/admin/invites", url.Values{"csrf": {csrf(page)}, "email": {"ana@example.com"}})
		if res.StatusCode != http.StatusCreated || !strings.Contains(page, "created and mailed to them") {
			t.Fatalf("invite in the console: %d %s", res.StatusCode, page)
		}
		if !strings.Contains(page, public+"/invite/wpsinv_") { // the link the mail carries, not the request's host
			t.Fatalf("the invitation link shown is not at the server's public address:\n%s", page)
		}
		deliver()
		_, page = admin.do(get, "/admin/users", nil)
		if !strings.Contains(page, "<h2>Mail</h2>") || !strings.Contains(page, "ana@example.com") || !strings.Contains(page, "Sent") {
			t.Fatalf("no mail log on the users page")
		}
	})
}

// TestForgotWithoutMail: a service that sends no mail does not offer
// "Forgot your password?", and /forgot says to ask an administrator
// rather than that a link is on its way.
func TestForgotWithoutMail(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		c := newClient(t, env.Server.URL)
		if _, page := c.do(get, "/signin", nil); strings.Contains(page, `href="/forgot"`) {
			t.Fatalf("the sign-in page offers a link no mail will bring: %s", page)
		}
		for _, method := range []string{get, post} {
			res, page := c.do(method, "/forgot", url.Values{"email": {"admin@example.com"}})
			if res.StatusCode != http.StatusOK || !strings.Contains(page, "Ask an administrator") || strings.Contains(page, `action="/forgot"`) {
				t.Fatalf("%s /forgot without mail: %d %s", method, res.StatusCode, page)
			}
		}
	})
}
