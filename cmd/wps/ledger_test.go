package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// An auditor's commands against a real server: the proof of an action,
// checked by wps ledger verify from files only, and wps ledger monitor.
func TestLedgerCommands(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		key := "wps_" + strings.Repeat("l", 40)
		addr, _, stopServer := start(t, map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, engine), "WPS_BOOTSTRAP_API_KEY": key,
			"WPS_LEDGER_CHECKPOINT_EVERY": "50ms"})
		stop := sync.OnceValue(stopServer)
		defer stop()
		call := func(method, path string, body any) []byte {
			t.Helper()
			var r io.Reader
			if body != nil {
				b, _ := json.Marshal(body)
				r = bytes.NewReader(b)
			}
			req, _ := http.NewRequest(method, "http://"+addr+path, r)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out, _ := io.ReadAll(res.Body)
			if res.StatusCode >= 300 {
				t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, out)
			}
			return out
		}
		field := func(b []byte, k string) any {
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return m[k]
		}
		call("POST", "/v1/users/policies", map[string]any{"name": "Admins", "roles": []string{"ADMIN"}})
		p := call("POST", "/v1/process", map[string]any{"name": "Check", "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Admins"}, "parameters": []map[string]any{{"name": "ok", "type": "BOOLEAN"}}}}})
		m := call("POST", "/v1/measurements/simplified", map[string]any{"processUuid": field(p, "id"), "parameters": map[string]any{"ok": true}})
		id := field(m, "actionId").(string)

		// The integrator takes the action in, a checkpoint follows.
		var cp []byte
		var page struct{ Meta struct{ Total float64 } }
		_ = json.Unmarshal(call("GET", "/v1/audit-events", nil), &page)
		tu.Await(t, "a checkpoint of the action", func() error {
			if cp = call("GET", "/v1/ledger/checkpoint", nil); field(cp, "treeSize").(float64) >= page.Meta.Total+1 { // the audit events, the action
				return nil
			}
			return fmt.Errorf("checkpoint %s", cp)
		})
		size := strconv.Itoa(int(field(cp, "treeSize").(float64)))
		dir := t.TempDir()
		files := map[string][]byte{"key": call("GET", "/v1/ledger/key", nil), "checkpoint": cp,
			"proof": call("GET", "/v1/actions/"+id+"/proof?treeSize="+size, nil), "action": call("GET", "/v1/actions/"+id, nil)}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"ledger", "verify", "--key", filepath.Join(dir, "key"), "--checkpoint", filepath.Join(dir, "checkpoint"),
			"--proof", filepath.Join(dir, "proof"), "--action", filepath.Join(dir, "action")}
		var bundleOf []byte // the measurement's evidence, once its entries are in the log
		tu.Await(t, "the measurement's evidence", func() error {
			req, _ := http.NewRequest("GET", "http://"+addr+"/v1/measurements/"+field(m, "id").(string)+"/evidence", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			bundleOf, _ = io.ReadAll(res.Body)
			if res.StatusCode != 200 {
				return fmt.Errorf("%d %s", res.StatusCode, bundleOf)
			}
			return nil
		})
		stop() // no server from here on
		noEnv := func(string) string { return "" }
		var out bytes.Buffer
		if err := run(context.Background(), args, noEnv, &out, io.Discard); err != nil || !strings.Contains(out.String(), "verified: action "+id) {
			t.Fatalf("verify: %v %q", err, out.String())
		}
		forged := bytes.Replace(files["action"], []byte(`"type":"WRITE_DATA"`), []byte(`"type":"APPROVAL"`), 1)
		if err := os.WriteFile(filepath.Join(dir, "action"), forged, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), args, noEnv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "NOT VERIFIED") {
			t.Fatalf("a forged action: %v", err)
		}

		// The measurement's evidence bundle, checked by wps ledger verify
		// --bundle with no server; a changed byte is found, naming its file.
		bundle := filepath.Join(dir, "evidence.zip")
		if err := os.WriteFile(bundle, bundleOf, 0o600); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if err := run(context.Background(), []string{"ledger", "verify", "--bundle", bundle}, noEnv, &out, io.Discard); err != nil ||
			!strings.HasPrefix(out.String(), "verified 2 leaves of measurement "+field(m, "id").(string)) { // the action, the process's creation
			t.Fatalf("verify --bundle: %v %q", err, out.String())
		}
		changed := changeInZip(t, bundleOf, "measurement.json")
		if err := os.WriteFile(bundle, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), []string{"ledger", "verify", "--bundle", bundle}, noEnv, io.Discard, io.Discard); err == nil ||
			!strings.Contains(err.Error(), "NOT VERIFIED: measurement.json:") {
			t.Fatalf("a changed measurement.json: %v", err)
		}
	})
}

// changeInZip is a zip file with one byte of the named file changed.
func changeInZip(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := zip.NewWriter(&out)
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		c, _ := io.ReadAll(rc)
		rc.Close()
		if f.Name == name {
			c[len(c)/2] ^= 1
		}
		fw, _ := w.Create(f.Name)
		_, _ = fw.Write(c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestLedgerMonitorCommand(t *testing.T) {
	key := "wps_" + strings.Repeat("m", 40)
	addr, _, stop := start(t, map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, sqlstore.SQLite), "WPS_BOOTSTRAP_API_KEY": key,
		"WPS_LEDGER_CHECKPOINT_EVERY": "10ms"})
	defer stop()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/ledger/key", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	vkey, _ := io.ReadAll(res.Body)
	res.Body.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), vkey, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"ledger", "monitor", "--url", "http://" + addr, "--key", filepath.Join(dir, "key"), "--state", filepath.Join(dir, "seen"), "--once"}
	getenv := func(k string) string { return map[string]string{"WPS_API_KEY": key}[k] }
	for range 2 {
		var out bytes.Buffer
		if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "ok: wps/") {
			t.Fatalf("monitor: %v %q", err, out.String())
		}
	}
	if err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "WPS_API_KEY") {
		t.Fatalf("without an API key: %v", err)
	}
}
