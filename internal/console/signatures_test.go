package console_test

import (
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestConsoleSignatures: at a step with a signatureMeaning the form asks
// for the password and says what it signs; a wrong or missing one is
// shown by the field; the signature is in the history. A step that holds
// values asks for the reason for a change (semantics section 19).
func TestConsoleSignatures(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the browser checks
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove"}
		for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Manager", "MANAGER"}} {
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
		}
		ines := person(t, env, "ines@example.com", "INSPECTOR")
		person(t, env, "mia@example.com", "MANAGER")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Batch release", "steps": []map[string]any{
			{"label": "Release", "policyNames": []string{"Inspector"}, "signatureMeaning": "Approved",
				"parameters": []map[string]any{{"name": "lot", "label": "Lot", "type": "TEXT"}}},
			{"label": "Record", "policyNames": []string{"Inspector", "Manager"}, "stepIdsDependencies": []string{"Release"},
				"parameters": []map[string]any{{"name": "temp", "label": "Temperature", "type": "NUMBER"}}},
			{"label": "Ship", "policyNames": []string{"Manager"}}, // keeps the measurement open: its actions can be reproved
		}}, 201).JSON()
		m := env.Call(post, "/v1/measurements", ines, map[string]any{"processId": proc["id"]}, 201).JSON()
		path := "/measurements/" + m["id"].(string)

		b := newBrowser(t)
		tab := b.person(env.Server.URL)
		signIn(tab, "ines@example.com")
		tab.open(path)
		tab.sees("Sign: Approved")
		tab.fill("Lot", "L-042")
		tab.press("button", "Save and sign: Approved")
		if got := tab.text("fieldset.signature .error"); !strings.Contains(got, "give your password") {
			t.Fatalf("a missing password, by the field: %q\n%s", got, tab.text("main"))
		}
		tab.fill("Lot", "L-042")
		tab.fill("Your password", "not my password")
		tab.press("button", "Save and sign: Approved")
		if got := tab.text("fieldset.signature .error"); got != "is not your password" {
			t.Fatalf("a wrong password, by the field: %q", got)
		}
		if v := tab.eval(`document.querySelector("input[name=signaturePassword]").value`); v != "" {
			t.Fatalf("the password was sent back to the page: %q", v)
		}
		if kept := tab.eval(`JSON.stringify(localStorage)`); strings.Contains(kept, "not my password") {
			t.Fatalf("the form's draft keeps the password: %s", kept)
		}
		tab.fill("Lot", "L-042")
		tab.fill("Your password", password)
		tab.press("button", "Save and sign: Approved")
		tab.sees("Saved.")
		if got := tab.text("table.history td.signature"); !strings.Contains(got, "Approved · ines <ines@example.com> ·") || !strings.Contains(got, "· password") {
			t.Fatalf("the history's signature: %q", got)
		}

		// Reason for change: once Ines saved the Record step's value, Mia's
		// form (the other seat) asks for the reason to change it.
		tab.fill("Temperature", "20")
		tab.press("button", "Save")
		tab.sees("Saved.")
		mia := b.person(env.Server.URL)
		signIn(mia, "mia@example.com")
		mia.open(path)
		mia.sees("Reason for change")
		setTemp := `(() => { const i = document.querySelector("input[name='p.temp']"); i.value = "21"; return i.value })()`
		mia.eval(setTemp) // by name: the read view shows a "Temperature" too
		mia.press("button", "Save")
		if got := mia.text(".form-step .has-error .error"); !strings.Contains(got, "needs a reason") {
			t.Fatalf("a change without a reason, by the field: %q\n%s", got, mia.text("main"))
		}
		mia.eval(setTemp)
		mia.fill("Reason for change (required to change a value)", "thermometer recalibrated")
		mia.press("button", "Save")
		mia.sees("Saved.")
		mia.sees("thermometer recalibrated")

		// Reproving the signed release is signed too: the reprove form asks
		// for the password, and a wrong one is shown by its field.
		openRelease := `(() => { const rows = [...document.querySelectorAll("table.history tbody tr")].filter(r => r.cells[1].innerText === "Release");
			const d = rows[0].querySelector("details"); d.open = true; d.querySelector("textarea").value = "wrong lot"; return String(rows.length) })()`
		if n := tab.eval(openRelease); n != "1" {
			t.Fatalf("release rows in the history: %s", n)
		}
		tab.fill("Your password", "not my password")
		tab.press("button", "Reprove and sign: Approved")
		if got := tab.text("table.history details[open] fieldset.signature .error"); got != "is not your password" {
			t.Fatalf("a wrong password on reprove, by the field: %q\n%s", got, tab.text("main"))
		}
		tab.fill("Your password", password)
		tab.press("button", "Reprove and sign: Approved")
		tab.sees("Reproved: the action's step is open again.")
		if got := tab.text("table.history tbody tr td.signature"); !strings.Contains(got, "Approved · ines <ines@example.com>") {
			t.Fatalf("the reproval's signature in the history: %q", got)
		}
	})
}
