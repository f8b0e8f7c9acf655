package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestLandingIsAnAllowedSection: a user who may read entities but not
// measurements signs in and lands on a page they may see, with no Inbox
// in the menu; a page refused them links to that start, not the Inbox.
func TestLandingIsAnAllowedSection(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Reader", "roles": []string{"READER"}, "functions": []string{"entity:read"}}, 201)
		person(t, env, "rita@example.com", "READER")
		c := newClient(t, env.Server.URL)
		res, body := c.do(post, "/signin", url.Values{"email": {"rita@example.com"}, "password": {password}})
		for hops := 0; res.StatusCode == http.StatusSeeOther && hops < 5; hops++ {
			res, body = c.do(get, res.Header.Get("Location"), nil)
		}
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/entities" || strings.Contains(body, `href="/inbox"`) {
			t.Fatalf("after sign-in: %d at %s %s", res.StatusCode, res.Request.URL, body)
		}
		if res, body := c.do(get, "/inbox", nil); res.StatusCode != http.StatusForbidden || strings.Contains(body, `href="/inbox"`) || !strings.Contains(body, `<a href="/">`) {
			t.Fatalf("the Inbox refused: %d %s", res.StatusCode, body)
		}
	})
}

// TestOrgLogoOnlyForUploaders: Org settings offers the logo control only
// to a user who may upload (action:write or entity:write); one who may
// not and sends a logo anyway gets the form back with what was typed.
func TestOrgLogoOnlyForUploaders(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Brand", "roles": []string{"BRAND"}, "functions": []string{"org:update"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Brand2", "roles": []string{"BRAND2"}, "functions": []string{"org:update", "entity:write"}}, 201)
		person(t, env, "bea@example.com", "BRAND")
		person(t, env, "bob@example.com", "BRAND2")
		bob := newClient(t, env.Server.URL)
		bob.signIn("bob@example.com")
		if res, page := bob.do(get, "/admin/org", nil); res.StatusCode != 200 || !strings.Contains(page, `name="logo" type="file"`) {
			t.Fatalf("an uploader is not offered the logo: %d %s", res.StatusCode, page)
		}
		bea := newClient(t, env.Server.URL)
		bea.signIn("bea@example.com")
		res, page := bea.do(get, "/admin/org", nil)
		if res.StatusCode != 200 || strings.Contains(page, `name="logo"`) {
			t.Fatalf("the logo is offered to one who may not upload: %d %s", res.StatusCode, page)
		}
		res, page = bea.postMultipart("/admin/org", url.Values{"csrf": {csrf(page)}, "themeColor": {"#123456"}}, map[string][][2]string{"logo": {{"logo.png", string(pngBytes)}}})
		if res.StatusCode != http.StatusForbidden || !strings.Contains(page, `name="themeColor" value="#123456"`) {
			t.Fatalf("a logo sent anyway: %d %s", res.StatusCode, page)
		}
	})
}
