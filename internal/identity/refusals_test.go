package identity_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/httpapi"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestSSORefusals: each attack or bad answer is refused with a page that
// says why, and nothing is created: no user (autoCreateUsers is on, and the
// person is new to wps), no session.
func TestSSORefusals(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		configure(t, env, env.AdminKey, p, map[string]any{"autoCreateUsers": true})
		p.AddUser("new@example.com", true)
		start := "org=" + env.OrgID
		users, sessions := env.RawInt(`SELECT count(*) FROM users`), env.RawInt(`SELECT count(*) FROM sessions`)
		refused := func(t *testing.T, name string, a answer, status int, words string) {
			t.Helper()
			if a.status != status || !strings.Contains(a.body, words) || sessionOf(a) != "" {
				t.Fatalf("%s: %d, want %d with %q: %s", name, a.status, status, words, a.body)
			}
			if u, s := env.RawInt(`SELECT count(*) FROM users`), env.RawInt(`SELECT count(*) FROM sessions`); u != users || s != sessions {
				t.Fatalf("%s: users %d sessions %d, want %d and %d", name, u, s, users, sessions)
			}
		}

		t.Run("wrong state", func(t *testing.T) {
			b := newBrowser(t, env)
			cb, _ := url.Parse(b.toProvider(start, "new@example.com"))
			q := cb.Query()
			q.Set("state", "forged")
			cb.RawQuery = q.Encode()
			refused(t, "wrong state", b.do(get, cb.String(), nil), http.StatusBadRequest, "(state)")
		})
		t.Run("no flow cookie", func(t *testing.T) {
			cb := newBrowser(t, env).toProvider(start, "new@example.com")
			refused(t, "another browser", newBrowser(t, env).do(get, cb, nil), http.StatusBadRequest, "not started in this browser")
		})
		t.Run("wrong nonce", func(t *testing.T) {
			other := "not-the-nonce"
			p.set(func(s *opStore) { s.nonce = &other })
			defer p.set(func(s *opStore) { s.nonce = nil })
			refused(t, "wrong nonce", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "(nonce)")
		})
		t.Run("wrong audience", func(t *testing.T) {
			p.set(func(s *opStore) {
				s.rewrite = func(c map[string]any) { c["aud"], c["azp"] = []string{"another-client"}, "another-client" }
			})
			defer p.set(func(s *opStore) { s.rewrite = nil })
			refused(t, "wrong audience", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "ID token was refused")
		})
		t.Run("another client's token, ours among its audiences", func(t *testing.T) {
			p.set(func(s *opStore) {
				s.rewrite = func(c map[string]any) { c["aud"], c["azp"] = []string{"another-client", p.ClientID}, "another-client" }
			})
			defer p.set(func(s *opStore) { s.rewrite = nil })
			refused(t, "azp", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "(azp)")
		})
		t.Run("resigned token is accepted", func(t *testing.T) {
			// The tampering itself leaves a valid token valid: the refusals
			// above come from what was changed.
			p.set(func(s *opStore) { s.rewrite = func(map[string]any) {} })
			defer p.set(func(s *opStore) { s.rewrite = nil })
			p.AddUser("control@example.com", true)
			a := newBrowser(t, env).signIn(start, "control@example.com")
			if a.status != http.StatusFound || sessionOf(a) == "" {
				t.Fatalf("control: %d %s", a.status, a.body)
			}
			users, sessions = users+1, sessions+1
		})
		t.Run("expired token", func(t *testing.T) {
			p.set(func(s *opStore) { s.lifetime = -time.Hour })
			defer p.set(func(s *opStore) { s.lifetime = 0 })
			refused(t, "expired", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "ID token was refused")
		})
		t.Run("unsigned token", func(t *testing.T) {
			p.set(func(s *opStore) { s.unsigned = true })
			defer p.set(func(s *opStore) { s.unsigned = false })
			refused(t, "unsigned", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "ID token was refused")
		})
		t.Run("key not in the JWKS", func(t *testing.T) {
			stray := newKey(t, "stray")
			p.set(func(s *opStore) { s.signWith, stray = stray, s.signWith })
			defer p.set(func(s *opStore) { s.signWith = stray })
			refused(t, "stray key", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "ID token was refused")
		})
		t.Run("email not verified", func(t *testing.T) {
			// zitadel's provider leaves a false email_verified out (allowed:
			// absent is not false); Entra ID and others send it, as here.
			p.set(func(s *opStore) { s.rewrite = func(c map[string]any) { c["email_verified"] = false } })
			defer p.set(func(s *opStore) { s.rewrite = nil })
			refused(t, "email_verified false", newBrowser(t, env).signIn(start, "new@example.com"), http.StatusForbidden, "not verified your email")
		})
		t.Run("open redirect", func(t *testing.T) {
			for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "evil.example", "/\r\nLocation: https://evil.example/"} {
				a := newBrowser(t, env).do(get, env.Server.URL+"/sso/start?"+start+"&next="+url.QueryEscape(next), nil)
				refused(t, "next="+next, a, http.StatusBadRequest, "page of this site")
			}
		})
		t.Run("unknown org or domain", func(t *testing.T) {
			refused(t, "org", newBrowser(t, env).do(get, env.Server.URL+"/sso/start?org=nope", nil), http.StatusNotFound, "No organization")
			refused(t, "email", newBrowser(t, env).do(get, env.Server.URL+"/sso/start?email=a@nowhere.example", nil), http.StatusNotFound, "No organization")
			refused(t, "neither", newBrowser(t, env).do(get, env.Server.URL+"/sso/start", nil), http.StatusBadRequest, "which organization")
		})
		t.Run("provider's error", func(t *testing.T) {
			b := newBrowser(t, env)
			cb, _ := url.Parse(b.toProvider(start, "new@example.com"))
			q := cb.Query()
			q.Del("code")
			q.Set("error", "access_denied")
			cb.RawQuery = q.Encode()
			refused(t, "error", b.do(get, cb.String(), nil), http.StatusForbidden, "access_denied")
		})

		// A replayed code: the same callback again, with the flow's cookie
		// put back, is refused by the provider (the code was used).
		b := newBrowser(t, env)
		cb := b.toProvider(start, "new@example.com")
		u, _ := url.Parse(env.Server.URL + "/sso/")
		var flow []*http.Cookie
		for _, c := range b.c.Jar.Cookies(u) {
			if c.Name == "wps_sso" {
				flow = append(flow, c)
			}
		}
		if a := b.do(get, cb, nil); a.status != http.StatusFound || sessionOf(a) == "" {
			t.Fatalf("first use: %d %s", a.status, a.body)
		}
		users, sessions = users+1, sessions+1
		b.c.Jar.SetCookies(u, flow)
		refused(t, "replayed code", b.do(get, cb, nil), http.StatusForbidden, "refused the sign-in code")
		// Without the cookie, the replay does not even reach the provider.
		refused(t, "replayed callback", newBrowser(t, env).do(get, cb, nil), http.StatusBadRequest, "not started in this browser")

		// The provider rotates its key: the new key is in its JWKS, so the
		// token is accepted (wps fetches the keys again).
		next := newKey(t, "key-2")
		p.set(func(s *opStore) { s.signWith, s.publish = next, append(s.publish, next) })
		if a := b.signIn(start, "new@example.com"); a.status != http.StatusFound || sessionOf(a) == "" {
			t.Fatalf("after rotation: %d %s", a.status, a.body)
		}
	})
}

// TestSSOPrivateIssuerDialled: settings saved while allowed (or written
// to the database) still cannot make wps dial a private address when the
// server refuses them.
func TestSSOPrivateIssuerDialled(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{RefusePrivateWebhooks: true})
		env.RawExec(`INSERT INTO sso_settings (org_id, issuer, client_id, client_secret, updated_at) VALUES (?, ?, ?, ?, 0)`, env.OrgID, p.Issuer, p.ClientID, p.Secret)
		a := newBrowser(t, env).do(get, env.Server.URL+"/sso/start?org="+env.OrgID, nil)
		if a.status != http.StatusBadGateway || !strings.Contains(a.body, "cannot be reached") {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
}

// TestSSORateLimited: /sso/ is anonymous, so WPS_RATE_LIMIT counts its
// requests per client address, as the API's anonymous ones.
func TestSSORateLimited(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{API: httpapi.Options{RateLimit: 0.001, RateBurst: 2}})
		configure(t, env, env.AdminKey, p, nil)
		b := newBrowser(t, env)
		var statuses []int
		for range 3 {
			statuses = append(statuses, b.do(get, env.Server.URL+"/sso/start?org="+env.OrgID, nil).status)
		}
		if statuses[0] != http.StatusFound || statuses[2] != http.StatusTooManyRequests {
			t.Fatalf("statuses %v", statuses)
		}
	})
}
