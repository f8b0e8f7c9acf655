package httpapi_test

import (
	"context"
	"fmt"
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

// waitJob polls a job until it is done and returns it (however long a
// busy machine takes: only a hung job meets tu.Deadline).
func waitJob(tb testing.TB, env *tu.Env, path string) map[string]any {
	tb.Helper()
	var j map[string]any
	tu.Await(tb, "job "+path+" to end", func() error {
		if j = env.Call(get, path, env.AdminKey, nil, 200).JSON(); j["status"] == "SUCCEEDED" || j["status"] == "FAILED" {
			return nil
		}
		return fmt.Errorf("%v, %v of %v rows", j["status"], j["processed"], j["total"])
	})
	return j
}
