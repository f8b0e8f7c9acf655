package httpapi_test

import (
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// Input at the edges of what the store can hold is refused alike on both
// engines, as a 4xx naming the field, and never breaks later reads.

// A number a double cannot hold: refused as a value, in a JSON body or a
// CSV import; as a formula's result it is no value. Stored, goccy/go-json
// could not read it back, and the measurement or the entity's records
// answered 500 from then on.
func TestNumbersOutOfRange(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		k := env.AdminKey
		env.Call(post, "/v1/users/policies", k, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", k, map[string]any{"name": "Big", "steps": []map[string]any{{
			"label": "S", "policyNames": []string{"Admins"},
			"parameters": []map[string]any{{"name": "a", "type": "NUMBER"}, {"name": "b", "type": "NUMBER"},
				{"name": "c", "type": "FORMULA", "computedFormula": []string{"a", "*", "b"}}},
		}}}, 201).JSON()
		step := steps(p)[0]["id"].(string)
		m := env.Call(post, "/v1/measurements", k, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		env.Call(post, "/v1/measurements/"+m+"/actions", k, map[string]any{"stepId": step, "type": "WRITE_DATA", "parameters": map[string]any{"a": 1e200, "b": 1e200}}, 201)
		env.Call(get, "/v1/measurements/"+m, k, nil, 200)

		e := env.Call(post, "/v1/entities/simplified", k, map[string]any{"n": "Meter", "p": []map[string]any{{"n": "reading", "t": "NUMBER"}}}, 201).JSON()
		records := "/v1/entities/" + e["id"].(string) + "/records"
		env.Call(post, records, k, map[string]any{"values": map[string]any{"reading": 1}}, 201)
		if imp := env.Do(tu.Request{Method: post, Path: records + ":import", Key: k, Body: "reading\n1e400\n", Header: map[string]string{"Content-Type": "text/csv"}}); imp.Status < 400 || imp.Status >= 500 {
			t.Fatalf("import of 1e400: %d %s", imp.Status, imp.Body)
		}
		// In a JSON body: past a double, or past the integer a field holds.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: records, Key: k, Body: `{"values":{"reading":-1e400}}`}), 422, "values.reading")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities", Key: k, Body: `{"name":"T","parameters":[{"name":"a","type":"NUMBER","advancedOptions":{"max":1e30}},` +
			`{"name":"b","type":"TEXT","advancedOptions":{"max":1e30,"maxLength":1e30}}]}`}), 422, "parameters[1].advancedOptions.maxLength")
		if n := len(env.Call(get, records, k, nil, 200).JSON()["data"].([]any)); n != 1 {
			t.Fatalf("%d records after refused writes", n)
		}
	})
}

// A DATETIME past the year 9999 in UTC has no RFC 3339 form to be stored in.
func TestDateTimeOutOfRange(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Ev", "p": []map[string]any{{"n": "at", "t": "DATETIME"}}}, 201).JSON()
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/" + e["id"].(string) + "/records", Key: env.AdminKey,
			Body: map[string]any{"values": map[string]any{"at": "9999-12-31T23:59:59-01:00"}}}), 422, "values.at")
	})
}

// A page or version number past what the store's integers hold: PostgreSQL
// answered 500, SQLite page 1's rows under a page of 10^17.
func TestHugePageAndVersion(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		p := checkProcess(env, "Check", "C")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/users?perPage=100&page=100000000000000000", Key: env.AdminKey}), 422, "page")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process/" + p["id"].(string) + "?version=2147483648", Key: env.AdminKey}), 422, "version")
	})
}

// Invalid UTF-8, which PostgreSQL's text cannot hold (nor the NUL
// character, TestNULInABody): in a path it names no resource, in a query
// it is an invalid parameter, in a body a malformed body, in an
// Idempotency-Key a bad request.
func TestInvalidUTF8(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		k := env.AdminKey
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/process/%ff", Key: k}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements?processId=%ff", Key: k}), 422, "processId")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/users/policies", Key: k, Body: map[string]any{"name": "P"},
			Header: map[string]string{"Idempotency-Key": "\xff\xfe"}}), 400, "")
		e := env.Call(post, "/v1/entities/simplified", k, map[string]any{"n": "Tag", "p": []map[string]any{{"n": "title", "t": "TEXT"}}}, 201).JSON()
		records := "/v1/entities/" + e["id"].(string) + "/records"
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: records, Key: k, Body: "{\"values\":{\"title\":\"P\xff\xfe\"}}"}), 400, "")
		if n := len(env.Call(get, records, k, nil, 200).JSON()["data"].([]any)); n != 0 || len(env.Call(get, "/v1/users/policies", k, nil, 200).JSON()["data"].([]any)) != 0 {
			t.Fatalf("refused requests wrote: %d records", n)
		}
	})
}

// A URL whose port cannot be dialled is not a URL a webhook can be sent to.
func TestURLPort(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		for _, u := range []string{"https://hooks.example.com:99999/x", "https://hooks.example.com:0/x"} {
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/webhooks", Key: env.AdminKey, Body: map[string]any{"url": u, "events": []string{"measurement.created"}}}), 422, "url")
		}
		env.Call(post, "/v1/webhooks", env.AdminKey, map[string]any{"url": "https://hooks.example.com:65535/x", "events": []string{"measurement.created"}}, 201)
	})
}
