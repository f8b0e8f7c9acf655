package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/imports"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// jobConfig makes imports of more than 3 rows jobs of 2-row chunks
// (whatever the time they take).
var jobConfig = wps.ImportConfig{SyncMaxRows: 3, ChunkRows: 2, ChunkTime: time.Hour, Lease: 30 * time.Second}

// importSetup starts an API whose imports of more than 3 rows are jobs,
// with an entity Asset (tag unique, pressure a number) holding P-0 and P-1.
func importSetup(t *testing.T, engine sqlstore.Engine) (*tu.Env, string) {
	t.Helper()
	env := tu.NewEnv(t, engine, tu.Options{Imports: jobConfig})
	id := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Asset", "p": []map[string]any{
		{"n": "tag", "t": "TEXT", "isUnique": true}, {"n": "pressure", "t": "NUMBER"},
	}}, 201).JSON()["id"].(string)
	r := importCSV(t, env, env.AdminKey, id, "tag,pressure\nP-0,1\nP-1,2\n", nil)
	if r.Status != 200 || r.JSON()["imported"] != 2.0 {
		t.Fatalf("small import: %d %s", r.Status, r.Body)
	}
	return env, id
}

func importCSV(t *testing.T, env *tu.Env, key, entity, csv string, header map[string]string) *tu.Response {
	t.Helper()
	h := map[string]string{"Content-Type": "text/csv"}
	for k, v := range header {
		h[k] = v
	}
	return env.Do(tu.Request{Method: post, Path: "/v1/entities/" + entity + "/records:import", Key: key, Body: csv, Header: h})
}

// csvRows is a CSV of n rows P-from... with pressure i.
func csvRows(from, n int) string {
	var b strings.Builder
	b.WriteString("tag,pressure\n")
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "P-%d,%d\n", i, i)
	}
	return b.String()
}

// seen counts the records of entity that the API shows: the list's total,
// the filter, the export's lines.
func seen(t *testing.T, env *tu.Env, entity string) int {
	t.Helper()
	n := int(env.Call(get, "/v1/entities/"+entity+"/records?perPage=1", env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"].(float64))
	export := env.Call(get, "/v1/entities/"+entity+"/records:export", env.AdminKey, nil, 200)
	if lines := strings.Count(string(export.Body), "\n") - 1; lines != n {
		t.Fatalf("the export has %d records, the list %d", lines, n)
	}
	return n
}

// failingStore is a store whose writes fail after the first n, as a
// server that crashed there would have left the database.
type failingStore struct {
	wps.Store
	n atomic.Int32
}

func (s *failingStore) Write(ctx context.Context, fn func(wps.Tx) error) error {
	if s.n.Add(-1) < 0 {
		return errors.New("crashed")
	}
	return s.Store.Write(ctx, fn)
}

// crashAfter runs a claimed job on a service whose store stops after
// writes (the claim is one) and returns the job as the API shows it.
func crashAfter(t *testing.T, env *tu.Env, writes int, path string) map[string]any {
	t.Helper()
	fs := &failingStore{Store: env.DB}
	fs.n.Store(int32(writes))
	svc := wps.NewService(fs, wps.ServiceConfig{Now: env.Clock.Now, Imports: jobConfig})
	j, err := svc.ClaimImportJob(context.Background(), "crashing")
	if err != nil || j == nil {
		t.Fatalf("claim: %v %v", j, err)
	}
	if err := svc.RunImportJob(context.Background(), env.Blobs(), j); err == nil {
		t.Fatal("the job ran to its end")
	}
	return env.Call(get, path, env.AdminKey, nil, 200).JSON()
}

func TestImportJobs(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		t.Run("a large import is a job whose rows appear at its end", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			r := importCSV(t, env, env.AdminKey, entity, csvRows(10, 5), nil)
			job := r.JSON()
			loc := r.Header.Get("Location")
			if r.Status != 202 || loc != "/v1/import-jobs/"+job["id"].(string) || job["status"] != "PENDING" || job["total"] != 5.0 ||
				job["entityId"] != entity || job["createdBy"] == "" || r.Header.Get("Preference-Applied") != "" {
				t.Fatalf("answer %d %v %s", r.Status, r.Header, r.Body)
			}
			// The claim, three chunks that hold the rows' unique values, two chunks of rows; then the server dies.
			mid := crashAfter(t, env, 6, loc)
			if mid["status"] != "RUNNING" || mid["processed"] != 4.0 {
				t.Fatalf("after the crash: %v", mid)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, entity); n != 7 {
				t.Fatalf("%d rows stored, want 2 + 4 hidden + the job's holder of unique values", n)
			}
			if n := seen(t, env, entity); n != 2 {
				t.Fatalf("%d records shown while the job runs, want 2", n)
			}
			if f := env.Call(get, "/v1/entities/"+entity+"/records?filter[tag]=P-10", env.AdminKey, nil, 200).JSON(); f["meta"].(map[string]any)["total"] != 0.0 {
				t.Fatalf("a hidden record is found by a filter: %v", f)
			}
			// A unique value of a hidden row is taken: the job holds it; so is one of a row not written yet.
			for _, tag := range []string{"P-10", "P-14"} {
				tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/entities/" + entity + "/records", Key: env.AdminKey,
					Body: map[string]any{"values": map[string]any{"tag": tag}}}), 409, "values.tag")
			}

			// The restarted server resumes the job once its lease ran out.
			env = env.Reopen()
			w := imports.New(env.Service, env.Blobs(), imports.Config{})
			if ran, err := w.RunOnce(context.Background()); ran || err != nil {
				t.Fatalf("a job under lease was claimed: %v %v", ran, err)
			}
			env.Clock.Advance(jobConfig.Lease)
			if ran, err := w.RunOnce(context.Background()); !ran || err != nil {
				t.Fatalf("resume: %v %v", ran, err)
			}
			done := env.Call(get, loc, env.AdminKey, nil, 200).JSON()
			if done["status"] != "SUCCEEDED" || done["processed"] != 5.0 || done["finishedAt"] == nil || len(done["errors"].([]any)) != 0 {
				t.Fatalf("done: %v", done)
			}
			if n := seen(t, env, entity); n != 7 {
				t.Fatalf("%d records, want 7", n)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE import_job_id IS NOT NULL`); n != 0 {
				t.Fatalf("%d records still marked with the job", n)
			}
			if _, err := env.Blobs().Open(context.Background(), env.OrgID+"/imports/"+job["id"].(string)); !wps.IsCode(err, wps.CodeNotFound) {
				t.Fatalf("the uploaded rows are kept: %v", err)
			}
			if ran, _ := w.RunOnce(context.Background()); ran {
				t.Fatal("a settled job was claimed again")
			}
		})

		t.Run("Prefer respond-async makes a small import a job", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			r := importCSV(t, env, env.AdminKey, entity, csvRows(10, 1), map[string]string{"Prefer": "respond-async, wait=10"})
			if r.Status != 202 || r.Header.Get("Preference-Applied") != "respond-async" {
				t.Fatalf("answer %d %v %s", r.Status, r.Header, r.Body)
			}
			startImportWorker(t, env)
			if j := waitJob(t, env, r.Header.Get("Location"), 20*time.Second); j["status"] != "SUCCEEDED" {
				t.Fatalf("job %v", j)
			}
			if n := seen(t, env, entity); n != 3 {
				t.Fatalf("%d records, want 3", n)
			}
		})

		t.Run("a bad row fails the job with every bad row and writes nothing", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			r := importCSV(t, env, env.AdminKey, entity, "tag,pressure\nA,1\nB,x\nC,3\nD,y\nE,5\n", nil)
			startImportWorker(t, env)
			j := waitJob(t, env, r.Header.Get("Location"), 20*time.Second)
			errs := fmt.Sprint(j["errors"])
			if j["status"] != "FAILED" || j["error"].(map[string]any)["code"] != "invalid" || j["processed"] != 0.0 ||
				!strings.Contains(errs, "rows[1].pressure") || !strings.Contains(errs, "rows[3].pressure") || len(j["errors"].([]any)) != 2 {
				t.Fatalf("job %v", j)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, entity); n != 2 {
				t.Fatalf("%d rows stored, want 2", n)
			}
		})

		t.Run("a unique value in use fails the job and its written rows go", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			r := importCSV(t, env, env.AdminKey, entity, "tag,pressure\nA,1\nB,2\nC,3\nD,4\nP-1,5\n", nil)
			startImportWorker(t, env)
			j := waitJob(t, env, r.Header.Get("Location"), 20*time.Second)
			if j["status"] != "FAILED" || j["error"].(map[string]any)["code"] != "conflict" || !strings.Contains(fmt.Sprint(j["errors"]), "rows[4].values.tag") {
				t.Fatalf("job %v", j)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, entity); n != 2 {
				t.Fatalf("%d rows stored, want 2", n)
			}
			if n := env.RawInt(`SELECT count(*) FROM record_index WHERE entity_id = ?`, entity); n != 4 {
				t.Fatalf("%d index rows, want 4", n)
			}
			// The values are free again.
			env.Call(post, "/v1/entities/"+entity+"/records", env.AdminKey, map[string]any{"values": map[string]any{"tag": "A"}}, 201)
		})

		t.Run("a job whose entity changed fails cleanly", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			loc := importCSV(t, env, env.AdminKey, entity, csvRows(10, 5), nil).Header.Get("Location")
			crashAfter(t, env, 2, loc)
			env.Call(patch, "/v1/entities/"+entity, env.AdminKey, map[string]any{"parameters": []map[string]any{{"name": "tag", "type": "TEXT"}}}, 200)
			env.Clock.Advance(jobConfig.Lease)
			w := imports.New(env.Service, env.Blobs(), imports.Config{})
			if ran, err := w.RunOnce(context.Background()); !ran || err != nil {
				t.Fatalf("resume: %v %v", ran, err)
			}
			j := env.Call(get, loc, env.AdminKey, nil, 200).JSON()
			if j["status"] != "FAILED" || j["error"].(map[string]any)["code"] != "conflict" {
				t.Fatalf("job %v", j)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, entity); n != 2 {
				t.Fatalf("%d rows stored, want 2", n)
			}
		})

		t.Run("a job is another org's 404 and needs entity:write", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			loc := importCSV(t, env, env.AdminKey, entity, csvRows(10, 5), nil).Header.Get("Location")
			other := env.NewOrg("Other")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: loc, Key: other}), 404, "")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/import-jobs/nope", Key: env.AdminKey}), 404, "")
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Readers", "roles": []string{"READER"}, "functions": []string{"entity:read"}}, 201)
			_, reader := member(t, env, "reader@example.com", "READER")
			tu.Problem(t, env.Do(tu.Request{Method: get, Path: loc, Key: reader}), 403, "")
			tu.Problem(t, importCSV(t, env, reader, entity, csvRows(20, 5), nil), 403, "")
			tu.Problem(t, importCSV(t, env, other, entity, csvRows(20, 5), nil), 404, "")
		})

		t.Run("a job runs once with two workers", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			loc := importCSV(t, env, env.AdminKey, entity, csvRows(10, 5), nil).Header.Get("Location")
			second := env
			if engine == sqlstore.Postgres {
				second = env.Replica()
			}
			var wg sync.WaitGroup
			var runs atomic.Int32
			for _, e := range []*tu.Env{env, second} {
				w := imports.New(e.Service, e.Blobs(), imports.Config{})
				wg.Go(func() {
					ran, err := w.RunOnce(context.Background())
					if err != nil {
						t.Error(err)
					}
					if ran {
						runs.Add(1)
					}
				})
			}
			wg.Wait()
			if runs.Load() != 1 {
				t.Fatalf("%d workers ran the job", runs.Load())
			}
			if j := env.Call(get, loc, env.AdminKey, nil, 200).JSON(); j["status"] != "SUCCEEDED" {
				t.Fatalf("job %v", j)
			}
			if n := seen(t, env, entity); n != 7 {
				t.Fatalf("%d records, want 7", n)
			}
		})

		t.Run("a stale claim of the same worker loses the job to the newer one", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			loc := importCSV(t, env, env.AdminKey, entity, csvRows(10, 5), nil).Header.Get("Location")
			ctx := context.Background()
			stale, err := env.Service.ClaimImportJob(ctx, "worker")
			if err != nil || stale == nil {
				t.Fatalf("claim: %v %v", stale, err)
			}
			env.Clock.Advance(jobConfig.Lease) // the first claim stalled past its lease
			fresh, err := env.Service.ClaimImportJob(ctx, "worker")
			if err != nil || fresh == nil {
				t.Fatalf("second claim: %v %v", fresh, err)
			}
			if err := env.Service.RunImportJob(ctx, env.Blobs(), fresh); err != nil {
				t.Fatal(err)
			}
			if err := env.Service.RunImportJob(ctx, env.Blobs(), stale); !wps.IsLeaseLost(err) {
				t.Fatalf("the stale claim ran on: %v", err)
			}
			if j := env.Call(get, loc, env.AdminKey, nil, 200).JSON(); j["status"] != "SUCCEEDED" {
				t.Fatalf("job %v", j)
			}
			if n := seen(t, env, entity); n != 7 {
				t.Fatalf("%d records, want 7", n)
			}
		})

		t.Run("a user offboarded before the job publishes: FAILED, nothing shown", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Clerks", "roles": []string{"CLERK"}, "functions": []string{"entity:read", "entity:write"}}, 201)
			clerkID, clerk := member(t, env, "clerk@example.com", "CLERK")
			r := importCSV(t, env, clerk, entity, csvRows(10, 5), nil)
			if r.Status != 202 {
				t.Fatalf("import: %d %s", r.Status, r.Body)
			}
			loc := r.Header.Get("Location")
			env.Call(patch, "/v1/users/"+clerkID, env.AdminKey, map[string]any{"status": "DEACTIVATED"}, 200)
			startImportWorker(t, env)
			j := waitJob(t, env, loc, 20*time.Second)
			if j["status"] != "FAILED" || j["error"].(map[string]any)["code"] != "forbidden" {
				t.Fatalf("job %v", j)
			}
			if n := seen(t, env, entity); n != 2 {
				t.Fatalf("%d records, want 2", n)
			}
			if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, entity); n != 2 {
				t.Fatalf("%d rows stored, want 2", n)
			}
		})

		t.Run("an org's open jobs are bounded", func(t *testing.T) {
			cfg := jobConfig
			cfg.MaxOpen = 2
			env := tu.NewEnv(t, engine, tu.Options{Imports: cfg})
			entity := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Asset", "p": []map[string]any{{"n": "tag", "t": "TEXT"}, {"n": "pressure", "t": "NUMBER"}}}, 201).JSON()["id"].(string)
			for range 2 {
				if r := importCSV(t, env, env.AdminKey, entity, csvRows(0, 5), nil); r.Status != 202 {
					t.Fatalf("import: %d %s", r.Status, r.Body)
				}
			}
			r := importCSV(t, env, env.AdminKey, entity, csvRows(0, 5), nil)
			tu.Problem(t, r, 429, "")
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %v", r.Header)
			}
			if r := importCSV(t, env, env.AdminKey, entity, csvRows(0, 2), nil); r.Status != 200 {
				t.Fatalf("a small import is not a job: %d %s", r.Status, r.Body)
			}
			if n := env.RawInt(`SELECT count(*) FROM import_jobs`); n != 2 {
				t.Fatalf("%d jobs", n)
			}
			startImportWorker(t, env)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if r := importCSV(t, env, env.AdminKey, entity, csvRows(0, 5), nil); r.Status == 202 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no room after the jobs ended")
				}
			}
		})

		t.Run("bad bodies are problems, not jobs", func(t *testing.T) {
			env, entity := importSetup(t, engine)
			tu.Problem(t, importCSV(t, env, env.AdminKey, entity, "tag,pressure\n\"x,1\n", nil), 400, "")
			r := env.Do(tu.Request{Method: post, Path: "/v1/entities/" + entity + "/records:import", Key: env.AdminKey, Body: "[1]"})
			tu.Problem(t, r, 400, "")
			if n := env.RawInt(`SELECT count(*) FROM import_jobs`); n != 0 {
				t.Fatalf("%d jobs", n)
			}
		})
	})
}

func TestImportJobOpenAPI(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite)
	doc := env.Call(get, "/v1/openapi.json", "", nil, 200).JSON()
	op := doc["paths"].(map[string]any)["/v1/entities/{id}/records:import"].(map[string]any)["post"].(map[string]any)
	res := op["responses"].(map[string]any)
	for code, schema := range map[string]string{"200": "#/components/schemas/Imported", "202": "#/components/schemas/ImportJob"} {
		r, _ := res[code].(map[string]any)
		if got := fmt.Sprint(r["content"]); !strings.Contains(got, schema) {
			t.Errorf("%s answers %s, want %s", code, got, schema)
		}
	}
	if h := fmt.Sprint(res["202"].(map[string]any)["headers"]); !strings.Contains(h, "Location") {
		t.Errorf("202 headers %s", h)
	}
	job := doc["components"].(map[string]any)["schemas"].(map[string]any)["ImportJob"].(map[string]any)["properties"].(map[string]any)
	for _, f := range []string{"id", "entityId", "status", "total", "processed", "errors", "error", "createdBy", "createdAt", "startedAt", "finishedAt"} {
		if job[f] == nil {
			t.Errorf("ImportJob lacks %s", f)
		}
	}
}
