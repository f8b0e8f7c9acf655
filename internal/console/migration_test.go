package console_test

import (
	"net/url"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The process page offers to move running measurements to the latest
// version, a preview first, to those who may change processes.
func TestConsoleMigration(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		env := o.env
		path := "/v1/process/" + o.process
		steps := env.Call(get, path, env.AdminKey, nil, 200).JSON()["steps"].([]any)
		steps = append(steps, map[string]any{"label": "Sign off", "policyNames": []string{"Manager"}})
		env.Call("PATCH", path, env.AdminKey, map[string]any{"steps": steps}, 200)

		t.Run("two versions side by side", func(t *testing.T) {
			c := newClient(t, env.Server.URL)
			c.signIn("ines@example.com")
			_, page := c.do(get, "/processes/"+o.process, nil)
			if !strings.Contains(page, `href="/processes/`+o.process+`/compare"`) || !strings.Contains(page, "<td>Administrator</td>") {
				t.Fatalf("no versions with their authors:\n%s", page)
			}
			_, page = c.do(get, "/processes/"+o.process+"/compare?a=1&b=2", nil)
			if !strings.Contains(page, "Step Sign off: added") || !strings.Contains(page, "<th scope=\"row\">policyNames</th><td></td><td>[&#34;Manager&#34;]</td>") {
				t.Fatalf("comparison:\n%s", page)
			}
		})
		ines := newClient(t, env.Server.URL)
		ines.signIn("ines@example.com")
		if _, page := ines.do(get, "/processes/"+o.process, nil); strings.Contains(page, "Preview the move") {
			t.Fatal("an inspector is offered to move measurements")
		}
		root := newClient(t, env.Server.URL)
		root.signIn("root@example.com")
		_, page := root.do(get, "/processes/"+o.process, nil)
		if !strings.Contains(page, "Preview the move") || !strings.Contains(page, "<option>1</option>") {
			t.Fatalf("no move offered:\n%s", page)
		}
		res, page := root.do(post, "/processes/"+o.process+"/migrations", url.Values{"csrf": {csrf(page)}, "fromVersion": {"1"}, "dryRun": {"true"}})
		if res.StatusCode != 200 || !strings.Contains(page, "1 would move") || !strings.Contains(page, "Sign off: added") || !strings.Contains(page, "Move 1 to version 2") {
			t.Fatalf("preview: %d\n%s", res.StatusCode, page)
		}
		version := func() any {
			return env.Call(get, "/v1/measurements/"+o.measure, o.inspector, nil, 200).JSON()["version"]
		}
		if version() != 1.0 {
			t.Fatal("the preview moved the measurement")
		}
		res, page = root.do(post, "/processes/"+o.process+"/migrations", url.Values{"csrf": {csrf(page)}, "fromVersion": {"1"}, "dryRun": {"false"}})
		if res.StatusCode != 200 || !strings.Contains(page, "1 moved") || version() != 2.0 {
			t.Fatalf("move: %d %v\n%s", res.StatusCode, version(), page)
		}
	})
}
