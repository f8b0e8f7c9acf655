package httpapi_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// allTypes is an entity with one parameter of every type.
func allTypes(plantRef string) map[string]any {
	return map[string]any{
		"name": "Inspection", "label": "Inspections",
		"parameters": []map[string]any{
			{"name": "title", "type": "TEXT", "isRequired": true, "advancedOptions": map[string]any{"minLength": 2, "maxLength": 10, "tooltip": "short"}},
			{"name": "notes", "type": "LONG_TEXT"},
			{"name": "count", "type": "INT", "advancedOptions": map[string]any{"min": 0, "max": 100}},
			{"name": "weight", "type": "NUMBER", "decimals": 2},
			{"name": "ok", "type": "BOOLEAN"},
			{"name": "day", "type": "DATE"},
			{"name": "at", "type": "DATETIME"},
			{"name": "grade", "type": "SELECT", "optionItems": []map[string]any{{"value": "A", "color": "#00FF00"}, {"value": "B"}}},
			{"name": "tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "x"}, {"value": "y"}}},
			{"name": "email", "type": "EMAIL", "isUnique": true},
			{"name": "site", "type": "URL"},
			{"name": "photo", "type": "ATTACHMENT"},
			{"name": "plant", "type": "ENTITY", "entityId": plantRef},
			{"name": "lines", "type": "TABLE", "parameters": []map[string]any{
				{"name": "item", "type": "TEXT", "isRequired": true},
				{"name": "qty", "type": "INT"},
			}},
		},
	}
}

func createPlant(t *testing.T, env *tu.Env) (string, string) {
	t.Helper()
	plant := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{
		"n": "Plant", "p": []map[string]any{{"n": "code", "t": "TEXT", "isUnique": true}},
	}, 201).JSON()
	rec := env.Call(post, "/v1/entities/"+plant["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"code": "P1"}}, 201).JSON()
	return plant["id"].(string), rec["id"].(string)
}

func TestEntityDefinitions(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		plantID, _ := createPlant(t, env)

		t.Run("full form: every field stored and returned, ids assigned", func(t *testing.T) {
			res := env.Call(post, "/v1/entities", env.AdminKey, allTypes("Plant"), 201)
			e := res.JSON()
			if res.Header.Get("Location") != "/v1/entities/"+e["id"].(string) || e["orgId"] != env.OrgID || e["deletedAt"] != nil {
				t.Fatalf("entity: %s", res.Body)
			}
			params := e["parameters"].([]any)
			if len(params) != 14 {
				t.Fatalf("%d parameters", len(params))
			}
			for i, p := range params {
				pm := p.(map[string]any)
				if pm["id"] == "" || pm["index"] != float64(i) || pm["label"] != pm["name"] {
					t.Fatalf("parameter %d: %v", i, pm)
				}
			}
			title := params[0].(map[string]any)["advancedOptions"].(map[string]any)
			if title["tooltip"] != "short" || title["maxLength"] != 10.0 || title["id"] == "" {
				t.Fatalf("advancedOptions: %v", title)
			}
			grade := params[7].(map[string]any)["optionItems"].([]any)[0].(map[string]any)
			if grade["color"] != "#00FF00" || grade["label"] != "A" || grade["id"] == "" {
				t.Fatalf("option: %v", grade)
			}
			if params[12].(map[string]any)["entityId"] != plantID {
				t.Fatalf("ENTITY ref by name not resolved: %v", params[12])
			}
			if cols := params[13].(map[string]any)["parameters"].([]any); len(cols) != 2 || cols[0].(map[string]any)["id"] == "" {
				t.Fatalf("TABLE columns: %v", cols)
			}
			got := env.Call(get, "/v1/entities/"+e["id"].(string), env.AdminKey, nil, 200).Body
			if !jsonEqual(got, res.Body) {
				t.Fatalf("GET differs from create:\n%s\n%s", got, res.Body)
			}
		})

		t.Run("simplified and full forms give equal entities", func(t *testing.T) {
			simple := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{
				"n": "Supplier", "vp": []string{},
				"p": []map[string]any{{"n": "cnpj", "t": "TEXT", "isUnique": true}, {"n": "plant", "t": "ENTITY", "ref": plantID, "op": []string{"WRITE"}}},
			}, 201).JSON()
			full := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{
				"name":       "Supplier2",
				"parameters": []map[string]any{{"name": "cnpj", "type": "TEXT", "isUnique": true}, {"name": "plant", "type": "ENTITY", "entityId": "Plant", "entityOperation": []string{"WRITE"}}},
			}, 201).JSON()
			for _, m := range []map[string]any{simple, full} {
				delete(m, "id")
				delete(m, "name")
				delete(m, "label")
				delete(m, "createdAt")
				delete(m, "updatedAt")
				for _, p := range m["parameters"].([]any) {
					delete(p.(map[string]any), "id")
					delete(p.(map[string]any), "parameterId")
				}
			}
			if !reflect.DeepEqual(simple, full) {
				t.Fatalf("simplified %v\nfull %v", simple, full)
			}
		})

		t.Run("invalid definitions answer 422 naming the field, and change nothing", func(t *testing.T) {
			cases := []struct {
				body  map[string]any
				field string
			}{
				{map[string]any{"name": ""}, "name"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "COLOR"}}}, "parameters[0].type"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "TEXT"}, {"name": "a", "type": "INT"}}}, "parameters[1].name"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "SELECT"}}}, "parameters[0].optionItems"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "ENTITY"}}}, "parameters[0].entityId"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "ENTITY", "entityId": "Nowhere"}}}, "parameters[0].entityId"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "TABLE"}}}, "parameters[0].parameters"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "TABLE", "parameters": []map[string]any{{"name": "b", "type": "TABLE", "parameters": []map[string]any{{"name": "c", "type": "TEXT"}}}}}}}, "parameters[0].parameters[0].type"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "BOOLEAN", "isUnique": true}}}, "parameters[0].isUnique"},
				{map[string]any{"name": "E", "parameters": []map[string]any{{"name": "a", "type": "INT", "advancedOptions": map[string]any{"min": 5, "max": 1}}}}, "parameters[0].advancedOptions.min"},
				{map[string]any{"name": "E", "viewPolicyNames": []string{"Ghost"}}, "viewPolicyNames[0]"},
			}
			for _, c := range cases {
				tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey, Body: c.body}), 422, c.field)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey, Body: map[string]any{"name": "Plant"}}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/simplified", Key: env.AdminKey, Body: map[string]any{"n": "X", "p": []map[string]any{{"n": "a", "t": "TEXT", "z": 1}}}}), 400, "p[0].z")
			list := env.Call(get, "/v1/entities?perPage=100", env.AdminKey, nil, 200).JSON()
			for _, e := range list["data"].([]any) {
				if e.(map[string]any)["name"] == "E" {
					t.Fatal("an invalid entity was stored")
				}
			}
		})

		t.Run("list pages and searches", func(t *testing.T) {
			page := env.Call(get, "/v1/entities?perPage=1&search=plA", env.AdminKey, nil, 200).JSON()
			if page["meta"].(map[string]any)["total"] != 1.0 || page["data"].([]any)[0].(map[string]any)["name"] != "Plant" {
				t.Fatalf("search: %v", page)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/entities?perPage=101", Key: env.AdminKey}), 422, "perPage")
		})
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestRecordValuesByType(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		_, plantRec := createPlant(t, env)
		e := env.Call(post, "/v1/entities", env.AdminKey, allTypes("Plant"), 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		photo := upload(t, env, env.AdminKey, "file", "p.jpg", []byte("\xff\xd8\xff\xe0 a photo")).JSON()["id"]

		valid := map[string]any{
			"title": "Pump", "notes": strings.Repeat("n", 20000), "count": 7, "weight": 1.005, "ok": true,
			"day": "2026-03-01", "at": "2026-03-01T10:00:00-03:00", "grade": "A", "tags": []string{"x", "y"},
			"email": "qa@example.com", "site": "https://example.com/a", "photo": photo, "plant": plantRec,
			"lines": []map[string]any{{"item": "bolt", "qty": 3}},
		}
		rec := env.Call(post, path, env.AdminKey, map[string]any{"values": valid}, 201).JSON()
		vals := rec["values"].(map[string]any)
		if vals["weight"] != 1.0 || vals["at"] != "2026-03-01T13:00:00.000Z" || vals["count"] != 7.0 || fmt.Sprint(vals["tags"]) != "[x y]" {
			t.Fatalf("canonical values: %v", vals)
		}
		if fmt.Sprint(vals["lines"]) != "[map[item:bolt qty:3]]" {
			t.Fatalf("table rows: %v", vals["lines"])
		}
		got := env.Call(get, path+"/"+rec["id"].(string), env.AdminKey, nil, 200).Body
		if !strings.Contains(string(got), `"weight":1`) {
			t.Fatalf("get: %s", got)
		}

		invalid := []struct {
			name  string
			value any
		}{
			{"title", ""}, {"title", "x"}, {"title", strings.Repeat("x", 11)}, {"title", 5},
			{"notes", 1},
			{"count", 1.5}, {"count", "7"}, {"count", -1}, {"count", 101},
			{"weight", "heavy"}, {"ok", "yes"}, {"day", "2026-02-30"}, {"day", "01/03/2026"},
			{"at", "2026-03-01 10:00"}, {"grade", "C"}, {"tags", []string{"x", "x"}}, {"tags", []string{"z"}}, {"tags", "x"},
			{"email", "nope"}, {"site", "ftp://x"}, {"site", "example.com"}, {"photo", 3},
			{"plant", "no-such-record"}, {"lines", []map[string]any{{"qty": 1}}}, {"lines", []map[string]any{{"item": "a", "qty": "many"}}},
			{"lines", "rows"}, {"unknown", 1},
		}
		for _, c := range invalid {
			body := map[string]any{"title": "Pump"}
			body[c.name] = c.value
			field := "values." + c.name
			if c.name == "title" && c.value == "" {
				field = "values.title" // required
			}
			res := env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"values": body}})
			if res.Status != 422 || !strings.Contains(string(res.Body), field) {
				t.Errorf("%s = %v: %d %s", c.name, c.value, res.Status, res.Body)
			}
		}
		if n := env.Call(get, path, env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 1.0 {
			t.Fatalf("invalid records were stored: %v", n)
		}

		t.Run("patch merges and null clears", func(t *testing.T) {
			id := rec["id"].(string)
			p := env.Call(patch, path+"/"+id, env.AdminKey, map[string]any{"values": map[string]any{"count": 9, "notes": nil}}, 200).JSON()["values"].(map[string]any)
			if p["count"] != 9.0 || p["notes"] != nil || p["title"] != "Pump" {
				t.Fatalf("patched: %v", p)
			}
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path + "/" + id, Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"title": nil}}}), 422, "values.title")
			env.Call(del, path+"/"+id, env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: path + "/" + id, Key: env.AdminKey}), 404, "")
		})
	})
}

func TestRecordUniquenessUnderConcurrency(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		plantID, _ := createPlant(t, env)
		path := "/v1/entities/" + plantID + "/records"
		var wg sync.WaitGroup
		statuses := make([]int, 100)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"code": "SAME"}}}).Status
			}()
		}
		wg.Wait()
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count[201] != 1 || count[409] != 99 {
			t.Fatalf("statuses: %v", count)
		}
		res := env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"code": "SAME"}}})
		tu.Problem(t, res, 409, "values.code")
	})
}

func TestEntityChanges(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Part", "parameters": []map[string]any{
			{"name": "code", "type": "TEXT"}, {"name": "size", "type": "TEXT"},
		}}, 201).JSON()
		id := e["id"].(string)
		params := e["parameters"].([]any)
		codeID, sizeID := params[0].(map[string]any)["id"], params[1].(map[string]any)["id"]
		path := "/v1/entities/" + id
		env.Call(post, path+"/records", env.AdminKey, map[string]any{"values": map[string]any{"code": "A", "size": "12"}}, 201)
		env.Call(post, path+"/records", env.AdminKey, map[string]any{"values": map[string]any{"code": "A", "size": "7"}}, 201)

		t.Run("a type change records can take converts them and keeps ids", func(t *testing.T) {
			upd := env.Call(patch, path, env.AdminKey, map[string]any{"parameters": []map[string]any{
				{"id": codeID, "name": "code", "type": "TEXT"}, {"id": sizeID, "name": "sizeMm", "type": "INT"}, {"name": "color", "type": "TEXT"},
			}}, 200).JSON()
			ps := upd["parameters"].([]any)
			if ps[0].(map[string]any)["id"] != codeID || ps[1].(map[string]any)["id"] != sizeID || ps[2].(map[string]any)["id"] == "" {
				t.Fatalf("ids not kept: %v", ps)
			}
			recs := env.Call(get, path+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if v := recs[0].(map[string]any)["values"].(map[string]any); v["sizeMm"] != 12.0 {
				t.Fatalf("converted: %v", v)
			}
		})
		t.Run("a type change records cannot take answers 409 and changes nothing", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path, Key: env.AdminKey, Body: map[string]any{"parameters": []map[string]any{
				{"id": codeID, "name": "code", "type": "INT"}, {"id": sizeID, "name": "sizeMm", "type": "INT"},
			}}}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path, Key: env.AdminKey, Body: map[string]any{"parameters": []map[string]any{
				{"id": codeID, "name": "code", "type": "TEXT", "isUnique": true}, {"id": sizeID, "name": "sizeMm", "type": "INT"},
			}}}), 409, "")
			after := env.Call(get, path, env.AdminKey, nil, 200).JSON()
			if len(after["parameters"].([]any)) != 3 || after["parameters"].([]any)[0].(map[string]any)["type"] != "TEXT" {
				t.Fatalf("a refused change was kept: %v", after)
			}
		})
		t.Run("removing a parameter hides its values; renaming keeps them", func(t *testing.T) {
			env.Call(patch, path, env.AdminKey, map[string]any{"name": "Component", "parameters": []map[string]any{{"id": codeID, "name": "partCode", "type": "TEXT"}}}, 200)
			recs := env.Call(get, path+"/records?filter[partCode]=A", env.AdminKey, nil, 200).JSON()["data"].([]any)
			if len(recs) != 2 || fmt.Sprint(recs[0].(map[string]any)["values"]) != "map[partCode:A]" {
				t.Fatalf("records: %v", recs)
			}
		})
		t.Run("delete: refused while referenced, then soft", func(t *testing.T) {
			ref := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Order", "p": []map[string]any{{"n": "part", "t": "ENTITY", "ref": "Component"}}}, 201).JSON()
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: path, Key: env.AdminKey}), 409, "")
			env.Call(del, "/v1/entities/"+ref["id"].(string), env.AdminKey, nil, 204)
			env.Call(del, path, env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: path, Key: env.AdminKey}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: del, Path: path, Key: env.AdminKey}), 404, "")
			// The name is free again.
			env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Component"}, 201)
		})
	})
}

func TestRecordListFilters(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "M", "parameters": []map[string]any{
			{"name": "n", "type": "NUMBER"}, {"name": "ok", "type": "BOOLEAN"}, {"name": "tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "a"}, {"value": "b"}}},
		}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		for i := range 5 {
			env.Call(post, path, env.AdminKey, map[string]any{"values": map[string]any{"n": 1.5 * float64(i%2), "ok": i%2 == 0, "tags": []string{"a", "b"}[:1+i%2]}}, 201)
		}
		for q, want := range map[string]float64{"filter[n]=1.50": 2, "filter[ok]=true": 3, "filter[tags]=b": 2, "filter[tags]=a&filter[ok]=false": 2, "": 5} {
			if got := env.Call(get, path+"?"+q, env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; got != want {
				t.Errorf("%s: %v, want %v", q, got, want)
			}
		}
		page := env.Call(get, path+"?perPage=2&page=3", env.AdminKey, nil, 200).JSON()
		if len(page["data"].([]any)) != 1 || page["meta"].(map[string]any)["next"] != nil {
			t.Fatalf("last page: %v", page)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: path + "?filter[nope]=1", Key: env.AdminKey}), 422, "filter[nope]")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: path + "?filter[n]=abc", Key: env.AdminKey}), 422, "filter[n]")
	})
}

func TestRecordImportExport(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Tool", "parameters": []map[string]any{
			{"name": "code", "type": "TEXT", "isUnique": true, "isRequired": true}, {"name": "qty", "type": "INT"}, {"name": "ok", "type": "BOOLEAN"},
			{"name": "tags", "type": "MULTI_SELECT", "optionItems": []map[string]any{{"value": "a"}, {"value": "b"}}},
		}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		importCSV := func(body string) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: body, Header: map[string]string{"Content-Type": "text/csv"}})
		}
		count := func() float64 {
			return env.Call(get, path, env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64)
		}

		bad := importCSV("code,qty\nT1,1\nT2,lots\n,3\n")
		p := tu.Problem(t, bad, 422, "rows[1].qty")
		if !strings.Contains(fmt.Sprint(p["errors"]), "rows[2].code") {
			t.Fatalf("every bad row should be listed: %v", p["errors"])
		}
		tu.Problem(t, importCSV("code\nT1\nT1\n"), 409, "rows[1].values.code")
		if count() != 0 {
			t.Fatal("a failed import wrote records")
		}

		res := importCSV("code,qty,ok,tags\nT1,1,TRUE,\"[\"\"a\"\"]\"\nT2,,false,\n")
		if res.Status != 200 || res.JSON()["imported"] != 2.0 {
			t.Fatalf("import: %d %s", res.Status, res.Body)
		}
		res = env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: []map[string]any{{"code": "T3", "qty": 5}}})
		if res.Status != 200 || count() != 3 {
			t.Fatalf("json import: %d %s", res.Status, res.Body)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: `{"code":"x"}`}), 400, "")
		// Neither CSV nor JSON; text the store could not hold.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: "code\nT9\n", Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}), 415, "")
		tu.Problem(t, importCSV("code,qty\nT9,1\nT\x00,2\n"), 422, "rows[1].code")
		tu.Problem(t, importCSV("code,tags\nT9,\"[\"\"\\ud800\"\"]\"\n"), 422, "rows[0].tags[0]")
		tu.Problem(t, importCSV("code\nT\xff\n"), 400, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: `[{"code":"T9"},{"code":"\ud800"}]`}), 422, "rows[1].code")
		if count() != 3 {
			t.Fatal("a refused import wrote records")
		}

		exp := env.Do(tu.Request{Method: get, Path: path + ":export", Key: env.AdminKey})
		lines := strings.Split(strings.TrimSpace(string(exp.Body)), "\n")
		if exp.Status != 200 || !strings.HasPrefix(exp.Header.Get("Content-Type"), "text/csv") || len(lines) != 4 ||
			lines[0] != "id,code,qty,ok,tags,createdAt,updatedAt" || !strings.Contains(lines[1], `,T1,1,true,"[""a""]",`) {
			t.Fatalf("export: %d %v %q", exp.Status, exp.Header, lines)
		}
		// An export imports into an emptied entity as is.
		for _, r := range env.Call(get, path, env.AdminKey, nil, 200).JSON()["data"].([]any) {
			env.Call(del, path+"/"+r.(map[string]any)["id"].(string), env.AdminKey, nil, 204)
		}
		if res := importCSV(string(exp.Body)); res.Status != 200 || count() != 3 {
			t.Fatalf("re-import: %d %s", res.Status, res.Body)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/entities/nope/records:export", Key: env.AdminKey}), 404, "")
	})
}

func TestEntityCrossOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		other := env.NewOrg("Globex")
		plantID, recID := createPlant(t, env)
		for _, r := range []tu.Request{
			{Method: get, Path: "/v1/entities/" + plantID},
			{Method: patch, Path: "/v1/entities/" + plantID, Body: map[string]any{"name": "Mine"}},
			{Method: del, Path: "/v1/entities/" + plantID},
			{Method: get, Path: "/v1/entities/" + plantID + "/records"},
			{Method: post, Path: "/v1/entities/" + plantID + "/records", Body: map[string]any{"values": map[string]any{}}},
			{Method: get, Path: "/v1/entities/" + plantID + "/records/" + recID},
			{Method: get, Path: "/v1/entities/" + plantID + "/records:export"},
		} {
			r.Key = other
			tu.Problem(t, env.Do(r), 404, "")
		}
		// Another org can neither link to it nor see it in lists.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/simplified", Key: other, Body: map[string]any{"n": "X", "p": []map[string]any{{"n": "p", "t": "ENTITY", "ref": plantID}}}}), 422, "parameters[0].entityId")
		if n := env.Call(get, "/v1/entities", other, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 0.0 {
			t.Fatalf("other org sees %v entities", n)
		}
		env.Call(post, "/v1/entities/simplified", other, map[string]any{"n": "Plant"}, 201)
	})
}

func TestEntityFormulas(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "parameters": []map[string]any{
			{"name": "total", "type": "FORMULA", "computedFormula": []string{"price", "*"}},
		}}}), 422, "parameters[0].computedFormula")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "parameters": []map[string]any{
			{"name": "a", "type": "FORMULA", "computedFormula": []string{"b"}}, {"name": "b", "type": "FORMULA", "computedFormula": []string{"a"}},
		}}}), 422, "parameters[0].computedFormula")
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Line", "parameters": []map[string]any{
			{"name": "price", "type": "NUMBER"}, {"name": "qty", "type": "INT"},
			{"name": "total", "type": "FORMULA", "computedFormula": []string{"price", "*", "qty"}, "decimals": 2},
		}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		r := env.Call(post, path, env.AdminKey, map[string]any{"values": map[string]any{"price": 0.1, "qty": 3}}, 201).JSON()
		if v := r["values"].(map[string]any); v["total"] != 0.3 {
			t.Fatalf("total: %v", v)
		}
		r = env.Call(patch, path+"/"+r["id"].(string), env.AdminKey, map[string]any{"values": map[string]any{"qty": 10}}, 200).JSON()
		if v := r["values"].(map[string]any); v["total"] != 1.0 {
			t.Fatalf("recomputed total: %v", v)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"total": 5}}}), 422, "values.total")
	})
}

// A data field takes only what acts on a record: what fills a step's
// values or acts at its consensus is refused, naming it, and nothing is
// stored; an option's deletedAt is the service's; EMAIL and URL values keep
// to their length options.
func TestEntityFieldsTakeWhatActs(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		for field, extra := range map[string]map[string]any{
			"readFromEntity":                  {"readFromEntity": map[string]any{"entityId": "x", "readParameterId": "a"}},
			"readFromOtherMeasurementData":    {"readFromOtherMeasurementData": map[string]any{"processId": "x"}},
			"autoFillEntityRelation":          {"autoFillEntityRelation": "other"},
			"contractTemplateId":              {"contractTemplateId": "nope"},
			"advancedOptions.insertOnEntity":  {"advancedOptions": map[string]any{"insertOnEntity": "nowhere"}},
			"advancedOptions.entityOperation": {"advancedOptions": map[string]any{"entityOperation": []string{"WRITE"}}},
			"advancedOptions.hasMetadata":     {"advancedOptions": map[string]any{"hasMetadata": true}},
			"advancedOptions.maxLength":       {"type": "BOOLEAN", "advancedOptions": map[string]any{"maxLength": 3}},
		} {
			p := map[string]any{"name": "code", "type": "TEXT"}
			for k, v := range extra {
				p[k] = v
			}
			res := env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey, Body: map[string]any{"name": "supplier", "parameters": []map[string]any{p}}})
			if res.Status != 422 || !strings.Contains(string(res.Body), `"field":"parameters[0].`+field+`"`) {
				t.Fatalf("%s: %d %s", field, res.Status, res.Body)
			}
		}
		if n := env.Call(get, "/v1/entities", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 0.0 {
			t.Fatalf("refused entities were stored: %v", n)
		}
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "supplier", "parameters": []map[string]any{
			{"name": "contact", "type": "EMAIL", "advancedOptions": map[string]any{"maxLength": 12}},
			{"name": "rating", "type": "SELECT", "optionItems": []map[string]any{{"value": "A", "deletedAt": "2026-01-01T00:00:00Z"}},
				"advancedOptions": map[string]any{"deletedAt": "2026-01-01T00:00:00Z"}}}}, 201).JSON()
		rating := e["parameters"].([]any)[1].(map[string]any)
		if d := rating["optionItems"].([]any)[0].(map[string]any)["deletedAt"]; d != nil {
			t.Fatalf("a listed option is deleted: %v", d)
		}
		if d := rating["advancedOptions"].(map[string]any)["deletedAt"]; d != nil {
			t.Fatalf("the options are deleted: %v", d)
		}
		res := env.Do(tu.Request{Method: post, Path: "/v1/entities/" + e["id"].(string) + "/records", Key: env.AdminKey,
			Body: map[string]any{"values": map[string]any{"contact": "someone@example.com", "rating": "A"}}})
		if res.Status != 422 || !strings.Contains(string(res.Body), "at most 12 characters") {
			t.Fatalf("an email past its maxLength: %d %s", res.Status, res.Body)
		}
		env.Call(post, "/v1/entities/"+e["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"contact": "a@b.example", "rating": "A"}}, 201)
	})
}
