package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pdfcontract "wps/internal/contract"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// renderer is the real renderer, counted, and held on request: while held,
// each rendering says it started and waits until let go.
type renderer struct {
	mu      sync.Mutex
	n       int
	held    chan struct{} // closed to let go; nil: not held
	started chan struct{}
}

func (rn *renderer) render(ctx context.Context, body string, in pdfcontract.Inputs, lim pdfcontract.Limits) ([]byte, error) {
	rn.mu.Lock()
	rn.n++
	held := rn.held
	rn.mu.Unlock()
	if held != nil {
		rn.started <- struct{}{}
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return pdfcontract.RenderWithin(ctx, body, in, lim)
}

// hold holds the next renderings; the function returned lets them go.
func (rn *renderer) hold() (release func()) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.held, rn.started = make(chan struct{}), make(chan struct{}, 16)
	held := rn.held
	return func() {
		rn.mu.Lock()
		rn.held = nil
		rn.mu.Unlock()
		close(held)
	}
}

// waitStarted waits for a held rendering to start.
func (rn *renderer) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-rn.started:
	case <-time.After(30 * time.Second):
		t.Fatal("no rendering started")
	}
}

func (rn *renderer) count() int {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.n
}

// renderEnv is an API whose renderings go through rn, with doc's settings.
func renderEnv(t *testing.T, engine sqlstore.Engine, doc wps.DocumentConfig) (*tu.Env, *renderer) {
	rn := &renderer{}
	doc.Render = rn.render
	return tu.NewEnv(t, engine, tu.Options{Documents: doc}), rn
}

// written counts what a measurement holds: actions, documents, ledger entries.
func (pr *procurement) written() string {
	env := pr.env
	return fmt.Sprintf("actions %d, documents %d, ledger entries %d",
		env.RawInt(`SELECT count(*) FROM actions WHERE measurement_id = ?`, pr.measurement),
		env.RawInt(`SELECT count(*) FROM documents WHERE measurement_id = ?`, pr.measurement),
		env.RawInt(`SELECT count(*) FROM ledger_pending WHERE measurement_id = ?`, pr.measurement)+
			env.RawInt(`SELECT count(*) FROM ledger_leaves WHERE measurement_id = ?`, pr.measurement))
}

// startWith creates a procurement measurement whose notes are notes.
func (pr *procurement) startWith(t *testing.T, notes string) {
	t.Helper()
	m := pr.env.Call(post, "/v1/measurements/simplified", pr.bia, map[string]any{"processLabel": "Procurement", "parameters": map[string]any{
		"supplier": pr.record, "item": "Parafusos inox", "quantity": 500, "price": 1234.5, "notes": notes}}, 201).JSON()
	pr.measurement, pr.name = m["id"].(string), m["name"].(string)
}

// quick creates the process Quick: one step, for buyers, whose consensus
// (at the creation of a measurement) renders the supply contract as
// step's contract (legalContractId) or as the parameter "order".
func (pr *procurement) quick(t *testing.T, asParameter bool) {
	t.Helper()
	params := []map[string]any{{"name": "supplier", "type": "ENTITY", "entityId": "Supplier"}, {"name": "item", "type": "TEXT"},
		{"name": "quantity", "type": "INT"}, {"name": "price", "type": "NUMBER"}, {"name": "notes", "type": "TEXT"}, {"name": "budgetCode", "type": "TEXT"}}
	st := map[string]any{"label": "Only", "policyNames": []string{"Buyer"}, "parameters": params}
	if asParameter {
		st["parameters"] = append(params, map[string]any{"name": "order", "type": "TEXT", "contractTemplateId": "Supply contract"})
	} else {
		st["legalContractId"] = "Supply contract"
	}
	pr.env.Call(post, "/v1/process", pr.env.AdminKey, map[string]any{"name": "Quick", "code": "QUICK", "steps": []map[string]any{st}}, 201)
}

// Issue 32 item 4: a document is bounded in characters, time and bytes. The
// approval that would render one beyond a bound answers 422 naming the
// parameter that fills it (or the template's field) and writes nothing.
func TestContractLimits(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		pr := newProcurement(t, env)
		// The template: the notes, 20 times over (159 s for 200 times,
		// in the writer, before).
		env.Call(patch, "/v1/contract-templates/"+pr.template["id"].(string), env.AdminKey, map[string]any{
			"body": "# Contrato {{measurement.name}}\n\n" + strings.Repeat("{{param notes}}\n\n", 20)}, 200)
		pr.startWith(t, strings.Repeat("lorem ipsum ", 999000/12))
		pr.act(t, pr.bia, pr.approve, "APPROVAL")
		before := pr.written()
		start := time.Now()
		p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + pr.measurement + "/actions", Key: pr.fin,
			Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}}), 422, "parameters.notes")
		took := time.Since(start)
		if !strings.Contains(fmt.Sprint(p["errors"]), `the contract "Supply contract" would print 19980`) ||
			!strings.Contains(fmt.Sprint(p["errors"]), "(200000, WPS_CONTRACT_MAX_CHARS): {{param notes}} prints 19980000 of them (20 times)") {
			t.Fatalf("problem: %v", p)
		}
		if after := pr.written(); after != before {
			t.Fatalf("the refused approval wrote: %s, before %s", after, before)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("ledger: %v", rep)
		}
		t.Logf("refused in %v", took)

		// Time and bytes: the template's field is named.
		for _, c := range []struct {
			limits pdfcontract.Limits
			says   string
		}{
			{pdfcontract.Limits{Timeout: time.Nanosecond}, `rendering the contract "Supply contract" took longer than 1ns (WPS_CONTRACT_RENDER_TIMEOUT)`},
			{pdfcontract.Limits{MaxBytes: 10000}, `the contract "Supply contract" renders to `},
		} {
			env, _ := renderEnv(t, engine, wps.DocumentConfig{Limits: c.limits})
			pr := newProcurement(t, env)
			pr.start(t)
			pr.act(t, pr.bia, pr.approve, "APPROVAL")
			before := pr.written()
			p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + pr.measurement + "/actions", Key: pr.fin,
				Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}}), 422, "legalContractId")
			if !strings.Contains(fmt.Sprint(p["errors"]), c.says) {
				t.Fatalf("problem: %v", p)
			}
			if after := pr.written(); after != before {
				t.Fatalf("the refused approval wrote: %s, before %s", after, before)
			}
			// A generated document, at the creation that consenses its step:
			// the parameter is named, and no measurement is created.
			pr.quick(t, true)
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: pr.bia,
				Body: map[string]any{"processLabel": "Quick", "parameters": map[string]any{"item": "nuts"}}}), 422, "parameters.order")
			if n := env.RawInt(`SELECT count(*) FROM measurements WHERE name LIKE 'QUICK-%'`); n != 0 {
				t.Fatalf("%d measurements created", n)
			}
		}
	})
}

// A rendering holds no transaction: while one is held, another org's
// write and another measurement's write complete, and the rendering's
// consensus commits after them.
func TestContractRenderOutsideTheWriter(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, rn := renderEnv(t, engine, wps.DocumentConfig{})
		pr := newProcurement(t, env)
		pr.start(t)
		other := pr.measurement
		pr.start(t)
		pr.act(t, pr.bia, pr.approve, "APPROVAL")
		orgKey := env.NewOrg("Other")
		env.Call(post, "/v1/users/policies", orgKey, map[string]any{"name": "Checkers", "roles": []string{"ADMIN"}}, 201)
		env.Call(post, "/v1/process", orgKey, map[string]any{"name": "Check", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Checkers"}, "parameters": []map[string]any{{"name": "ok", "type": "BOOLEAN"}}}}}, 201)

		release := rn.hold()
		approved := make(chan int, 1)
		go func() {
			approved <- env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + pr.measurement + "/actions", Key: pr.fin,
				Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}}).Status
		}()
		rn.waitStarted(t)
		writes := make(chan string, 2)
		go func() {
			r := env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: orgKey,
				Body: map[string]any{"processLabel": "Check", "parameters": map[string]any{"ok": true}}})
			writes <- fmt.Sprintf("another org's create: %d", r.Status)
		}()
		go func() {
			r := env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + other + "/actions", Key: pr.bia,
				Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}})
			writes <- fmt.Sprintf("another measurement's approval: %d", r.Status)
		}()
		for range 2 {
			select {
			case w := <-writes:
				if !strings.HasSuffix(w, ": 201") {
					t.Errorf("%s", w)
				}
			case s := <-approved:
				t.Errorf("the held consensus answered %d first", s)
			case <-time.After(20 * time.Second):
				t.Errorf("a write waited for the rendering")
			}
		}
		select {
		case s := <-approved:
			t.Errorf("the held consensus answered %d before its rendering ended", s)
		default:
		}
		release()
		if s := <-approved; s != 201 {
			t.Fatalf("the consensus answered %d", s)
		}
		docs := pr.documents(t, pr.bia)
		if len(docs) != 1 {
			t.Fatalf("documents: %v", docs)
		}
		if v := pr.verify(t, docs[0]["id"].(string)); v["ok"] != true || v["rerendered"] != true {
			t.Fatalf("verify: %v", v)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("ledger: %v", rep)
		}
	})
}

// What a document shows can change while it renders: the consensus then
// renders it again from what it shows at its commit. The document keeps
// the time and ids of the first rendering while the measurement is
// unchanged.
func TestContractRenderedAgainWhenChanged(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, rn := renderEnv(t, engine, wps.DocumentConfig{})
		pr := newProcurement(t, env)
		pr.start(t)
		pr.act(t, pr.bia, pr.approve, "APPROVAL")
		release := rn.hold()
		approved := make(chan *tu.Response, 1)
		go func() {
			approved <- env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + pr.measurement + "/actions", Key: pr.fin,
				Body: map[string]any{"stepId": pr.approve, "type": "APPROVAL"}})
		}()
		rn.waitStarted(t)
		at := env.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		env.Clock.Advance(time.Minute)
		edited := make(chan int, 1)
		go func() {
			edited <- env.Do(tu.Request{Method: patch, Path: "/v1/contract-templates/" + pr.template["id"].(string), Key: env.AdminKey,
				Body: map[string]any{"body": "# Edited while it rendered\n\n" + supplyBody}}).Status
		}()
		select {
		case s := <-edited:
			if s != 200 {
				t.Fatalf("the edit answered %d", s)
			}
		case <-time.After(20 * time.Second):
			t.Error("the template's edit waited for the rendering")
		}
		release()
		res := <-approved
		if res.Status != 201 {
			t.Fatalf("the consensus answered %d: %s", res.Status, res.Body)
		}
		a := res.JSON()
		if n := rn.count(); n != 2 {
			t.Fatalf("%d renderings, want 2 (the first one's template was edited)", n)
		}
		docs := pr.documents(t, pr.bia)
		if len(docs) != 1 || docs[0]["templateVersion"] != 1.0 || docs[0]["createdAt"] != at || a["createdAt"] != at || docs[0]["actionId"] != a["id"] {
			t.Fatalf("documents: %v, the action %v at %v", docs, a["id"], a["createdAt"])
		}
		text := flat(tu.PDFText(t, pr.content(t, pr.bia, docs[0]["id"].(string))))
		if !strings.Contains(text, "Edited while it rendered") || !strings.Contains(text, "reached consensus at "+at) ||
			!strings.Contains(text, "Action: "+a["id"].(string)) {
			t.Fatalf("the document:\n%s", text)
		}
		if v := pr.verify(t, docs[0]["id"].(string)); v["ok"] != true || v["rerendered"] != true {
			t.Fatalf("verify: %v", v)
		}

		// Measurements created and consensed at once, concurrently: each
		// document prints its own measurement's name (the process's next
		// number when it commits).
		pr.quick(t, false)
		const n = 8
		var wg sync.WaitGroup
		created := make(chan *tu.Response, n)
		for range n {
			wg.Go(func() {
				created <- env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: pr.bia,
					Body: map[string]any{"processLabel": "Quick", "parameters": map[string]any{"item": "nuts"}}})
			})
		}
		wg.Wait()
		close(created)
		names := map[string]bool{}
		for res := range created {
			if res.Status != 201 {
				t.Fatalf("a creation answered %d: %s", res.Status, res.Body)
			}
			m := res.JSON()
			names[m["name"].(string)] = true
			docs := env.Call(get, "/v1/measurements/"+m["id"].(string)+"/documents", pr.bia, nil, 200).JSON()["data"].([]any)
			if len(docs) != 1 {
				t.Fatalf("documents of %s: %v", m["name"], docs)
			}
			d := env.Call(get, "/v1/documents/"+docs[0].(map[string]any)["id"].(string), pr.bia, nil, 200).JSON()
			if in := d["inputs"].(map[string]any); in["measurement"] != m["name"] || in["values"].(map[string]any)["measurement.name"] != m["name"] {
				t.Fatalf("the document of %s prints %v", m["name"], in)
			}
			if v := env.Call(get, "/v1/documents/"+d["id"].(string)+"/verify?rerender=true", env.AdminKey, nil, 200).JSON(); v["ok"] != true || v["rerendered"] != true {
				t.Fatalf("verify: %v", v)
			}
			env.Clock.Advance(10 * time.Second) // the admin's re-renderings, 6 a minute
		}
		if len(names) != n {
			t.Fatalf("names: %v", names)
		}
		if rep := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true {
			t.Fatalf("ledger: %v", rep)
		}
	})
}

// verify checks the stored bytes against both hashes and the ledger
// without rendering; it renders again only when asked, throttled per user
// and within the limits of a rendering.
func TestDocumentVerify(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, rn := renderEnv(t, engine, wps.DocumentConfig{RerendersPerMinute: 2})
		pr := newProcurement(t, env)
		pr.start(t)
		pr.approveBoth(t)
		id := pr.documents(t, pr.bia)[0]["id"].(string)
		path := "/v1/documents/" + id + "/verify"

		rendered := rn.count()
		for _, q := range []string{"", "?rerender=false"} {
			v := env.Call(get, path+q, pr.bia, nil, 200).JSON()
			if v["ok"] != true || v["rerendered"] != nil || v["ledgerIntact"] != true || v["sha256"] != v["recorded"] || v["sha256"] != v["stored"] {
				t.Fatalf("verify%s: %v", q, v)
			}
		}
		if n := rn.count(); n != rendered {
			t.Fatalf("verifying rendered %d times", n-rendered)
		}

		// Rendering again: twice a minute for Beatriz, then 429; João has his own.
		for range 2 {
			if v := env.Call(get, path+"?rerender=true", pr.bia, nil, 200).JSON(); v["ok"] != true || v["rerendered"] != true {
				t.Fatalf("verify?rerender=true: %v", v)
			}
		}
		res := env.Do(tu.Request{Method: get, Path: path + "?rerender=true", Key: pr.bia})
		tu.Problem(t, res, 429, "")
		if res.Header.Get("Retry-After") != "30" {
			t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
		}
		env.Call(get, path, pr.bia, nil, 200) // checking without rendering is not throttled
		env.Call(get, path+"?rerender=true", pr.fin, nil, 200)
		env.Clock.Advance(30 * time.Second)
		env.Call(get, path+"?rerender=true", pr.bia, nil, 200)
		if n := rn.count(); n != rendered+4 {
			t.Fatalf("%d renderings, want 4", n-rendered)
		}

		// A rendering beyond the limits is refused naming rerender (here the
		// template's version was edited in the database past the characters).
		env.RawExec(`UPDATE contract_template_versions SET body = ? WHERE template_id = ?`, strings.Repeat("texto ", 40000), pr.template["id"])
		env.Clock.Advance(time.Minute)
		p := tu.Problem(t, env.Do(tu.Request{Method: get, Path: path + "?rerender=true", Key: pr.bia}), 422, "rerender")
		if !strings.Contains(fmt.Sprint(p["errors"]), "would print 239999 characters") {
			t.Fatalf("problem: %v", p)
		}

		// The stored SHA-256 is checked too.
		env.RawExec(`UPDATE documents SET sha256 = ? WHERE id = ?`, strings.Repeat("0", 64), id)
		v := env.Call(get, path, pr.bia, nil, 200).JSON()
		if v["ok"] != false || v["stored"] != strings.Repeat("0", 64) || v["sha256"] != v["recorded"] ||
			fmt.Sprint(v["reasons"]) != "[the stored bytes do not have the SHA-256 stored with them]" {
			t.Fatalf("verify with its stored SHA-256 changed: %v", v)
		}
	})
}
