package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"strings"
	"sync"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

func upload(t *testing.T, env *tu.Env, key, field, name string, content []byte) *tu.Response {
	t.Helper()
	return uploadTo(t, env, "/v1/attachments", key, field, name, content)
}

// uploadTo posts content as a multipart file in field to path.
func uploadTo(t *testing.T, env *tu.Env, path, key, field, name string, content []byte) *tu.Response {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile(field, name)
	_, _ = part.Write(content)
	_ = w.Close()
	return env.Do(tu.Request{Method: post, Path: path, Key: key, Body: body.Bytes(), Header: map[string]string{"Content-Type": w.FormDataContentType()}})
}

func TestAttachments(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 2000)...)
		res := upload(t, env, env.AdminKey, "file", "gauge.png", png)
		if res.Status != 201 {
			t.Fatalf("upload: %d %s", res.Status, res.Body)
		}
		a := res.JSON()
		sum := sha256.Sum256(png)
		if a["contentType"] != "image/png" || a["size"] != float64(len(png)) || a["sha256"] != hex.EncodeToString(sum[:]) || a["filename"] != "gauge.png" {
			t.Fatalf("attachment: %v", a)
		}
		got := env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + a["id"].(string), Key: env.AdminKey})
		if got.Status != 200 || !bytes.Equal(got.Body, png) || got.Header.Get("Content-Type") != "image/png" || !strings.Contains(got.Header.Get("Content-Disposition"), "gauge.png") {
			t.Fatalf("download: %d %v", got.Status, got.Header)
		}
		other := env.NewOrg("Globex")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + a["id"].(string), Key: other}), 404, "")
		tu.Problem(t, upload(t, env, env.AdminKey, "document", "x.txt", []byte("hi")), 422, "file")
		// A file name that is not UTF-8 text (SQLite would keep it, PostgreSQL refuse it): 422 on both.
		tu.Problem(t, upload(t, env, env.AdminKey, "file", "r\xe9sum\xe9.txt", []byte("hi")), 422, "file")
		tu.Problem(t, upload(t, env, env.AdminKey, "file", "big.bin", bytes.Repeat([]byte("x"), 20<<20+1)), 413, "")

		// An ATTACHMENT value must name an attachment of the org.
		e := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Gauge", "p": []map[string]any{{"n": "photo", "t": "ATTACHMENT"}}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		env.Call(post, path, env.AdminKey, map[string]any{"values": map[string]any{"photo": a["id"]}}, 201)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: map[string]any{"values": map[string]any{"photo": "01a00000-0000-7000-8000-000000000000"}}}), 422, "values.photo")
	})
}

// isUnique on a step parameter holds across the process's measurements,
// enforced by the database: concurrent creations with one value, one wins.
func TestUniqueStepValueAcrossMeasurements(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Serials", "steps": []map[string]any{
			{"label": "Register", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "serial", "type": "TEXT", "isUnique": true}}},
			{"label": "Check", "policyNames": []string{"Admins"}},
		}}, 201).JSON()
		var wg sync.WaitGroup
		statuses := make([]int, 20)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
					Body: map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "SN-1"}}}).Status
			}()
		}
		wg.Wait()
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count[201] != 1 || count[409] != 19 {
			t.Fatalf("statuses: %v", count)
		}
		res := env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
			Body: map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "SN-1"}}})
		tu.Problem(t, res, 409, "parameters.serial")
		env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "SN-2"}}, 201)
		if n := env.Call(get, "/v1/measurements", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 2.0 {
			t.Fatalf("%v measurements; a refused one was kept", n)
		}
	})
}

// readFromEntity fills parameters from a record; a consensed step with
// insertOnEntity writes its data as a record, in the same transaction.
func TestEntityReadAndWrite(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		asset := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Asset",
			"p": []map[string]any{{"n": "serial", "t": "TEXT", "isUnique": true}, {"n": "location", "t": "TEXT"}, {"n": "rating", "t": "NUMBER"}}}, 201).JSON()
		env.Call(post, "/v1/entities/"+asset["id"].(string)+"/records", env.AdminKey, map[string]any{"values": map[string]any{"serial": "A-1", "location": "Hall 3", "rating": 12.5}}, 201)
		log := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "InspectionLog",
			"p": []map[string]any{{"n": "serial", "t": "TEXT"}, {"n": "location", "t": "TEXT"}, {"n": "result", "t": "TEXT"}}}, 201).JSON()
		p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Walkdown", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "serial", "type": "TEXT", "readFromEntity": map[string]any{"entityId": "Asset", "readParameterId": "serial", "targetParameterIds": []string{"location", "rating"}}},
				{"name": "location", "type": "TEXT"}, {"name": "rating", "type": "TEXT"},
				{"name": "result", "type": "TEXT", "advancedOptions": map[string]any{"insertOnEntity": "InspectionLog"}},
			}},
		}}, 201).JSON()

		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"serial": "A-1", "result": "ok"}}, 201).JSON()
		values := actionValues(m)
		if values["location"] != "Hall 3" || values["rating"] != "12.5" {
			t.Fatalf("read from the entity: %v", values)
		}
		if mapping := m["readFromEntityMapping"].(map[string]any); len(mapping["actions"].(map[string]any)) != 1 || mapping["entity"].(map[string]any)[asset["id"].(string)] == nil {
			t.Fatalf("mapping: %v", mapping)
		}
		manip := m["entityManipulations"].([]any)
		if m["isStepConsensed"] != true || len(manip) != 1 || manip[0].(map[string]any)["entityId"] != log["id"] {
			t.Fatalf("manipulations: %v", manip)
		}
		recs := env.Call(get, "/v1/entities/"+log["id"].(string)+"/records", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(recs) != 1 || fmt.Sprint(recs[0].(map[string]any)["values"]) != "map[location:Hall 3 result:ok serial:A-1]" {
			t.Fatalf("written record: %v", recs)
		}
		// An origin value no record has is refused, and nothing is written.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
			Body: map[string]any{"processUuid": p["id"], "parameters": map[string]any{"serial": "Z-9"}}}), 422, "parameters.serial")
		if n := env.Call(get, "/v1/entities/"+log["id"].(string)+"/records", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 1.0 {
			t.Fatalf("%v log records after a refused action", n)
		}
	})
}

func TestDisplayValues(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Purchase", "steps": []map[string]any{
		{"label": "Quote", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
			{"name": "price", "type": "NUMBER", "decimals": 2, "advancedOptions": map[string]any{"locale": "pt-BR", "currency": "USD"}},
			{"name": "due", "type": "DATE", "advancedOptions": map[string]any{"dateFormat": "dd/MM/yyyy"}},
		}},
	}}, 201).JSON()
	m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
		"parameters": map[string]any{"price": 1234.5, "due": "2026-03-01"}}, 201).JSON()
	got := map[string]string{}
	for _, d := range m["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)["data"].([]any) {
		item := d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)
		got[item["value"].(string)] = item["displayValue"].(string)
	}
	if got["1234.5"] != "US$\u00a01.234,50" || got["2026-03-01"] != "01/03/2026" {
		t.Fatalf("display values: %q", got)
	}
}

func TestReadFromOtherMeasurement(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		vendor := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Vendor onboarding", "steps": []map[string]any{
			{"label": "Register", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "taxId", "type": "TEXT"}, {"name": "bank", "type": "TEXT"}}},
		}}, 201).JSON()
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": []map[string]any{
			{"label": "Order", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor onboarding", "searchFieldId": "nope"}}}},
		}}}), 422, "steps[0].parameters[0].readFromOtherMeasurementData.searchFieldId")
		purchase := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Purchase", "steps": []map[string]any{
			{"label": "Order", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor onboarding", "searchFieldId": "taxId",
					"selectedFields": []map[string]any{{"readParameterId": "bank", "writeParameterId": "payTo"}}}},
				{"name": "payTo", "type": "TEXT"},
			}},
		}}, 201).JSON()
		for _, bank := range []string{"Old Bank", "New Bank"} { // the latest wins
			env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": vendor["id"], "parameters": map[string]any{"taxId": "12.345", "bank": bank}}, 201)
		}
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": purchase["id"], "parameters": map[string]any{"vendor": "12.345"}}, 201).JSON()
		got := actionValues(m)
		if got["payTo"] != "New Bank" {
			t.Fatalf("filled: %v", got)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
			Body: map[string]any{"processUuid": purchase["id"], "parameters": map[string]any{"vendor": "99"}}}), 422, "parameters.vendor")

		// readParameterId: copy that field into this step's field of the same name.
		short := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Payment", "steps": []map[string]any{
			{"label": "Pay", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor onboarding", "searchFieldId": "taxId", "readParameterId": "bank"}},
				{"name": "bank", "type": "TEXT"}}}}}, 201).JSON()
		m = env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": short["id"], "parameters": map[string]any{"vendor": "12.345"}}, 201).JSON()
		if got := actionValues(m); got["bank"] != "New Bank" {
			t.Fatalf("shorthand: %v", got)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad2", "steps": []map[string]any{
			{"label": "Pay", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor onboarding", "searchFieldId": "taxId", "readParameterId": "bank"}}}}}}}),
			422, "steps[0].parameters[0].readFromOtherMeasurementData.readParameterId")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad3", "steps": []map[string]any{
			{"label": "Pay", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
				{"name": "rows", "type": "TABLE", "parameters": []map[string]any{{"name": "v", "type": "TEXT",
					"readFromOtherMeasurementData": map[string]any{"processId": "Vendor onboarding", "searchFieldId": "taxId"}}}}}}}}}),
			422, "steps[0].parameters[0].parameters[0].readFromOtherMeasurementData")
	})
}
