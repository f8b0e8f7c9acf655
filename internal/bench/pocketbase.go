package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// pocketBase is a PocketBase server (a binary built from its public
// source, given with --pocketbase) with a collection of the create's
// fields, for the side-by-side: its create is one INSERT in SQLite with
// synchronous=NORMAL (not durable against a power loss), wps's is durable.
type pocketBase struct {
	cmd  *exec.Cmd
	base string
}

const pbCollection = "inspections"

func startPocketBase(ctx context.Context, exe, dir string, stderr io.Writer) (*pocketBase, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "pb_data")
	const email, password = "bench@bench.example", "bench-password-0123"
	up := exec.CommandContext(ctx, exe, "superuser", "upsert", email, password, "--dir", data)
	up.Stdout, up.Stderr = io.Discard, stderr
	if err := up.Run(); err != nil {
		return nil, fmt.Errorf("pocketbase superuser: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--http", addr, "--dir", data)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pb := &pocketBase{cmd: cmd, base: "http://" + addr}
	ready := false
	for range 200 {
		if res, err := http.Get(pb.base + "/api/health"); err == nil {
			res.Body.Close()
			if ready = res.StatusCode == 200; ready {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ready {
		pb.stop()
		return nil, errors.New("pocketbase did not become ready")
	}
	c := newClient(pb.base, 2)
	var auth struct{ Token string }
	if _, err := c.do("POST", "/api/collections/_superusers/auth-with-password", "", map[string]any{"identity": email, "password": password}, &auth); err != nil {
		pb.stop()
		return nil, err
	}
	// The fields of seeded.create, checked as wps checks them; anyone may create.
	_, err = c.do("POST", "/api/collections", auth.Token, map[string]any{
		"name": pbCollection, "type": "base", "createRule": "",
		"fields": []map[string]any{
			{"name": "asset", "type": "text", "required": true, "max": 40},
			{"name": "kind", "type": "select", "required": true, "values": []string{"ok", "repair", "replace"}, "maxSelect": 1},
			{"name": "pressure", "type": "number", "min": 0, "max": 400},
			{"name": "temperature", "type": "number"},
			{"name": "hours", "type": "number"},
			{"name": "rate", "type": "number"},
			{"name": "notes", "type": "text"},
		},
	}, nil)
	if err != nil {
		pb.stop()
		return nil, fmt.Errorf("pocketbase collection: %w", err)
	}
	return pb, nil
}

// create is seeded.create's values as a PocketBase record.
func (pb *pocketBase) create(c *client, rng *rand.Rand) (int, error) {
	return c.do("POST", "/api/collections/"+pbCollection+"/records", "", createValues(rng), nil)
}

func (pb *pocketBase) stop() {
	_ = pb.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = pb.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = pb.cmd.Process.Kill()
	}
}
