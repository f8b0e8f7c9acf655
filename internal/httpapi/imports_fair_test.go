package httpapi_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// asset creates the entity Asset (tag unique, pressure a number) in the org
// of key and returns its id.
func asset(t *testing.T, env *tu.Env, key string) string {
	t.Helper()
	return env.Call(post, "/v1/entities/simplified", key, map[string]any{"n": "Asset", "p": []map[string]any{
		{"n": "tag", "t": "TEXT", "isUnique": true}, {"n": "pressure", "t": "NUMBER"},
	}}, 201).JSON()["id"].(string)
}

// Orgs take turns at import jobs: one org's jobs run one at a time
// (ImportConfig.PerOrg), so another org's job is claimed beside them, and
// the org that started a job least recently goes first, before an older
// job of another org.
func TestImportJobsTakeTurnsAcrossOrgs(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, a := importSetup(t, engine)
		keyB := env.NewOrg("B")
		b := asset(t, env, keyB)
		var jobsA []string
		for i := range 3 {
			jobsA = append(jobsA, importCSV(t, env, env.AdminKey, a, csvRows(100*(i+1), 5), nil).JSON()["id"].(string))
		}
		jobB := importCSV(t, env, keyB, b, csvRows(10, 5), nil).JSON()["id"].(string)
		ctx := context.Background()
		claim := func(want, why string) *wps.ImportJob {
			t.Helper()
			env.Clock.Advance(time.Second) // each claim starts its job at an instant of its own
			j, err := env.Service.ClaimImportJob(ctx, "worker")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if j != nil {
				got = j.ID
			}
			if got != want {
				t.Fatalf("claimed %q, want %q: %s", got, want, why)
			}
			return j
		}
		run := func(jobs ...*wps.ImportJob) {
			t.Helper()
			for _, j := range jobs {
				if err := env.Service.RunImportJob(ctx, env.Blobs(), j); err != nil || j.Status != wps.ImportSucceeded {
					t.Fatalf("job %s: %s %v", j.ID, j.Status, err)
				}
			}
		}
		a1 := claim(jobsA[0], "org A's oldest job")
		b1 := claim(jobB, "org B's job beside org A's running one")
		claim("", "org A's second job beside its first")
		run(a1)
		a2 := claim(jobsA[1], "org A's second job once its first ended")
		run(b1, a2)
		jobB2 := importCSV(t, env, keyB, b, csvRows(20, 5), nil).JSON()["id"].(string)
		b2 := claim(jobB2, "org B started a job before org A's last: its new job goes before org A's older one")
		a3 := claim(jobsA[2], "org A's last job")
		run(b2, a3)
	})
}

// Org A has 10 import jobs of 2,000 rows open, and they are running, when
// org B imports 2 rows as a job: the workers (WPS_IMPORT_JOBS's default)
// run org B's job beside org A's, which run one at a time, so it ends
// before org A's queue is half done (served oldest first, it waited for
// all 10).
func TestImportFloodDoesNotStarveAnotherOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Imports: wps.ImportConfig{SyncMaxRows: 3}})
		a := asset(t, env, env.AdminKey)
		keyB := env.NewOrg("B")
		b := asset(t, env, keyB)
		const jobs, rows = 10, 2000
		for i := range jobs {
			if r := importCSV(t, env, env.AdminKey, a, csvRows(i*rows, rows), nil); r.Status != 202 {
				t.Fatalf("org A's import %d: %d %s", i, r.Status, r.Body)
			}
		}
		progress := func() (done, written int) {
			return env.RawInt(`SELECT count(*) FROM import_jobs WHERE org_id = ? AND status = 'SUCCEEDED'`, env.OrgID),
				env.RawInt(`SELECT coalesce(sum(processed), 0) FROM import_jobs WHERE org_id = ?`, env.OrgID)
		}
		startImportWorker(t, env)
		tu.Await(t, "org A's jobs to write a row", func() error {
			if _, written := progress(); written == 0 {
				return fmt.Errorf("none written")
			}
			return nil
		})
		doneBefore, writtenBefore := progress()
		start := time.Now()
		r := importCSV(t, env, keyB, b, csvRows(0, 2), map[string]string{"Prefer": "respond-async"})
		if r.Status != 202 {
			t.Fatalf("org B's import: %d %s", r.Status, r.Body)
		}
		tu.Await(t, "org B's job to succeed", func() error {
			j := env.Call(get, r.Header.Get("Location"), keyB, nil, 200).JSON()
			if j["status"] == "FAILED" {
				t.Fatalf("org B's job after %s: %v", time.Since(start), j)
			}
			if j["status"] != "SUCCEEDED" {
				return fmt.Errorf("%v", j["status"])
			}
			return nil
		})
		waited := time.Since(start)
		done, written := progress()
		t.Logf("%s: org B's 2-row job ended %d ms after it was sent; meanwhile org A's jobs went from %d to %d of %d done, %d to %d of %d rows written",
			engine, waited.Milliseconds(), doneBefore, done, jobs, writtenBefore, written, jobs*rows)
		if done-doneBefore >= jobs/2 {
			t.Fatalf("org B's job waited for %d of org A's %d jobs", done-doneBefore, jobs)
		}
	})
}

// Workers claiming at once (two replicas on PostgreSQL) never run two of
// one org's jobs: each claim counts the org's running jobs again under the
// org's row lock.
func TestImportJobsPerOrgHoldsUnderRacingClaims(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env, a := importSetup(t, engine)
		for i := range 4 {
			importCSV(t, env, env.AdminKey, a, csvRows(100*(i+1), 5), nil)
		}
		services := []*wps.Service{env.Service, env.Service}
		if engine == sqlstore.Postgres {
			services[1] = env.Replica().Service
		}
		for round := range 5 {
			var claimed atomic.Int32
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					j, err := services[i%2].ClaimImportJob(context.Background(), fmt.Sprint("worker", i))
					if err != nil {
						t.Error(err)
					}
					if j != nil {
						claimed.Add(1)
					}
				})
			}
			wg.Wait()
			if n := claimed.Load(); n != 1 {
				t.Fatalf("round %d: %d of the org's jobs claimed at once, want 1", round, n)
			}
			env.Clock.Advance(jobConfig.Lease) // the claim's lease ends: the next round claims again
		}
	})
}
