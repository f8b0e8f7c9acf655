package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// start runs the real server on a free port until the returned stop is called.
func start(t *testing.T, env map[string]string) (addr string, out *tu.SyncBuffer, stop func() error) {
	t.Helper()
	return startLogging(t, env, io.Discard)
}

// startLogging is start with the server's log written to log.
func startLogging(t *testing.T, env map[string]string, log io.Writer) (addr string, out *tu.SyncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &tu.SyncBuffer{}
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	if env["WPS_ATTACHMENT_DIR"] == "" {
		env["WPS_ATTACHMENT_DIR"] = t.TempDir()
	}
	getenv := func(k string) string { return env[k] }
	go func() { errc <- serve(ctx, []string{"--addr", "127.0.0.1:0"}, getenv, out, log, ready) }()
	select {
	case addr = <-ready:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	return addr, out, func() error { cancel(); return <-errc }
}

func TestServeBootstrapsOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, engine)}
		addr, out, stop := start(t, env)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[2], "wps_") {
			t.Fatalf("no key printed: %q", out.String())
		}
		getMe(t, addr, lines[2])
		// The console's first admin: a one-time link to the invitation page.
		_, link, _ := strings.Cut(lines[3], "open ")
		link, _, _ = strings.Cut(link, " ")
		if !strings.Contains(link, "/invite/wpsinv_") {
			t.Fatalf("no console link: %q", lines[3])
		}
		res, err := http.Get(strings.Replace(link, "localhost", "127.0.0.1", 1))
		if err != nil || res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("invitation page: %v %v", res, err)
		}
		res.Body.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}

		_, out, stop = start(t, env)
		if strings.Contains(out.String(), "wps_") || strings.Contains(out.String(), "Created") {
			t.Fatalf("second start printed: %q", out.String())
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}

		var buf bytes.Buffer
		if err := run(context.Background(), []string{"org", "create", "--name", "Globex"}, func(k string) string { return env[k] }, &buf, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "wps_") {
			t.Fatalf("org create printed no key: %q", buf.String())
		}
	})
}

func TestBootstrapKeyFromEnvironment(t *testing.T) {
	key := "wps_" + strings.Repeat("k", 40)
	addr, out, stop := start(t, map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, sqlstore.SQLite), "WPS_BOOTSTRAP_API_KEY": key})
	defer stop()
	if strings.Contains(out.String(), key) {
		t.Fatalf("the configured key was printed")
	}
	getMe(t, addr, key)
}

// getMe fails the test unless key authenticates at addr.
func getMe(t *testing.T, addr, key string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("me: %v %v", res, err)
	}
	res.Body.Close()
}

func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	key := "wps_" + strings.Repeat("g", 40)
	addr, _, stop := start(t, map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, sqlstore.SQLite), "WPS_BOOTSTRAP_API_KEY": key})

	// A request whose body is still arriving when shutdown begins. It asks
	// to be told to go on (Expect: 100-continue), which the server does
	// when its handler first reads the body, so the client sends none of
	// the body before the request is in the handler.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/users/policies", pr)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Until(tu.Deadline(t))}}
	defer client.CloseIdleConnections()
	type result struct {
		status int
		body   map[string]any
		err    error
	}
	done := make(chan result, 1)
	go func() {
		res, err := client.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		done <- result{status: res.StatusCode, body: m}
	}()
	_, _ = pw.Write([]byte(`{"name":`)) // returns once the handler reads the body
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	tu.Await(t, "the server to stop taking connections (shutdown has begun)", func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return errors.New("a connection was accepted")
		}
		return nil
	})
	_, _ = pw.Write([]byte(`"Late"}`))
	_ = pw.Close()
	r := <-done
	if r.err != nil || r.status != 201 || r.body["name"] != "Late" {
		t.Fatalf("in-flight request: %+v", r)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestVersionAndMigrate(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &buf, io.Discard); err != nil || !strings.HasPrefix(buf.String(), "wps ") {
		t.Fatalf("version: %q %v", buf.String(), err)
	}
	buf.Reset()
	db := tu.DatabaseURL(t, sqlstore.SQLite)
	if err := run(context.Background(), []string{"migrate", "--database-url", db}, func(string) string { return "" }, &buf, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"bogus"}, func(string) string { return "" }, &buf, io.Discard); err == nil {
		t.Fatal("an unknown command succeeded")
	}
}

// The operator's commands on one user: a new key for an active user, and
// deactivation, which stops that key at once.
func TestUserCommands(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, engine)}
		getenv := func(k string) string { return env[k] }
		var out bytes.Buffer
		if err := run(context.Background(), []string{"org", "create", "--name", "Globex", "--admin-email", "boss@globex.example"}, getenv, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		org := out.String()[strings.Index(out.String(), "(")+1 : strings.Index(out.String(), ")")]
		addr, _, stop := start(t, env)
		defer stop()

		out.Reset()
		if err := run(context.Background(), []string{"admin", "key", "--org", org, "--email", "BOSS@globex.example"}, getenv, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		key := lines[len(lines)-1]
		getMe(t, addr, key)

		if err := run(context.Background(), []string{"user", "deactivate", "--org", org, "--email", "nobody@globex.example"}, getenv, io.Discard, io.Discard); err == nil {
			t.Fatal("deactivated an unknown user")
		}
		// The org's only admin cannot be deactivated; the refusal says why.
		err := run(context.Background(), []string{"user", "deactivate", "--org", org, "--email", "boss@globex.example"}, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "last active ADMIN") {
			t.Fatalf("deactivating the last admin: %v", err)
		}
		// A member invited over the API, deactivated by the operator: their
		// key stops (this process's first use of it reads the database).
		call := func(method, path, key string, body any) map[string]any {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(res.Body).Decode(&m)
			m["status"] = res.StatusCode
			return m
		}
		inv := call("POST", "/v1/invites", key, map[string]any{"email": "ana@globex.example"})
		acc := call("POST", "/v1/invites/accept", "", map[string]any{"token": inv["token"]})
		anaKey := acc["apiKey"].(map[string]any)["key"].(string)
		out.Reset()
		if err := run(context.Background(), []string{"user", "deactivate", "--org", org, "--email", "ana@globex.example"}, getenv, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if me := call("GET", "/v1/users/me", anaKey, nil); me["status"] != 401 {
			t.Fatalf("a deactivated user's key: %v", me)
		}
		if err := run(context.Background(), []string{"admin", "key", "--org", org, "--email", "ana@globex.example"}, getenv, io.Discard, io.Discard); err == nil {
			t.Fatal("a key for a deactivated user")
		}
		if err := run(context.Background(), []string{"admin", "key", "--org", org}, getenv, io.Discard, io.Discard); err == nil {
			t.Fatal("admin key without --email worked")
		}
	})
}

func TestHelpAndVersion(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, getenv, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, cmd := range []string{"serve", "migrate", "org create", "admin key", "user deactivate", "ledger verify", "ledger monitor", "bench", "backup", "version"} {
			if !strings.Contains(out.String(), "wps "+cmd) {
				t.Fatalf("%v does not list %q:\n%s", args, cmd, out.String())
			}
		}
	}
	// A command's --help prints its flags; main exits 0 on flag.ErrHelp.
	for _, args := range [][]string{{"serve", "--help"}, {"migrate", "-h"}, {"org", "create", "--help"}, {"admin", "key", "--help"}, {"user", "deactivate", "--help"}, {"ledger", "verify", "--help"}, {"ledger", "monitor", "--help"}, {"bench", "--help"}, {"backup", "--help"}} {
		var flags bytes.Buffer
		if err := run(context.Background(), args, getenv, io.Discard, &flags); !errors.Is(err, flag.ErrHelp) || !strings.Contains(flags.String(), "-") {
			t.Fatalf("%v: %v\n%s", args, err, flags.String())
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, getenv, &out, io.Discard); err != nil || !strings.HasPrefix(out.String(), "wps ") {
		t.Fatalf("version: %q %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"nope"}, getenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "wps help") {
		t.Fatalf("unknown command: %v", err)
	}
}

// wps backup copies a SQLite database while the server writes to it; a
// server started on the copy has the data committed before the backup.
func TestBackupAndRestore(t *testing.T) {
	key := "wps_" + strings.Repeat("b", 40)
	dir := t.TempDir()
	env := map[string]string{"WPS_DATABASE_URL": "sqlite:" + dir + "/live.db", "WPS_BOOTSTRAP_API_KEY": key}
	getenv := func(k string) string { return env[k] }
	addr, _, stop := start(t, env)
	call := func(addr, method, path string, body any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	if st, _ := call(addr, "POST", "/v1/users/policies", map[string]any{"name": "Before", "roles": []string{"AUDITOR"}}); st != 201 {
		t.Fatalf("policy: %d", st)
	}
	// Writes go on while the backup runs: it starts once they have begun.
	done, finished := make(chan struct{}), make(chan struct{})
	var n atomic.Int64
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			if st, _ := call(addr, "POST", "/v1/users/policies", map[string]any{"name": fmt.Sprintf("Busy %d", n.Load())}); st == 201 {
				n.Add(1)
			}
		}
	}()
	tu.Await(t, "the first of the writes beside the backup", func() error {
		if n.Load() == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	copyPath := filepath.Join(dir, "copy.db")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"backup", "--out", copyPath}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	close(done)
	<-finished
	if !strings.Contains(out.String(), copyPath) {
		t.Fatalf("backup printed %q", out.String())
	}
	call(addr, "POST", "/v1/users/policies", map[string]any{"name": "After"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Restore: a server on the copy has what was committed before it.
	restored, _, stop := start(t, map[string]string{"WPS_DATABASE_URL": copyPath})
	defer stop()
	st, list := call(restored, "GET", "/v1/users/policies", nil)
	names := map[string]bool{}
	for _, p := range list["data"].([]any) {
		names[p.(map[string]any)["name"].(string)] = true
	}
	if st != 200 || !names["Before"] || names["After"] {
		t.Fatalf("policies on the copy: %d %v", st, names)
	}
	if st, _ := call(restored, "POST", "/v1/users/policies", map[string]any{"name": "On the copy"}); st != 201 {
		t.Fatalf("a write on the copy: %d", st)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup", "--out", copyPath}, "exists"},
		{[]string{"backup", "--out", filepath.Join(dir, "x.db"), "--database-url", filepath.Join(dir, "missing.db")}, "no SQLite database"},
		{[]string{"backup", "--out", filepath.Join(dir, "pg.dump"), "--database-url", "postgres://postgres@127.0.0.1:5432/test"}, "pg_dump"},
		{[]string{"backup"}, "--out"},
	} {
		if err := run(context.Background(), c.args, getenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed backup left its file: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}
