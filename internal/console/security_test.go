package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// client is a browser without script: a cookie jar that does not follow
// redirects, so tests see each answer.
type client struct {
	t    testing.TB
	http *http.Client
	base string
}

func newClient(t testing.TB, base string) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: base, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) do(method, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return c.send(req)
}

// send sends req and reads the answer.
func (c *client) send(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (c *client) session() string {
	u, _ := url.Parse(c.base)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == "wps_session" {
			return ck.Value
		}
	}
	return ""
}

func (c *client) signIn(email string) {
	c.t.Helper()
	res, body := c.do(post, "/signin", url.Values{"email": {email}, "password": {password}, "next": {"/inbox"}})
	if res.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("sign in: %d %s", res.StatusCode, body)
	}
}

// csrf reads the form token from a page.
func csrf(page string) string {
	_, rest, _ := strings.Cut(page, `name="csrf" value="`)
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}

func TestConsoleSecurity(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		base := o.env.Server.URL
		actions := func() int { return o.env.RawInt("SELECT COUNT(*) FROM actions") }

		t.Run("every page carries a strict CSP, signed in or not", func(t *testing.T) {
			c := newClient(t, base)
			for _, path := range []string{"/signin", "/nowhere", "/invite/wpsinv_unknown", "/forgot", "/reset/wpsrst_unknown"} {
				res, _ := c.do(get, path, nil)
				csp := res.Header.Get("Content-Security-Policy")
				if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
					strings.Contains(csp, "unsafe-inline") {
					t.Fatalf("%s: CSP %q", path, csp)
				}
			}
			c.signIn("ines@example.com")
			res, page := c.do(get, "/measurements/"+o.measure, nil)
			if res.StatusCode != 200 || res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("X-Frame-Options") != "DENY" {
				t.Fatalf("measurement page: %d %v", res.StatusCode, res.Header)
			}
			if strings.Contains(page, " style=") || strings.Contains(page, "<style") || strings.Contains(page, "onclick") {
				t.Fatal("inline style or script handler on the page: the CSP would block it")
			}
		})

		t.Run("user text is escaped", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			_, page := c.do(get, "/measurements/"+o.measure, nil)
			if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; notes") {
				t.Fatal("the parameter label is not escaped")
			}
		})

		t.Run("a form without the session's CSRF token changes nothing", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			before := actions()
			form := url.Values{"stepId": {"x"}, "type": {"APPROVAL"}}
			res, _ := c.do(post, "/measurements/"+o.measure+"/actions", form)
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("without token: %d", res.StatusCode)
			}
			form.Set("csrf", "forged")
			if res, _ := c.do(post, "/measurements/"+o.measure+"/actions", form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("with a forged token: %d", res.StatusCode)
			}
			// Another person's token does not work either.
			other := newClient(t, base)
			other.signIn("sam@example.com")
			_, otherPage := other.do(get, "/inbox", nil)
			form.Set("csrf", csrf(otherPage))
			if res, _ := c.do(post, "/measurements/"+o.measure+"/actions", form); res.StatusCode != http.StatusForbidden {
				t.Fatalf("with another session's token: %d", res.StatusCode)
			}
			if actions() != before {
				t.Fatal("an action was recorded")
			}
			if res, _ := c.do(post, "/signout", url.Values{}); res.StatusCode != http.StatusForbidden {
				t.Fatalf("sign out without token: %d", res.StatusCode)
			}
		})

		t.Run("sign-in makes a new session: a planted one is never kept", func(t *testing.T) {
			c := newClient(t, base)
			u, _ := url.Parse(base)
			c.http.Jar.SetCookies(u, []*http.Cookie{{Name: "wps_session", Value: "wpss_planted-by-someone-else", Path: "/"}})
			c.signIn("ines@example.com")
			first := c.session()
			if first == "" || first == "wpss_planted-by-someone-else" {
				t.Fatalf("session after sign-in: %q", first)
			}
			c.signIn("ines@example.com")
			if c.session() == first {
				t.Fatal("signing in again kept the session id")
			}
			// Signing out ends the session on the server, not only in the browser.
			_, page := c.do(get, "/inbox", nil)
			token := c.session()
			if res, _ := c.do(post, "/signout", url.Values{"csrf": {csrf(page)}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign out: %d", res.StatusCode)
			}
			again := newClient(t, base)
			again.http.Jar.SetCookies(u, []*http.Cookie{{Name: "wps_session", Value: token, Path: "/"}})
			if res, _ := again.do(get, "/inbox", nil); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/signin") {
				t.Fatalf("the ended session still opens the inbox: %d", res.StatusCode)
			}
		})

		t.Run("a wrong password is refused without saying which part was wrong", func(t *testing.T) {
			c := newClient(t, base)
			res, page := c.do(post, "/signin", url.Values{"email": {"ines@example.com"}, "password": {"not the password"}})
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "wrong email or password") || c.session() != "" {
				t.Fatalf("wrong password: %d %q", res.StatusCode, c.session())
			}
		})

		t.Run("a sign-in form sent from another site signs nobody in (login CSRF)", func(t *testing.T) {
			for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
				c := newClient(t, base)
				req, _ := http.NewRequest(post, base+"/signin", strings.NewReader(url.Values{"email": {"ines@example.com"}, "password": {password}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range h {
					req.Header.Set(k, v)
				}
				if res, page := c.send(req); res.StatusCode != http.StatusForbidden || c.session() != "" || !strings.Contains(page, "another site") {
					t.Fatalf("%v: %d, session %q", h, res.StatusCode, c.session())
				}
			}
			c := newClient(t, base) // the same site's form signs in
			req, _ := http.NewRequest(post, base+"/signin", strings.NewReader(url.Values{"email": {"ines@example.com"}, "password": {password}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			if res, _ := c.send(req); res.StatusCode != http.StatusSeeOther || c.session() == "" {
				t.Fatalf("same-site sign-in: %d", res.StatusCode)
			}
		})

		t.Run("after sign-in the browser goes only to a page of this site", func(t *testing.T) {
			c := newClient(t, base)
			for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example"} {
				res, _ := c.do(post, "/signin", url.Values{"email": {"ines@example.com"}, "password": {password}, "next": {next}})
				if loc := res.Header.Get("Location"); loc != "/" {
					t.Fatalf("next %q went to %q", next, loc)
				}
			}
		})

		t.Run("the service's rules hold: functions, unknown ids", func(t *testing.T) {
			c := newClient(t, base)
			c.signIn("ines@example.com")
			if res, _ := c.do(get, "/admin/users", nil); res.StatusCode != http.StatusForbidden {
				t.Fatalf("an inspector opened the users page: %d", res.StatusCode)
			}
			if res, _ := c.do(get, "/measurements/01a20000-0000-7000-8000-000000000000", nil); res.StatusCode != http.StatusNotFound {
				t.Fatalf("unknown measurement: %d", res.StatusCode)
			}
		})
	})
}
