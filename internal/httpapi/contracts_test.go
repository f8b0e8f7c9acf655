package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pdfcontract "wps/internal/contract"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// person invites email with roles, accepts with a name, and returns the
// user's id and key.
func person(t *testing.T, env *tu.Env, name, email string, roles ...string) (string, string) {
	t.Helper()
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	acc := env.Call(post, "/v1/invites/accept", "", map[string]any{"token": inv["token"], "name": name}, 201).JSON()
	return acc["user"].(map[string]any)["id"].(string), acc["apiKey"].(map[string]any)["key"].(string)
}

// procurement is a purchase flow: a request naming a supplier (an entity
// record), an approval by a buyer and finance that renders the supply
// contract, and the receipt, whose rejection re-opens the approval.
type procurement struct {
	env                 *tu.Env
	bia, fin, aud       string // keys: buyer, finance, auditor
	supplier, record    string
	template            map[string]any
	process             map[string]any
	request, approve    string
	receive             string
	measurement, name   string
	biaApproval, finApp map[string]any
}

const supplyBody = `# Contrato de fornecimento {{measurement.name}}

Entre {{process.name}} e {{entity name}} (CNPJ {{entity taxId}}), com sede em {{entity city}}.

## Objeto

Fornecimento de {{param item}}: {{param quantity}} unidades por {{param price}}.
Observações: {{param notes}}
Centro de custo: {{param budgetCode}}

Data: {{date}}`

func newProcurement(t *testing.T, env *tu.Env) *procurement {
	t.Helper()
	pr := &procurement{env: env}
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove", "entity:read"}
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Buyer", "roles": []string{"BUYER"}, "functions": fns}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Finance", "roles": []string{"FINANCE"}, "functions": fns}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Auditor", "roles": []string{"AUDITOR"}, "functions": []string{"measurement:read"}}, 201)
	_, pr.bia = person(t, env, "Beatriz Araújo", "bia@example.com", "BUYER")
	_, pr.fin = person(t, env, "João Finanças", "joao@example.com", "FINANCE")
	_, pr.aud = person(t, env, "Ana Auditora", "ana@example.com", "AUDITOR")

	pr.supplier = env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Supplier", "parameters": []map[string]any{
		{"name": "name", "type": "TEXT"}, {"name": "taxId", "type": "TEXT"}, {"name": "city", "type": "TEXT"}}}, 201).JSON()["id"].(string)
	pr.record = env.Call(post, "/v1/entities/"+pr.supplier+"/records", env.AdminKey, map[string]any{"values": map[string]any{
		"name": "Fornecedora São João Ltda.", "taxId": "12.345.678/0001-90", "city": "São Paulo"}}, 201).JSON()["id"].(string)
	pr.template = env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Supply contract", "body": supplyBody,
		"templateEntityId": "Supplier"}, 201).JSON()
	pr.process = env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Procurement", "code": "PROC", "steps": []map[string]any{
		{"label": "Request", "policyNames": []string{"Buyer"}, "parameters": []map[string]any{
			{"name": "supplier", "type": "ENTITY", "entityId": "Supplier", "isRequired": true},
			{"name": "item", "type": "TEXT", "isRequired": true},
			{"name": "quantity", "type": "INT"},
			{"name": "price", "type": "NUMBER", "decimals": 2, "advancedOptions": map[string]any{"currency": "BRL", "locale": "pt-BR"}},
			{"name": "notes", "type": "LONG_TEXT", "advancedOptions": map[string]any{"hiddenFrom": []string{"Auditor"}}},
			{"name": "budgetCode", "type": "TEXT", "advancedOptions": map[string]any{"hiddenFrom": []string{"Finance"}}},
		}},
		{"label": "Approve", "policyNames": []string{"Buyer", "Finance"}, "legalContractId": "Supply contract"},
		{"label": "Receive", "policyNames": []string{"Buyer"}, "stepIdsReprovalDependencies": []string{"Approve"}},
	}}, 201).JSON()
	ids := map[string]string{}
	for _, st := range steps(pr.process) {
		ids[st["label"].(string)] = st["id"].(string)
	}
	pr.request, pr.approve, pr.receive = ids["Request"], ids["Approve"], ids["Receive"]
	if got := steps(pr.process)[1]["legalContractId"]; got != pr.template["id"] {
		t.Fatalf("legalContractId by name was stored as %v, want the template's id", got)
	}
	return pr
}

// start creates a measurement with the request written.
func (pr *procurement) start(t *testing.T) {
	t.Helper()
	m := pr.env.Call(post, "/v1/measurements/simplified", pr.bia, map[string]any{"processLabel": "Procurement", "parameters": map[string]any{
		"supplier": pr.record, "item": "Parafusos inox", "quantity": 500, "price": 1234.5, "notes": "Entrega em até 10 dias úteis; שלום",
		"budgetCode": "CC-42"}}, 201).JSON()
	pr.measurement, pr.name = m["id"].(string), m["name"].(string)
}

func (pr *procurement) act(t *testing.T, key, step, typ string) map[string]any {
	t.Helper()
	body := map[string]any{"stepId": step, "type": typ}
	if typ == "REJECTION" {
		body["observation"] = "wrong quantity"
	}
	return pr.env.Call(post, "/v1/measurements/"+pr.measurement+"/actions", key, body, 201).JSON()
}

// approve has both seats of Approve filled: the second reaches consensus.
func (pr *procurement) approveBoth(t *testing.T) {
	t.Helper()
	pr.env.Clock.Advance(time.Minute)
	pr.biaApproval = pr.act(t, pr.bia, pr.approve, "APPROVAL")
	pr.env.Clock.Advance(time.Minute)
	pr.finApp = pr.act(t, pr.fin, pr.approve, "APPROVAL")
}

func (pr *procurement) documents(t *testing.T, key string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range pr.env.Call(get, "/v1/measurements/"+pr.measurement+"/documents", key, nil, 200).JSON()["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func (pr *procurement) content(t *testing.T, key, id string) []byte {
	t.Helper()
	res := pr.env.Call(get, "/v1/documents/"+id+"/content", key, nil, 200)
	if ct := res.Header.Get("Content-Type"); ct != "application/pdf" {
		t.Fatalf("content type %q", ct)
	}
	return res.Body
}

// verify verifies a document, rendering it again.
func (pr *procurement) verify(t *testing.T, id string) map[string]any {
	t.Helper()
	return pr.env.Call(get, "/v1/documents/"+id+"/verify?rerender=true", pr.bia, nil, 200).JSON()
}

// flat is text with its lines joined and its spaces collapsed: what a
// paragraph says, wherever its lines break.
func flat(text string) string { return strings.Join(strings.Fields(text), " ") }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestContractProcurement(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		pr := newProcurement(t, env)
		pr.start(t)
		if docs := pr.documents(t, pr.bia); len(docs) != 0 {
			t.Fatalf("documents before the consensus: %v", docs)
		}
		pr.approveBoth(t)

		// 1. One document, for the Approve step, from version 1 of the template.
		docs := pr.documents(t, pr.bia)
		if len(docs) != 1 {
			t.Fatalf("documents after the consensus: %v", docs)
		}
		d := docs[0]
		if d["stepId"] != pr.approve || d["templateId"] != pr.template["id"] || d["templateVersion"] != 1.0 || d["superseded"] != false ||
			d["actionId"] != pr.finApp["id"] || d["createdAt"] != "2026-01-05T09:02:00.000Z" || len(d["sha256"].(string)) != 64 {
			t.Fatalf("document: %v", d)
		}
		if _, has := d["parameterId"]; has {
			t.Fatalf("a step's contract has a parameterId: %v", d)
		}
		pdf := pr.content(t, pr.bia, d["id"].(string))
		if sha(pdf) != d["sha256"] || float64(len(pdf)) != d["size"] {
			t.Fatalf("content: sha256 %s size %d, listed %v %v", sha(pdf), len(pdf), d["sha256"], d["size"])
		}

		// 2. Its text: the values visible to both signatories, and the signature page.
		text := flat(tu.PDFText(t, pdf))
		for _, want := range []string{
			"Contrato de fornecimento " + pr.name,
			"Entre Procurement e Fornecedora São João Ltda. (CNPJ 12.345.678/0001-90), com sede em São Paulo.",
			"Fornecimento de Parafusos inox: 500 unidades por R$ 1.234,50.",
			"Observações: Entrega em até 10 dias úteis;",
			"Centro de custo: [not shown: hidden from a signatory]", // hidden from Finance
			"Data: 2026-01-05",
			"Signatures",
			"Step “Approve” of " + pr.name + " (Procurement) reached consensus at 2026-01-05T09:02:00.000Z.",
			"Seat 1: Buyer", "Signed by: Beatriz Araújo <bia@example.com>", "At: 2026-01-05T09:01:00.000Z",
			"Action: " + pr.biaApproval["id"].(string), "Ledger hash: " + pr.biaApproval["ledgerHash"].(string),
			"Seat 2: Finance", "Signed by: João Finanças <joao@example.com>", "At: 2026-01-05T09:02:00.000Z",
			"Action: " + pr.finApp["id"].(string), "Ledger hash: recorded with this document",
			"Document " + d["id"].(string) + " · page 1 of 2",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the contract lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "CC-42") {
			t.Errorf("the contract shows a value hidden from a signatory:\n%s", text)
		}

		// 3. The hash is in the ledger: a leaf of its own, queued with the
		// consensus (integrated into the log by the integrator).
		recorded := func(table string) int {
			return env.RawInt(`SELECT count(*) FROM `+table+` WHERE kind = 'document' AND measurement_id = ? AND payload LIKE ?`,
				d["measurementId"], `%"subjectId":"`+d["id"].(string)+`","sha256":"`+d["sha256"].(string)+`"%`)
		}
		if n := recorded("ledger_pending") + recorded("ledger_leaves"); n != 1 {
			t.Fatalf("the ledger has %d records of the document's hash", n)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("ledger: %v", rep)
		}
		v := pr.verify(t, d["id"].(string))
		if v["ok"] != true || v["sha256"] != d["sha256"] || v["recorded"] != d["sha256"] || v["stored"] != d["sha256"] ||
			v["ledgerIntact"] != true || v["rerendered"] != true || v["actionId"] != pr.finApp["id"] || v["ledgerHash"] != pr.finApp["ledgerHash"] {
			t.Fatalf("verify: %v", v)
		}

		// 4. Anyone can render it again from the template's version and the
		// document's inputs: the same bytes.
		detail := env.Call(get, "/v1/documents/"+d["id"].(string), pr.bia, nil, 200).JSON()
		var in pdfcontract.Inputs
		raw, _ := json.Marshal(detail["inputs"])
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		body := env.Call(get, fmt.Sprintf("/v1/contract-templates/%s?version=1", pr.template["id"]), env.AdminKey, nil, 200).JSON()["body"].(string)
		again, err := pdfcontract.Render(body, in)
		if err != nil || string(again) != string(pdf) {
			t.Fatalf("rendering again gave other bytes (%v)", err)
		}

		// 5. Section 9: the auditor, from whom the notes it shows are
		// hidden, gets no document; an admin does.
		if docs := pr.documents(t, pr.aud); len(docs) != 0 {
			t.Fatalf("the auditor sees %v", docs)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/documents/" + d["id"].(string) + "/content", Key: pr.aud}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/documents/" + d["id"].(string) + "/verify", Key: pr.aud}), 404, "")
		pr.content(t, env.AdminKey, d["id"].(string))

		// 6. The template changes after use: a new version; the document keeps its own.
		upd := env.Call(patch, "/v1/contract-templates/"+pr.template["id"].(string), env.AdminKey, map[string]any{
			"body": strings.Replace(supplyBody, "## Objeto", "## Objeto do contrato", 1)}, 200).JSON()
		if upd["version"] != 2.0 || upd["inUse"] != false {
			t.Fatalf("edited template: %v", upd)
		}
		if versions := env.Call(get, "/v1/contract-templates/"+pr.template["id"].(string)+"/versions", env.AdminKey, nil, 200).JSON()["data"].([]any); len(versions) != 2 ||
			versions[1].(map[string]any)["inUse"] != true || versions[1].(map[string]any)["body"] != supplyBody {
			t.Fatalf("versions: %v", versions)
		}

		// 7. Rework: the receipt is rejected, Approve re-opens and its
		// document is superseded; the next consensus renders a new one.
		pr.act(t, pr.bia, pr.receive, "REJECTION")
		docs = pr.documents(t, pr.bia)
		if len(docs) != 1 || docs[0]["superseded"] != true {
			t.Fatalf("after the rejection: %v", docs)
		}
		pr.approveBoth(t)
		docs = pr.documents(t, pr.bia)
		if len(docs) != 2 || docs[0]["id"] != d["id"] || docs[0]["superseded"] != true || docs[1]["superseded"] != false ||
			docs[1]["templateVersion"] != 2.0 || docs[1]["actionId"] != pr.finApp["id"] {
			t.Fatalf("after the second consensus: %v", docs)
		}
		if text := flat(tu.PDFText(t, pr.content(t, pr.bia, docs[1]["id"].(string)))); !strings.Contains(text, "Objeto do contrato") ||
			!strings.Contains(text, "Action: "+pr.biaApproval["id"].(string)) {
			t.Fatalf("the second contract:\n%s", text)
		}
		// A reproval of the finance approval re-opens Approve too.
		env.Call(post, "/v1/actions/"+pr.finApp["id"].(string)+"/reprove", pr.bia, map[string]any{"observation": "price changed"}, 201)
		docs = pr.documents(t, pr.bia)
		if len(docs) != 2 || docs[1]["superseded"] != true {
			t.Fatalf("after the reproval: %v", docs)
		}
		pr.approveBoth(t)
		docs = pr.documents(t, pr.bia)
		if len(docs) != 3 || docs[2]["superseded"] != false || docs[2]["actionId"] != pr.finApp["id"] {
			t.Fatalf("after the third consensus: %v", docs)
		}
		if v := pr.verify(t, docs[1]["id"].(string)); v["ok"] != true {
			t.Fatalf("a superseded document still verifies: %v", v)
		}

		// 8. A changed file is detected.
		tampered := append([]byte{}, pdf...)
		copy(tampered[len(tampered)/2:], "tampered")
		env.RawExec(`UPDATE documents SET content = ? WHERE id = ?`, tampered, d["id"])
		v = pr.verify(t, d["id"].(string))
		if v["ok"] != false || v["sha256"] != sha(tampered) || v["recorded"] != d["sha256"] || v["rerendered"] != false ||
			!strings.Contains(fmt.Sprint(v["reasons"]), "not the ones the ledger recorded") {
			t.Fatalf("verify after tampering: %v", v)
		}
		// So is a ledger record changed to match it.
		for _, table := range []string{"ledger_pending", "ledger_leaves"} {
			env.RawExec(`UPDATE `+table+` SET payload = REPLACE(payload, ?, ?) WHERE kind = 'document'`, d["sha256"], sha(tampered))
		}
		v = pr.verify(t, d["id"].(string))
		if v["ok"] != false || v["recorded"] != sha(tampered) || v["ledgerIntact"] != false {
			t.Fatalf("verify after tampering with the ledger too: %v", v)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != false {
			t.Fatalf("the ledger check missed the edit: %v", rep)
		}

		// 9. A template a live process names cannot be deleted.
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/contract-templates/" + pr.template["id"].(string), Key: env.AdminKey}), 409, "")
	})
}

func TestContractDocumentParameter(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "entity:read"}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Buyer", "roles": []string{"BUYER"}, "functions": fns}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Finance", "roles": []string{"FINANCE"}, "functions": fns}, 201)
		_, bia := person(t, env, "Bia", "bia@example.com", "BUYER")
		_, fin := person(t, env, "Fin", "fin@example.com", "FINANCE")
		supplier := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Supplier", "parameters": []map[string]any{{"name": "name", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		record := env.Call(post, "/v1/entities/"+supplier+"/records", env.AdminKey, map[string]any{"values": map[string]any{"name": "ACME"}}, 201).JSON()["id"].(string)
		tpl := env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Order", "templateEntityId": supplier,
			"body": "# Order {{measurement.name}}\n\nSupplier: {{entity name}}\nItem: {{param item}}"}, 201).JSON()
		if tpl["templateEntityName"] != "Supplier" || fmt.Sprint(tpl["placeholders"]) != "[measurement.name entity name param item]" || tpl["version"] != 1.0 {
			t.Fatalf("template: %v", tpl)
		}
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Orders", "code": "ORD", "steps": []map[string]any{
			{"label": "Order", "policyNames": []string{"Buyer", "Finance"}, "parameters": []map[string]any{
				{"name": "supplier", "type": "ENTITY", "entityId": "Supplier"}, {"name": "item", "type": "TEXT"},
				{"name": "order", "type": "TEXT", "isRequired": true, "contractTemplateId": tpl["id"]}}},
		}}, 201).JSON()
		order := steps(proc)[0]["parameters"].([]any)[2].(map[string]any)
		if ct, _ := order["contractTemplate"].(map[string]any); order["contractTemplateId"] != tpl["id"] || ct["templateEntityId"] != supplier || ct["templateEntityName"] != "Supplier" {
			t.Fatalf("the generated document's parameter: %v", order)
		}
		step := steps(proc)[0]["id"].(string)

		// An export names the template (as it names entities); an import finds it by name.
		exp := env.Call(get, "/v1/process/"+proc["id"].(string)+"/export", env.AdminKey, nil, 200).JSON()
		exported := exp["steps"].([]any)[0].(map[string]any)["parameters"].([]any)[2].(map[string]any)
		if _, described := exported["contractTemplate"]; exported["contractTemplateId"] != "Order" || described {
			t.Fatalf("exported: %v", exported)
		}
		exp["name"], exp["label"], exp["code"] = "Orders copy", "Orders copy", "ORD2"
		imported := env.Call(post, "/v1/process/import", env.AdminKey, exp, 201).JSON()
		if got := steps(imported)[0]["parameters"].([]any)[2].(map[string]any)["contractTemplateId"]; got != tpl["id"] {
			t.Fatalf("imported contractTemplateId %v", got)
		}

		// Clients cannot send a generated document.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: bia, Body: map[string]any{
			"processLabel": "Orders", "parameters": map[string]any{"item": "bolts", "order": "mine"}}}), 422, "parameters.order")

		// The buyer writes; the linked record is deleted before finance approves:
		// the document says so, and the consensus is not blocked.
		m := env.Call(post, "/v1/measurements/simplified", bia, map[string]any{"processLabel": "Orders", "parameters": map[string]any{
			"supplier": record, "item": "bolts"}}, 201).JSON()
		id := m["id"].(string)
		env.Call(del, "/v1/entities/"+supplier+"/records/"+record, env.AdminKey, nil, 204)
		a := env.Call(post, "/v1/measurements/"+id+"/actions", fin, map[string]any{"stepId": step, "type": "APPROVAL"}, 201).JSON()
		if a["measurement"].(map[string]any)["status"] != "APPROVED" {
			t.Fatalf("the consensus was blocked: %v", a["measurement"])
		}
		docs := env.Call(get, "/v1/measurements/"+id+"/documents", bia, nil, 200).JSON()["data"].([]any)
		if len(docs) != 1 {
			t.Fatalf("documents: %v", docs)
		}
		d := docs[0].(map[string]any)
		if d["parameterId"] != order["id"] || d["stepId"] != step || d["actionId"] != a["id"] {
			t.Fatalf("document: %v", d)
		}
		// The parameter's value is the document's id, in the consensus action's data.
		var value any
		for _, dv := range a["data"].([]any) {
			if dv := dv.(map[string]any); dv["parameterId"] == order["id"] {
				value = dv["dataItems"].([]any)[0].(map[string]any)["value"]
			}
		}
		if value != d["id"] {
			t.Fatalf("the parameter's value is %v, want the document %v", value, d["id"])
		}
		text := flat(tu.PDFText(t, env.Call(get, "/v1/documents/"+d["id"].(string)+"/content", fin, nil, 200).Body))
		for _, want := range []string{"Order ORD-1", "Supplier: [Supplier record " + record + " not found: it was deleted]", "Item: bolts",
			"Seat 1: Buyer", "Signed by: Bia <bia@example.com>", "Seat 2: Finance"} {
			if !strings.Contains(text, want) {
				t.Errorf("the document lacks %q:\n%s", want, text)
			}
		}

		// A step consensed by the request that creates its measurement:
		// the document has the measurement's name.
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Quick", "code": "QUICK", "steps": []map[string]any{
			{"label": "Only", "policyNames": []string{"Buyer"}, "legalContractId": tpl["id"], "parameters": []map[string]any{
				{"name": "supplier", "type": "ENTITY", "entityId": "Supplier"}, {"name": "item", "type": "TEXT"}}}}}, 201)
		q := env.Call(post, "/v1/measurements/simplified", bia, map[string]any{"processLabel": "Quick", "parameters": map[string]any{"item": "nuts"}}, 201).JSON()
		docs = env.Call(get, "/v1/measurements/"+q["id"].(string)+"/documents", bia, nil, 200).JSON()["data"].([]any)
		if len(docs) != 1 {
			t.Fatalf("documents of a measurement consensed at its creation: %v", docs)
		}
		qd := docs[0].(map[string]any)["id"].(string)
		text = flat(tu.PDFText(t, env.Call(get, "/v1/documents/"+qd+"/content", bia, nil, 200).Body))
		if !strings.Contains(text, "Order QUICK-1 Supplier: [no Supplier record linked] Item: nuts") {
			t.Fatalf("the document:\n%s", text)
		}
		if v := env.Call(get, "/v1/documents/"+qd+"/verify", bia, nil, 200).JSON(); v["ok"] != true {
			t.Fatalf("verify: %v", v)
		}
	})
}

func TestContractTemplateErrors(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		supplier := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Supplier", "parameters": []map[string]any{{"name": "name", "type": "TEXT"}}}, 201).JSON()["id"].(string)
		bad := func(body map[string]any, field, mentions string) {
			t.Helper()
			p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/contract-templates", Key: env.AdminKey, Body: body}), 422, field)
			if !strings.Contains(fmt.Sprint(p["errors"]), mentions) {
				t.Fatalf("the problem does not mention %q: %v", mentions, p)
			}
		}
		bad(map[string]any{"name": "T", "body": "Hello {{foo}}"}, "body", "{{foo}}")
		bad(map[string]any{"name": "T", "body": "Hello {{param}}"}, "body", "{{param}}")
		bad(map[string]any{"name": "T", "body": "Hello {{param name"}, "body", "{{param name")
		bad(map[string]any{"name": "T", "body": "Hello {{entity nope}}", "templateEntityId": "Supplier"}, "body", "{{entity nope}}")
		bad(map[string]any{"name": "T", "body": "Hello {{entity name}}"}, "body", "{{entity name}}")
		bad(map[string]any{"name": "T", "body": "Hello", "templateEntityId": "Nobody"}, "templateEntityId", "Nobody")
		bad(map[string]any{"name": "T", "body": "A bell \u0007 rings"}, "body", "U+0007")
		bad(map[string]any{"name": "T", "body": "   "}, "body", "empty")
		bad(map[string]any{"name": "T", "body": strings.Repeat("x", 65537)}, "body", "at most 65536 bytes")
		// Right-to-left text and words longer than a line are fine.
		rtl := env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "RTL", "body": "# שלום\n\nمرحبا " + strings.Repeat("ab", 300)}, 201).JSON()
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/contract-templates", Key: env.AdminKey, Body: map[string]any{"name": "RTL", "body": "x"}}), 409, "")

		// An edit before any document changes the version in place.
		upd := env.Call(patch, "/v1/contract-templates/"+rtl["id"].(string), env.AdminKey, map[string]any{"body": "# שלום\n\n{{process.name}}"}, 200).JSON()
		if upd["version"] != 1.0 || upd["body"] != "# שלום\n\n{{process.name}}" {
			t.Fatalf("edit before use: %v", upd)
		}
		tu.Problem(t, env.Do(tu.Request{Method: patch, Path: "/v1/contract-templates/" + rtl["id"].(string), Key: env.AdminKey,
			Body: map[string]any{"body": "{{nope}}"}}), 422, "body")

		// Processes name templates that exist and render there.
		tpl := env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Supply", "templateEntityId": "Supplier",
			"body": "{{entity name}} sells {{param item}}"}, 201).JSON()
		proc := func(st map[string]any, field, mentions string) {
			t.Helper()
			st["label"] = "S"
			p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "P", "steps": []map[string]any{st}}}), 422, field)
			if !strings.Contains(fmt.Sprint(p["errors"]), mentions) {
				t.Fatalf("the problem does not mention %q: %v", mentions, p)
			}
		}
		item := map[string]any{"name": "item", "type": "TEXT"}
		link := map[string]any{"name": "supplier", "type": "ENTITY", "entityId": "Supplier"}
		proc(map[string]any{"legalContractId": "nothing", "parameters": []map[string]any{item, link}}, "steps[0].legalContractId", `"nothing"`)
		proc(map[string]any{"legalContractId": tpl["id"], "parameters": []map[string]any{link}}, "steps[0].legalContractId", "{{param item}}")
		proc(map[string]any{"legalContractId": tpl["id"], "parameters": []map[string]any{item}}, "steps[0].legalContractId", "{{entity name}}")
		proc(map[string]any{"parameters": []map[string]any{item, link, {"name": "doc", "type": "INT", "contractTemplateId": tpl["id"]}}}, "steps[0].parameters[2].type", "TEXT")
		proc(map[string]any{"parameters": []map[string]any{item, link, {"name": "doc", "type": "TEXT", "contractTemplateId": "nothing"}}}, "steps[0].parameters[2].contractTemplateId", `"nothing"`)
		proc(map[string]any{"parameters": []map[string]any{item, link, {"name": "rows", "type": "TABLE", "parameters": []map[string]any{
			{"name": "doc", "type": "TEXT", "contractTemplateId": tpl["id"]}}}}}, "steps[0].parameters[2].parameters[0].contractTemplateId", "TABLE")
		env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Buy", "steps": []map[string]any{
			{"label": "S", "legalContractId": "Supply", "parameters": []map[string]any{item, link}}}}, 201)

		// A live process's use is checked when the template changes, and keeps it.
		p := tu.Problem(t, env.Do(tu.Request{Method: patch, Path: "/v1/contract-templates/" + tpl["id"].(string), Key: env.AdminKey,
			Body: map[string]any{"body": "{{param price}}"}}), 422, "body")
		if !strings.Contains(fmt.Sprint(p["errors"]), `process "Buy"`) {
			t.Fatalf("the problem does not name the process: %v", p)
		}
		p = tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/contract-templates/" + tpl["id"].(string), Key: env.AdminKey}), 409, "")
		if !strings.Contains(p["detail"].(string), "Buy") {
			t.Fatalf("the conflict does not name the process: %v", p)
		}
		env.Call(del, "/v1/contract-templates/"+rtl["id"].(string), env.AdminKey, nil, 204)
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/contract-templates/" + rtl["id"].(string), Key: env.AdminKey}), 404, "")
		list := env.Call(get, "/v1/contract-templates", env.AdminKey, nil, 200).JSON()
		if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["name"] != "Supply" || list["meta"].(map[string]any)["total"] != 1.0 {
			t.Fatalf("list: %v", list)
		}

		// A step without policies: its one seat is any member's. Right-to-left
		// text and a word longer than a line render.
		record := env.Call(post, "/v1/entities/"+supplier+"/records", env.AdminKey, map[string]any{"values": map[string]any{"name": "ACME"}}, 201).JSON()
		long := strings.Repeat("parafuso", 30)
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processLabel": "Buy", "parameters": map[string]any{
			"item": "שלום " + long, "supplier": record["id"]}}, 201).JSON()
		docs := env.Call(get, "/v1/measurements/"+m["id"].(string)+"/documents", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(docs) != 1 {
			t.Fatalf("documents: %v", docs)
		}
		raw := tu.PDFText(t, env.Call(get, "/v1/documents/"+docs[0].(map[string]any)["id"].(string)+"/content", env.AdminKey, nil, 200).Body)
		text := flat(raw)
		if !strings.Contains(text, "ACME sells") || !strings.Contains(text, "Seat 1: any member") || !strings.Contains(strings.ReplaceAll(text, " ", ""), long) {
			t.Fatalf("the document:\n%s", raw)
		}
		for _, line := range strings.Split(raw, "\n") {
			if strings.Contains(line, long) {
				t.Fatalf("the long word was not cut:\n%s", raw)
			}
		}

		// Templates are process definitions: writing them needs process:write.
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Reader", "roles": []string{"READER"}, "functions": []string{"process:read"}}, 201)
		_, reader := person(t, env, "Rita", "rita@example.com", "READER")
		env.Call(get, "/v1/contract-templates/"+tpl["id"].(string), reader, nil, 200)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/contract-templates", Key: reader, Body: map[string]any{"name": "X", "body": "x"}}), 403, "")
	})
}

// Both seats approved at once, on several measurements, while the template
// is edited: each consensus renders exactly one document, from one version
// as it stands (rendering that version again gives the same bytes).
func TestContractConcurrency(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		pr := newProcurement(t, env)
		const n = 6
		ids := make([]string, n)
		for i := range ids {
			pr.start(t)
			ids[i] = pr.measurement
		}
		var wg sync.WaitGroup
		statuses := make(chan int, 2*n+8)
		for _, id := range ids {
			for _, key := range []string{pr.bia, pr.fin} {
				wg.Go(func() {
					statuses <- env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: key,
						Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}}).Status
				})
			}
		}
		for i := range 8 {
			wg.Go(func() {
				statuses <- env.Do(tu.Request{Method: patch, Path: "/v1/contract-templates/" + pr.template["id"].(string), Key: env.AdminKey,
					Body: map[string]any{"body": strings.Replace(supplyBody, "## Objeto", fmt.Sprintf("## Objeto (edição %d)", i), 1)}}).Status
			})
		}
		wg.Wait()
		close(statuses)
		for s := range statuses {
			if s != 200 && s != 201 {
				t.Fatalf("a request answered %d", s)
			}
		}
		for _, id := range ids {
			pr.measurement = id
			docs := pr.documents(t, pr.bia)
			if len(docs) != 1 {
				t.Fatalf("measurement %s has %d documents", id, len(docs))
			}
			if v := pr.verify(t, docs[0]["id"].(string)); v["ok"] != true || v["rerendered"] != true {
				t.Fatalf("verify: %v", v)
			}
		}
	})
}
