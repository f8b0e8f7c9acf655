package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"wps/internal/ledger"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// The loop integrates what writes queue, within a few polls, and stops.
func TestIntegratorLoop(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		in := ledger.New(env.Service, ledger.Config{Poll: 10 * time.Millisecond})
		in.Start(context.Background())
		defer in.Stop()
		env.Call("POST", "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call("POST", "/v1/process", env.AdminKey, map[string]any{"name": "Check", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}}}}, 201).JSON()
		m := env.Call("POST", "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"]}, 201).JSON()
		tu.Await(t, "the action's proof", func() error {
			res := env.Do(tu.Request{Method: "GET", Path: "/v1/actions/" + m["actionId"].(string) + "/proof", Key: env.AdminKey})
			if res.Status == 409 {
				return fmt.Errorf("proof: %d %s", res.Status, res.Body)
			}
			if res.Status != 200 {
				t.Fatalf("proof: %d %s", res.Status, res.Body)
			}
			return nil
		})
		in.Stop()
		if rep := env.Call("GET", "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); rep["ok"] != true || rep["pending"] != 0.0 || rep["treeSize"] != 3.0 { // the policy's and the process's audit events, the action
			t.Fatalf("verify: %v", rep)
		}
	})
}

// The auditor's files are the endpoints' answers or what they carry.
func TestParseFiles(t *testing.T) {
	skey, vkey, err := note.GenerateKey(nil, "wps")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{vkey, vkey + "\n", `{"key":"` + vkey + `","origin":"wps/o"}`} {
		if v, err := ledger.ParseKey([]byte(key)); err != nil || v.Name() != "wps" {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	if _, err := ledger.ParseKey([]byte(skey)); err == nil {
		t.Fatal("a signer key read as a verifier key")
	}
	signed := "wps/o\n1\nAAAA\n\n— wps sig\n"
	for _, cp := range []string{signed, `{"checkpoint":"wps/o\n1\nAAAA\n\n— wps sig\n","treeSize":1}`} {
		if got, err := ledger.ParseSignedCheckpoint([]byte(cp)); err != nil || string(got) != signed {
			t.Fatalf("checkpoint %q: %q %v", cp, got, err)
		}
	}
	if _, err := ledger.ParseSignedCheckpoint([]byte(`{"treeSize":1}`)); err == nil {
		t.Fatal("a JSON file without a checkpoint")
	}
}
