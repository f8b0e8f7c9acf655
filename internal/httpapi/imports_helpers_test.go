package httpapi_test

import (
	"context"
	"testing"
	"time"

	"wps/internal/imports"
	tu "wps/internal/testutil"
)

// startImportWorker runs the import jobs' worker over env until the test ends.
func startImportWorker(tb testing.TB, env *tu.Env) {
	w := imports.New(env.Service, env.Blobs(), imports.Config{Poll: 20 * time.Millisecond})
	w.Start(context.Background())
	tb.Cleanup(w.Stop)
}

// waitJob polls a job until it is done and returns it.
func waitJob(tb testing.TB, env *tu.Env, path string, limit time.Duration) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := env.Call(get, path, env.AdminKey, nil, 200).JSON()
		if j["status"] == "SUCCEEDED" || j["status"] == "FAILED" {
			return j
		}
		if time.Now().After(deadline) {
			tb.Fatalf("job %s still %v after %s", path, j["status"], limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
