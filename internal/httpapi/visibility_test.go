package httpapi_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// seenValues are the values of every action of a measurement that key is
// shown, by parameter name.
func seenValues(t *testing.T, env *tu.Env, key, measurementID string) map[string]string {
	t.Helper()
	m := env.Call(get, "/v1/measurements/"+measurementID, key, nil, 200).JSON()
	return actionValues(m)
}

// actionValues are the values in a measurement answer, by parameter name.
func actionValues(m map[string]any) map[string]string {
	got := map[string]string{}
	for _, a := range m["process"].(map[string]any)["actions"].([]any) {
		for _, d := range a.(map[string]any)["data"].([]any) {
			item := d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)
			got[item["param"].(map[string]any)["name"].(string)] = item["value"].(string)
		}
	}
	return got
}

// The rules of semantics section 9, each through the API, as readers
// holding different policies see the same data.
func TestVisibility(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		work := []string{"measurement:read", "measurement:create", "action:write", "action:approve", "entity:read", "entity:write", "process:read"}
		for _, pol := range []map[string]any{
			{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": work},
			{"name": "HR", "roles": []string{"HR"}, "functions": work},
			{"name": "Secret", "roles": []string{"SECRET"}, "functions": []string{"entity:read"}},
			{"name": "Auditor", "roles": []string{"AUDITOR"}, "functions": []string{"measurement:read", "entity:read"}},
		} {
			env.Call(post, "/v1/users/policies", env.AdminKey, pol, 201)
		}
		_, insp := member(t, env, "insp@example.com", "INSPECTOR")
		_, hr := member(t, env, "hr@example.com", "INSPECTOR", "HR")
		_, hr2 := member(t, env, "hr2@example.com", "HR")
		_, secret := member(t, env, "secret@example.com", "INSPECTOR", "SECRET")
		_, aud := member(t, env, "aud@example.com", "AUDITOR")

		payroll := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Payroll", "vp": []string{"Secret"},
			"p": []map[string]any{{"n": "employee", "t": "TEXT", "isUnique": true}, {"n": "salary", "t": "NUMBER"}, {"n": "scan", "t": "ATTACHMENT"}}}, 201).JSON()
		records := "/v1/entities/" + payroll["id"].(string) + "/records"
		scan := upload(t, env, env.AdminKey, "file", "scan.pdf", []byte("%PDF-1.4 payroll")).JSON()["id"].(string)
		rec := env.Call(post, records, env.AdminKey, map[string]any{"values": map[string]any{"employee": "Ana", "salary": 5000, "scan": scan}}, 201).JSON()

		t.Run("an entity's view policies guard its records on every endpoint", func(t *testing.T) {
			for _, r := range []tu.Request{
				{Method: get, Path: records},
				{Method: get, Path: records + "/" + rec["id"].(string)},
				{Method: get, Path: "/v1/entities/" + payroll["id"].(string) + "/records:export"},
				{Method: post, Path: records, Body: map[string]any{"values": map[string]any{"employee": "Bo"}}},
				{Method: patch, Path: records + "/" + rec["id"].(string), Body: map[string]any{"values": map[string]any{"salary": 1}}},
				{Method: del, Path: records + "/" + rec["id"].(string)},
				{Method: post, Path: records + ":import", Body: []map[string]any{{"employee": "Cy"}}},
			} {
				r.Key = insp
				tu.Problem(t, env.Do(r), 403, "")
			}
			list := env.Call(get, records, secret, nil, 200).JSON()["data"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["values"].(map[string]any)["salary"] != 5000.0 {
				t.Fatalf("a holder of Secret reads: %v", list)
			}
			csv := env.Call(get, "/v1/entities/"+payroll["id"].(string)+"/records:export", secret, nil, 200)
			if !bytes.Contains(csv.Body, []byte("5000")) {
				t.Fatalf("export: %s", csv.Body)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records`); n != 1 {
				t.Fatalf("%d records after refused writes", n)
			}
		})

		t.Run("hiddenFrom leaves a parameter's values out for holders of the policy", func(t *testing.T) {
			p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Audit trail", "steps": []map[string]any{
				{"label": "Note", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
					{"name": "finding", "type": "TEXT"},
					{"name": "remark", "type": "TEXT", "advancedOptions": map[string]any{"hiddenFrom": []string{"Auditor"}}},
					{"name": "echo", "type": "FORMULA", "computedFormula": []string{"remark"}},
				}},
			}}, 201).JSON()
			m := env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": p["id"],
				"parameters": map[string]any{"finding": "crack", "remark": "supplier at fault"}}, 201).JSON()
			if got := actionValues(m); got["remark"] != "supplier at fault" || got["echo"] != "supplier at fault" {
				t.Fatalf("the writer sees: %v", got)
			}
			got := seenValues(t, env, aud, m["id"].(string))
			if got["finding"] != "crack" || got["remark"] != "" || got["echo"] != "" {
				t.Fatalf("an Auditor sees: %v", got)
			}
			if got := seenValues(t, env, env.AdminKey, m["id"].(string)); got["remark"] == "" {
				t.Fatalf("ADMIN sees: %v", got)
			}
			// A renamed policy is followed by hiddenFrom, and still hides.
			var auditor string
			for _, pol := range env.Call(get, "/v1/users/policies", env.AdminKey, nil, 200).JSON()["data"].([]any) {
				if pol := pol.(map[string]any); pol["name"] == "Auditor" {
					auditor = pol["id"].(string)
				}
			}
			env.Call(patch, "/v1/users/policies/"+auditor, env.AdminKey, map[string]any{"name": "Auditors"}, 200)
			step := env.Call(get, "/v1/process/"+p["id"].(string), env.AdminKey, nil, 200).JSON()["steps"].([]any)[0].(map[string]any)
			if hf := step["parameters"].([]any)[1].(map[string]any)["advancedOptions"].(map[string]any)["hiddenFrom"].([]any); len(hf) != 1 || hf[0] != "Auditors" {
				t.Fatalf("hiddenFrom after the rename: %v", hf)
			}
			if got := seenValues(t, env, aud, m["id"].(string)); got["remark"] != "" {
				t.Fatalf("after the rename an Auditor sees: %v", got)
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Typo", "steps": []map[string]any{
				{"label": "S", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
					{"name": "x", "type": "TEXT", "advancedOptions": map[string]any{"hiddenFrom": []string{"Ghost"}}}}}}}}),
				422, "steps[0].parameters[0].advancedOptions.hiddenFrom[0]")
		})

		t.Run("a hidden TABLE column is left out of the measurements export too", func(t *testing.T) {
			auditor := "" // the policy's name now (a subtest above renames it)
			for _, pol := range env.Call(get, "/v1/users/policies", env.AdminKey, nil, 200).JSON()["data"].([]any) {
				if pol := pol.(map[string]any); pol["roles"].([]any)[0] == "AUDITOR" {
					auditor = pol["name"].(string)
				}
			}
			p := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Readings", "steps": []map[string]any{
				{"label": "Read", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
					{"name": "rows", "type": "TABLE", "parameters": []map[string]any{
						{"name": "gauge", "type": "TEXT"},
						{"name": "cost", "type": "TEXT", "advancedOptions": map[string]any{"hiddenFrom": []string{auditor}}},
					}},
				}},
			}}, 201).JSON()
			env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": p["id"],
				"parameters": map[string]any{"rows": []map[string]any{{"gauge": "G-7 visible", "cost": "unit cost 913"}}}}, 201)
			for _, format := range []string{"csv", "xlsx"} {
				path := "/v1/measurements:export?processId=" + p["id"].(string) + "&format=" + format
				body := string(env.Call(get, path, aud, nil, 200).Body)
				if format == "xlsx" {
					body = xlsxText(t, []byte(body))
				}
				if !strings.Contains(body, "gauge") || !strings.Contains(body, "G-7 visible") || strings.Contains(body, "913") || strings.Contains(body, "cost") {
					t.Fatalf("%s export to an Auditor: %s", format, body)
				}
				if body := string(env.Call(get, path, insp, nil, 200).Body); format == "csv" && !strings.Contains(body, "913") {
					t.Fatalf("the writer's export lacks the cost: %s", body)
				}
			}
		})

		// Two steps: HR's salary (seen by HR only) and the inspector's check,
		// whose formula reads the salary.
		review := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Review", "steps": []map[string]any{
			{"label": "Pay", "policyNames": []string{"HR"}, "viewPolicyNames": []string{"HR"}, "parameters": []map[string]any{
				{"name": "salary", "type": "NUMBER"}, {"name": "contract", "type": "ATTACHMENT"}}},
			{"label": "Check", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
				{"name": "note", "type": "TEXT"}, {"name": "bonus", "type": "FORMULA", "computedFormula": []string{"salary", "+", "0"}}}},
		}}, 201).JSON()
		contract := upload(t, env, hr, "file", "contract.pdf", []byte("%PDF-1.4 contract")).JSON()["id"].(string)
		m := env.Call(post, "/v1/measurements/simplified", hr, map[string]any{"processUuid": review["id"],
			"parameters": map[string]any{"salary": 5000, "contract": contract}}, 201).JSON()
		mid := m["id"].(string)
		check := m["process"].(map[string]any)["steps"].([]any)[1].(map[string]any)["id"].(string)
		env.Call(post, "/v1/measurements/"+mid+"/actions", insp, map[string]any{"stepId": check, "type": "WRITE_DATA", "parameters": map[string]any{"note": "ok"}}, 201)

		t.Run("a formula carries the visibility of its inputs", func(t *testing.T) {
			got := seenValues(t, env, insp, mid)
			if got["note"] != "ok" || got["salary"] != "" || got["bonus"] != "" {
				t.Fatalf("the inspector sees: %v", got)
			}
			if got := seenValues(t, env, hr, mid); got["salary"] != "5000" || got["bonus"] != "5000" {
				t.Fatalf("HR sees: %v", got)
			}
		})

		t.Run("attachments go to their uploader and to readers who see a value referring to them", func(t *testing.T) {
			download := func(key, id string) int {
				return env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + id, Key: key}).Status
			}
			for _, c := range []struct {
				who, key, id string
				want         int
			}{
				{"the uploader", hr, contract, 200},
				{"another HR reader", hr2, contract, 200},
				{"ADMIN", env.AdminKey, contract, 200},
				{"a reader the step is hidden from", insp, contract, 404},
				{"a reader of the payroll records", secret, scan, 200},
				{"a reader who may not read the records", insp, scan, 404},
			} {
				if got := download(c.key, c.id); got != c.want {
					t.Errorf("%s: %d, want %d", c.who, got, c.want)
				}
			}
		})

		t.Run("readFromOtherMeasurementData copies no value to a reader who could not see it, and is no oracle", func(t *testing.T) {
			vendor := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Vendor", "steps": []map[string]any{
				{"label": "Register", "policyNames": []string{"HR"}, "viewPolicyNames": []string{"HR"}, "parameters": []map[string]any{
					{"name": "taxId", "type": "TEXT"}, {"name": "bank", "type": "TEXT"}}},
			}}, 201).JSON()
			purchase := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Purchase", "steps": []map[string]any{
				{"label": "Order", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
					{"name": "vendor", "type": "TEXT", "readFromOtherMeasurementData": map[string]any{"processId": "Vendor", "searchFieldId": "taxId",
						"selectedFields": []map[string]any{{"readParameterId": "bank", "writeParameterId": "payTo"}}}},
					{"name": "payTo", "type": "TEXT"},
				}},
			}}, 201).JSON()
			env.Call(post, "/v1/measurements/simplified", hr, map[string]any{"processUuid": vendor["id"], "parameters": map[string]any{"taxId": "12.345", "bank": "Secret Bank"}}, 201)

			hit := env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": purchase["id"], "parameters": map[string]any{"vendor": "12.345"}}, 201).JSON()
			miss := env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": purchase["id"], "parameters": map[string]any{"vendor": "99"}}, 201).JSON()
			for _, got := range []map[string]string{actionValues(hit), actionValues(miss), seenValues(t, env, insp, hit["id"].(string))} {
				if got["payTo"] != "" {
					t.Fatalf("the inspector sees the copied value: %v", got)
				}
			}
			if got := seenValues(t, env, hr, hit["id"].(string)); got["payTo"] != "Secret Bank" {
				t.Fatalf("HR sees: %v", got)
			}
			// One who sees the searched field still learns that nothing matches.
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: hr,
				Body: map[string]any{"processUuid": purchase["id"], "parameters": map[string]any{"vendor": "99"}}}), 422, "parameters.vendor")
		})

		t.Run("readFromEntity values go to readers of the entity's records only", func(t *testing.T) {
			slip := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Slip", "steps": []map[string]any{
				{"label": "Fill", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
					{"name": "employee", "type": "TEXT", "readFromEntity": map[string]any{"entityId": "Payroll", "readParameterId": "employee", "targetParameterIds": []string{"salary"}}},
					{"name": "salary", "type": "NUMBER"}}},
			}}, 201).JSON()
			m := env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": slip["id"], "parameters": map[string]any{"employee": "Ana"}}, 201).JSON()
			if got := actionValues(m); got["employee"] != "Ana" || got["salary"] != "" {
				t.Fatalf("the inspector sees: %v", got)
			}
			if mapping := m["readFromEntityMapping"].(map[string]any); len(mapping["entity"].(map[string]any)) != 0 {
				t.Fatalf("the inspector is told which record matched: %v", mapping)
			}
			if got := seenValues(t, env, secret, m["id"].(string)); got["salary"] != "5000" {
				t.Fatalf("a reader of Payroll sees: %v", got)
			}
			env.Call(post, "/v1/measurements/simplified", insp, map[string]any{"processUuid": slip["id"], "parameters": map[string]any{"employee": "Nobody"}}, 201)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: secret,
				Body: map[string]any{"processUuid": slip["id"], "parameters": map[string]any{"employee": "Nobody"}}}), 422, "parameters.employee")
		})

		t.Run("a user without roles can neither upload nor download others' files", func(t *testing.T) {
			uid, bare := member(t, env, "bare@example.com", "INSPECTOR")
			env.Call(post, "/v1/roles/revoke", env.AdminKey, map[string]any{"userId": uid, "role": "INSPECTOR"}, 200)
			tu.Problem(t, upload(t, env, bare, "file", "x.txt", []byte("hi")), 403, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + scan, Key: bare}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + contract, Key: bare}), 404, "")
		})
	})
}

// xlsxText is the text of every cell of a workbook's first sheet.
func xlsxText(t *testing.T, b []byte) string {
	t.Helper()
	f, err := excelize.OpenReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.GetRows(f.GetSheetName(0))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r, "\t"))
	}
	return strings.Join(out, "\n")
}

// A value hidden from a reader in data stays hidden wherever it could
// travel: a TABLE column of a record (answers, export, its files), a
// step field filled from it (readFromEntity, autoFillEntityRelation), and
// a lookup by it, which must not say whether a guess matched.
func TestHiddenDataStaysHidden(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		work := []string{"measurement:read", "measurement:create", "action:write", "action:approve", "entity:read", "process:read"}
		for _, name := range []string{"Staff", "Restricted"} {
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": name, "roles": []string{strings.ToUpper(name)}, "functions": work}, 201)
		}
		_, eve := member(t, env, "eve@example.com", "STAFF", "RESTRICTED")
		_, sam := member(t, env, "sam@example.com", "STAFF")
		hide := map[string]any{"hiddenFrom": []string{"Restricted"}}
		emp := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "employee", "parameters": []map[string]any{
			{"name": "name", "type": "TEXT", "isUnique": true},
			{"name": "salary", "type": "NUMBER", "advancedOptions": hide},
			{"name": "items", "type": "TABLE", "parameters": []map[string]any{
				{"name": "item", "type": "TEXT"}, {"name": "cost", "type": "NUMBER", "advancedOptions": hide}, {"name": "receipt", "type": "ATTACHMENT", "advancedOptions": hide}}},
		}}, 201).JSON()
		records := "/v1/entities/" + emp["id"].(string) + "/records"
		receipt := upload(t, env, env.AdminKey, "file", "receipt.pdf", []byte("%PDF-1.4 1999")).JSON()["id"].(string)
		env.Call(post, records, env.AdminKey, map[string]any{"values": map[string]any{"name": "bob", "salary": 5000,
			"items": []map[string]any{{"item": "laptop", "cost": 1999, "receipt": receipt}}}}, 201)

		t.Run("a TABLE column of a record", func(t *testing.T) {
			got := env.Call(get, records, eve, nil, 200).JSON()["data"].([]any)[0].(map[string]any)["values"].(map[string]any)
			if row := got["items"].([]any)[0].(map[string]any); row["cost"] != nil || row["receipt"] != nil || row["item"] != "laptop" || got["salary"] != nil {
				t.Fatalf("eve reads %v", got)
			}
			if csv := env.Call(get, "/v1/entities/"+emp["id"].(string)+"/records:export", eve, nil, 200); bytes.Contains(csv.Body, []byte("1999")) {
				t.Fatalf("eve's export: %s", csv.Body)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/attachments/" + receipt, Key: eve}), 404, "")
			row := env.Call(get, records, sam, nil, 200).JSON()["data"].([]any)[0].(map[string]any)["values"].(map[string]any)["items"].([]any)[0].(map[string]any)
			if row["cost"] != 1999.0 {
				t.Fatalf("sam reads %v", row)
			}
		})

		t.Run("step fields filled from it, and lookups by it", func(t *testing.T) {
			env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Lookup", "steps": []map[string]any{{"label": "Look", "policyNames": []string{"Staff"}, "parameters": []map[string]any{
				{"name": "who", "type": "TEXT", "readFromEntity": map[string]any{"entityId": "employee", "originParameterId": "who", "readParameterId": "name", "targetParameterIds": []string{"salary"}}},
				{"name": "salary", "type": "NUMBER"},
				{"name": "bonus", "type": "FORMULA", "computedFormula": []string{"salary", "*", "2"}},
				{"name": "emp", "type": "ENTITY", "entityId": "employee"},
				{"name": "pay", "type": "NUMBER", "autoFillEntityRelation": "emp", "advancedOptions": map[string]any{"entityParameterId": "salary"}},
				{"name": "guess", "type": "NUMBER", "readFromEntity": map[string]any{"entityId": "employee", "originParameterId": "guess", "readParameterId": "salary", "targetParameterIds": []string{"name"}}},
				{"name": "name", "type": "TEXT"},
			}}}}, 201)
			bob := env.Call(get, records, sam, nil, 200).JSON()["data"].([]any)[0].(map[string]any)["id"]
			m := env.Call(post, "/v1/measurements/simplified", eve, map[string]any{"processLabel": "Lookup", "parameters": map[string]any{"who": "bob", "emp": bob}}, 201).JSON()
			if got := seenValues(t, env, eve, m["id"].(string)); got["salary"] != "" || got["bonus"] != "" || got["pay"] != "" || got["who"] != "bob" {
				t.Fatalf("eve sees %v", got)
			}
			if got := seenValues(t, env, sam, m["id"].(string)); got["salary"] != "5000" || got["pay"] != "5000" {
				t.Fatalf("sam sees %v", got)
			}
			// A guess of bob's salary: right or wrong, eve is answered alike.
			for _, guess := range []int{4000, 5000} {
				m := env.Call(post, "/v1/measurements/simplified", eve, map[string]any{"processLabel": "Lookup", "parameters": map[string]any{"guess": guess}}, 201).JSON()
				if got := seenValues(t, env, eve, m["id"].(string)); got["name"] != "" {
					t.Fatalf("eve's guess %d tells her %v", guess, got)
				}
			}
		})

		t.Run("a document printing a TABLE's hidden column", func(t *testing.T) {
			tpl := env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Deal", "body": "# Deal\n\n{{param lines}}"}, 201).JSON()
			env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Deal", "steps": []map[string]any{{"label": "Sign", "policyNames": []string{"Staff"}, "parameters": []map[string]any{
				{"name": "lines", "type": "TABLE", "parameters": []map[string]any{{"name": "item", "type": "TEXT"}, {"name": "cost", "type": "NUMBER", "advancedOptions": hide}}},
				{"name": "doc", "type": "TEXT", "contractTemplateId": tpl["id"]}}}}}, 201)
			m := env.Call(post, "/v1/measurements/simplified", sam, map[string]any{"processLabel": "Deal", "parameters": map[string]any{
				"lines": []map[string]any{{"item": "car", "cost": 31337}}}}, 201).JSON()
			docs := env.Call(get, "/v1/measurements/"+m["id"].(string)+"/documents", sam, nil, 200).JSON()["data"].([]any)
			if len(docs) != 1 {
				t.Fatalf("sam's documents: %v", docs)
			}
			id := docs[0].(map[string]any)["id"].(string)
			if d := env.Call(get, "/v1/documents/"+id, sam, nil, 200); !bytes.Contains(d.Body, []byte("31")) {
				t.Fatalf("the signatory's document lacks the cost: %s", d.Body)
			}
			if docs := env.Call(get, "/v1/measurements/"+m["id"].(string)+"/documents", eve, nil, 200).JSON()["data"].([]any); len(docs) != 0 {
				t.Fatalf("eve is listed a document printing a value hidden from her: %v", docs)
			}
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/documents/" + id, Key: eve}), 404, "")
		})

		t.Run("hidden in a later version", func(t *testing.T) {
			proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Pay", "steps": []map[string]any{{"label": "Pay", "policyNames": []string{"Staff"},
				"parameters": []map[string]any{{"name": "who", "type": "TEXT"}, {"name": "amount", "type": "NUMBER"}, {"name": "twice", "type": "FORMULA", "computedFormula": []string{"amount", "*", "2"}}}}}}, 201).JSON()
			m := env.Call(post, "/v1/measurements/simplified", sam, map[string]any{"processLabel": "Pay", "parameters": map[string]any{"who": "bob", "amount": 5000}}, 201).JSON()
			if got := seenValues(t, env, eve, m["id"].(string)); got["amount"] != "5000" {
				t.Fatalf("before the change eve sees %v", got)
			}
			st := steps(proc)[0]
			st["parameters"].([]any)[1].(map[string]any)["advancedOptions"] = hide
			if v := env.Call(patch, "/v1/process/"+proc["id"].(string), env.AdminKey, map[string]any{"steps": []any{st}}, 200).JSON()["version"]; v != 2.0 {
				t.Fatalf("the change made version %v", v)
			}
			if got := seenValues(t, env, eve, m["id"].(string)); got["amount"] != "" || got["twice"] != "" || got["who"] != "bob" {
				t.Fatalf("a value of version 1 hidden from eve since version 2: she sees %v", got)
			}
			if got := seenValues(t, env, sam, m["id"].(string)); got["amount"] != "5000" {
				t.Fatalf("sam sees %v", got)
			}
		})

		t.Run("a lookup of another measurement by a hidden field", func(t *testing.T) {
			env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Source", "steps": []map[string]any{{"label": "Record", "policyNames": []string{"Staff"}, "parameters": []map[string]any{
				{"name": "code", "type": "TEXT"}, {"name": "secret", "type": "NUMBER", "advancedOptions": hide}}}}}, 201)
			env.Call(post, "/v1/measurements/simplified", sam, map[string]any{"processLabel": "Source", "parameters": map[string]any{"code": "alpha", "secret": 42}}, 201)
			env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Target", "steps": []map[string]any{{"label": "Find", "policyNames": []string{"Staff"}, "parameters": []map[string]any{
				{"name": "guess", "type": "NUMBER", "readFromOtherMeasurementData": map[string]any{"processId": "Source", "searchFieldId": "secret",
					"selectedFields": []map[string]any{{"readParameterId": "code", "writeParameterId": "code"}}}},
				{"name": "code", "type": "TEXT"}}}}}, 201)
			m := env.Call(post, "/v1/measurements/simplified", eve, map[string]any{"processLabel": "Target", "parameters": map[string]any{"guess": 42}}, 201).JSON()
			if got := seenValues(t, env, eve, m["id"].(string)); got["code"] != "" {
				t.Fatalf("eve's right guess tells her %v", got)
			}
			if got := seenValues(t, env, sam, m["id"].(string)); got["code"] != "alpha" {
				t.Fatalf("sam sees %v", got)
			}
		})
	})
}
