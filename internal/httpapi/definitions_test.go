package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// paramIDs maps a definition's parameter names to their ids.
func paramIDs(params any) map[string]string {
	out := map[string]string{}
	for _, p := range params.([]any) {
		m := p.(map[string]any)
		out[m["name"].(string)] = m["id"].(string)
	}
	return out
}

// A definition change never deletes stored values (semantics §14): an
// entity's parameter removed keeps its values in the records (hidden), a
// parameter of the same name added again shows them again, and a
// permanent parameter that records hold values for cannot be removed.
func TestEntityParameterRemovalKeepsValues(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Gauge", "parameters": []map[string]any{
			{"name": "serial", "type": "TEXT", "isPermanent": true},
			{"name": "reading", "type": "NUMBER"},
			{"name": "spare", "type": "TEXT", "isPermanent": true},
			{"name": "lines", "type": "TABLE", "parameters": []map[string]any{{"name": "item", "type": "TEXT"}, {"name": "note", "type": "TEXT"}}},
		}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string)
		ids := paramIDs(e["parameters"])
		rec := env.Call(post, path+"/records", env.AdminKey, map[string]any{"values": map[string]any{
			"serial": "S-1", "reading": 4.5, "lines": []map[string]any{{"item": "bolt", "note": "loose"}}}}, 201).JSON()
		recPath := path + "/records/" + rec["id"].(string)
		values := func() string {
			return fmt.Sprint(env.Call(get, recPath, env.AdminKey, nil, 200).JSON()["values"])
		}
		stored := func(id string) int {
			return env.RawInt(`SELECT count(*) FROM entity_records WHERE id = ? AND vals LIKE ?`, rec["id"], `%"`+id+`"%`)
		}
		lines := func(cols ...map[string]any) map[string]any {
			return map[string]any{"id": ids["lines"], "name": "lines", "type": "TABLE", "parameters": cols}
		}
		serial := map[string]any{"id": ids["serial"], "name": "serial", "type": "TEXT", "isPermanent": true}
		item := map[string]any{"name": "item", "type": "TEXT"}

		t.Run("removed: the answers stop showing the values, the records keep them", func(t *testing.T) {
			upd := env.Call(patch, path, env.AdminKey, map[string]any{"parameters": []map[string]any{serial, lines(item)}}, 200).JSON()
			if len(upd["parameters"].([]any)) != 2 {
				t.Fatalf("parameters: %v", upd["parameters"])
			}
			if got := values(); got != "map[lines:[map[item:bolt]] serial:S-1]" {
				t.Fatalf("values: %s", got)
			}
			if stored(ids["reading"]) != 1 || env.RawInt(`SELECT count(*) FROM entity_records WHERE vals LIKE ?`, `%loose%`) != 1 {
				t.Fatal("the removed values are gone from storage")
			}
			csv := string(env.Call(get, path+"/records:export", env.AdminKey, nil, 200).Body)
			if strings.Contains(csv, "reading") || strings.Contains(csv, "4.5") {
				t.Fatalf("the export shows a removed parameter:\n%s", csv)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + "/records", Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"reading": 1}}}), 422, "values.reading")
			// A record changed meanwhile keeps them too.
			env.Call(patch, recPath, env.AdminKey, map[string]any{"values": map[string]any{"serial": "S-2"}}, 200)
			if stored(ids["reading"]) != 1 {
				t.Fatal("a record's change dropped the removed values")
			}
		})
		t.Run("a permanent parameter that records hold values for answers 409 naming it", func(t *testing.T) {
			p := tu.Problem(t, env.Do(tu.Request{Method: patch, Path: path, Key: env.AdminKey, Body: map[string]any{"parameters": []map[string]any{lines(item)}}}), 409, "parameters")
			if !strings.Contains(fmt.Sprint(p["errors"]), `"serial" is permanent`) {
				t.Fatalf("problem: %v", p)
			}
			if got := env.Call(get, path, env.AdminKey, nil, 200).JSON(); len(got["parameters"].([]any)) != 2 {
				t.Fatalf("a refused change was kept: %v", got)
			}
		})
		t.Run("added again by name: the same id, and the values show again", func(t *testing.T) {
			upd := env.Call(patch, path, env.AdminKey, map[string]any{"parameters": []map[string]any{
				serial, {"name": "reading", "type": "NUMBER"}, lines(item, map[string]any{"name": "note", "type": "TEXT"}),
			}}, 200).JSON()
			back := paramIDs(upd["parameters"])
			if back["reading"] != ids["reading"] {
				t.Fatalf("reading came back as %s, was %s", back["reading"], ids["reading"])
			}
			if got := values(); got != "map[lines:[map[item:bolt note:loose]] reading:4.5 serial:S-2]" {
				t.Fatalf("values: %s", got)
			}
			// The index follows: the value filters again.
			if n := env.Call(get, path+"/records?filter[reading]=4.5", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 1.0 {
				t.Fatalf("filtered: %v", n)
			}
		})
		t.Run("a permanent parameter no record holds a value for is removed", func(t *testing.T) {
			upd := env.Call(patch, path, env.AdminKey, map[string]any{"parameters": []map[string]any{serial}}, 200).JSON()
			if len(upd["parameters"].([]any)) != 1 {
				t.Fatalf("parameters: %v", upd["parameters"])
			}
		})
	})
}

// A process's parameter removed: measurements keep their values (a
// measurement answers with the version it runs on), the process's answers
// (its latest version, the export) stop showing them, and a parameter of
// the same name added again takes its id back, so the export shows them
// again. A permanent one that a measurement holds a value for stays.
func TestProcessParameterRemovalKeepsValues(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Check", "steps": []map[string]any{
			{"label": "Read", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "serial", "type": "TEXT", "isPermanent": true},
				{"name": "reading", "type": "NUMBER"},
				{"name": "spare", "type": "TEXT", "isPermanent": true},
			}},
		}}, 201).JSON()
		path := "/v1/process/" + proc["id"].(string)
		step := proc["steps"].([]any)[0].(map[string]any)
		ids := paramIDs(step["parameters"])
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc["id"], "parameters": map[string]any{"serial": "S-1", "reading": 4.5}}, 201).JSON()
		export := func() string {
			return string(env.Call(get, "/v1/measurements:export?processId="+proc["id"].(string), env.AdminKey, nil, 200).Body)
		}
		edit := func(params ...map[string]any) *tu.Response {
			return env.Do(tu.Request{Method: patch, Path: path, Key: env.AdminKey, Body: map[string]any{"steps": []map[string]any{
				{"id": step["id"], "label": "Read", "policyNames": []string{"Admins"}, "parameters": params}}}})
		}
		serial := map[string]any{"id": ids["serial"], "name": "serial", "type": "TEXT", "isPermanent": true}
		spare := map[string]any{"id": ids["spare"], "name": "spare", "type": "TEXT", "isPermanent": true}

		t.Run("removed: a new version without it; the measurement keeps its values", func(t *testing.T) {
			r := edit(serial, spare)
			if r.Status != 200 || r.JSON()["version"] != 2.0 {
				t.Fatalf("edit: %d %s", r.Status, r.Body)
			}
			if got := export(); strings.Contains(got, "Read.reading") || strings.Contains(got, "4.5") {
				t.Fatalf("the export shows a removed parameter:\n%s", got)
			}
			seen := string(env.Call(get, "/v1/measurements/"+m["id"].(string), env.AdminKey, nil, 200).Body)
			if !strings.Contains(seen, `"value":"4.5"`) {
				t.Fatalf("the measurement (version 1) lost its value: %s", seen)
			}
		})
		t.Run("a permanent parameter that a measurement holds a value for answers 409 naming it", func(t *testing.T) {
			p := tu.Problem(t, edit(spare), 409, "steps[0].parameters")
			if !strings.Contains(fmt.Sprint(p["errors"]), `"serial" is permanent`) {
				t.Fatalf("problem: %v", p)
			}
		})
		t.Run("added again by name: the same id, and the export shows the values again", func(t *testing.T) {
			r := edit(serial, spare, map[string]any{"name": "reading", "type": "NUMBER"})
			if r.Status != 200 {
				t.Fatalf("edit: %d %s", r.Status, r.Body)
			}
			back := paramIDs(r.JSON()["steps"].([]any)[0].(map[string]any)["parameters"])
			if back["reading"] != ids["reading"] {
				t.Fatalf("reading came back as %s, was %s", back["reading"], ids["reading"])
			}
			if got := export(); !strings.Contains(got, "Read.reading") || !strings.Contains(got, ",S-1,,4.5") {
				t.Fatalf("export:\n%s", got)
			}
		})
		t.Run("a permanent parameter no measurement holds a value for is removed", func(t *testing.T) {
			r := edit(serial, map[string]any{"id": ids["reading"], "name": "reading", "type": "NUMBER"})
			if r.Status != 200 {
				t.Fatalf("edit: %d %s", r.Status, r.Body)
			}
		})
		t.Run("the ledger's replay of the history is unchanged", func(t *testing.T) {
			integrate(t, env)
			if rep := verify(env); rep["ok"] != true {
				t.Fatalf("verify: %v", rep)
			}
		})
	})
}

// Deleted is recoverable (semantics §14): deleted entities and processes
// are listed with deleted=true, and :restore brings one back unless its
// name (code, label) was taken meanwhile.
func TestDeletedIsRecoverable(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"entity:read", "process:read"}}, 201)
		_, reader := member(t, env, "rita@example.com", "READER")
		listed := func(path string) map[string]map[string]any {
			out := map[string]map[string]any{}
			for _, x := range env.Call(get, path, env.AdminKey, nil, 200).JSON()["data"].([]any) {
				out[x.(map[string]any)["id"].(string)] = x.(map[string]any)
			}
			return out
		}

		t.Run("entities", func(t *testing.T) {
			tool := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Tool", "vp": []string{"Readers"}, "p": []map[string]any{{"n": "tag", "t": "TEXT"}}}, 201).JSON()
			id := tool["id"].(string)
			env.Call(post, "/v1/entities/"+id+"/records", env.AdminKey, map[string]any{"values": map[string]any{"tag": "T-1"}}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/" + id + ":restore", Key: env.AdminKey}), 409, "")
			env.Call(del, "/v1/entities/"+id, env.AdminKey, nil, 204)
			if _, live := listed("/v1/entities")[id]; live {
				t.Fatal("a deleted entity is listed")
			}
			gone := listed("/v1/entities?deleted=true")
			if len(gone) != 1 || gone[id] == nil || gone[id]["deletedAt"] == nil {
				t.Fatalf("deleted: %v", gone)
			}
			again := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Tool"}, 201).JSON()
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/" + id + ":restore", Key: env.AdminKey}), 409, "name")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/" + id + ":restore", Key: reader}), 403, "")
			env.Call(del, "/v1/entities/"+again["id"].(string), env.AdminKey, nil, 204)
			// A policy it names was renamed meanwhile: the name follows, as into live ones.
			env.Call(patch, "/v1/users/policies/"+policyID(t, env, "Readers"), env.AdminKey, map[string]any{"name": "Viewers"}, 200)
			back := env.Call(post, "/v1/entities/"+id+":restore", env.AdminKey, nil, 200).JSON()
			if back["id"] != id || back["deletedAt"] != nil || back["name"] != "Tool" || fmt.Sprint(back["viewPolicyNames"]) != "[Viewers]" {
				t.Fatalf("restored: %v", back)
			}
			if recs := env.Call(get, "/v1/entities/"+id+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any); len(recs) != 1 {
				t.Fatalf("records: %v", recs)
			}
			if gone := listed("/v1/entities?deleted=true"); len(gone) != 1 || gone[id] != nil {
				t.Fatalf("deleted after the restore: %v", gone)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/00000000-0000-0000-0000-000000000000:restore", Key: env.AdminKey}), 404, "")
		})

		t.Run("processes", func(t *testing.T) {
			for _, name := range []string{"Auditors", "Admins"} {
				env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": name, "roles": []string{"ADMIN"}}, 201)
			}
			def := func(label string, policy string) map[string]any {
				return map[string]any{"name": label, "code": "AUD", "steps": []map[string]any{{"label": "Look", "policyNames": []string{policy},
					"parameters": []map[string]any{{"name": "note", "type": "TEXT"}}}}}
			}
			proc := env.Call(post, "/v1/process", env.AdminKey, def("Audit", "Auditors"), 201).JSON()
			id := proc["id"].(string)
			m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": id, "parameters": map[string]any{"note": "fine"}}, 201).JSON()
			env.Call(del, "/v1/process/"+id, env.AdminKey, nil, 204)
			gone := listed("/v1/process?deleted=true")
			if len(gone) != 1 || gone[id] == nil || gone[id]["deletedAt"] == nil {
				t.Fatalf("deleted: %v", gone)
			}
			if _, live := listed("/v1/process")[id]; live {
				t.Fatal("a deleted process is listed")
			}
			// Its measurements stay as they were.
			if got := string(env.Call(get, "/v1/measurements/"+m["id"].(string), env.AdminKey, nil, 200).Body); !strings.Contains(got, `"value":"fine"`) {
				t.Fatalf("measurement: %s", got)
			}
			again := env.Call(post, "/v1/process", env.AdminKey, def("Audit", "Admins"), 201).JSON()
			p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/" + id + ":restore", Key: env.AdminKey}), 409, "code")
			if !strings.Contains(fmt.Sprint(p["errors"]), "field:label") {
				t.Fatalf("problem: %v", p)
			}
			env.Call(del, "/v1/process/"+again["id"].(string), env.AdminKey, nil, 204)
			// A policy its steps name was deleted meanwhile (nothing live named it).
			env.Call(del, "/v1/users/policies/"+policyID(t, env, "Auditors"), env.AdminKey, nil, 204)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/" + id + ":restore", Key: env.AdminKey}), 409, "steps[0].policyNames[0]")
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Auditors", "roles": []string{"ADMIN"}}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/" + id + ":restore", Key: reader}), 403, "")
			back := env.Call(post, "/v1/process/"+id+":restore", env.AdminKey, nil, 200).JSON()
			if back["id"] != id || back["deletedAt"] != nil || back["code"] != "AUD" || len(back["steps"].([]any)) != 1 {
				t.Fatalf("restored: %v", back)
			}
			env.Call(get, "/v1/process/"+id, env.AdminKey, nil, 200)
			env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": id, "parameters": map[string]any{"note": "again"}}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/" + id + ":restore", Key: env.AdminKey}), 409, "")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process/00000000-0000-0000-0000-000000000000:restore", Key: env.AdminKey}), 404, "")
		})
	})
}

func policyID(t *testing.T, env *tu.Env, name string) string {
	t.Helper()
	for _, p := range env.Call(get, "/v1/users/policies", env.AdminKey, nil, 200).JSON()["data"].([]any) {
		if p.(map[string]any)["name"] == name {
			return p.(map[string]any)["id"].(string)
		}
	}
	t.Fatalf("no policy %q", name)
	return ""
}

// SheetData.entityId is empty or the id of the entity that owns the
// parameter (which an entity's parameters are given); a step's parameter
// belongs to no entity (semantics §14).
func TestSheetDataEntityID(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		other := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Other"}, 201).JSON()["id"].(string)
		withSheet := func(entityID string) []map[string]any {
			return []map[string]any{{"name": "cost", "type": "NUMBER", "sheetData": map[string]any{"entityId": entityID}}}
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: env.AdminKey,
			Body: map[string]any{"name": "Quote", "parameters": withSheet(other)}}), 422, "parameters[0].sheetData.entityId")
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Quote", "parameters": withSheet("")}, 201).JSON()
		id := e["id"].(string)
		if sd := e["parameters"].([]any)[0].(map[string]any)["sheetData"].(map[string]any); sd["entityId"] != id {
			t.Fatalf("sheetData: %v", sd)
		}
		env.Call(patch, "/v1/entities/"+id, env.AdminKey, map[string]any{"parameters": withSheet(id)}, 200)
		tu.Problem(t, env.Do(tu.Request{Method: patch, Path: "/v1/entities/" + id, Key: env.AdminKey,
			Body: map[string]any{"parameters": withSheet("anything")}}), 422, "parameters[0].sheetData.entityId")

		step := func(entityID string) map[string]any {
			return map[string]any{"name": "Pricing", "steps": []map[string]any{{"label": "Price", "policyNames": []string{"Admins"}, "parameters": withSheet(entityID)}}}
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: step(id)}), 422, "steps[0].parameters[0].sheetData.entityId")
		env.Call(post, "/v1/process", env.AdminKey, step(""), 201)
	})
}
