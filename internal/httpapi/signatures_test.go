package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"wps/internal/ledger"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// signer invites email with roles and accepts with a name and, when given,
// a password; it returns the user's id and key.
func signer(t *testing.T, env *tu.Env, name, email, password string, roles ...string) (string, string) {
	t.Helper()
	inv := env.Call(post, "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": roles}, 201).JSON()
	body := map[string]any{"token": inv["token"], "name": name}
	if password != "" {
		body["password"] = password
	}
	acc := env.Call(post, "/v1/invites/accept", "", body, 201).JSON()
	return acc["user"].(map[string]any)["id"].(string), acc["apiKey"].(map[string]any)["key"].(string)
}

// TestSignatures: a step with a signatureMeaning takes signed actions and
// reproves only (semantics section 19): the password re-entered or a
// recent SSO sign-in; a missing or wrong one is refused, writes nothing and
// counts as a failed sign-in; the signature is in the answers, the ledger
// leaf, the export and the contract.
func TestSignatures(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Sessions: wps.SessionConfig{AccountBurst: 3, AddressBurst: 1000}})
		fns := []string{"measurement:create", "measurement:read", "action:write", "action:approve", "action:reprove"}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "QA", "roles": []string{"QA"}, "functions": fns}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Lead", "roles": []string{"LEAD"}, "functions": fns}, 201)
		_, ann := signer(t, env, "Ann Lee", "ann@example.com", goodPassword, "QA")
		_, bob := signer(t, env, "Bob Roe", "bob@example.com", goodPassword, "QA")
		_, cat := signer(t, env, "Cat Poe", "cat@example.com", goodPassword, "QA")
		ssoID, sso := signer(t, env, "Sue Oh", "sue@example.com", "", "QA") // no password: SSO only
		env.Call(post, "/v1/contract-templates", env.AdminKey, map[string]any{"name": "Release", "body": "# Release of {{measurement.name}}\n\nBatch released."}, 201)

		steps := func(meaning string) []map[string]any {
			return []map[string]any{ // Record keeps open (its Lead seat waits) while QA corrects its values
				{"label": "Approve", "policyNames": []string{"QA"}, "signatureMeaning": meaning, "legalContractId": "Release"},
				{"label": "Record", "policyNames": []string{"QA", "Lead"}, "parameters": []map[string]any{{"name": "temp", "type": "NUMBER"}, {"name": "note", "type": "TEXT"}}},
			}
		}
		t.Run("signatureMeaning is checked", func(t *testing.T) {
			for _, bad := range []string{"Appro\nved", strings.Repeat("x", 101)} {
				tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Bad", "steps": steps(bad)}}),
					422, "steps[0].signatureMeaning")
			}
		})
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Batch release", "steps": steps("  Approved ")}, 201).JSON()
		var record, approve string
		for _, st := range proc["steps"].([]any) {
			st := st.(map[string]any)
			switch st["label"] {
			case "Record":
				record = st["id"].(string)
				if _, has := st["signatureMeaning"]; has {
					t.Fatalf("a step without a meaning shows one: %v", st)
				}
			case "Approve":
				approve = st["id"].(string)
				if st["signatureMeaning"] != "Approved" {
					t.Fatalf("signatureMeaning: %v", st)
				}
			}
		}
		newMeasurement := func() string {
			return env.Call(post, "/v1/measurements", ann, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
		}
		act := func(key, m string, body map[string]any) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + m + "/actions", Key: key, Body: body})
		}
		actions := func(m string) int {
			return len(env.Call(get, "/v1/measurements/"+m, env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any))
		}
		m := newMeasurement()

		var signed map[string]any
		t.Run("signing with the password", func(t *testing.T) {
			n := actions(m)
			tu.Problem(t, act(ann, m, map[string]any{"stepId": approve, "type": "APPROVAL"}), 422, "signature.password")
			tu.Problem(t, act(ann, m, map[string]any{"stepId": approve, "type": "APPROVAL", "signature": map[string]any{"password": "not my password"}}), 422, "signature.password")
			if actions(m) != n {
				t.Fatal("a refused signature wrote an action")
			}
			env.Clock.Advance(time.Minute)
			signed = env.Call(post, "/v1/measurements/"+m+"/actions", ann, map[string]any{"stepId": approve, "type": "APPROVAL",
				"signature": map[string]any{"password": goodPassword}}, 201).JSON()
			sig, _ := signed["signature"].(map[string]any)
			want := map[string]any{"meaning": "Approved", "signerName": "Ann Lee", "signerEmail": "ann@example.com", "signedAt": signed["createdAt"], "method": "password"}
			for k, v := range want {
				if sig[k] != v {
					t.Fatalf("signature %s = %v, want %v: %v", k, sig[k], v, signed)
				}
			}
			got := env.Call(get, "/v1/actions/"+signed["id"].(string), bob, nil, 200).JSON()
			if g, _ := json.Marshal(got["signature"]); string(g) != mustMarshal(sig) {
				t.Fatalf("GET /v1/actions: %s, want %v", g, sig)
			}
			for _, a := range env.Call(get, "/v1/measurements/"+m, bob, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any) {
				a := a.(map[string]any)
				_, has := a["signature"]
				if has != (a["id"] == signed["id"]) {
					t.Fatalf("in the measurement, action %v signature %v", a["id"], a["signature"])
				}
			}
		})

		t.Run("reason for change", func(t *testing.T) {
			write := func(params map[string]any, obs string) *tu.Response {
				return act(ann, m, map[string]any{"stepId": record, "type": "WRITE_DATA", "parameters": params, "observation": obs})
			}
			if r := write(map[string]any{"temp": 21.5}, ""); r.Status != 201 {
				t.Fatalf("a first value needs no reason: %d %s", r.Status, r.Body)
			}
			if r := write(map[string]any{"temp": 21.5, "note": "first note"}, ""); r.Status != 201 {
				t.Fatalf("the same value again and a new one need no reason: %d %s", r.Status, r.Body)
			}
			n := actions(m)
			p := tu.Problem(t, write(map[string]any{"temp": 22, "note": "first note"}, " "), 422, "observation")
			if !strings.Contains(p["detail"].(string), "temp") {
				t.Fatalf("the problem does not name the changed value: %v", p)
			}
			if actions(m) != n {
				t.Fatal("a refused change wrote an action")
			}
			if r := write(map[string]any{"temp": 22}, "thermometer recalibrated"); r.Status != 201 {
				t.Fatalf("a change with a reason: %d %s", r.Status, r.Body)
			}
		})

		t.Run("the ledger leaf covers the signature", func(t *testing.T) {
			integrate(t, env)
			proof := env.Call(get, "/v1/actions/"+signed["id"].(string)+"/proof", env.AdminKey, nil, 200).JSON()
			leaf, err := base64.StdEncoding.DecodeString(proof["leaf"].(string))
			if err != nil {
				t.Fatal(err)
			}
			var l map[string]any
			if err := json.Unmarshal(leaf, &l); err != nil {
				t.Fatal(err)
			}
			if mustMarshal(l["signature"]) != mustMarshal(signed["signature"]) {
				t.Fatalf("leaf signature %v, want %v", l["signature"], signed["signature"])
			}
			// Offline: the action's answer matches its leaf, and a forged signature does not.
			key := env.Call(get, "/v1/ledger/key", env.AdminKey, nil, 200).Body
			cp := env.Call(get, "/v1/ledger/checkpoint", env.AdminKey, nil, 200).Body
			pr := env.Call(get, "/v1/actions/"+signed["id"].(string)+"/proof", env.AdminKey, nil, 200).Body
			action := env.Call(get, "/v1/actions/"+signed["id"].(string), env.AdminKey, nil, 200).Body
			if _, err := ledger.VerifyInclusion(key, cp, pr, action); err != nil {
				t.Fatalf("offline check of the signed action: %v", err)
			}
			forged := []byte(strings.Replace(string(action), `"signerName":"Ann Lee"`, `"signerName":"Bob Roe"`, 1))
			if _, err := ledger.VerifyInclusion(key, cp, pr, forged); err == nil || string(forged) == string(action) {
				t.Fatalf("a forged signer passed the offline check: %v", err)
			}
			if v := verify(env); v["ok"] != true {
				t.Fatalf("verify: %v", v)
			}
		})

		t.Run("the contract's signature page", func(t *testing.T) {
			docs := env.Call(get, "/v1/measurements/"+m+"/documents", ann, nil, 200).JSON()["data"].([]any)
			if len(docs) != 1 {
				t.Fatalf("documents: %v", docs)
			}
			pdf := env.Call(get, "/v1/documents/"+docs[0].(map[string]any)["id"].(string)+"/content", ann, nil, 200).Body
			text := flat(tu.PDFText(t, pdf))
			for _, want := range []string{"Meaning: Approved", "Signed by: Ann Lee <ann@example.com>", "At: " + signed["createdAt"].(string),
				"Action: " + signed["id"].(string), "Signed with: password re-entered"} {
				if !strings.Contains(text, want) {
					t.Errorf("the contract lacks %q:\n%s", want, text)
				}
			}
		})

		t.Run("the export has the signature", func(t *testing.T) {
			csv := string(env.Call(get, "/v1/measurements:export?processId="+proc["id"].(string), bob, nil, 200).Body)
			header, _, _ := strings.Cut(csv, "\n")
			if !strings.Contains(header, "Approve.signature") {
				t.Fatalf("export header: %s", header)
			}
			want := "Approved by Ann Lee <ann@example.com> at " + signed["createdAt"].(string) + " (password)"
			if !strings.Contains(csv, want) {
				t.Fatalf("export lacks %q:\n%s", want, csv)
			}
			x := env.Call(get, "/v1/measurements:export?format=xlsx&processId="+proc["id"].(string), bob, nil, 200)
			f, err := excelize.OpenReader(bytes.NewReader(x.Body))
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := f.GetRows("Sheet1")
			col := slices.Index(rows[0], "Approve.signature")
			found := false
			for _, r := range rows[1:] {
				found = found || col >= 0 && col < len(r) && r[col] == want
			}
			if !found {
				t.Fatalf("xlsx lacks %q in Approve.signature: %v", want, rows)
			}
		})

		t.Run("a reprove of a signed action is signed", func(t *testing.T) {
			path := "/v1/actions/" + signed["id"].(string) + "/reprove"
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: path, Key: bob, Body: map[string]any{"observation": "wrong batch"}}), 422, "signature.password")
			rep := env.Call(post, path, bob, map[string]any{"observation": "wrong batch", "signature": map[string]any{"password": goodPassword}}, 201).JSON()
			sig := rep["signature"].(map[string]any)
			if sig["signerEmail"] != "bob@example.com" || sig["meaning"] != "Approved" || sig["method"] != "password" || rep["type"] != "REJECTION" {
				t.Fatalf("reprove: %v", rep)
			}
		})

		t.Run("a simplified measurement at a signed step is signed", func(t *testing.T) {
			before := len(env.Call(get, "/v1/measurements?processId="+proc["id"].(string), env.AdminKey, nil, 200).JSON()["data"].([]any))
			body := map[string]any{"processUuid": proc["id"], "stepLabel": "Approve"}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: bob, Body: body}), 422, "signature.password")
			if n := len(env.Call(get, "/v1/measurements?processId="+proc["id"].(string), env.AdminKey, nil, 200).JSON()["data"].([]any)); n != before {
				t.Fatalf("a refused signature created a measurement: %d, was %d", n, before)
			}
			body["signature"] = map[string]any{"password": goodPassword}
			m := env.Call(post, "/v1/measurements/simplified", bob, body, 201).JSON()
			a := env.Call(get, "/v1/actions/"+m["actionId"].(string), bob, nil, 200).JSON()
			if sig, _ := a["signature"].(map[string]any); sig["signerEmail"] != "bob@example.com" || sig["meaning"] != "Approved" {
				t.Fatalf("simplified action: %v", a)
			}
		})

		t.Run("failed signatures are throttled as sign-ins", func(t *testing.T) {
			m2 := newMeasurement()
			for range 3 {
				tu.Problem(t, act(cat, m2, map[string]any{"stepId": approve, "type": "APPROVAL", "signature": map[string]any{"password": "guess"}}), 422, "signature.password")
			}
			r := act(cat, m2, map[string]any{"stepId": approve, "type": "APPROVAL", "signature": map[string]any{"password": goodPassword}})
			tu.Problem(t, r, 429, "")
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			if env.Do(tu.Request{Method: post, Path: "/v1/sessions", Body: map[string]any{"email": "cat@example.com", "password": goodPassword}}).Status != 429 {
				t.Fatal("the failed signatures did not count against the account's sign-ins")
			}
		})

		t.Run("signing with a recent SSO sign-in", func(t *testing.T) {
			m3 := newMeasurement()
			body := map[string]any{"stepId": approve, "type": "APPROVAL", "signature": map[string]any{"sso": true}}
			tu.Problem(t, act(sso, m3, body), 422, "signature.password") // never signed in by SSO
			tu.Problem(t, act(sso, m3, map[string]any{"stepId": approve, "type": "APPROVAL", "signature": map[string]any{"password": goodPassword}}),
				422, "signature.password") // no password to give
			at := env.Service.Now()
			if err := env.DB.Write(context.Background(), func(tx wps.Tx) error {
				return tx.RecordSSOSignIn(wps.SSOSignInRecord{OrgID: env.OrgID, UserID: ssoID, At: at, RolesAdded: []string{}, RolesRemoved: []string{}})
			}); err != nil {
				t.Fatal(err)
			}
			env.Clock.Advance(4 * time.Minute)
			a := env.Call(post, "/v1/measurements/"+m3+"/actions", sso, body, 201).JSON()
			if sig := a["signature"].(map[string]any); sig["method"] != "sso" || sig["signerName"] != "Sue Oh" || sig["signerEmail"] != "sue@example.com" {
				t.Fatalf("sso signature: %v", a)
			}
			env.Call(post, "/v1/actions/"+a["id"].(string)+"/reprove", sso, map[string]any{"observation": "recount", "signature": map[string]any{"sso": true}}, 201)
			env.Clock.Advance(2 * time.Minute) // the sign-in is 6 minutes old
			tu.Problem(t, act(sso, m3, body), 422, "signature.password")
			integrate(t, env)
			if v := verify(env); v["ok"] != true {
				t.Fatalf("verify: %v", v)
			}
		})
	})
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
