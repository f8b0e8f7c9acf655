package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// service is the end-to-end fixture: two policies, an inspector and a
// supervisor, and a 4-step process: Inspect (ordered Inspector then
// Supervisor; routes by kind: repair → Repair, scrap → Close) → Repair and
// Photos in parallel → Close (joins both; a rejection there re-opens Repair).
type service struct {
	env            *tu.Env
	ian, sam       string // keys
	ianID, samID   string
	process        map[string]any
	stepIDs        map[string]string
	inspect, close string
	repair, photos string
}

func newService(t *testing.T, env *tu.Env) *service {
	t.Helper()
	fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove"}
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Inspector", "roles": []string{"INSPECTOR"}, "functions": fns}, 201)
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Supervisor", "roles": []string{"SUPERVISOR"}, "functions": fns}, 201)
	s := &service{env: env}
	s.ianID, s.ian = member(t, env, "ian@example.com", "INSPECTOR")
	s.samID, s.sam = member(t, env, "sam@example.com", "SUPERVISOR")
	s.process = env.Call(post, "/v1/process", env.AdminKey, map[string]any{
		"name": "Pump service", "code": "PUMP",
		"steps": []map[string]any{
			{"label": "Inspect", "policyNames": []string{"Inspector", "Supervisor"}, "orderedPolicies": []string{"Inspector", "Supervisor"},
				"webhookUrls": "https://hooks.example/wps", "deadline": "2", "deadlineType": "HOURS",
				"parameters": []map[string]any{
					{"name": "kind", "label": "Kind", "type": "SELECT", "isRequired": true, "optionItems": []map[string]any{{"value": "repair"}, {"value": "scrap"}}},
					{"name": "hours", "type": "NUMBER"}, {"name": "rate", "type": "NUMBER"},
					{"name": "cost", "type": "FORMULA", "computedFormula": []string{"hours", "*", "rate"}, "decimals": 2},
				},
				"routing": map[string]any{"entityParamName": "kind", "rules": []map[string]any{{"value": "repair", "stepId": "Repair"}, {"value": "scrap", "stepId": "Close"}}}},
			{"label": "Repair", "policyNames": []string{"Inspector"}, "stepIdsDependencies": []string{"Inspect"},
				"parameters": []map[string]any{{"name": "notes", "type": "TEXT", "isRequired": true}}},
			{"label": "Photos", "policyNames": []string{"Supervisor"}, "stepIdsDependencies": []string{"Inspect"}},
			{"label": "Close", "policyNames": []string{"Supervisor"}, "stepIdsDependencies": []string{"Repair", "Photos"}, "stepIdsReprovalDependencies": []string{"Repair"}},
		},
	}, 201).JSON()
	s.stepIDs = map[string]string{}
	for _, st := range steps(s.process) {
		s.stepIDs[st["label"].(string)] = st["id"].(string)
	}
	s.inspect, s.repair, s.photos, s.close = s.stepIDs["Inspect"], s.stepIDs["Repair"], s.stepIDs["Photos"], s.stepIDs["Close"]
	return s
}

// act posts an action and checks the measurement's status afterwards.
func (s *service) act(t *testing.T, key, measurement, step, typ string, params map[string]any, wantStatus string) map[string]any {
	t.Helper()
	body := map[string]any{"stepId": step, "type": typ}
	if params != nil {
		body["parameters"] = params
	}
	if typ == "REJECTION" {
		body["observation"] = "not good enough"
	}
	a := s.env.Call(post, "/v1/measurements/"+measurement+"/actions", key, body, 201).JSON()
	if got := a["measurement"].(map[string]any)["status"]; got != wantStatus {
		t.Fatalf("after %s on %s: status %v, want %s", typ, step, got, wantStatus)
	}
	if a["type"] != typ || a["stepId"] != step || a["measurementId"] != measurement || a["ledgerHash"] == "" || a["transactionHash"] != a["ledgerHash"] {
		t.Fatalf("action: %v", a)
	}
	return a
}

func (s *service) status(t *testing.T, id string) string {
	t.Helper()
	return s.env.Call(get, "/v1/measurements/"+id, s.ian, nil, 200).JSON()["status"].(string)
}

func TestMeasurementEndToEnd(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		s := newService(t, env)

		// Ordered seats: on a fresh measurement the Supervisor cannot go first.
		plain := env.Call(post, "/v1/measurements", s.ian, map[string]any{"processId": s.process["id"]}, 201).JSON()
		if plain["status"] != "OPEN" || plain["name"] != "PUMP-1" || plain["currentStep"].(map[string]any)["id"] != s.inspect {
			t.Fatalf("plain measurement: %v", plain)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + plain["id"].(string) + "/actions", Key: s.sam,
			Body: map[string]any{"stepId": s.inspect, "type": "APPROVAL"}}), 409, "")

		// 1. The inspector creates a measurement with data on the first step.
		res := env.Call(post, "/v1/measurements/simplified", s.ian, map[string]any{
			"processLabel": "Pump service", "parameters": map[string]any{"Kind": "repair", "hours": 1.5, "rate": 0.2},
		}, 201)
		m := res.JSON()
		id := m["id"].(string)
		checkSimplified(t, s, m)
		if res.Header.Get("Location") != "/v1/measurements/"+id {
			t.Fatalf("location %q", res.Header.Get("Location"))
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: s.ian,
			Body: map[string]any{"stepId": s.inspect, "type": "APPROVAL"}}), 409, "")

		// 2. The supervisor approves: consensus, routed to Repair; Photos runs beside it.
		a := s.act(t, s.sam, id, s.inspect, "APPROVAL", nil, "STAGE_OPEN")
		if a["policyName"] != "Supervisor" || a["currentStep"].(map[string]any)["id"] != s.repair {
			t.Fatalf("approval: %v", a)
		}
		// The open-step filter follows: Inspect closed, Repair and Photos opened.
		for step, want := range map[string]bool{s.inspect: false, s.repair: true, s.photos: true} {
			listed := false
			for _, m := range env.Call(get, "/v1/measurements?stepId="+step, s.ian, nil, 200).JSON()["data"].([]any) {
				listed = listed || m.(map[string]any)["id"] == id
			}
			if listed != want {
				t.Fatalf("listed as open at %s: %v, want %v", step, listed, want)
			}
		}
		// 3. Repair done while Photos is still open: the join waits.
		first := s.act(t, s.ian, id, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced"}, "CONSENSUS")
		// Close is not open yet.
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: s.sam,
			Body: map[string]any{"stepId": s.close, "type": "APPROVAL"}}), 409, "")
		// 4. Photos approved: Close opens.
		s.act(t, s.sam, id, s.photos, "APPROVAL", nil, "STAGE_OPEN")
		// A rejection states its reason: none, or a blank one, writes nothing.
		for _, obs := range []any{nil, "", " \n\t"} {
			body := map[string]any{"stepId": s.close, "type": "REJECTION"}
			if obs != nil {
				body["observation"] = obs
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: s.sam, Body: body}), 422, "observation")
			delete(body, "stepId")
			delete(body, "type")
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/actions/" + first["id"].(string) + "/reprove", Key: s.sam, Body: body}), 422, "observation")
		}
		if st := s.status(t, id); st != "STAGE_OPEN" {
			t.Fatalf("after refused rejections: %s", st)
		}
		// 5. The supervisor rejects at Close: back to Repair (its reproval dependency).
		rej := s.act(t, s.sam, id, s.close, "REJECTION", nil, "REPROVED")
		if rej["currentStep"].(map[string]any)["id"] != s.repair {
			t.Fatalf("rejection reopened %v", rej["currentStep"])
		}
		// 6. Rework: the inspector writes again; Close re-opens (Photos stays consensed).
		second := s.act(t, s.ian, id, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced again"}, "STAGE_OPEN")

		// 7. The supervisor reproves that action.
		rep := env.Call(post, "/v1/actions/"+second["id"].(string)+"/reprove", s.sam, map[string]any{"observation": "no photo of the new seal"}, 201).JSON()
		checkReprove(t, s, rep, second, id)
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/actions/" + second["id"].(string) + "/reprove", Key: s.sam, Body: map[string]any{"observation": "again"}}), 409, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/actions/" + first["id"].(string) + "/reprove", Key: s.sam, Body: map[string]any{"observation": "old"}}), 409, "")
		if st := s.status(t, id); st != "REPROVED" {
			t.Fatalf("after reprove: %s", st)
		}

		// 8. Rework again, 9. final approval.
		s.act(t, s.ian, id, s.repair, "WRITE_DATA", map[string]any{"notes": "seal replaced, photo attached"}, "STAGE_OPEN")
		last := s.act(t, s.sam, id, s.close, "APPROVAL", nil, "APPROVED")
		if last["currentStep"] != nil {
			t.Fatalf("an approved measurement has a current step: %v", last["currentStep"])
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + id + "/actions", Key: s.sam,
			Body: map[string]any{"stepId": s.close, "type": "APPROVAL"}}), 409, "")
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/actions/" + last["id"].(string) + "/reprove", Key: s.sam, Body: map[string]any{"observation": "late"}}), 409, "")

		checkMeasurementResponse(t, s, id)
		checkLists(t, s, id, plain["id"].(string))
		checkLedger(t, s, id)
	})
}

func checkSimplified(t *testing.T, s *service, m map[string]any) {
	t.Helper()
	if m["isStepConsensed"] != false || m["status"] != "IN_CONSENSUS" || m["name"] != "PUMP-2" || m["stepId"] != s.inspect ||
		m["processId"] != s.process["id"] || m["orgId"] != s.env.OrgID || m["actionId"] == "" || m["webhookUrls"] != "https://hooks.example/wps" {
		t.Fatalf("simplified: %v", m)
	}
	if fmt.Sprint(m["pendingPolicies"]) != "[Supervisor]" || m["currentStep"].(map[string]any)["id"] != s.inspect {
		t.Fatalf("pending: %v / %v", m["pendingPolicies"], m["currentStep"])
	}
	unfilled := m["unfilledPolicies"].([]any)
	if len(unfilled) != 1 || fmt.Sprint(unfilled[0]) != fmt.Sprintf("map[nextUnfilledPolicy:Supervisor stepId:%s unfilledPolicies:[map[policyName:Supervisor]]]", s.inspect) {
		t.Fatalf("unfilled: %v", unfilled)
	}
	def := m["measurementDefinition"].(map[string]any)
	tokens := map[string][]any{}
	for _, st := range steps(s.process) {
		tokens[st["label"].(string)] = st["tokenIds"].([]any)
	}
	if len(def["tokenIds"].([]any)) != 5 || def["measurementId"] != m["id"] || def["id"] == "" {
		t.Fatalf("definition: %v", def)
	}
	if fmt.Sprint(def["reservedTokens"]) != fmt.Sprintf("[map[policyName:Inspector tokenId:%s]]", tokens["Inspect"][0]) {
		t.Fatalf("reserved: %v", def["reservedTokens"])
	}
	want := fmt.Sprintf("[map[policyName:Supervisor tokenIds:[%s %s %s]] map[policyName:Inspector tokenIds:[%s]]]",
		tokens["Inspect"][1], tokens["Photos"][0], tokens["Close"][0], tokens["Repair"][0])
	if fmt.Sprint(def["availableTokens"]) != want {
		t.Fatalf("available: %v\nwant %s", def["availableTokens"], want)
	}
	for _, k := range []string{"entityDataItems", "entityManipulations"} {
		if fmt.Sprint(m[k]) != "[]" {
			t.Fatalf("%s: %v", k, m[k])
		}
	}
	if fmt.Sprint(m["readFromEntityMapping"]) != "map[actions:map[] entity:map[]]" || fmt.Sprint(m["entitiesById"]) != "map[]" {
		t.Fatalf("mappings: %v %v", m["readFromEntityMapping"], m["entitiesById"])
	}
	proc := m["process"].(map[string]any)
	if proc["id"] != s.process["id"] || proc["name"] != "Pump service" || proc["type"] != "PROCESS" || proc["orgId"] != s.env.OrgID || len(proc["steps"].([]any)) != 4 {
		t.Fatalf("process: %v", proc)
	}
	actions := proc["actions"].([]any)
	if len(actions) != 1 {
		t.Fatalf("actions: %v", actions)
	}
	a := actions[0].(map[string]any)
	if a["type"] != "WRITE_DATA" || a["userId"] != s.ianID || a["username"] != "ian@example.com" || fmt.Sprint(a["userRoles"]) != "[INSPECTOR]" ||
		a["role"] != "INSPECTOR" || a["tokenId"] != tokens["Inspect"][0] || a["actionId"] != a["id"] {
		t.Fatalf("action: %v", a)
	}
	values := map[string]string{}
	for _, d := range a["data"].([]any) {
		dm := d.(map[string]any)
		item := dm["dataItems"].([]any)[0].(map[string]any)
		if dm["actionId"] != a["id"] || dm["stepId"] != s.inspect || item["dataId"] != dm["id"] || item["parameterId"] != dm["parameterId"] || item["param"] == nil {
			t.Fatalf("data: %v", dm)
		}
		values[item["param"].(map[string]any)["name"].(string)] = item["value"].(string)
	}
	if fmt.Sprint(values) != "map[cost:0.3 hours:1.5 kind:repair rate:0.2]" {
		t.Fatalf("values: %v", values)
	}
	cp := a["counterpartsPoliciesRoles"].([]any)
	if fmt.Sprint(cp) != fmt.Sprintf("[map[data:[map[permission:APPROVE role:INSPECTOR tokenId:%s]] name:Inspector] map[data:[map[permission:APPROVE role:SUPERVISOR tokenId:%s]] name:Supervisor]]", tokens["Inspect"][0], tokens["Inspect"][1]) {
		t.Fatalf("counterparts: %v", cp)
	}
}

func checkReprove(t *testing.T, s *service, rep, reproved map[string]any, measurement string) {
	t.Helper()
	if rep["type"] != "REJECTION" || rep["stepId"] != s.repair || rep["observation"] != "no photo of the new seal" || rep["username"] != "sam@example.com" ||
		rep["measurementId"] != measurement || rep["reprovesActionId"] != reproved["id"] || rep["transactionHash"] == "" || rep["createdAt"] == nil {
		t.Fatalf("reprove: %v", rep)
	}
	step := rep["step"].(map[string]any)
	proc := step["process"].(map[string]any)
	if step["id"] != s.repair || proc["id"] != s.process["id"] || proc["processId"] != s.process["id"] || proc["label"] != "Pump service" || proc["orgId"] != s.env.OrgID {
		t.Fatalf("reprove step: %v", step)
	}
	meas := rep["measurement"].(map[string]any)
	if meas["id"] != measurement || meas["status"] != "REPROVED" || meas["name"] != "PUMP-2" || meas["reservedTokens"] == nil {
		t.Fatalf("reprove measurement: %v", meas)
	}
	data := rep["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["actionId"] != reproved["id"] ||
		data[0].(map[string]any)["dataItems"].([]any)[0].(map[string]any)["value"] != "seal replaced again" {
		t.Fatalf("reprove data: %v", data)
	}
	if rep["currentStep"].(map[string]any)["id"] != s.repair {
		t.Fatalf("reprove current step: %v", rep["currentStep"])
	}
}

func checkMeasurementResponse(t *testing.T, s *service, id string) {
	t.Helper()
	m := s.env.Call(get, "/v1/measurements/"+id, s.ian, nil, 200).JSON()
	if m["status"] != "APPROVED" || m["measurementId"] != id || m["currentStep"] != nil || fmt.Sprint(m["pendingPolicies"]) != "[]" || fmt.Sprint(m["unfilledPolicies"]) != "[]" {
		t.Fatalf("measurement: %v", m)
	}
	proc := m["process"].(map[string]any)
	var statuses []string
	for _, st := range proc["steps"].([]any) {
		sm := st.(map[string]any)
		statuses = append(statuses, sm["label"].(string)+"="+sm["status"].(string))
		if sm["stepIdsDependencies"] == nil || sm["stepIdsReprovalDependencies"] == nil || sm["hasGSheetKey"] != false {
			t.Fatalf("step: %v", sm)
		}
		if sm["label"] == "Inspect" && len(sm["parameters"].([]any)) != 4 {
			t.Fatalf("parameters: %v", sm["parameters"])
		}
	}
	if strings.Join(statuses, ",") != "Inspect=CONSENSED,Repair=CONSENSED,Photos=CONSENSED,Close=CONSENSED" {
		t.Fatalf("steps: %v", statuses)
	}
	actions := proc["actions"].([]any)
	var kinds []string
	for _, a := range actions {
		am := a.(map[string]any)
		k := am["type"].(string)
		if am["superseded"] == true {
			k += "(superseded)"
		}
		if am["reproved"] == true {
			k += "(reproved)"
		}
		kinds = append(kinds, k)
	}
	want := "WRITE_DATA,APPROVAL,WRITE_DATA(superseded),APPROVAL,REJECTION,WRITE_DATA(superseded)(reproved),REJECTION,WRITE_DATA,APPROVAL"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("actions: %s\nwant     %s", strings.Join(kinds, ","), want)
	}
	got := s.env.Call(get, "/v1/actions/"+actions[0].(map[string]any)["id"].(string), s.sam, nil, 200).JSON()
	if got["type"] != "WRITE_DATA" || len(got["data"].([]any)) != 4 || got["step"].(map[string]any)["process"] == nil {
		t.Fatalf("GET action: %v", got)
	}
}

func checkLists(t *testing.T, s *service, approved, open string) {
	t.Helper()
	ids := func(q string) []string {
		var out []string
		for _, m := range s.env.Call(get, "/v1/measurements?"+q, s.ian, nil, 200).JSON()["data"].([]any) {
			out = append(out, m.(map[string]any)["id"].(string))
		}
		return out
	}
	total := func(q string) float64 {
		return s.env.Call(get, "/v1/measurements?"+q, s.ian, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64)
	}
	for q, want := range map[string]float64{"": 2, "status=APPROVED": 1, "status=OPEN": 1, "status=REPROVED": 0, "processId=" + s.process["id"].(string): 2,
		"processId=" + s.process["id"].(string) + "&status=APPROVED": 1, "stepId=" + s.inspect: 1} {
		if got := total(q); got != want {
			t.Fatalf("total of %q: %v, want %v", q, got, want)
		}
	}
	if got := ids("status=APPROVED"); fmt.Sprint(got) != fmt.Sprint([]string{approved}) {
		t.Fatalf("status filter: %v", got)
	}
	if got := ids("stepId=" + s.inspect); fmt.Sprint(got) != fmt.Sprint([]string{open}) {
		t.Fatalf("open step filter: %v", got)
	}
	if got := ids("processId=" + s.process["id"].(string)); len(got) != 2 || got[0] != approved {
		t.Fatalf("process filter (newest first): %v", got)
	}
	if got := ids("overdue=true"); len(got) != 0 {
		t.Fatalf("overdue before the deadline: %v", got)
	}
	s.env.Clock.Advance(3 * 60 * 60 * 1e9)
	if got := ids("overdue=true"); fmt.Sprint(got) != fmt.Sprint([]string{open}) {
		t.Fatalf("overdue after the deadline: %v", got)
	}
	if got := ids("createdFrom=2030-01-01T00:00:00Z"); len(got) != 0 {
		t.Fatalf("created range: %v", got)
	}
	tu.Problem(t, s.env.Do(tu.Request{Method: get, Path: "/v1/measurements?status=DONE", Key: s.ian}), 422, "status")
}

func checkLedger(t *testing.T, s *service, id string) {
	t.Helper()
	integrate(t, s.env)
	rep := s.env.Call(get, "/v1/ledger/verify", s.env.AdminKey, nil, 200).JSON()
	if rep["ok"] != true || rep["actions"] != 9.0 || rep["measurements"] != 2.0 {
		t.Fatalf("ledger: %v", rep)
	}
	// Edit one action in the database: the verification names it.
	var rejection string
	for _, a := range s.env.Call(get, "/v1/measurements/"+id, s.env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any) {
		if a := a.(map[string]any); a["type"] == "REJECTION" && rejection == "" {
			rejection = a["id"].(string)
		}
	}
	s.env.RawExec(`UPDATE actions SET observation = 'rewritten' WHERE id = ?`, rejection)
	rep = s.env.Call(get, "/v1/ledger/verify", s.env.AdminKey, nil, 200).JSON()
	broken, _ := rep["broken"].(map[string]any)
	if rep["ok"] != false || broken["actionId"] != rejection {
		t.Fatalf("edited row not detected: %v", rep)
	}
	tu.Problem(t, s.env.Do(tu.Request{Method: get, Path: "/v1/ledger/verify", Key: s.ian}), 403, "")
}

// PostgreSQL's text cannot hold the NUL character, so both engines refuse
// it in a body, wherever it is, naming the field, and write nothing.
func TestNULInABody(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		p := checkProcess(env, "Check", "C")
		step := steps(p)[0]["id"].(string)
		id := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()["id"].(string)
		path := "/v1/measurements/" + id + "/actions"
		yaml := map[string]string{"Content-Type": "application/yaml"}
		for _, c := range []struct {
			body   any
			header map[string]string
			field  string
		}{
			{map[string]any{"stepId": step, "type": "APPROVAL", "observation": "a\x00b"}, nil, "observation"},
			{map[string]any{"stepId": step, "type": "APPROVAL", "transactionHash": "\x00"}, nil, "transactionHash"},
			{map[string]any{"stepId": step, "type": "WRITE_DATA", "parameters": map[string]any{"ok": []any{true, "x\x00"}}}, nil, "parameters.ok[1]"},
			{"stepId: " + step + "\ntype: APPROVAL\nobservation: \"a\\0b\"\n", yaml, "observation"},
			// A lone surrogate escape, which encoding/json reads as U+FFFD.
			{`{"stepId":"` + step + `","type":"APPROVAL","observation":"\ud83d\ude00 \uDC00"}`, nil, "observation"},
			{`{"stepId":"` + step + `","type":"WRITE_DATA","parameters":{"ok":["\ud800x"]}}`, nil, "parameters.ok[0]"},
		} {
			res := env.Do(tu.Request{Method: post, Path: path, Key: env.AdminKey, Body: c.body, Header: c.header})
			tu.Problem(t, res, 422, c.field)
		}
		if m := env.Call(get, "/v1/measurements/"+id, env.AdminKey, nil, 200).JSON(); m["status"] != "OPEN" || len(m["process"].(map[string]any)["actions"].([]any)) != 0 {
			t.Fatalf("refused actions were recorded: %v", m)
		}
		// A pair is one character; an escaped backslash before "ud800" is text.
		env.Call(post, path, env.AdminKey, `{"stepId":"`+step+`","type":"APPROVAL","observation":"\ud83d\ude00 \\ud800"}`, 201)
		if o := env.Call(get, "/v1/measurements/"+id, env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)["observation"]; o != "😀 \\ud800" {
			t.Fatalf("observation %q", o)
		}
	})
}
