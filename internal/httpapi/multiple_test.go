package httpapi_test

import (
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// advancedOptions.isMultiple: a parameter takes a list of values, each
// validated, counted by min and max.
func TestMultipleValues(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		multi := func(extra map[string]any) map[string]any {
			ao := map[string]any{"isMultiple": true}
			for k, v := range extra {
				ao[k] = v
			}
			return ao
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []map[string]any{
			{"label": "S", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "n", "type": "INT", "advancedOptions": multi(nil)}}}}}}), 422, "steps[0].parameters[0].advancedOptions.isMultiple")

		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Survey", "steps": []map[string]any{
			{"label": "Shoot", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "photos", "type": "ATTACHMENT", "advancedOptions": multi(map[string]any{"min": 1, "max": 2})},
				{"name": "notes", "type": "TEXT", "advancedOptions": multi(map[string]any{"maxLength": 5})},
				{"name": "kind", "type": "SELECT", "optionItems": []map[string]any{{"value": "a"}, {"value": "b"}}, "advancedOptions": multi(nil)},
			}},
		}}, 201).JSON()
		a := upload(t, env, env.AdminKey, "file", "a.txt", []byte("a")).JSON()["id"].(string)
		b := upload(t, env, env.AdminKey, "file", "b.txt", []byte("b")).JSON()["id"].(string)
		c := upload(t, env, env.AdminKey, "file", "c.txt", []byte("c")).JSON()["id"].(string)
		send := func(params map[string]any) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey, Body: map[string]any{"processUuid": p["id"], "parameters": params}})
		}
		tu.Problem(t, send(map[string]any{"photos": []string{a, b, c}}), 422, "parameters.photos")
		tu.Problem(t, send(map[string]any{"photos": []string{a, "nope"}}), 422, "parameters.photos[1]")
		tu.Problem(t, send(map[string]any{"photos": []string{a, a}}), 422, "parameters.photos[1]")
		tu.Problem(t, send(map[string]any{"notes": []string{"ok", "too long"}}), 422, "parameters.notes[1]")
		tu.Problem(t, send(map[string]any{"kind": []string{"a", "z"}}), 422, "parameters.kind[1]")

		res := send(map[string]any{"photos": []string{a, b}, "notes": []string{"x", "x"}, "kind": "b"})
		if res.Status != 201 {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
		got := map[string][]string{}
		for _, d := range res.JSON()["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)["data"].([]any) {
			for i, it := range d.(map[string]any)["dataItems"].([]any) {
				it := it.(map[string]any)
				if it["index"] != float64(i) {
					t.Fatalf("item %d has index %v", i, it["index"])
				}
				name := it["param"].(map[string]any)["name"].(string)
				got[name] = append(got[name], it["value"].(string))
			}
		}
		if len(got["photos"]) != 2 || got["photos"][1] != b || len(got["notes"]) != 2 || len(got["kind"]) != 1 {
			t.Fatalf("items: %v", got)
		}

		// Records: several linked records, found by any of them.
		tag := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Tag", "p": []map[string]any{{"n": "name", "t": "TEXT"}}}, 201).JSON()
		t1 := env.Call(post, "/v1/entities/"+tag["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"name": "one"}}, 201).JSON()["id"].(string)
		t2 := env.Call(post, "/v1/entities/"+tag["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"name": "two"}}, 201).JSON()["id"].(string)
		asset := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Asset", "parameters": []map[string]any{
			{"name": "tags", "type": "ENTITY", "entityId": "Tag", "advancedOptions": multi(nil)}}}, 201).JSON()
		records := "/v1/entities/" + asset["id"].(string) + "/records"
		env.Call(post, records, env.AdminKey, map[string]any{"values": map[string]any{"tags": []string{t1, t2}}}, 201)
		list := env.Call(get, records+"?filter[tags]="+t2, env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(list) != 1 || len(list[0].(map[string]any)["values"].(map[string]any)["tags"].([]any)) != 2 {
			t.Fatalf("filter by one of several: %v", list)
		}
	})
}
