package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/console"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// versioned is an org whose process has two seats in an order that is
// neither the policies' nor the alphabet's, and a measurement (its
// version is locked: a change makes a new one).
func versioned(t *testing.T, engine sqlstore.Engine) (*tu.Env, *client, string) {
	env := tu.NewEnv(t, engine, tu.Options{Console: true})
	env.Clock.Advance(time.Since(env.Clock.Now())) // the cookie jar drops sessions past their real end
	fns := []string{"measurement:create", "measurement:read", "process:read", "action:write", "action:approve"}
	for _, p := range []struct{ name, role string }{{"Approver", "APPROVER"}, {"Inspector", "INSPECTOR"}, {"Manager", "MANAGER"}} {
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
	}
	person(t, env, "root@example.com", "ADMIN")
	id := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Check", "steps": []map[string]any{
		{"label": "Look", "policyNames": []string{"Inspector", "Approver"}, "viewPolicyNames": []string{"Manager", "Approver"},
			"parameters": []map[string]any{{"name": "note", "type": "TEXT",
				"advancedOptions": map[string]any{"isHidden": true, "hiddenFrom": []string{"Manager", "Inspector"}}}}}}}, 201).JSON()["id"].(string)
	env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": id}, 201)
	c := newClient(t, env.Server.URL)
	c.signIn("root@example.com")
	return env, c, id
}

// versions is how many versions the process has.
func versions(env *tu.Env, id string) int {
	return len(env.Call(get, "/v1/process/"+id+"/versions", env.AdminKey, nil, 200).JSON()["data"].([]any))
}

// Saving from the designer with nothing changed makes no version and
// writes nothing: the seats come back in their saved order, not the
// boxes'. A box ticked since follows the saved ones. The API's PATCH of
// the process as it is writes nothing either.
func TestDesignerSaveUnchangedMakesNoVersion(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, c, id := versioned(t, engine)
		before := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		env.Clock.Advance(time.Minute)
		saveAsDrawn(t, c, "/processes/"+id+"/edit", "/processes/design", url.Values{"op": {"save"}})
		after := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		if n := versions(env, id); n != 1 || after["version"] != before["version"] || after["updatedAt"] != before["updatedAt"] {
			t.Fatalf("saved unchanged: %d versions, version %v then %v, updated %v then %v", n, before["version"], after["version"], before["updatedAt"], after["updatedAt"])
		}
		if a, b := settings(before["steps"]), settings(after["steps"]); a != b {
			t.Fatalf("saved unchanged, the steps changed:\nbefore %s\n after %s", a, b)
		}

		// The API: the process as it is, patched, is no change.
		env.Call(http.MethodPatch, "/v1/process/"+id, env.AdminKey, map[string]any{"name": before["name"], "steps": before["steps"]}, 200)
		if again := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON(); versions(env, id) != 1 || again["updatedAt"] != before["updatedAt"] {
			t.Fatalf("an identical PATCH: %d versions, updated %v then %v", versions(env, id), before["updatedAt"], again["updatedAt"])
		}

		// A seat ticked: after the saved ones; that is a change, and a version.
		_, page := c.do(get, "/processes/"+id+"/edit", nil)
		form := console.DrawnForm([]byte(page), "designer")
		form.Add("s0.policyNames", "Manager")
		form.Set("op", "save")
		if res, body := c.do(post, "/processes/design", form); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("tick a seat: %d %s", res.StatusCode, body)
		}
		st := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()["steps"].([]any)[0].(map[string]any)
		if got := fmt.Sprint(st["policyNames"]); got != "[Inspector Approver Manager]" || versions(env, id) != 2 {
			t.Fatalf("a seat ticked: %s, %d versions", got, versions(env, id))
		}
	})
}

// A designer page drawn from a version that someone else's save has
// replaced is refused (409) with the designer again, saying so and
// offering the newer version; nothing of it is stored.
func TestDesignerRefusesAStalePage(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, c, id := versioned(t, engine)
		_, page := c.do(get, "/processes/"+id+"/edit", nil)
		form := console.DrawnForm([]byte(page), "designer")

		theirs := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		steps := theirs["steps"].([]any)
		steps[0].(map[string]any)["label"] = "Theirs"
		theirs = env.Call(http.MethodPatch, "/v1/process/"+id, env.AdminKey, map[string]any{"steps": steps}, 200).JSON()
		if theirs["version"] != 2.0 {
			t.Fatalf("their save: version %v", theirs["version"])
		}

		form.Set("s0.label", "Mine")
		form.Set("op", "save")
		res, body := c.do(post, "/processes/design", form)
		if res.StatusCode != http.StatusConflict || !strings.Contains(body, "Someone else saved a newer version") ||
			!strings.Contains(body, `href="/processes/`+id+`/edit"`) || !strings.Contains(body, "Open version 2") {
			t.Fatalf("a stale page saved: %d %s", res.StatusCode, body)
		}
		now := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		if now["version"] != 2.0 || versions(env, id) != 2 || settings(now["steps"]) != settings(theirs["steps"]) {
			t.Fatalf("after the refusal: version %v, %d versions, steps %s", now["version"], versions(env, id), settings(now["steps"]))
		}

		// A process no measurement uses is edited in place, its version
		// kept: a page drawn before such a save is refused all the same.
		fresh := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Fresh", "steps": []map[string]any{{"label": "One"}}}, 201).JSON()["id"].(string)
		_, page = c.do(get, "/processes/"+fresh+"/edit", nil)
		form = console.DrawnForm([]byte(page), "designer")
		env.Clock.Advance(time.Second) // their save is later than the page
		env.Call(http.MethodPatch, "/v1/process/"+fresh, env.AdminKey, map[string]any{"label": "Theirs"}, 200)
		form.Set("s0.label", "Mine")
		form.Set("op", "save")
		if res, body := c.do(post, "/processes/design", form); res.StatusCode != http.StatusConflict || !strings.Contains(body, "Someone else saved") {
			t.Fatalf("a stale page of a process edited in place saved: %d", res.StatusCode)
		}
		if got := env.Call(get, "/v1/process/"+fresh, env.AdminKey, nil, 200).JSON(); got["label"] != "Theirs" || got["steps"].([]any)[0].(map[string]any)["label"] != "One" {
			t.Fatalf("after the refusal: %v", got)
		}
	})
}
