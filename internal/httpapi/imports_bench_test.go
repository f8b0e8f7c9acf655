package httpapi_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// BenchmarkWriteDuringImports measures, on SQLite, the latency of a small
// write (one record of another entity, one at a time, 20 ms apart) while
// four imports of WPS_BENCH_IMPORT_ROWS rows (default 100,000) run in
// parallel. It runs once whatever b.N; the figures are p50/p99/max of the
// small writes and the time until every import is done, and the p99 of
// 250 of the same writes before the imports (the machine's own noise). Run with
// go test -run '^$' -bench WriteDuringImports -benchtime 1x ./internal/httpapi/
func BenchmarkWriteDuringImports(b *testing.B) {
	rows := benchEnv("WPS_BENCH_IMPORT_ROWS", 100_000)
	env := tu.NewEnv(b, sqlstore.SQLite, tu.Options{Imports: wps.ImportConfig{
		ChunkTime: time.Duration(benchEnv("WPS_BENCH_CHUNK_MICROS", 0)) * time.Microsecond, ChunkRows: benchEnv("WPS_BENCH_CHUNK_ROWS", 0)}})
	startImportWorker(b, env)
	big := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Asset", "p": []map[string]any{
		{"n": "tag", "t": "TEXT", "isUnique": true}, {"n": "kind", "t": "TEXT"}, {"n": "pressure", "t": "NUMBER"}, {"n": "note", "t": "TEXT"},
	}}, 201).JSON()["id"].(string)
	small := env.Call(post, "/v1/entities/simplified", env.AdminKey, map[string]any{"n": "Note", "p": []map[string]any{
		{"n": "text", "t": "TEXT"},
	}}, 201).JSON()["id"].(string)
	bodies := make([]string, 4)
	for j := range bodies {
		var sb strings.Builder
		sb.WriteString("tag,kind,pressure,note\n")
		for i := range rows {
			fmt.Fprintf(&sb, "T-%d-%06d,pump,%d.5,checked on site\n", j, i, i%400)
		}
		bodies[j] = sb.String()
	}
	load := func() string { b, _ := os.ReadFile("/proc/loadavg"); return strings.TrimSpace(string(b)) }
	b.Logf("load before: %s", load())
	pct := func(lat []time.Duration, p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		slices.Sort(lat)
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	write := func(i int) time.Duration {
		t0 := time.Now()
		env.Call(post, "/v1/entities/"+small+"/records", env.AdminKey, map[string]any{"values": map[string]any{"text": fmt.Sprint("note ", i)}}, 201)
		return time.Since(t0)
	}
	for b.Loop() {
		// The same writes without imports first: the machine's own noise.
		var base []time.Duration
		for i := 0; i < 250; i++ {
			time.Sleep(20 * time.Millisecond)
			base = append(base, write(i))
		}
		b.ReportMetric(pct(base, 0.99), "idle-p99-ms")
		start := time.Now()
		var wg sync.WaitGroup
		done := make(chan struct{})
		for _, body := range bodies {
			wg.Go(func() {
				r := env.Do(tu.Request{Method: post, Path: "/v1/entities/" + big + "/records:import", Key: env.AdminKey, Body: body,
					Header: map[string]string{"Content-Type": "text/csv"}})
				switch r.Status {
				case 200:
				case 202:
					waitJob(b, env, r.Header.Get("Location"))
				default:
					b.Errorf("import: %d %s", r.Status, r.Body)
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		var lat []time.Duration
		for i := 0; ; i++ {
			select {
			case <-done:
			case <-time.After(20 * time.Millisecond):
				lat = append(lat, write(i))
				continue
			}
			break
		}
		took := time.Since(start)
		b.ReportMetric(pct(lat, 0.50), "p50-ms")
		b.ReportMetric(pct(lat, 0.99), "p99-ms")
		b.ReportMetric(pct(lat, 1), "max-ms")
		b.ReportMetric(float64(len(lat)), "writes")
		b.ReportMetric(took.Seconds(), "imports-s")
		if n := env.RawInt(`SELECT count(*) FROM entity_records WHERE entity_id = ?`, big); n != 4*rows {
			b.Fatalf("%d records imported, want %d", n, 4*rows)
		}
	}
	b.Logf("load after: %s", load())
}
