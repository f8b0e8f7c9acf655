package httpapi_test

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"wps/internal/reports"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// BenchmarkProcessReport: GET /v1/reports/processes/{id} over a year of
// WPS_BENCH_MEASUREMENTS measurements (default 100,000) of one process,
// their aggregates written in bulk (as the writes would have added them:
// created, three steps reached and consensed, four seats filled, a tenth
// sent back once and reworked, some late, approved), and a second process
// a tenth as busy to share the table. It reports the p50 and p99 of the
// whole year's report and of its last 30 days, and the CPU it costs
// (cpu-ms/op: the test process's, which on SQLite includes the database;
// a busy machine stretches the times, not the CPU).
// WPS_BENCH_DATABASE=postgres for PostgreSQL; WPS_BENCH_KEEP=DIR keeps
// the database and its dataset in DIR for the next run (tu.KeptEnv).
func BenchmarkProcessReport(b *testing.B) {
	n := benchEnv("WPS_BENCH_MEASUREMENTS", 100_000)
	engine := sqlstore.SQLite
	if os.Getenv("WPS_BENCH_DATABASE") == "postgres" {
		engine = sqlstore.Postgres
	}
	var env *tu.Env
	var kept map[string]string
	keep := os.Getenv("WPS_BENCH_KEEP")
	if keep != "" {
		env, kept = tu.KeptEnv(b, engine, keep)
	} else {
		env = tu.NewEnv(b, engine)
	}
	if kept == nil {
		kept = reportBenchData(b, env, n)
		if keep != "" {
			env.SaveKept(keep, kept)
		}
	} else if kept["n"] != strconv.Itoa(n) {
		b.Fatalf("%s holds %s measurements, not %d: remove it (or its schema) to write them", keep, kept["n"], n)
	}
	if os.Getenv("WPS_BENCH_ANALYZE") != "" {
		if err := env.DB.Analyze(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	id := kept["process"]
	for _, c := range []struct{ name, query string }{
		{"year", "?from=2025-01-05&to=2026-01-04"},
		{"30_days", "?from=2025-12-06&to=2026-01-04"},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := env.Server.Config.Handler
			req := httptest.NewRequest("GET", "/v1/reports/processes/"+id+c.query, nil)
			req.Header.Set("Authorization", "Bearer "+env.AdminKey)
			var took []time.Duration
			cpu0 := cpuTime()
			for b.Loop() {
				t0 := time.Now()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				took = append(took, time.Since(t0))
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(took)), "cpu-ms/op")
			slices.Sort(took)
			at := func(p float64) float64 {
				return float64(took[min(len(took)-1, int(math.Ceil(p*float64(len(took))))-1)].Microseconds()) / 1000
			}
			b.ReportMetric(at(0.50), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}

// reportBenchData writes the dataset of BenchmarkProcessReport in env and
// says what it is: n, and the busy process's id.
func reportBenchData(b *testing.B, env *tu.Env, n int) map[string]string {
	for _, p := range []string{"Inspector", "Supervisor"} {
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": p, "roles": []string{"ADMIN"}}, 201)
	}
	var procs []map[string]any
	for _, name := range []string{"Pump", "Valve"} {
		procs = append(procs, env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": name, "steps": []map[string]any{
			{"label": "Check", "policyNames": []string{"Inspector", "Supervisor"}, "deadline": "8", "deadlineType": "HOURS"},
			{"label": "Repair", "policyNames": []string{"Inspector"}},
			{"label": "Close", "policyNames": []string{"Supervisor"}}}}, 201).JSON())
	}
	end := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	for i, proc := range procs {
		facts := reportDataset(env.OrgID, proc, n/(1+9*i), end, uint64(i)) // the second process a tenth as busy
		if err := env.DB.GenerateReportFacts(context.Background(), facts); err != nil {
			b.Fatal(err)
		}
	}
	rows := env.RawInt(`SELECT count(*) FROM report_facts`)
	b.Logf("%d measurements (and a tenth as many of another process): %d aggregate rows, written in %s", n, rows, time.Since(start).Round(time.Millisecond))
	return map[string]string{"n": strconv.Itoa(n), "process": procs[0]["id"].(string)}
}

// cpuTime is the CPU this process used (user and system): on a shared
// machine, steadier than the time a request took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportDataset is the facts n measurements of proc made over the year
// before end would have added.
func reportDataset(orgID string, proc map[string]any, n int, end time.Time, seed uint64) []reports.Fact {
	rnd := rand.New(rand.NewPCG(seed, 7))
	procID := proc["id"].(string)
	st := steps(proc)
	check, repair, closing := st[0]["id"].(string), st[1]["id"].(string), st[2]["id"].(string)
	lognormal := func(median time.Duration, sigma float64) time.Duration {
		return time.Duration(float64(median) * math.Exp(sigma*rnd.NormFloat64()))
	}
	sums := map[reports.Fact][2]int64{} // summed as they come: a million measurements' facts would not fit one by one
	add := func(at time.Time, kind int, step, policy string, d time.Duration, _ bool) {
		for _, f := range reports.NewFacts(orgID, procID, at, kind, step, policy, d.Milliseconds()) {
			n, ms := f.N, f.SumMillis
			f.N, f.SumMillis = 0, 0
			s := sums[f]
			sums[f] = [2]int64{s[0] + n, s[1] + ms}
		}
	}
	year := 365 * 24 * time.Hour
	for i := range n {
		created := end.Add(-year + time.Duration(rnd.Int64N(int64(year))))
		add(created, reports.FactCreated, "", "", 0, false)
		at := created
		firstPass := true
		for round := 0; round < 2; round++ {
			// Check: two seats, the second fills the step.
			add(at, reports.FactReached, check, "", 0, false)
			first, wait := lognormal(40*time.Minute, 1.2), lognormal(3*time.Hour, 1.3)
			first = min(first, wait)
			add(at.Add(first), reports.FactFill, check, "Inspector", first, true)
			add(at.Add(wait), reports.FactFill, check, "Supervisor", wait, true)
			add(at.Add(wait), reports.FactConsensed, check, "", wait, true)
			if wait > 8*time.Hour {
				add(at.Add(8*time.Hour), reports.FactOverdue, check, "", 0, false)
			}
			at = at.Add(wait)
			for _, s := range []struct {
				id, policy string
				median     time.Duration
			}{{repair, "Inspector", 6 * time.Hour}, {closing, "Supervisor", time.Hour}} {
				add(at, reports.FactReached, s.id, "", 0, false)
				w := lognormal(s.median, 1.5)
				if s.id == closing && round == 0 && i%10 == 0 { // sent back once
					add(at.Add(w), reports.FactRejection, closing, "", 0, false)
					at, firstPass = at.Add(w), false
					break
				}
				add(at.Add(w), reports.FactFill, s.id, s.policy, w, true)
				add(at.Add(w), reports.FactConsensed, s.id, "", w, true)
				at = at.Add(w)
			}
			if firstPass || round == 1 {
				break
			}
		}
		if at.Before(end) {
			add(at, reports.FactApproved, "", "", at.Sub(created), true)
			if firstPass {
				add(at, reports.FactFirstPass, "", "", 0, false)
			}
		}
	}
	facts := make([]reports.Fact, 0, len(sums))
	for f, s := range sums {
		f.N, f.SumMillis = s[0], s[1]
		facts = append(facts, f)
	}
	return facts
}
