package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// designEntityInConsole builds, on a signed-in chromedp context, an entity
// named "Supplier" with a unique text parameter "name" and one record
// "Acme", through the designer and the records grid only; it returns the
// entity's id.
func designEntityInConsole(t *testing.T, ctx context.Context, base string) (entityID string) {
	t.Helper()
	tb := &tab{t: t, ctx: ctx, base: base}
	tb.open("/entities/new")
	tb.fill("Entity name", "Supplier")
	tb.fill("Field 1 Name", "name")
	tb.fill("Field 1 Label", "Name")
	tb.check("Field 1 Unique")
	tb.press("button", "Save entity")
	entityID = entityOf(tb)
	tb.press("link", "Add a record")
	tb.fill("Name", "Acme")
	tb.press("button", "Save record")
	tb.sees("Acme")
	return entityID
}

// entityOf is the entity of the records grid the tab shows.
func entityOf(tb *tab) string {
	tb.t.Helper()
	u, err := url.Parse(tb.location())
	id, ok := strings.CutPrefix(u.Path, "/entities/")
	if err != nil || !ok || strings.Contains(id, "/") || u.Query().Get("done") != "saved" {
		tb.t.Fatalf("not on a saved entity's records: %s\n%s", tb.location(), tb.eval(`[...document.querySelectorAll(".error, [aria-invalid=true]")].map((e) => e.id + " " + (e.title || e.textContent)).join("\n") + [...document.querySelectorAll("span.error")].map((e) => e.previousElementSibling?.name + ": " + e.textContent).join(" ")`))
	}
	return id
}

// An admin designs an entity in the console (an option, a number with a
// maximum, a unique text), adds, edits and deletes its records in place,
// is shown the server's messages at the fields with nothing stored, and
// the API then holds exactly what was designed.
func TestConsoleEntityDesigner(t *testing.T) {
	b := newBrowser(t)
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the browser checks
		person(t, env, "root@example.com", "ADMIN")
		tb := b.person(env.Server.URL)
		tb.t = t
		signIn(tb, "root@example.com")

		supplier := designEntityInConsole(t, tb.ctx, env.Server.URL)
		recs := env.Call(get, "/v1/entities/"+supplier+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(recs) != 1 || recs[0].(map[string]any)["values"].(map[string]any)["name"] != "Acme" {
			t.Fatalf("Supplier's records: %v", recs)
		}

		// The designer: a unique code, an option with colours, a number with a maximum.
		tb.open("/entities")
		tb.press("link", "New entity")
		tb.fill("Entity name", "part")
		tb.fill("Label shown to people", "Parts")
		tb.fill("Field 1 Name", "code")
		tb.fill("Field 1 Label", "Code")
		tb.check("Field 1 Unique")
		tb.waitsToSee("Unsaved changes")
		tb.call("button", "Add a field", click)
		tb.fill("Field 2 Name", "grade")
		tb.fill("Field 2 Label", "Grade")
		tb.fill("Field 2 Type", "SELECT")
		for i, o := range [][3]string{{"A", "Good", "#067647"}, {"A", "Poor", "#b42318"}} {
			tb.fill(fmt.Sprintf("Field 2 option %d value", i+1), o[0])
			tb.fill(fmt.Sprintf("Field 2 option %d label", i+1), o[1])
			tb.fill(fmt.Sprintf("Field 2 option %d colour", i+1), o[2])
		}
		tb.check("Field 2 Use these colours")
		tb.call("button", "Add a field", click)
		tb.fill("Field 3 Name", "weight")
		tb.fill("Field 3 Label", "Weight")
		tb.fill("Field 3 Type", "NUMBER")
		tb.call("", "Field 3 Advanced options", click)
		tb.fill("Field 3 Maximum", "100")
		tb.press("button", "Save entity") // option A twice: refused at the option, nothing stored
		if got := tb.eval(`document.querySelector("[name='p1.opt.value'][aria-invalid=true]")?.title || ""`); !strings.Contains(got, `"A" is listed twice`) {
			t.Fatalf("no message at the option's value (%q):\n%s", got, tb.text("main"))
		}
		tb.sees("Unsaved changes")
		tb.screenshot("entity-designer")
		if n := env.Call(get, "/v1/entities", env.AdminKey, nil, 200).JSON()["data"].([]any); len(n) != 1 {
			t.Fatalf("a refused entity was stored: %v", n)
		}
		tb.fill("Field 2 option 2 value", "B")
		tb.press("button", "Save entity")
		part := entityOf(tb)

		// Records in place: add two, edit one with Enter, refuse a duplicate at its field, delete one.
		for _, r := range [][3]string{{"P-1", "Good", "12.5"}, {"P-2", "Poor", "50"}} {
			tb.press("link", "Add a record")
			tb.fill("Code", r[0])
			tb.fill("Grade", r[1])
			tb.fill("Weight", r[2])
			tb.press("button", "Save record")
			tb.sees(r[0])
		}
		tb.call("row", "P-1", `function(){ this.focus() }`)
		tb.key(kb.Enter)
		tu.Await(t, "the row to open for editing", func() error {
			if !strings.Contains(tb.location(), "edit=") {
				return fmt.Errorf("at %s", tb.location())
			}
			return nil
		})
		tb.fill("Weight", "20")
		tb.press("button", "Save record")
		tb.press("link", "Edit P-2")
		tb.fill("Code", "P-1")
		tb.press("button", "Save record")
		if got := tb.text("#f-code-err"); got != "must be unique" {
			t.Fatalf("the duplicate's message at its field: %q\n%s", got, tb.text("main"))
		}
		codes := ""
		for _, r := range env.Call(get, "/v1/entities/"+part+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any) {
			codes += r.(map[string]any)["values"].(map[string]any)["code"].(string) + " "
		}
		if codes != "P-1 P-2 " && codes != "P-2 P-1 " {
			t.Fatalf("the refused duplicate changed the records: %s", codes)
		}
		tb.screenshot("records-edit")
		tb.key(kb.Escape)
		tu.Await(t, "Escape to leave the row", func() error {
			if strings.Contains(tb.text("main"), "Save record") {
				return fmt.Errorf("still editing at %s", tb.location())
			}
			return nil
		})
		tb.press("link", "Delete P-2")
		tb.press("button", "Yes, delete the record")
		tb.sees("Deleted.")

		// The API holds exactly what was designed.
		e := env.Call(get, "/v1/entities/"+part, env.AdminKey, nil, 200).JSON()
		got := mustJSONString(map[string]any{"name": e["name"], "label": e["label"], "parameters": shape(e["parameters"])})
		want := `{"label":"Parts","name":"part","parameters":[` +
			`{"isUnique":true,"label":"Code","name":"code","type":"TEXT"},` +
			`{"hasCustomColor":true,"label":"Grade","name":"grade","optionItems":[{"color":"#067647","label":"Good","value":"A"},{"color":"#b42318","label":"Poor","value":"B"}],"type":"SELECT"},` +
			`{"label":"Weight","max":100,"name":"weight","type":"NUMBER"}]}`
		if got != want {
			t.Fatalf("the entity designed:\n got %s\nwant %s", got, want)
		}
		items := env.Call(get, "/v1/entities/"+part+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(items) != 1 || mustJSONString(items[0].(map[string]any)["values"]) != `{"code":"P-1","grade":"A","weight":20}` {
			t.Fatalf("records: %v", items)
		}

		// Fields move up and down; only saving stores the order.
		tb.open("/entities/" + part + "/design")
		tb.press("button", "Move up field 3")
		tb.sees("Unsaved changes")
		if got := tb.eval(`document.getElementById("p1-name").value + " " + document.activeElement.id`); got != "weight p1-up" {
			t.Fatalf("after moving field 3 up: %q", got)
		}
		order := func() string {
			var names []string
			for _, p := range env.Call(get, "/v1/entities/"+part, env.AdminKey, nil, 200).JSON()["parameters"].([]any) {
				names = append(names, p.(map[string]any)["name"].(string))
			}
			return strings.Join(names, " ")
		}
		if got := order(); got != "code grade weight" {
			t.Fatalf("a move saved the order: %s", got)
		}
		tb.press("button", "Move down field 1")
		tb.press("button", "Save entity")
		entityOf(tb)
		if got := order(); got != "weight code grade" {
			t.Fatalf("the order saved: %s", got)
		}
	})
}

// click clicks an element that changes the page without loading another.
const click = `function(){ this.click() }`

// shape is what a test compares of parameters: what was designed, not ids
// or times.
func shape(v any) []map[string]any {
	var out []map[string]any
	for _, x := range v.([]any) {
		p := x.(map[string]any)
		s := map[string]any{"name": p["name"], "label": p["label"], "type": p["type"]}
		if p["isUnique"] == true {
			s["isUnique"] = true
		}
		if a, ok := p["advancedOptions"].(map[string]any); ok {
			if a["max"] != nil {
				s["max"] = a["max"]
			}
			if a["hasCustomColor"] == true {
				s["hasCustomColor"] = true
			}
		}
		if opts, ok := p["optionItems"].([]any); ok {
			var os []map[string]any
			for _, o := range opts {
				o := o.(map[string]any)
				os = append(os, map[string]any{"value": o["value"], "label": o["label"], "color": o["color"]})
			}
			s["optionItems"] = os
		}
		out = append(out, s)
	}
	return out
}

// The designer and the grid's changes are for holders of entity:write:
// a reader is refused by the service (403) and offered none of them; a
// value the form cannot read, or a formula the service refuses, comes
// back at its field with nothing stored.
func TestConsoleEntityDesignerRights(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Reader", "roles": []string{"READER"}, "functions": []string{"entity:read"}}, 201)
		person(t, env, "rita@example.com", "READER")
		person(t, env, "root@example.com", "ADMIN")
		id := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "part", "parameters": []map[string]any{{"name": "code", "type": "TEXT", "isUnique": true}}}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/entities/"+id+"/records", env.AdminKey, map[string]any{"values": map[string]any{"code": "A"}}, 201)
		count := func() int {
			return len(env.Call(get, "/v1/entities/"+id+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any))
		}

		rita := newClient(t, env.Server.URL)
		rita.signIn("rita@example.com")
		if res, _ := rita.do(get, "/entities/new", nil); res.StatusCode != 403 {
			t.Fatalf("a reader opens the designer: %d", res.StatusCode)
		}
		_, page := rita.do(get, "/entities/"+id+"?edit=new", nil)
		if strings.Contains(page, "Add a record") || strings.Contains(page, "Save record") || strings.Contains(page, "/design") {
			t.Fatalf("a reader is offered changes:\n%s", page)
		}
		token := csrf(page)
		for _, path := range []string{"/entities/" + id + "/records", "/entities/" + id + "/design", "/entities/" + id + "/delete"} {
			if res, _ := rita.do(post, path, url.Values{"csrf": {token}, "p.code": {"B"}, "name": {"renamed"}}); res.StatusCode != 403 {
				t.Fatalf("POST %s by a reader: %d", path, res.StatusCode)
			}
		}
		if res, _ := rita.do(post, "/entities/"+id+"/design", url.Values{"csrf": {token}, "param": {"0", "1"}, "move": {"down:0"}}); res.StatusCode != 403 {
			t.Fatalf("a reader moves a field in the designer: %d", res.StatusCode)
		}
		if count() != 1 || env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 200).JSON()["name"] != "part" {
			t.Fatal("a reader's change was stored")
		}

		root := newClient(t, env.Server.URL)
		root.signIn("root@example.com")
		_, page = root.do(get, "/entities/new", nil)
		form := url.Values{"csrf": {csrf(page)}, "name": {"gauge"}, "param": {"0", "1"},
			"p0.name": {"reading"}, "p0.type": {"NUMBER"}, "p0.max": {"ten"},
			"p1.name": {"doubled"}, "p1.type": {"FORMULA"}, "p1.computedFormula": {"reading * 2"}}
		res, page := root.do(post, "/entities/new", form)
		if res.StatusCode != 422 || !strings.Contains(page, `<p id="p0-max-err" class="error">must be a number</p>`) {
			t.Fatalf("a maximum that is not a number: %d\n%s", res.StatusCode, page)
		}
		form.Set("p0.max", "10")
		form.Set("p1.computedFormula", "nothing * 2")
		res, page = root.do(post, "/entities/new", form)
		if res.StatusCode != 422 || !strings.Contains(page, `<p id="p1-computedFormula-err" class="error">`) || strings.Contains(page, `<p id="p1-computedFormula-err" class="error"></p>`) {
			t.Fatalf("a formula over an unknown name: %d\n%s", res.StatusCode, page)
		}
		if n := env.Call(get, "/v1/entities", env.AdminKey, nil, 200).JSON()["data"].([]any); len(n) != 1 {
			t.Fatalf("a refused entity was stored: %d", len(n))
		}

		// An entity a live process links to is not deleted: the page says why
		// and offers no deletion.
		linker := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Uses part", "steps": []map[string]any{{"label": "Pick",
			"parameters": []map[string]any{{"name": "p", "type": "ENTITY", "entityId": id}}}}}, 201).JSON()["id"].(string)
		_, page = root.do(get, "/entities/"+id+"/delete", nil)
		if res, page := root.do(post, "/entities/"+id+"/delete", url.Values{"csrf": {csrf(page)}}); res.StatusCode != 409 || strings.Contains(page, "Yes, delete part") {
			t.Fatalf("delete an entity a process links to: %d, still offered: %v", res.StatusCode, strings.Contains(page, "Yes, delete part"))
		}
		env.Call(http.MethodDelete, "/v1/process/"+linker, env.AdminKey, nil, 204)

		// Deleting asks first; the entity then waits on the entities page to be restored.
		_, page = root.do(get, "/entities/"+id+"/delete", nil)
		if !strings.Contains(page, "Yes, delete part") {
			t.Fatalf("no confirmation:\n%s", page)
		}
		if res, _ := root.do(post, "/entities/"+id+"/delete", url.Values{"csrf": {csrf(page)}}); res.StatusCode != 303 {
			t.Fatalf("delete: %d", res.StatusCode)
		}
		env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 404)
		_, page = root.do(get, "/entities", nil)
		if !strings.Contains(page, "Restore part") {
			t.Fatalf("the deleted entity is not offered to restore:\n%s", page)
		}
		root.do(post, "/entities/"+id+"/restore", url.Values{"csrf": {csrf(page)}})
		if count() != 1 {
			t.Fatal("the restored entity lost its record")
		}
	})
}
