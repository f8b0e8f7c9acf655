package console_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/xuri/excelize/v2"

	"wps/internal/apicall"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// confirmYes answers the page's next confirmation question yes, keeping
// the question (window.asked) for the test to read.
func (tb *tab) confirmYes() {
	tb.t.Helper()
	tb.eval(`window.confirm = (m) => { window.asked = m; return true }, ""`)
}

// clear empties a control (a text box, a select).
func (tb *tab) clear(name string) {
	tb.t.Helper()
	tb.call("", name, `function(){ this.value = ""; this.dispatchEvent(new Event("change", {bubbles: true})) }`)
}

// errorAt is the message shown at the designer's control of form name n.
func (tb *tab) errorAt(n string) string {
	tb.t.Helper()
	return tb.eval(`(document.getElementById(` + mustJSONString("d-"+n+"-err") + `) || {innerText: "(no such field)"}).innerText`)
}

// A process designed in the console, start to end: built with fields of
// several kinds and seats, published, measured; then changed while a
// measurement runs, the versions compared and the measurement moved; and
// bad input shown at its field with nothing stored.
func TestConsoleDesigner(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true, APICalls: &apicall.Config{Hosts: []string{"fx.example.com"}, AllowPrivate: true}})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the browser checks
		fns := []string{"measurement:create", "measurement:read", "process:read", "action:write", "action:approve", "entity:read"}
		for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Approver", "APPROVER"}} {
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
		}
		person(t, env, "root@example.com", "ADMIN", "INSPECTOR", "APPROVER")
		b := newBrowser(t)
		base := env.Server.URL
		root := b.person(base)
		signIn(root, "root@example.com")
		supplier := designEntityInConsole(t, root.ctx, base)

		var process, measurement string
		t.Run("build, publish and measure", func(t *testing.T) {
			root.t = t
			root.open("/processes")
			root.press("link", "New process")
			root.fill("Name", "Supplier audit")
			root.fill("Code", "AUD")
			root.fill("Step 1 Label", "Inspect")
			root.check("Step 1 seat Inspector")
			root.press("button", "Add a field to step 1")
			root.fill("Step 1 field 1 Name", "supplier")
			root.fill("Step 1 field 1 Label", "Supplier")
			root.fill("Step 1 field 1 Type", "Linked record")
			root.fill("Step 1 field 1 Linked data", "Supplier")
			root.fill("Step 1 field 1 Columns shown", "name")
			root.press("button", "Add a field to step 1")
			if got := root.eval(`document.getElementById("d-s0.p0.entityId").selectedOptions[0].text`); got != "Supplier" {
				t.Fatalf("the first field lost its entity on the round trip: %q", got)
			}
			root.fill("Step 1 field 2 Name", "score")
			root.fill("Step 1 field 2 Label", "Score")
			root.fill("Step 1 field 2 Type", "Number")
			root.check("Step 1 field 2 Required")
			root.fill("Step 1 field 2 Maximum", "10")
			root.press("button", "Add a step")
			root.sees("Unsaved changes")
			root.fill("Step 2 Label", "Sign off")
			root.check("Step 2 seat Approver")
			// The diagram follows the edit without a page load.
			tu.Await(t, "the diagram to show the new step", func() error {
				if got := root.eval(`document.querySelector("#d-diagram svg").textContent`); !strings.Contains(got, "Sign off") {
					return fmt.Errorf("diagram: %q", got)
				}
				return nil
			})
			root.screenshot("designer")
			root.press("button", "Publish")
			root.sees("Saved.")
			process = strings.TrimPrefix(root.location(), "/processes/")
			process = strings.Split(process, "?")[0]
			root.press("button", "Start measurement")
			root.fill("Supplier", "Acme")
			root.fill("Score", "7")
			root.press("button", "Save")
			measurement = strings.Split(strings.TrimPrefix(root.location(), "/measurements/"), "?")[0]

			// The API has exactly what was designed.
			p := env.Call(get, "/v1/process/"+process, env.AdminKey, nil, 200).JSON()
			steps := p["steps"].([]any)
			if p["name"] != "Supplier audit" || p["code"] != "AUD" || len(steps) != 2 {
				t.Fatalf("process: %v", p)
			}
			s1, s2 := steps[0].(map[string]any), steps[1].(map[string]any)
			if s1["label"] != "Inspect" || fmt.Sprint(s1["policyNames"]) != "[Inspector]" || s2["label"] != "Sign off" || fmt.Sprint(s2["policyNames"]) != "[Approver]" {
				t.Fatalf("steps: %v", steps)
			}
			params := s1["parameters"].([]any)
			if len(params) != 2 || s2["parameters"] != nil && len(s2["parameters"].([]any)) != 0 {
				t.Fatalf("parameters: %v / %v", params, s2["parameters"])
			}
			link, score := params[0].(map[string]any), params[1].(map[string]any)
			if link["name"] != "supplier" || link["type"] != "ENTITY" || link["entityId"] != supplier || fmt.Sprint(link["showColumns"]) != "[name]" || link["isRequired"] != false {
				t.Fatalf("linked field: %v", link)
			}
			if score["name"] != "score" || score["type"] != "NUMBER" || score["isRequired"] != true || score["advancedOptions"].(map[string]any)["max"] != 10.0 {
				t.Fatalf("number field: %v", score)
			}
			m := env.Call(get, "/v1/measurements/"+measurement, env.AdminKey, nil, 200).JSON()
			if m["processId"] != process || !strings.Contains(mustJSONString(m), `"7"`) {
				t.Fatalf("measurement: %v", m)
			}
		})

		t.Run("change, compare and move a running measurement", func(t *testing.T) {
			root.t = t
			root.open("/processes/" + process)
			root.press("link", "Edit")
			// Undo takes back an unsaved change.
			root.press("button", "Add a field to step 2")
			root.fill("Step 2 field 1 Name", "scratch")
			root.press("button", "Undo")
			root.press("button", "Undo")
			if got := root.eval(`String(!!document.getElementById("d-s1.p0.name"))`); got != "false" {
				t.Fatal("undo left the field added")
			}
			root.press("button", "Add a field to step 2")
			root.fill("Step 2 field 1 Name", "comment")
			root.fill("Step 2 field 1 Label", "Comment")
			root.press("button", "Save")
			root.sees("Saved.")
			root.press("link", "compare")
			root.sees("Field Comment (comment): added")
			root.screenshot("designer-compare")
			root.open("/processes/" + process)
			root.press("button", "Preview the move")
			root.sees("1 would move")
			root.press("button", "Move 1 to version 2")
			root.sees("1 moved")
			if v := env.Call(get, "/v1/measurements/"+measurement, env.AdminKey, nil, 200).JSON()["version"]; v != 2.0 {
				t.Fatalf("the measurement is at version %v", v)
			}

			// Removing the step the measurement is at: the designer says so before saving.
			root.open("/processes/" + process + "/edit")
			root.confirmYes()
			root.press("button", "Remove step 2")
			if asked := root.eval(`String(window.asked)`); asked != "undefined" {
				t.Logf("asked before the page went on: %s", asked)
			}
			root.press("button", "Save")
			root.sees("1 running measurement could not move to the new version")
			root.sees(strings.Split(env.Call(get, "/v1/measurements/"+measurement, env.AdminKey, nil, 200).JSON()["name"].(string), " ")[0])
			root.screenshot("designer-blocked")
			if v := env.Call(get, "/v1/process/"+process, env.AdminKey, nil, 200).JSON()["version"]; v != 2.0 {
				t.Fatalf("the warning saved version %v", v)
			}
		})

		t.Run("bad input is shown at its field and nothing is stored", func(t *testing.T) {
			root.t = t
			root.open("/processes/new")
			root.fill("Name", "Broken")
			root.fill("Code", "AUD")
			root.fill("Step 1 Label", "One")
			root.press("button", "Add a field to step 1")
			root.fill("Step 1 field 1 Name", "total")
			root.fill("Step 1 field 1 Type", "Formula")
			root.fill("Step 1 field 1 Formula", "nosuch * 2")
			root.press("button", "Add a step")
			root.fill("Step 2 Label", "Two")
			root.press("button", "Add a step")
			root.fill("Step 3 Label", "Three")
			root.fill("Step 1 rule 1 value", "*")
			root.fill("Step 1 rule 1 goes to", "#3") // a step's label shows once the page is drawn again
			root.fill("Step 1 Route on the field", "total")
			root.confirmYes()
			root.press("button", "Remove step 3")
			root.press("button", "Publish")
			if got := root.errorAt("s0.r0.step"); !strings.Contains(got, "no step with id or label") {
				t.Fatalf("routing to a removed step: %q\n%s", got, root.text("main"))
			}
			root.clear("Step 1 rule 1 value")
			root.clear("Step 1 rule 1 goes to")
			root.clear("Step 1 Route on the field")
			root.press("button", "Publish")
			if got := root.errorAt("s0.p0.formula"); !strings.Contains(got, "nosuch") {
				t.Fatalf("a formula naming an unknown field: %q\n%s", got, root.text("main"))
			}
			root.screenshot("designer-errors")
			root.fill("Step 1 field 1 Formula", "2 * 3")
			root.press("button", "Publish")
			if got := root.errorAt("code"); !strings.Contains(got, "AUD") {
				t.Fatalf("a code in use: %q\n%s", got, root.text("main"))
			}
			// "Other settings" that is not JSON is shown again as typed, and nothing is sent.
			c := newClient(t, base)
			c.signIn("root@example.com")
			_, page := c.do(get, "/processes/new", nil)
			form := url.Values{"csrf": {csrf(page)}, "name": {"Jumbled"}, "steps": {"1"}, "s0.label": {"Only"}, "s0.params": {"1"},
				"s0.p0.name": {"a"}, "s0.p0.type": {"TEXT"}, "s0.p0.extra": {`{"sheetData": `}, "op": {"save"}}
			res, page := c.do(post, "/processes/design", form)
			if res.StatusCode != 422 || !strings.Contains(page, "not valid JSON") || !strings.Contains(page, `{&#34;sheetData&#34;: </textarea>`) {
				t.Fatalf("bad JSON: %d\n%s", res.StatusCode, page)
			}
			// A spreadsheet cell of a workbook the org does not have: the message at the workbook's control.
			form.Del("s0.p0.extra")
			form.Set("s0.p0.sheetId", "nosuch")
			form.Set("s0.p0.sheetCell", "B2")
			form.Set("s0.p0.sheetIO", "INPUT")
			res, page = c.do(post, "/processes/design", form)
			if res.StatusCode != 422 || !strings.Contains(page, `<p id="d-s0.p0.sheetId-err" class="error" role="alert">no sheet &#34;nosuch&#34;`) {
				t.Fatalf("an unknown workbook: %d\n%s", res.StatusCode, page)
			}
			// The diagram is drawn from the form as it is.
			form.Set("s0.label", "Drawn <at once>")
			if res, svg := c.do(post, "/processes/design/diagram", form); res.StatusCode != 200 || !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "Drawn &lt;at once&gt;") {
				t.Fatalf("diagram: %d %s", res.StatusCode, svg)
			}
			list := env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if len(list) != 1 {
				t.Fatalf("%d processes stored", len(list))
			}
		})

		t.Run("escalations, sheet cells, API calls and reading other measurements", func(t *testing.T) {
			root.t = t
			sheet := uploadSheet(t, env, "rates.xlsx")
			root.open("/processes/new")
			root.fill("Name", "Rates")
			root.fill("Code", "RAT")
			root.fill("Step 1 Label", "Quote")
			root.check("Step 1 seat Inspector")
			root.fill("Step 1 Deadline", "4")
			root.fill("Step 1 Deadline unit", "HOURS")
			root.press("button", "Add an escalation to step 1")
			root.fill("Step 1 escalation 1 after", "soon")
			root.fill("Step 1 escalation 1 policy", "Approver")
			root.press("button", "Add a field to step 1")
			root.fill("Step 1 field 1 Name", "supplier")
			root.press("button", "Add a field to step 1")
			root.fill("Step 1 field 2 Name", "rate")
			root.fill("Step 1 field 2 Type", "NUMBER")
			root.check("Step 1 field 2 hidden from Approver")
			root.call("", "Step 1 field 1 Links: records, other measurements, spreadsheets, API calls, writing to data", click)
			root.fill("Step 1 field 1 Of the process", "Supplier audit")
			root.fill("Step 1 field 1 Its search field", "supplier")
			root.fill("Step 1 field 1 copy 1 from", "score")
			root.fill("Step 1 field 1 copy 1 into", "rate")
			root.fill("Step 1 field 1 Workbook", "rates.xlsx")
			root.fill("Step 1 field 1 Cell", "A1")
			root.fill("Step 1 field 1 Direction", "INPUT")
			root.call("", "Step 1 field 2 Links: records, other measurements, spreadsheets, API calls, writing to data", click)
			root.press("button", "Add an API call to step 1 field 2")
			root.fill("Step 1 field 2 API call 1 URL", "https://elsewhere.example.org/rate")
			root.fill("Step 1 field 2 API call 1 Method", "GET")
			root.fill("Step 1 field 2 API call 1 Sends the fields", "supplier")
			root.fill("Step 1 field 2 API call 1 Value at", "rates.EUR")
			root.press("button", "Publish")
			if got := root.errorAt("s0.e0.after"); !strings.Contains(got, "ISO 8601") {
				t.Fatalf("a bad duration: %q\n%s", got, root.text("main"))
			}
			if got := root.errorAt("s0.p1.c0.url"); !strings.Contains(got, "allow-list") {
				t.Fatalf("a host off the allow-list: %q\n%s", got, root.text("main"))
			}
			root.screenshot("designer-links")
			if n := len(env.Call(get, "/v1/process", env.AdminKey, nil, 200).JSON()["data"].([]any)); n != 1 {
				t.Fatalf("%d processes stored", n)
			}
			root.fill("Step 1 escalation 1 after", "PT2H")
			root.fill("Step 1 field 2 API call 1 URL", "https://fx.example.com/rate")
			root.press("button", "Publish")
			root.sees("Saved.")
			id := strings.Split(strings.TrimPrefix(root.location(), "/processes/"), "?")[0]

			// The API has exactly what was designed, names turned into ids.
			ids := map[string]string{}
			for _, st := range env.Call(get, "/v1/process/"+process, env.AdminKey, nil, 200).JSON()["steps"].([]any) {
				for _, p := range st.(map[string]any)["parameters"].([]any) {
					ids[p.(map[string]any)["name"].(string)] = p.(map[string]any)["id"].(string)
				}
			}
			st := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()["steps"].([]any)[0].(map[string]any)
			if st["deadline"] != "4" || st["deadlineType"] != "HOURS" || mustJSONString(st["escalations"]) != `[{"after":"PT2H","policyName":"Approver"}]` {
				t.Fatalf("step: %v", st)
			}
			params := st["parameters"].([]any)
			supplierP, rate := params[0].(map[string]any), params[1].(map[string]any)
			rom := supplierP["readFromOtherMeasurementData"].(map[string]any)
			want := fmt.Sprintf(`{"processId":%q,"searchFieldId":%q,"selectedFields":[{"readParameterId":%q,"writeParameterId":%q}]}`, process, ids["supplier"], ids["score"], rate["id"])
			if got := mustJSONString(map[string]any{"processId": rom["processId"], "searchFieldId": rom["searchFieldId"], "selectedFields": rom["selectedFields"]}); got != want {
				t.Fatalf("reading another measurement:\n got %s\nwant %s", got, want)
			}
			sd := supplierP["sheetData"].(map[string]any)
			if got := mustJSONString(map[string]any{"sheetApiId": sd["sheetApiId"], "page": sd["page"], "cell": sd["cell"], "inputType": sd["inputType"]}); got != `{"cell":"A1","inputType":"INPUT","page":"Sheet1","sheetApiId":"`+sheet+`"}` {
				t.Fatalf("the sheet cell: %s", got)
			}
			if got := mustJSONString(rate["advancedOptions"].(map[string]any)["hiddenFrom"]); got != `["Approver"]` {
				t.Fatalf("hidden from: %s", got)
			}
			calls := rate["apiCalls"].([]any)
			call := calls[0].(map[string]any)["apiCall"].(map[string]any)
			want = fmt.Sprintf(`{"parameters":[%q],"resultPath":"rates.EUR","type":"GET","url":"https://fx.example.com/rate"}`, supplierP["id"])
			if got := mustJSONString(map[string]any{"parameters": call["parameters"], "resultPath": call["resultPath"], "type": call["type"], "url": call["url"]}); len(calls) != 1 || got != want {
				t.Fatalf("API calls (%d):\n got %s\nwant %s", len(calls), got, want)
			}

			// Edited again, the controls show names, and saving unchanged keeps the same.
			root.open("/processes/" + id + "/edit")
			if got := root.eval(`[document.getElementById("d-s0.p1.c0.params").value, document.getElementById("d-s0.p0.m0.read").value, document.getElementById("d-s0.p0.romSearch").value].join(" ")`); got != "supplier score supplier" {
				t.Fatalf("the controls show %q", got)
			}
			root.press("button", "Save")
			root.sees("Saved.")
			again := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()["steps"].([]any)[0].(map[string]any)
			if a, b := mustJSONString(again["escalations"]), mustJSONString(st["escalations"]); a != b || len(again["parameters"].([]any)[1].(map[string]any)["apiCalls"].([]any)) != 1 ||
				len(again["parameters"].([]any)[0].(map[string]any)["readFromOtherMeasurementData"].(map[string]any)["selectedFields"].([]any)) != 1 {
				t.Fatalf("saved again: %v", again)
			}

			// Without script, a button that changes nothing leaves the
			// form saved: the names it shows are what the saved ids say.
			bare := b.person(base)
			bare.t = t
			if _, err := chromedp.Call(bare.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
				t.Fatal(err)
			}
			signIn(bare, "root@example.com")
			bare.open("/processes/" + id + "/edit")
			bare.press("button", "Update the diagram")
			if got := bare.eval(`[document.querySelector(".unsaved").hidden, document.querySelector("button.undo").disabled].join(" ")`); got != "true true" {
				t.Fatalf("without script, an unchanged form is marked unsaved (hidden, undo disabled): %s", got)
			}
		})
	})
}

// uploadSheet uploads a workbook of one page (Sheet1) through the API and
// returns its id.
func uploadSheet(t *testing.T, env *tu.Env, name string) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	var book, body bytes.Buffer
	if err := f.SetCellValue("Sheet1", "A1", "supplier"); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(&book); err != nil {
		t.Fatal(err)
	}
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", name)
	_, _ = part.Write(book.Bytes())
	_ = w.Close()
	r := env.Do(tu.Request{Method: post, Path: "/v1/sheets", Key: env.AdminKey, Body: body.Bytes(), Header: map[string]string{"Content-Type": w.FormDataContentType()}})
	if r.Status != 201 {
		t.Fatalf("upload %s: %d %s", name, r.Status, r.Body)
	}
	return r.JSON()["id"].(string)
}
