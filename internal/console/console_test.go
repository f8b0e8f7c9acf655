package console_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wps/internal/imports"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

const (
	get, post = http.MethodGet, http.MethodPost
	password  = "correct horse battery"
)

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func mustJSONString(v any) string { return string(mustJSON(v)) }

// org is an org set up through the API for the console's tests: policies,
// people with passwords, an inspection process and a supplier entity.
type org struct {
	env       *tu.Env
	process   string
	supplier  string
	measure   string
	name      string
	inspector string // API key
}

// person invites email with roles and accepts with the test password.
func person(t testing.TB, env *tu.Env, email string, roles ...string) string {
	t.Helper()
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "name": strings.Split(email, "@")[0], "roles": roles}, 201).JSON()
	acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "password": password}, 201).JSON()
	return acc["apiKey"].(map[string]any)["key"].(string)
}

func newOrg(t *testing.T, engine sqlstore.Engine) *org {
	env := tu.NewEnv(t, engine, tu.Options{Console: true, Imports: wps.ImportConfig{SyncMaxRows: 2}}) // 3 rows: a job
	env.Clock.Advance(time.Since(env.Clock.Now()))                                                    // sessions end at real dates, which the browser checks
	importer := imports.New(env.Service, env.Blobs(), imports.Config{Poll: 50 * time.Millisecond})
	importer.Start(t.Context())
	t.Cleanup(importer.Stop)
	fns := []string{"measurement:create", "measurement:read", "process:read", "action:write", "action:approve", "action:reprove", "entity:read", "ledger:read"}
	for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Supervisor", "SUPERVISOR"}, {"Manager", "MANAGER"}} {
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
	}
	o := &org{env: env}
	o.inspector = person(t, env, "ines@example.com", "INSPECTOR")
	person(t, env, "sam@example.com", "SUPERVISOR")
	person(t, env, "mia@example.com", "MANAGER")
	person(t, env, "root@example.com", "ADMIN")

	o.supplier = env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "supplier", "label": "Suppliers", "parameters": []map[string]any{
		{"name": "code", "label": "Code", "type": "TEXT", "advancedOptions": map[string]any{"leftFreeze": true}},
		{"name": "name", "label": "Name", "type": "TEXT"},
		{"name": "city", "label": "City", "type": "TEXT"},
		{"name": "country", "label": "Country", "type": "TEXT"},
		{"name": "contact", "label": "Contact", "type": "EMAIL"},
		{"name": "notes", "label": "Notes", "type": "LONG_TEXT"},
		{"name": "since", "label": "Since", "type": "DATE"},
		{"name": "rating", "label": "Rating", "type": "SELECT", "advancedOptions": map[string]any{"rightFreeze": true, "hasCustomColor": true},
			"optionItems": []map[string]any{{"value": "A", "label": "Preferred", "color": "#067647"}, {"value": "C", "label": "On watch", "color": "#b42318"}}},
	}}, 201).JSON()["id"].(string)
	for i, s := range []map[string]any{
		{"code": "S-001", "name": "Acme Pumps", "city": "Porto", "country": "Portugal", "rating": "A", "since": "2019-04-01"},
		{"code": "S-002", "name": "Bolt & Nut Ltd", "city": "Leeds", "country": "United Kingdom", "rating": "C", "since": "2021-09-15"},
		{"code": "S-003", "name": "Técnica Hidráulica", "city": "São Paulo", "country": "Brasil", "rating": "A", "since": "2023-01-20"},
	} {
		s["contact"] = "sales" + string(rune('a'+i)) + "@example.com"
		env.Call(post, "/v1/entities/"+o.supplier+"/records", env.AdminKey, map[string]any{"values": s}, 201)
	}

	o.process = env.Call(post, "/v1/process", env.AdminKey, map[string]any{
		"name": "Pump inspection", "label": "Pump inspection", "code": "PUMP",
		"steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector"}, "prompt": "Measure the pump at its outlet.", "deadline": "2", "deadlineType": "HOURS", "parameters": []map[string]any{
				{"name": "temperature", "label": "Outlet temperature (°C)", "type": "NUMBER", "isRequired": true, "decimals": 1,
					"advancedOptions": map[string]any{"min": -20, "max": 120, "tooltip": "Read it after 5 minutes of running", "placeholder": "e.g. 64.5"}},
				{"name": "supplier", "label": "Supplier", "type": "ENTITY", "entityId": o.supplier, "showColumns": []string{"code", "name"}},
				{"name": "condition", "label": "Condition", "type": "SELECT", "isRequired": true, "advancedOptions": map[string]any{"hasCustomColor": true},
					"optionItems": []map[string]any{{"value": "good", "label": "Good", "color": "#067647"}, {"value": "worn", "label": "Worn", "color": "#b54708"}}},
				{"name": "checks", "label": "Checks done", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "seal"}, {"value": "bearing"}, {"value": "vibration"}}},
				{"name": "notes", "label": "<script>alert('x')</script> notes", "type": "LONG_TEXT", "description": "What you saw, in your words."},
				{"name": "readings", "label": "Readings", "type": "TABLE", "parameters": []map[string]any{
					{"name": "at", "label": "Minute", "type": "INT"}, {"name": "bar", "label": "Pressure (bar)", "type": "NUMBER"}}},
				{"name": "photos", "label": "Photos", "type": "ATTACHMENT", "advancedOptions": map[string]any{"isMultiple": true}},
				{"name": "sealed", "label": "Sealed", "type": "BOOLEAN"},
				{"name": "doubled", "label": "Twice the temperature", "type": "FORMULA", "computedFormula": []string{"temperature", "*", "2"}},
			}},
			{"label": "Approve", "policyNames": []string{"Supervisor", "Manager"}, "orderedPolicies": []string{"Supervisor", "Manager"}},
		},
	}, 201).JSON()["id"].(string)
	m := env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": o.process}, 201).JSON()
	o.measure, o.name = m["id"].(string), m["name"].(string)
	return o
}

// signIn signs a person in through the sign-in page.
func signIn(tb *tab, email string) {
	tb.t.Helper()
	tb.open("/inbox")
	if got := tb.location(); !strings.HasPrefix(got, "/signin") {
		tb.t.Fatalf("not sent to sign in: %s", got)
	}
	tb.fill("Email", email)
	tb.fill("Password", password)
	tb.press("button", "Sign in")
	if got := tb.location(); got != "/inbox" {
		tb.t.Fatalf("after sign-in at %s:\n%s", got, tb.text("main"))
	}
}

func TestConsoleInspection(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		base := o.env.Server.URL

		// Nothing waits on the supervisor before the inspection.
		sam := b.person(base)
		signIn(sam, "sam@example.com")
		sam.sees("Nothing is waiting on you.")

		// The inspector finds the task in the Inbox, overdue, and opens it.
		o.env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": o.process}, 201)
		o.env.Clock.Advance(3 * time.Hour)
		ines := b.person(base)
		signIn(ines, "ines@example.com")
		ines.sees(o.name)
		if got := ines.text("tr.overdue"); !strings.Contains(got, "Overdue") || !strings.Contains(got, "Inspect") {
			t.Fatalf("no overdue mark in the Inbox: %q", ines.text("main"))
		}
		ines.screenshot("inbox")
		ines.press("link", o.name)
		ines.sees("Measure the pump at its outlet.")
		// Times in the user's time zone, with its offset, once she sets one.
		o.env.Call(http.MethodPatch, "/v1/users/me", o.inspector, map[string]any{"timeZone": "America/Sao_Paulo"}, 200)
		ines.open("/inbox")
		if got := ines.text("tr.overdue"); !strings.Contains(got, "(UTC-03:00)") {
			t.Fatalf("the Inbox's due time is not in her zone: %q", got)
		}
		ines.press("link", o.name)
		// A label with markup is text, not markup: only the console's own script runs.
		if n := ines.eval(`String(document.scripts.length)`); n != "1" {
			t.Fatalf("%s scripts on the page", n)
		}
		ines.sees("<script>alert('x')</script> notes")

		// A value out of range: the service's 422 message is shown by the field.
		ines.fill("Outlet temperature (°C)", "180")
		ines.fill("Condition", "good")
		ines.press("button", "Save")
		if got := ines.text("#f-temperature-err"); !strings.Contains(got, "at most 120") {
			t.Fatalf("no error by the field: %q\n%s", got, ines.text("main"))
		}
		if v := ines.eval(`document.getElementById("f-condition").value`); v != "good" {
			t.Fatalf("the form lost the other values: condition %q", v)
		}
		// Corrected, with a linked supplier, a table row and checks.
		ines.fill("Outlet temperature (°C)", "64.5")
		ines.fill("Supplier", "S-003 · Técnica Hidráulica")
		ines.check("seal")
		ines.check("vibration")
		ines.fill("Minute (row 1)", "5")
		ines.fill("Pressure (bar) (row 1)", "2.5")
		ines.fill("Sealed", "true")
		photo := filepath.Join(t.TempDir(), "pump-outlet.jpg")
		if err := os.WriteFile(photo, append([]byte("\xff\xd8\xff\xe0"), make([]byte, 2044)...), 0o644); err != nil {
			t.Fatal(err)
		}
		ines.attach("Photos", photo)
		ines.screenshot("measurement")
		ines.press("button", "Save")
		ines.sees("Saved.")
		ines.sees("Twice the temperature")
		ines.sees("129")
		ines.sees("Técnica Hidráulica")
		// The read view speaks words: the option's label, Yes, the file's name and size.
		readView := func(tb *tab) string { return tb.text(".timeline") }
		for _, want := range []string{"Condition\nGood", "Sealed\nYes", "pump-outlet.jpg 2.0 KB", "S-003 · Técnica Hidráulica"} {
			if got := readView(ines); !strings.Contains(got, want) {
				t.Fatalf("the read view does not show %q:\n%s", want, got)
			}
		}

		// The supervisor's ordered seat comes first; the manager's after.
		sam.open("/inbox")
		sam.sees(o.name)
		sam.press("link", o.name)
		sam.press("button", "Approve")
		sam.sees("Approved.")

		mia := b.person(base)
		signIn(mia, "mia@example.com")
		mia.press("link", o.name)
		// A rejection states its reason: without one, the page says so by the field.
		mia.press("button", "Reject")
		if got := mia.text("#obs-" + stepID(t, o, "Approve") + "-err"); !strings.Contains(got, "reason") {
			t.Fatalf("no reason asked for by the observation: %q\n%s", got, mia.text("main"))
		}
		mia.fill("Observation", "Recheck the probe: it reads high.")
		mia.press("button", "Reject")
		mia.sees("Rejected")
		mia.sees("Recheck the probe: it reads high.")
		if !strings.Contains(mia.text(".history"), "Superseded") {
			t.Fatalf("the history does not mark superseded actions:\n%s", mia.text(".history"))
		}
		mia.press("link", "Check the ledger")
		mia.sees("The ledger is intact")

		// The step is the inspector's again, its form filled with what was sent back.
		ines.open("/inbox")
		ines.sees(o.name)
		ines.press("link", o.name)
		if v := ines.eval(`document.getElementById("f-temperature").value`); v != "64.5" {
			t.Fatalf("the rework form starts from %q, want the value sent back", v)
		}
		// The photo sent back is kept unless removed: saving changes only the temperature.
		if v := ines.call("checkbox", "Keep pump-outlet.jpg", `function(){ return String(this.checked) }`); v != "true" {
			t.Fatalf("the photo sent back is not kept: %q", v)
		}
		ines.fill("Outlet temperature (°C)", "61")
		ines.press("button", "Save")
		ines.sees("Saved.")
		for _, want := range []string{"pump-outlet.jpg", "Sealed\nYes", "Condition\nGood"} {
			if got := readView(ines); !strings.Contains(got, want) {
				t.Fatalf("the rework lost %q:\n%s", want, got)
			}
		}
		// Both ordered seats approve: the measurement is approved.
		sam.open("/inbox")
		sam.press("link", o.name)
		sam.press("button", "Approve")
		mia.open("/inbox")
		mia.press("link", o.name)
		mia.press("button", "Approve")
		mia.sees("Approved.")
		if got := mia.text(".head .badge"); got != "Approved" {
			t.Fatalf("status %q after both seats approved", got)
		}
		// The approved record holds the photo (the API's view of the actions that count).
		m := o.env.Call(get, "/v1/measurements/"+o.measure, o.env.AdminKey, nil, 200).JSON()
		photos := 0
		for _, a := range m["process"].(map[string]any)["actions"].([]any) {
			a := a.(map[string]any)
			if a["superseded"] == true || a["reproved"] == true {
				continue
			}
			for _, d := range a["data"].([]any) {
				for _, it := range d.(map[string]any)["dataItems"].([]any) {
					if it.(map[string]any)["type"] == "ATTACHMENT" {
						photos++
					}
				}
			}
		}
		if photos != 1 {
			t.Fatalf("the approved data holds %d photos, want 1: %v", photos, m["process"])
		}
	})
}

// stepID is the id of the org's inspection step labelled label.
func stepID(t *testing.T, o *org, label string) string {
	t.Helper()
	for _, st := range o.env.Call(get, "/v1/process/"+o.process, o.env.AdminKey, nil, 200).JSON()["steps"].([]any) {
		if st := st.(map[string]any); st["label"] == label {
			return st["id"].(string)
		}
	}
	t.Fatalf("no step %q", label)
	return ""
}

func TestConsoleAdmin(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		base := o.env.Server.URL

		root := b.person(base)
		signIn(root, "root@example.com")

		// An admin invites someone, who accepts in the browser and signs in.
		root.open("/admin/users")
		root.fill("Email", "nina@example.com")
		root.fill("Name", "Nina")
		root.check("INSPECTOR")
		root.press("button", "Invite")
		link := root.call("textbox", "Invitation link", `function(){ return this.value }`)
		if !strings.HasPrefix(link, base+"/invite/wpsinv_") {
			t.Fatalf("invitation link %q", link)
		}
		nina := b.person(base)
		nina.open(strings.TrimPrefix(link, base))
		nina.fill("Your name", "Nina Costa")
		nina.fill("Password", password)
		nina.fill("Repeat the password", password)
		nina.press("button", "Accept invitation")
		nina.sees("Your account is ready")
		nina.fill("Email", "nina@example.com")
		nina.fill("Password", password)
		nina.press("button", "Sign in")
		nina.sees("Inbox")
		if got := nina.text(".me"); !strings.Contains(got, "Nina Costa") {
			t.Fatalf("signed in as %q", got)
		}

		// The records grid: frozen columns stick to the edges.
		root.open("/entities/" + o.supplier)
		root.sees("Técnica Hidráulica")
		root.sees("Preferred")
		for _, c := range []struct{ sel, prop, want string }{
			{"th.freeze-l", "position", "sticky"}, {"th.freeze-l", "left", "0px"},
			{"th.freeze-r", "position", "sticky"}, {"th.freeze-r", "right", "0px"},
		} {
			if got := root.eval(`getComputedStyle(document.querySelector("` + c.sel + `")).` + c.prop); got != c.want {
				t.Fatalf("%s %s = %q, want %q", c.sel, c.prop, got, c.want)
			}
		}
		if got := root.eval(`document.querySelector("th.freeze-l").innerText`); got != "Code" {
			t.Fatalf("first frozen column %q", got)
		}
		root.screenshot("records")
		// Importing a CSV file: the page sends it to the API's import.
		csvPath := filepath.Join(t.TempDir(), "suppliers.csv")
		if err := os.WriteFile(csvPath, []byte("code,name,city,rating\nS-004,Delta Valves,Lyon,A\nS-005,Eco Seals,Gdańsk,C\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		root.attach("Import CSV or XLSX", csvPath)
		root.press("button", "Import")
		root.sees("Records imported.")
		root.sees("Gdańsk")
		root.sees("5 records")
		// A larger file is a job: the page follows it to its end.
		if err := os.WriteFile(csvPath, []byte("code,name,city,rating\nS-006,Fluid Co,Porto,C\nS-007,Gasket Ltd,Leeds,A\nS-008,Hydra,Turin,C\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		root.attach("Import CSV or XLSX", csvPath)
		root.press("button", "Import")
		root.sees("Records imported.")
		root.sees("Gasket Ltd")
		root.sees("8 records")
		// A job whose row is bad: the page shows why, and nothing is imported.
		if err := os.WriteFile(csvPath, []byte("code,name,city,rating\nS-009,Ion,Oslo,C\nS-010,Jet,Kyiv,Z\nS-011,Kiln,Bern,A\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		root.attach("Import CSV or XLSX", csvPath)
		root.call("button", "Import", `function(){ this.click() }`) // no page follows
		root.waitsToSee("Not imported:")
		root.sees("rows[1].rating")
		root.open("/entities/" + o.supplier)
		root.sees("8 records")
		root.open("/processes/" + o.process)
		root.screenshot("process")

		// Deleted is recoverable: a process and an entity deleted through the API come back from the console.
		gone := o.env.Call(post, "/v1/process", o.env.AdminKey, map[string]any{"name": "Old audit", "iconName": "clipboard",
			"steps": []map[string]any{{"label": "Look", "policyNames": []string{"Inspector"}}}}, 201).JSON()["id"].(string)
		o.env.Call(http.MethodDelete, "/v1/process/"+gone, o.env.AdminKey, nil, 204)
		tools := o.env.Call(post, "/v1/entities", o.env.AdminKey, map[string]any{"name": "tool", "label": "Tools", "parameters": []map[string]any{
			{"name": "code", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		o.env.Call(post, "/v1/entities/"+tools+"/records", o.env.AdminKey, map[string]any{"values": map[string]any{"code": "T-1"}}, 201)
		o.env.Call(http.MethodDelete, "/v1/entities/"+tools, o.env.AdminKey, nil, 204)
		root.open("/processes")
		root.press("button", "Restore Old audit")
		root.sees("Restored")
		root.open("/entities")
		root.press("button", "Restore Tools")
		root.sees("Restored")
		root.sees("T-1")
		// A colour that is not one: what was typed stays, the error is said once, by the field.
		root.open("/admin/org")
		root.fill("Theme colour", "#12345")
		root.press("button", "Save settings")
		if v := root.eval(`document.getElementById("org-color").value`); v != "#12345" {
			t.Fatalf("the form lost the colour typed: %q", v)
		}
		msg := root.text("#org-color-err")
		if msg == "" || strings.Count(root.text("main"), msg) != 1 {
			t.Fatalf("the colour's error %q is not said once:\n%s", msg, root.text("main"))
		}
		// The org's colour: a light yellow gets dark text (WCAG AA).
		root.open("/admin/org")
		root.fill("Theme colour", "#ffeb3b")
		root.press("button", "Save settings")
		root.sees("Changes saved.")
		if got := root.eval(`getComputedStyle(document.querySelector("header.top")).backgroundColor`); got != "rgb(255, 235, 59)" {
			t.Fatalf("header colour %q", got)
		}
		if got := root.eval(`getComputedStyle(document.querySelector("header.top a")).color`); got != "rgb(17, 24, 39)" {
			t.Fatalf("text on the theme colour %q, want the dark ink", got)
		}
	})
}
