package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// server is the wps program in a process of its own (this test binary
// standing in for it, see TestMain), which a test can kill with SIGKILL.
type server struct {
	t    *testing.T
	env  []string
	addr string
	cmd  *exec.Cmd
	log  *tu.SyncBuffer
}

// startProcess runs the server on addr in a new process and waits until it answers.
func (s *server) startProcess() {
	s.t.Helper()
	s.log = &tu.SyncBuffer{}
	s.cmd = exec.Command(os.Args[0], "serve", "--addr", s.addr)
	s.cmd.Env = append(os.Environ(), append([]string{"WPS_DOCSTEST_RUN=1"}, s.env...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	tu.Await(s.t, "the server to answer", func() error {
		res, err := http.Get("http://" + s.addr + "/v1/health")
		if err != nil {
			return fmt.Errorf("%v; its output:\n%s", err, s.log.String())
		}
		res.Body.Close()
		return nil
	})
}

// kill ends the process at once (SIGKILL: no shutdown, nothing flushed by it).
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestRetryAfterKillRunsOnce: requests with an Idempotency-Key in flight
// when the server is killed (some between their commit and their answer),
// retried once it is back, each create one measurement, never two.
func TestRetryAfterKillRunsOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		key := "wps_" + strings.Repeat("c", 40)
		s := &server{t: t, addr: freeAddr(t), env: []string{"WPS_DATABASE_URL=" + tu.DatabaseURL(t, engine), "WPS_BOOTSTRAP_API_KEY=" + key,
			"WPS_ATTACHMENT_DIR=" + t.TempDir(), "WPS_IDEMPOTENCY_LEASE=300ms", "WPS_RATE_LIMIT=0"}}
		s.startProcess()
		base := "http://" + s.addr
		call := func(method, path, idem string, body any) (int, []byte, error) {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			if idem != "" {
				req.Header.Set("Idempotency-Key", idem)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer res.Body.Close()
			var out bytes.Buffer
			_, err = out.ReadFrom(res.Body)
			return res.StatusCode, out.Bytes(), err
		}
		st, body, err := call("POST", "/v1/users/policies", "", map[string]any{"name": "Admins", "roles": []string{"ADMIN"}})
		if err != nil || st != 201 {
			t.Fatalf("policy: %d %s %v", st, body, err)
		}
		st, body, err = call("POST", "/v1/process", "", map[string]any{"name": "Crash", "steps": []map[string]any{{"label": "S", "policyNames": []string{"Admins"}}}})
		if err != nil || st != 201 {
			t.Fatalf("process: %d %s %v", st, body, err)
		}
		var proc struct{ ID string }
		_ = json.Unmarshal(body, &proc)

		// 16 clients create measurements, each with a key of its own, until the kill.
		var mu sync.Mutex
		var keys []string
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := fmt.Sprintf("k-%d-%d", c, i)
					mu.Lock()
					keys = append(keys, k)
					mu.Unlock()
					if _, _, err := call("POST", "/v1/measurements", k, map[string]any{"processId": proc.ID}); err != nil {
						return // the server is gone
					}
				}
			}()
		}
		time.Sleep(400 * time.Millisecond)
		s.kill()
		close(stop)
		wg.Wait()

		s.startProcess()
		time.Sleep(400 * time.Millisecond) // the killed requests' leases run out
		lost := 0
		for _, k := range keys {
			for {
				st, body, err := call("POST", "/v1/measurements", k, map[string]any{"processId": proc.ID})
				if err != nil {
					t.Fatal(err)
				}
				if st == 409 && strings.Contains(string(body), "in progress") {
					time.Sleep(50 * time.Millisecond) // its lease has not run out yet
					continue
				}
				if st == 409 && strings.Contains(string(body), "carried out") {
					lost++
				} else if st != 201 {
					t.Fatalf("retry of %s: %d %s", k, st, body)
				}
				break
			}
		}
		st, body, err = call("GET", "/v1/measurements?perPage=1", "", nil)
		if err != nil || st != 200 {
			t.Fatalf("list: %d %s %v", st, body, err)
		}
		var list struct{ Meta struct{ Total int } }
		_ = json.Unmarshal(body, &list)
		if list.Meta.Total != len(keys) {
			t.Fatalf("%d keys sent (each once, then retried) made %d measurements", len(keys), list.Meta.Total)
		}
		t.Logf("%d keys, %d of them carried out with their answer lost at the kill", len(keys), lost)
	})
}
