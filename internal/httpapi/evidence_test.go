package httpapi_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"wps/internal/evidence"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// unzip reads a bundle's files, in order.
func unzip(t *testing.T, b []byte) ([]string, map[string][]byte) {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	files := map[string][]byte{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
		names = append(names, f.Name)
	}
	return names, files
}

// rezipWith is the bundle with one file's bytes replaced.
func rezipWith(t *testing.T, names []string, files map[string][]byte, name string, content []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, n := range names {
		w, _ := z.Create(n)
		c := files[n]
		if n == name {
			c = content
		}
		_, _ = w.Write(c)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEvidenceBundle(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		pr := newProcurement(t, env)
		pr.start(t)
		pr.approveBoth(t)
		env.Call(patch, "/v1/process/"+pr.process["id"].(string), env.AdminKey, map[string]any{"label": "Procurement of goods"}, 200)
		path := "/v1/measurements/" + pr.measurement + "/evidence"

		r := env.Do(tu.Request{Method: get, Path: path, Key: env.AdminKey})
		if r.Status == 200 { // the integrator has not run: the entries have no proof yet
			t.Fatalf("a bundle before the entries are in the log")
		}
		tu.Problem(t, r, 409, "")
		integrate(t, env)
		r = env.Call(get, path, env.AdminKey, nil, 200)
		if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
			t.Fatalf("content type %q", ct)
		}
		rep, err := evidence.Verify(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		names, files := unzip(t, r.Body)
		kinds := map[string]string{}
		for _, n := range names {
			dir, _, _ := strings.Cut(n, "/")
			kinds[dir] = n
		}
		for _, want := range []string{"measurement.json", "actions", "leaves", "documents", "audit-events.json", "checkpoint.txt", "key.txt", "manifest.txt"} {
			if kinds[want] == "" {
				t.Fatalf("the bundle has no %s: %v", want, names)
			}
		}
		var audit []wps.EvidenceLeaf
		if err := json.Unmarshal(files["audit-events.json"], &audit); err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, l := range audit {
			e, err := wps.AuditLeafEvent(l.Leaf)
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, e.Type)
			if e.Type == "process.updated" && fmt.Sprint(e.Changes) != "map[label:{Procurement Procurement of goods false [] [] []}]" {
				t.Fatalf("process.updated: %v", e.Changes)
			}
		}
		if fmt.Sprint(types) != "[process.created process.updated]" {
			t.Fatalf("audit-events.json is not the process's: %v", types)
		}
		if rep.Leaves < 6 || rep.MeasurementID != pr.measurement { // creation, 3 actions, a document, the 2 audit events
			t.Fatalf("report: %+v", rep)
		}

		t.Run("a changed byte in any file is found, naming it", func(t *testing.T) {
			for _, n := range []string{"measurement.json", kinds["actions"], kinds["leaves"], "audit-events.json", kinds["documents"], "checkpoint.txt", "key.txt", "manifest.txt"} {
				c := bytes.Clone(files[n])
				i := len(c) / 2
				if n == "key.txt" || n == "checkpoint.txt" || n == "manifest.txt" {
					i = len(c) - 10 // the key, the signature
				}
				c[i] ^= 0x01
				_, err := evidence.Verify(rezipWith(t, names, files, n, c))
				if err == nil || !strings.HasPrefix(err.Error(), n+":") {
					t.Fatalf("%s changed: %v", n, err)
				}
			}
			var without []string
			for _, n := range names {
				if n != kinds["actions"] {
					without = append(without, n)
				}
			}
			if _, err := evidence.Verify(rezipWith(t, without, files, "", nil)); err == nil || !strings.Contains(err.Error(), kinds["actions"]) {
				t.Fatalf("an action left out: %v", err)
			}
		})

		t.Run("the reader's visibility holds", func(t *testing.T) {
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: path, Key: pr.aud}), 403, "") // no ledger:read
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Ledger", "roles": []string{"AUDITOR"}, "functions": []string{"ledger:read"}}, 201)
			b := env.Call(get, path, pr.aud, nil, 200).Body
			if _, err := evidence.Verify(b); err != nil {
				t.Fatal(err)
			}
			_, files := unzip(t, b)
			for n, c := range files {
				if bytes.Contains(c, []byte("Entrega em até 10 dias")) {
					t.Fatalf("%s shows a value hidden from the reader", n)
				}
			}
			docs := 0
			for n := range files {
				if strings.HasPrefix(n, "documents/") {
					docs++
				}
			}
			if want := len(pr.documents(t, pr.aud)); docs != want {
				t.Fatalf("%d documents in the bundle, the reader reads %d", docs, want)
			}
		})
	})
}

// bundleChecked fetches a measurement's evidence bundle as key once its
// entries are in the log, checks it, and checks that a changed byte in
// the named file is found, naming it. It returns the bundle's files.
func bundleChecked(t *testing.T, env *tu.Env, key, measurementID, name string) map[string][]byte {
	t.Helper()
	integrate(t, env)
	b := env.Call(get, "/v1/measurements/"+measurementID+"/evidence", key, nil, 200).Body
	if _, err := evidence.Verify(b); err != nil {
		t.Fatal(err)
	}
	names, files := unzip(t, b)
	c, ok := files[name]
	if !ok {
		t.Fatalf("no %s in the bundle: %v", name, names)
	}
	c = bytes.Clone(c)
	c[len(c)/2] ^= 1
	if _, err := evidence.Verify(rezipWith(t, names, files, name, c)); err == nil || !strings.HasPrefix(err.Error(), name+":") {
		t.Fatalf("%s changed: %v", name, err)
	}
	return files
}
