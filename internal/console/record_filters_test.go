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

// TestRecordFiltersTakeWhatTheGridShows: the records grid's filters take a
// value as the grid shows it: an option (SELECT, MULTI_SELECT) picked by its label, a boolean as
// Yes or No (in the page's language), a date in the parameter's dateFormat
// (or yyyy-mm-dd); a date that does not parse is refused at its filter.
func TestRecordFiltersTakeWhatTheGridShows(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Console: true})
		env.Clock.Advance(time.Since(env.Clock.Now())) // sessions end at real dates, which the cookie jar checks
		key := person(t, env, "root@example.com", "ADMIN")
		id := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "asset", "label": "Assets", "parameters": []map[string]any{
			{"name": "code", "label": "Code", "type": "TEXT"},
			{"name": "grade", "label": "Grade", "type": "SELECT", "optionItems": []map[string]any{
				{"value": "A", "label": "Preferred"}, {"value": "B", "label": "Standard"}, {"value": "C", "label": "On watch"}}},
			{"name": "tags", "label": "Tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "p", "label": "Pump"}, {"value": "v", "label": "Valve"}}},
			{"name": "active", "label": "Active", "type": "BOOLEAN"},
			{"name": "checked", "label": "Checked", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}},
		}}, 201).JSON()["id"].(string)
		for _, r := range []map[string]any{
			{"code": "unit-one", "grade": "A", "active": true, "checked": "2026-01-05", "tags": []string{"p", "v"}},
			{"code": "unit-two", "grade": "B", "active": false, "checked": "2026-05-01"}, // 05/01 read month first
			{"code": "unit-three", "grade": "C", "active": false, "checked": "2026-02-03"},
		} {
			env.Call(post, "/v1/entities/"+id+"/records", env.AdminKey, map[string]any{"values": r}, 201)
		}
		c := newClient(t, env.Server.URL)
		c.signIn("root@example.com")

		_, page := c.do(get, "/entities/"+id, nil)
		for _, want := range []string{`<option value="A">Preferred</option>`, `<option value="">Any</option>`, `<option value="true">Yes</option>`, `placeholder="dd/MM/yyyy"`} {
			if !strings.Contains(page, want) {
				t.Fatalf("the filters lack %s", want)
			}
		}
		for _, tc := range []struct{ name, value, kept string }{
			{"grade", "A", `<option value="A" selected>Preferred</option>`},
			{"tags", "p", `<option value="p" selected>Pump</option>`},
			{"active", "true", `<option value="true" selected>Yes</option>`},
			{"checked", "05/01/2026", `value="05/01/2026"`},
			{"checked", "2026-01-05", `value="2026-01-05"`},
		} {
			res, page := c.do(get, "/entities/"+id+"?filter."+tc.name+"="+url.QueryEscape(tc.value), nil)
			if res.StatusCode != http.StatusOK || strings.Contains(page, `role="alert"`) {
				t.Fatalf("filter %s=%s: %d %s", tc.name, tc.value, res.StatusCode, page)
			}
			if !strings.Contains(page, "unit-one") || strings.Contains(page, "unit-two") || strings.Contains(page, "unit-three") {
				t.Fatalf("filter %s=%s: not the one record", tc.name, tc.value)
			}
			if !strings.Contains(page, tc.kept) {
				t.Fatalf("filter %s=%s: the filter does not keep its value", tc.name, tc.value)
			}
		}

		res, page := c.do(get, "/entities/"+id+"?filter.checked=31%2F02%2F2026&filter.grade=A", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(page, `<p id="filter-checked-err" class="error" role="alert">Not a date: write it as dd/MM/yyyy.</p>`) ||
			!strings.Contains(page, `value="31/02/2026"`) || !strings.Contains(page, `<option value="A" selected>`) || strings.Contains(page, "unit-one") {
			t.Fatalf("a bad date: %d %s", res.StatusCode, page)
		}

		// In Portuguese, Yes and No are Sim and Não.
		env.Call(http.MethodPatch, "/v1/users/me", key, map[string]any{"locale": "pt-BR"}, 200)
		_, page = c.do(get, "/entities/"+id+"?filter.active=false", nil)
		if !strings.Contains(page, `<option value="true">Sim</option><option value="false" selected>Não</option>`) || !strings.Contains(page, "unit-two") || strings.Contains(page, "unit-one") {
			t.Fatalf("pt-BR boolean filter: %s", page)
		}
	})
}
