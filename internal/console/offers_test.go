package console_test

import (
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestConsoleOffersOnlyWhatIsAllowed: people see the sections, buttons and
// forms they may use, and names rather than ids (semantics §14).
func TestConsoleOffersOnlyWhatIsAllowed(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the browser checks
		// The README's Inspector: no process:read, no entity:read, no action:approve.
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"},
			"functions": []string{"measurement:create", "measurement:read", "action:write"}}, 201)
		// An approver who may not read the records a measurement links to.
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Approver", "roles": []string{"APPROVER"},
			"functions": []string{"measurement:read", "action:approve"}}, 201)
		inspector := person(t, env, "ines@example.com", "INSPECTOR")
		person(t, env, "abe@example.com", "APPROVER")
		person(t, env, "root@example.com", "ADMIN")
		supplier := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "supplier", "label": "Suppliers", "parameters": []map[string]any{
			{"name": "code", "type": "TEXT"}, {"name": "name", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		acme := env.Call(post, "/v1/entities/"+supplier+"/records", env.AdminKey, map[string]any{"values": map[string]any{"code": "S-001", "name": "Acme Pumps"}}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pump check", "iconName": "wrench", "steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
				{"name": "supplier", "label": "Supplier", "type": "ENTITY", "entityId": supplier, "showColumns": []string{"code", "name"}},
				{"name": "ok", "label": "Pump runs", "type": "BOOLEAN"}}},
			{"label": "Approve", "policyNames": []string{"Approver"}},
		}}, 201)
		b := newBrowser(t)
		base := env.Server.URL

		ines := b.person(base)
		signIn(ines, "ines@example.com")
		if nav := ines.text("header nav"); strings.Contains(nav, "Processes") || strings.Contains(nav, "Entities") || !strings.Contains(nav, "Measurements") {
			t.Fatalf("the inspector's sections: %q", nav)
		}
		// She starts a measurement from the process's name, and the lists name its process, with its icon.
		ines.fill("Process", "Pump check")
		ines.press("button", "Start measurement")
		ines.sees("Measurement started.")
		name := strings.Fields(ines.text("h1"))[0]
		// Her form saves data; approving is not hers.
		ines.sees("Save")
		if n := ines.eval(`String(document.querySelectorAll("button[value=APPROVAL], button[value=REJECTION]").length)`); n != "0" {
			t.Fatalf("the inspector is offered %s approve or reject buttons", n)
		}
		// She writes through the API (her picker lists no records: she may not read them).
		var mid string
		for _, m := range env.Call(get, "/v1/measurements", inspector, nil, 200).JSON()["data"].([]any) {
			if m := m.(map[string]any); m["name"] == name {
				mid = m["id"].(string)
			}
		}
		env.Call(post, "/v1/measurements/"+mid+"/actions", inspector, map[string]any{"stepId": stepOf(t, env, mid, "Inspect"), "type": "WRITE_DATA",
			"parameters": map[string]any{"supplier": acme, "ok": false}}, 201)
		ines.open("/measurements")
		if row := ines.text("table.list tbody tr"); !strings.Contains(row, "Pump check") {
			t.Fatalf("the list does not name the process: %q", row)
		}
		if n := ines.eval(`String(document.querySelectorAll("table.list tbody tr svg.icon").length)`); n != "1" {
			t.Fatalf("%s process icons in the list", n)
		}

		abe := b.person(base)
		signIn(abe, "abe@example.com")
		abe.sees(name)
		if row := abe.text("table.list tbody tr"); !strings.Contains(row, "Pump check") {
			t.Fatalf("the Inbox does not name the process: %q", row)
		}
		abe.press("link", name)
		if n := abe.eval(`String(document.querySelectorAll("button[value=WRITE_DATA]").length)`); n != "0" {
			t.Fatalf("the approver is offered Save")
		}
		abe.sees("Approve")
		abe.sees("Pump runs\nNo")
		// Reprove is action:reprove's: the approver has none.
		if n := abe.eval(`String(document.querySelectorAll("form[action$=reprove]").length)`); n != "0" {
			t.Fatalf("the approver is offered Reprove")
		}

		// The linked record: its columns to whoever may read it, its id alone to the approver.
		root := b.person(base)
		signIn(root, "root@example.com")
		root.open("/measurements/" + mid)
		root.sees("S-001 · Acme Pumps")
		abe.sees("record " + acme)
		if strings.Contains(abe.text("main"), "Acme") {
			t.Fatalf("the approver sees a record it may not read")
		}
		abe.press("button", "Approve")
		abe.sees("Approved.")
	})
}

// stepOf is the id of the step labelled label of a measurement's process.
func stepOf(t *testing.T, env *tu.Env, measurement, label string) string {
	t.Helper()
	m := env.Call(get, "/v1/measurements/"+measurement, env.AdminKey, nil, 200).JSON()
	for _, st := range m["process"].(map[string]any)["steps"].([]any) {
		if st := st.(map[string]any); st["label"] == label {
			return st["id"].(string)
		}
	}
	t.Fatalf("no step %q", label)
	return ""
}
