package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wps/internal/apicall"
	"wps/internal/console"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Saving a process from the designer without changing anything keeps
// every setting the API gave it, those the form has no control for
// included: the page is posted back exactly as it was drawn (what a
// browser without script sends), and the steps read back through the API
// are the same but for the times of the change.
func TestDesignerSaveKeepsEverySetting(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true, APICalls: &apicall.Config{Hosts: []string{"fx.example.com"}, AllowPrivate: true}})
		env.Clock.Advance(time.Since(env.Clock.Now())) // the cookie jar drops sessions past their real end
		fns := []string{"measurement:create", "measurement:read", "process:read", "action:write", "action:approve", "entity:read"}
		for _, p := range []struct{ name, role string }{{"Inspector", "INSPECTOR"}, {"Approver", "APPROVER"}} {
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p.name, "roles": []string{p.role}, "functions": fns}, 201)
		}
		person(t, env, "root@example.com", "ADMIN", "INSPECTOR", "APPROVER")
		supplier := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "supplier", "label": "Suppliers", "parameters": []map[string]any{
			{"name": "code", "label": "Code", "type": "TEXT"}, {"name": "city", "label": "City", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		sheet := uploadSheet(t, env, "rates.xlsx")
		source := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Source", "steps": []map[string]any{
			{"label": "Record", "parameters": []map[string]any{{"name": "ref", "type": "TEXT"}, {"name": "grade", "type": "TEXT"}}}}}, 201).JSON()
		srcParams := source["steps"].([]any)[0].(map[string]any)["parameters"].([]any)
		srcRef, srcGrade := srcParams[0].(map[string]any)["id"].(string), srcParams[1].(map[string]any)["id"].(string)

		id := env.Call(post, "/v1/process", env.AdminKey, map[string]any{
			"name": "Everything", "label": "Every setting", "code": "EVR", "iconName": "wrench",
			"steps": []map[string]any{
				{"label": "Inspect", "description": "The first look", "prompt": "Look at it closely.", "policyNames": []string{"Inspector"},
					"viewPolicyNames": []string{"Approver"}, "webhookUrls": "https://fx.example.com/hook", "deadline": "2", "deadlineType": "BUSINESS_DAYS",
					"frequency": "WEEKLY", "frequencyDate": "2026-12-01T08:00:00Z", "signatureMeaning": "Performed by",
					"escalations": []map[string]any{{"after": "PT4H", "policyName": "Approver"}},
					"routing":     map[string]any{"entityParamName": "state", "rules": []map[string]any{{"value": "bad", "stepId": "Approve"}}},
					"parameters": []map[string]any{
						{"name": "ref", "label": "Reference", "type": "TEXT", "description": "Their reference", "isRequired": true, "isUnique": true, "isPermanent": true,
							"advancedOptions": map[string]any{"tooltip": "As printed", "placeholder": "REF-1", "minLength": 2, "maxLength": 20, "hiddenFrom": []string{"Approver"},
								"leftFreeze": true, "description": "More words", "sort": 3},
							"readFromOtherMeasurementData": map[string]any{"processId": source["id"], "searchFieldId": srcRef, "readParameterId": srcGrade,
								"selectedFields": []map[string]any{{"readParameterId": srcGrade, "writeParameterId": "grade"}}}},
						{"name": "grade", "label": "Grade", "type": "TEXT"},
						{"name": "temp", "label": "Temperature", "type": "NUMBER", "decimals": 1,
							"advancedOptions": map[string]any{"min": -20, "max": 120.5, "currency": "EUR", "locale": "pt-PT", "isHidden": true},
							"sheetData":       map[string]any{"sheetApiId": sheet, "page": "Sheet1", "cell": "B2", "inputType": "INPUT"},
							"apiCalls": []map[string]any{{"apiCall": map[string]any{"url": "https://fx.example.com/rate", "type": "GET", "resultPath": "rates.EUR",
								"description": "The rate", "parameters": []string{"ref"}}}}},
						{"name": "state", "label": "State", "type": "SELECT", "advancedOptions": map[string]any{"hasCustomColor": true},
							"optionItems": []map[string]any{{"value": "ok", "label": "Fine", "color": "#067647", "meta": map[string]any{"code": "A1"}}, {"value": "bad"}}},
						{"name": "checks", "label": "Checks", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "seal"}, {"value": "bearing"}}},
						{"name": "when", "label": "When", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}},
						{"name": "at", "label": "At", "type": "DATETIME"},
						{"name": "count", "label": "Count", "type": "INT", "advancedOptions": map[string]any{"min": 0}},
						{"name": "mail", "label": "Mail", "type": "EMAIL", "advancedOptions": map[string]any{"isMultiple": true}},
						{"name": "site", "label": "Site", "type": "URL"},
						{"name": "notes", "label": "Notes", "type": "LONG_TEXT"},
						{"name": "ok", "label": "OK", "type": "BOOLEAN"},
						{"name": "photos", "label": "Photos", "type": "ATTACHMENT", "advancedOptions": map[string]any{"isMultiple": true}},
						{"name": "supplier", "label": "Supplier", "type": "ENTITY", "entityId": supplier, "showColumns": []string{"code"}, "viewColumns": []string{"code", "city"},
							"entityOperation": []string{"WRITE"}},
						{"name": "city", "label": "City", "type": "TEXT", "autoFillEntityRelation": "supplier", "advancedOptions": map[string]any{"entityParameterId": "city"}},
						{"name": "lines", "label": "Lines", "type": "TABLE", "parameters": []map[string]any{
							{"name": "qty", "label": "Qty", "type": "NUMBER", "isRequired": true, "decimals": 2},
							{"name": "what", "label": "What", "type": "SELECT", "optionItems": []map[string]any{{"value": "a"}, {"value": "b"}}}}},
						{"name": "double", "label": "Double", "type": "FORMULA", "computedFormula": []string{"temp", "*", "2"}},
					}},
				{"label": "Approve", "policyNames": []string{"Approver", "Inspector"}, "orderedPolicies": []string{"Approver", "Inspector"},
					"roles":               []map[string]any{{"p": "Approver", "r": []string{"APPROVER"}}},
					"stepIdsDependencies": []string{"Inspect"}, "stepIdsReprovalDependencies": []string{"Inspect"}, "deadline": "4", "deadlineType": "HOURS"},
			},
		}, 201).JSON()["id"].(string)
		before := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()

		c := newClient(t, env.Server.URL)
		c.signIn("root@example.com")
		saveAsDrawn(t, c, "/processes/"+id+"/edit", "/processes/design", url.Values{"op": {"save"}})
		after := env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200).JSON()
		for _, k := range []string{"name", "label", "code", "iconName"} {
			if before[k] != after[k] {
				t.Errorf("%s: %v, then %v", k, before[k], after[k])
			}
		}
		a, b := settings(before["steps"]), settings(after["steps"])
		if a != b {
			t.Fatalf("saved unchanged, the steps changed:\nbefore %s\n after %s", a, b)
		}
	})
}

// saveAsDrawn posts a designer's form (page) back as drawn, with set's
// values over it (a button pressed), and expects it saved.
func saveAsDrawn(t *testing.T, c *client, page, action string, set url.Values) {
	t.Helper()
	res, body := c.do(get, page, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("designer: %d %s", res.StatusCode, body)
	}
	form := console.DrawnForm([]byte(body), "designer")
	for k, v := range set {
		form[k] = v
	}
	res, body = c.do(post, action, form)
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "saved") {
		t.Fatalf("save: %d %s %s", res.StatusCode, res.Header.Get("Location"), body)
	}
}

// settings is steps as JSON without the times of their last change.
func settings(steps any) string {
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k != "createdAt" && k != "updatedAt" {
					out[k] = strip(e)
				}
			}
			return out
		case []any:
			for i := range x {
				x[i] = strip(x[i])
			}
		}
		return v
	}
	b, _ := json.MarshalIndent(strip(steps), "", " ")
	return string(b)
}

// The same for data: an entity saved unchanged from its designer keeps
// every setting of its fields.
func TestEntityDesignerSaveKeepsEverySetting(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now()))
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Buyer", "roles": []string{"BUYER"}, "functions": []string{"entity:read"}}, 201)
		person(t, env, "root@example.com", "ADMIN")
		sheet := uploadSheet(t, env, "prices.xlsx")
		id := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "supplier", "label": "Suppliers",
			"viewPolicyNames": []string{"Buyer"},
			"parameters": []map[string]any{
				{"name": "code", "label": "Code", "type": "TEXT", "isRequired": true, "isUnique": true, "description": "Their code",
					"advancedOptions": map[string]any{"leftFreeze": true, "tooltip": "As invoiced", "placeholder": "S-001", "maxLength": 10, "sort": 1}},
				{"name": "rating", "label": "Rating", "type": "SELECT", "advancedOptions": map[string]any{"rightFreeze": true, "hasCustomColor": true},
					"optionItems": []map[string]any{{"value": "A", "label": "Preferred", "color": "#067647", "meta": map[string]any{"rank": 1.0}}, {"value": "C"}}},
				{"name": "price", "label": "Price", "type": "NUMBER", "decimals": 2, "advancedOptions": map[string]any{"min": 0, "currency": "EUR", "hiddenFrom": []string{"Buyer"}},
					"sheetData": map[string]any{"sheetApiId": sheet, "page": "Sheet1", "cell": "C3", "inputType": "OUTPUT"}},
				{"name": "since", "label": "Since", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}},
				{"name": "tags", "label": "Tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "x"}, {"value": "y"}}},
				{"name": "rows", "label": "Rows", "type": "TABLE", "parameters": []map[string]any{{"name": "n", "label": "N", "type": "INT", "isRequired": true}}},
			}}, 201).JSON()["id"].(string)
		before := env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 200).JSON()

		c := newClient(t, env.Server.URL)
		c.signIn("root@example.com")
		saveAsDrawn(t, c, "/entities/"+id+"/design", "/entities/"+id+"/design", nil)
		after := env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 200).JSON()
		for _, k := range []string{"name", "label", "viewPolicyNames"} {
			if settings(before[k]) != settings(after[k]) {
				t.Errorf("%s: %v, then %v", k, before[k], after[k])
			}
		}
		if a, b := settings(before["parameters"]), settings(after["parameters"]); a != b {
			t.Fatalf("saved unchanged, the fields changed:\nbefore %s\n after %s", a, b)
		}

		// The first field linked to a cell through its controls: a cell that
		// is none is refused at its control, with nothing stored.
		_, page := c.do(get, "/entities/"+id+"/design", nil)
		form := console.DrawnForm([]byte(page), "designer")
		form.Set("p0.sheetId", sheet)
		form.Set("p0.sheetCell", "not a cell")
		form.Set("p0.sheetIO", "INPUT")
		res, page := c.do(post, "/entities/"+id+"/design", form)
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `id="p0-sheetCell-err" class="error">`) ||
			strings.Contains(page, `id="p0-sheetCell-err" class="error"></p>`) {
			t.Fatalf("a bad cell: %d, not refused at its control", res.StatusCode)
		}
		if got := env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 200).JSON()["parameters"].([]any)[0].(map[string]any)["sheetData"]; got != nil {
			t.Fatalf("a refused cell was stored: %v", got)
		}
		form.Set("p0.sheetCell", "A1")
		if res, page = c.do(post, "/entities/"+id+"/design", form); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("link a cell: %d %s", res.StatusCode, page)
		}
		sd := env.Call(get, "/v1/entities/"+id, env.AdminKey, nil, 200).JSON()["parameters"].([]any)[0].(map[string]any)["sheetData"].(map[string]any)
		if sd["sheetApiId"] != sheet || sd["cell"] != "A1" || sd["inputType"] != "INPUT" {
			t.Fatalf("the linked cell: %v", sd)
		}
	})
}

// A process shown at an older version offers its latest, where starting
// and editing act, rather than buttons that would act on another version.
func TestOlderVersionOffersTheLatest(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now()))
		person(t, env, "root@example.com", "ADMIN")
		id := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit", "steps": []map[string]any{{"label": "Check"}}}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": id}, 201) // version 1 is in use: a change makes version 2
		env.Call(http.MethodPatch, "/v1/process/"+id, env.AdminKey, map[string]any{"steps": []map[string]any{{"label": "Check"}, {"label": "Sign"}}}, 200)
		c := newClient(t, env.Server.URL)
		c.signIn("root@example.com")
		if _, page := c.do(get, "/processes/"+id+"?version=1", nil); strings.Contains(page, `action="/measurements"`) ||
			strings.Contains(page, "/edit\"") || !strings.Contains(page, "Go to the latest version (2)") {
			t.Fatalf("version 1's page:\n%s", page)
		}
		if _, page := c.do(get, "/processes/"+id, nil); !strings.Contains(page, `action="/measurements"`) || strings.Contains(page, "Go to the latest version") {
			t.Fatalf("the latest version's page:\n%s", page)
		}
	})
}
