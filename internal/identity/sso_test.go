package identity_test

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

const post, put, get, del = http.MethodPost, http.MethodPut, http.MethodGet, http.MethodDelete

// setup starts wps and a provider that sends browsers back to wps.
func setup(t *testing.T, engine sqlstore.Engine, opt ...tu.Options) (*tu.Env, *provider) {
	t.Helper()
	env := tu.NewEnv(t, engine, opt...)
	return env, newProvider(t, env.Server.URL+"/sso/callback")
}

// configure turns SSO on for env's org with p and extra settings.
func configure(t *testing.T, env *tu.Env, key string, p *provider, extra map[string]any) map[string]any {
	t.Helper()
	body := map[string]any{"issuer": p.Issuer, "clientId": p.ClientID, "clientSecret": p.Secret}
	for k, v := range extra {
		body[k] = v
	}
	return env.Call(put, "/v1/sso", key, body, 200).JSON()
}

// browser is a person's browser: cookies kept, redirects looked at one by one.
type browser struct {
	t   *testing.T
	c   *http.Client
	env *tu.Env
}

func newBrowser(t *testing.T, env *tu.Env) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, env: env, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status   int
	location string
	body     string
	cookies  []*http.Cookie
}

func (b *browser) do(method, u string, form url.Values) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, location: res.Header.Get("Location"), body: string(raw), cookies: res.Cookies()}
}

// abs resolves a Location against the URL it answered.
func abs(base, loc string) string {
	b, _ := url.Parse(base)
	l, _ := url.Parse(loc)
	return b.ResolveReference(l).String()
}

// toProvider starts a sign-in at wps and signs in at the provider as email;
// it returns the provider's redirect back to wps (the callback URL), not
// yet followed.
func (b *browser) toProvider(startQuery, email string) string {
	b.t.Helper()
	start := b.env.Server.URL + "/sso/start?" + startQuery
	a := b.do(get, start, nil)
	if a.status != http.StatusFound {
		b.t.Fatalf("start: %d %s", a.status, a.body)
	}
	u := a.location
	for range 10 {
		a = b.do(get, u, nil)
		if a.status == http.StatusOK && strings.Contains(u, "/login/username") {
			id, _ := url.Parse(u)
			a = b.do(post, u, url.Values{"username": {email}, "password": {"pw"}, "id": {id.Query().Get("authRequestID")}})
		}
		if a.status != http.StatusFound && a.status != http.StatusSeeOther {
			b.t.Fatalf("at the provider, %s: %d %s", u, a.status, a.body)
		}
		next := abs(u, a.location)
		if strings.HasPrefix(next, b.env.Server.URL+"/sso/callback") {
			return next
		}
		u = next
	}
	b.t.Fatal("the provider never sent the browser back")
	return ""
}

// signIn runs the whole flow and returns wps's answer to the callback.
func (b *browser) signIn(startQuery, email string) answer {
	b.t.Helper()
	return b.do(get, b.toProvider(startQuery, email), nil)
}

func sessionOf(a answer) string {
	for _, c := range a.cookies {
		if c.Name == "wps_session" && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

// me is GET /v1/users/me with a session cookie.
func me(env *tu.Env, session string) *tu.Response {
	return env.Do(tu.Request{Method: get, Path: "/v1/users/me", Header: map[string]string{"Cookie": "wps_session=" + session}})
}

func TestSSOSettings(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine)
		tu.Problem(t, env.Call(get, "/v1/sso", env.AdminKey, nil, 404), 404, "")
		out := configure(t, env, env.AdminKey, p, map[string]any{"emailDomains": []string{"Example.COM"}, "groupsClaim": "groups",
			"groupRoles": map[string][]string{"qa": {"INSPECTOR", "ADMIN"}}, "autoCreateUsers": true, "passwordSignIn": "admins-only"})
		if out["clientSecretSet"] != true || out["clientSecret"] != nil || out["issuer"] != p.Issuer || out["passwordSignIn"] != "admins-only" {
			t.Fatalf("PUT answered %v", out)
		}
		got := env.Call(get, "/v1/sso", env.AdminKey, nil, 200)
		if strings.Contains(string(got.Body), p.Secret) || got.JSON()["emailDomains"].([]any)[0] != "example.com" {
			t.Fatalf("GET answered %s", got.Body)
		}
		// The secret is kept when left out.
		env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer, "clientId": p.ClientID}, 200)
		if env.RawInt(`SELECT count(*) FROM sso_settings WHERE client_secret = ?`, p.Secret) != 1 {
			t.Fatal("the client secret was not kept")
		}

		// An issuer whose discovery cannot be fetched, and bad fields, are named.
		tu.Problem(t, env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer + "/nothing-here", "clientId": "x", "clientSecret": "y"}, 422), 422, "issuer")
		tu.Problem(t, env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": "ftp://x", "clientId": "x", "clientSecret": "y"}, 422), 422, "issuer")
		tu.Problem(t, env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer, "clientId": "x", "clientSecret": "y", "emailDomains": []string{"not a domain"}}, 422), 422, "emailDomains[0]")
		tu.Problem(t, env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer, "clientId": "x", "clientSecret": "y", "groupRoles": map[string][]string{"g": {"lower"}}}, 422), 422, "groupRoles.g[0]")

		// A domain belongs to one org.
		other := env.NewOrg("Other")
		env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer, "clientId": p.ClientID, "emailDomains": []string{"example.com"}}, 200)
		tu.Problem(t, env.Call(put, "/v1/sso", other, map[string]any{"issuer": p.Issuer, "clientId": "x", "clientSecret": "y", "emailDomains": []string{"example.com"}}, 409), 409, "")
		// The first PUT of an org needs a secret.
		tu.Problem(t, env.Call(put, "/v1/sso", other, map[string]any{"issuer": p.Issuer, "clientId": "x"}, 422), 422, "clientSecret")

		// A member without org:update is refused.
		member := invitee(t, env, "m@example.com")
		env.Call(get, "/v1/sso", member, nil, 403)

		env.Call(del, "/v1/sso", env.AdminKey, nil, 204)
		env.Call(get, "/v1/sso", env.AdminKey, nil, 404)
		env.Call(del, "/v1/sso", env.AdminKey, nil, 404)
	})
}

// TestSSOPrivateIssuer: without the setting that lets webhooks reach
// loopback, an issuer there is refused when saved, nothing fetched.
func TestSSOPrivateIssuer(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{RefusePrivateWebhooks: true})
		r := env.Call(put, "/v1/sso", env.AdminKey, map[string]any{"issuer": p.Issuer, "clientId": p.ClientID, "clientSecret": p.Secret}, 422)
		tu.Problem(t, r, 422, "issuer")
		env.Call(get, "/v1/sso", env.AdminKey, nil, 404)
	})
}

// invitee makes a user with a password and roles, and returns their API key.
func invitee(t *testing.T, env *tu.Env, email string, roles ...string) string {
	t.Helper()
	if roles == nil {
		roles = []string{}
	}
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": "correct horse battery"}, 201).JSON()
	return acc["apiKey"].(map[string]any)["key"].(string)
}
