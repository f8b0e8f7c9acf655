package identity_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestSSOInChromium: a person signs in to the console with "Sign in with
// SSO" in a real browser, through the real provider's sign-in page, and is
// created (autoCreateUsers) with the roles of their groups.
func TestSSOInChromium(t *testing.T) {
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is required under CI=true (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium not found: browser tests skipped (apt-get install chromium)")
	}
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, p := setup(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // the session cookie ends at a real date, which the browser checks
		configure(t, env, env.AdminKey, p, map[string]any{"emailDomains": []string{"example.com"}, "autoCreateUsers": true,
			"groupsClaim": "groups", "groupRoles": map[string][]string{"qa": {"INSPECTOR"}}})
		p.AddUser("pat@example.com", true, "qa")

		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.DisableGPU, chromedp.NoSandbox,
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()))
		alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
		defer cancel()
		ctx, cancelTab := chromedp.NewContext(alloc)
		defer cancelTab()
		ctx, cancelTime := context.WithDeadline(ctx, tu.Deadline(t))
		defer cancelTime()

		steps := []struct {
			what string
			do   chromedp.Action[chromedp.Void]
		}{
			{"open the sign-in page", chromedp.Navigate(env.Server.URL + "/signin")},
			{"type the work email", chromedp.SetValue(chromedp.CSS(`form.sso input[name=email]`), "pat@example.com")},
			{"send it", chromedp.Submit(chromedp.CSS(`form.sso`))},
			{"see the provider's sign-in page", chromedp.WaitVisible(chromedp.CSS(`input[name=username]`))},
			{"type the username", chromedp.SetValue(chromedp.CSS(`input[name=username]`), "pat@example.com")},
			{"type the password", chromedp.SetValue(chromedp.CSS(`input[name=password]`), "pw")},
			{"send them", chromedp.Submit(chromedp.CSS(`input[name=password]`))},
			{"be back in the console, signed in", chromedp.WaitVisible(chromedp.CSS(`header .me`))},
		}
		for _, st := range steps {
			if err := chromedp.Do(ctx, st.do); err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`header .me`)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(loc, env.Server.URL+"/") || !strings.Contains(text, "pat@example.com") {
			t.Fatalf("after SSO the browser is at %s, signed in as %q", loc, text)
		}
		users := env.Call("GET", "/v1/users?perPage=100", env.AdminKey, nil, 200).JSON()["data"].([]any)
		for _, u := range users {
			if u := u.(map[string]any); u["email"] == "pat@example.com" {
				if roles := u["roles"].([]any); len(roles) != 1 || roles[0] != "INSPECTOR" {
					t.Fatalf("the created user's roles: %v", roles)
				}
				return
			}
		}
		t.Fatalf("no user pat@example.com after the sign-in: %v", users)
	})
}
