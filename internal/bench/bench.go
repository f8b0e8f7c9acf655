// Package bench measures wps over real HTTP: it starts the server as a child
// process on a fresh database, seeds an org with a realistic process, then
// drives the main paths with concurrent clients for a fixed time, and puts
// the create rate next to the raw commit rate of the same database measured
// in the same run.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options says what to measure.
type Options struct {
	Exe      string        // the wps binary (the server is started from it)
	Database string        // "sqlite" (a temp file) or a postgres:// URL
	Clients  int           // concurrent clients (default 32)
	Duration time.Duration // per path (default 10s)
	Dataset  int           // when > 0: measurements generated in bulk for the list test
	// ProfileDir, when set, receives a server CPU profile of each path.
	ProfileDir string
	// PocketBase, when set, is a PocketBase binary: its create of a record
	// of the same fields is driven after wps's create, for the side-by-side.
	PocketBase string
	Stderr     io.Writer
}

// PathResult is one path's figures.
type PathResult struct {
	Path     string  `json:"path"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50Ms"`
	P95ms    float64 `json:"p95Ms"`
	P99ms    float64 `json:"p99Ms"`
	// ServerCPUus is the server process's CPU time (user + system) per
	// successful request: steadier than req/s on a shared machine. On
	// PostgreSQL the database server's own CPU is not in it (DatabaseCPUus).
	ServerCPUus float64 `json:"serverCpuMicrosPerRequest"`
	// ClientCPUus is the load generator's own CPU per request: it shares
	// the machine with the server, so both together are what a request
	// costs the machine.
	ClientCPUus float64 `json:"clientCpuMicrosPerRequest"`
	// DatabaseCPUus is a local PostgreSQL server's CPU per request: all its
	// processes (localDB). Not measured for SQLite, which runs inside the
	// server, nor for a PostgreSQL on another machine.
	DatabaseCPUus float64 `json:"databaseCpuMicrosPerRequest,omitempty"`
	// What a write costs the store, from the server's metrics and /proc:
	// the statements write transactions sent per successful request, the
	// requests per commit (SQLite's group commit), and the bytes the server
	// wrote to disk per commit (SQLite: the WAL; PostgreSQL writes its own).
	StatementsPerReq float64 `json:"writeStatementsPerRequest,omitempty"`
	ReqPerCommit     float64 `json:"requestsPerCommit,omitempty"`
	KBPerCommit      float64 `json:"writtenKBPerCommit,omitempty"`
}

// Report is a whole run.
type Report struct {
	Engine           string  `json:"engine"`
	Clients          int     `json:"clients"`
	DurationSec      float64 `json:"durationSeconds"`
	RawCommitsPerSec float64 `json:"rawCommitsPerSecond"`
	CreateVsRaw      float64 `json:"createToRawCommitRatio"`
	// SpreadVsRaw is the same over creates spread over several processes
	// (each process numbers its measurements without gaps: creates of one
	// process wait for one another's number on PostgreSQL).
	SpreadVsRaw  float64 `json:"spreadCreateToRawCommitRatio"`
	ApproveVsRaw float64 `json:"approveToRawCommitRatio"`
	// Lag is the time from an action's answer to its leaf index in the
	// ledger (integration), under the create and the approve load.
	CreateLagP50ms  float64      `json:"createIntegrationLagP50Ms"`
	CreateLagP99ms  float64      `json:"createIntegrationLagP99Ms"`
	ApproveLagP50ms float64      `json:"approveIntegrationLagP50Ms"`
	ApproveLagP99ms float64      `json:"approveIntegrationLagP99Ms"`
	PeakRSSMB       float64      `json:"serverPeakRssMb"`
	Paths           []PathResult `json:"paths"`
	// Ceiling is the same measurement answer served by a bare net/http
	// server that does no work, driven the same way: the most the machine
	// gives a GET of that size through net/http and this load generator.
	Ceiling      PathResult `json:"getMeasurementCeiling"`
	GetVsCeiling float64    `json:"getMeasurementToCeilingRatio"`
	// PocketBase is PocketBase's create of the same fields (Options.PocketBase),
	// CreateVsPocketBase wps's create rate over it.
	PocketBase         *PathResult `json:"pocketBaseCreate,omitempty"`
	CreateVsPocketBase float64     `json:"createToPocketBaseCreateRatio,omitempty"`
	// SheetVsPlain is the rate of writes that recalculate a workbook over
	// the rate of the same writes without one.
	SheetVsPlain   float64 `json:"sheetWriteToPlainWriteRatio"`
	Dataset        int     `json:"datasetMeasurements,omitempty"`
	DatasetSeconds float64 `json:"datasetSeedSeconds,omitempty"`
}

const bootstrapKey = "wps_bench_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"

// Run performs the benchmark.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Clients <= 0 {
		opt.Clients = 32
	}
	if opt.Duration <= 0 {
		opt.Duration = 10 * time.Second
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	dir, err := os.MkdirTemp("", "wps-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &Report{Clients: opt.Clients, DurationSec: opt.Duration.Seconds()}
	dbURL, cleanup, err := prepareDatabase(ctx, opt.Database, dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep.Engine = "sqlite"
	if strings.HasPrefix(dbURL, "postgres") {
		rep.Engine = "postgres"
	}

	dbCPU := func() map[int]time.Duration { return nil }
	if rep.Engine == "postgres" && localDB(dbURL) {
		dbCPU = func() map[int]time.Duration { return cpuTimesOf("postgres") }
	}
	logf := func(format string, args ...any) { fmt.Fprintf(opt.Stderr, format+"\n", args...) }
	logf("measuring the raw commit rate of %s...", rep.Engine)
	if rep.RawCommitsPerSec, err = rawCommitRate(ctx, rep.Engine, dbURL, dir, opt.Clients, min(opt.Duration, 5*time.Second)); err != nil {
		return nil, fmt.Errorf("raw commit rate: %w", err)
	}

	srv, err := startServer(ctx, opt.Exe, dbURL, opt.ProfileDir != "", opt.Stderr)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	c := newClient(srv.base, opt.Clients)
	logf("seeding...")
	seed, err := seedOrg(c)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}

	var created []string
	var mu sync.Mutex
	var createAnswers, approveAnswers answers
	run := func(name string, fn func(c *client, rng *rand.Rand) (int, error)) PathResult {
		logf("driving %s for %s with %d clients...", name, opt.Duration, opt.Clients)
		done := make(chan struct{})
		if opt.ProfileDir != "" {
			go func() {
				defer close(done)
				if err := srv.profile(filepath.Join(opt.ProfileDir, profileName(name)), opt.Duration-time.Second); err != nil {
					logf("profile: %v", err)
				}
			}()
		} else {
			close(done)
		}
		cpu0, self0, db0 := cpuTime(srv.cmd.Process.Pid), cpuTime(os.Getpid()), dbCPU()
		st0 := srv.storeCounts()
		r := drive(ctx, srv.base, opt.Clients, opt.Duration, fn)
		if ok := float64(r.Requests - r.Errors); ok > 0 {
			r.ServerCPUus = float64((cpuTime(srv.cmd.Process.Pid) - cpu0).Microseconds()) / ok
			r.ClientCPUus = float64((cpuTime(os.Getpid()) - self0).Microseconds()) / ok
			r.DatabaseCPUus = float64(cpuSince(db0, dbCPU()).Microseconds()) / ok
			if st := srv.storeCounts(); st.commits > st0.commits {
				commits := st.commits - st0.commits
				r.StatementsPerReq = (st.statements - st0.statements) / ok
				r.ReqPerCommit = ok / commits
				r.KBPerCommit = (st.written - st0.written) / 1024 / commits
			}
		}
		<-done
		r.Path = name
		return r
	}
	rep.Paths = append(rep.Paths, run("POST /v1/measurements/simplified", func(c *client, rng *rand.Rand) (int, error) {
		id, status, err := seed.create(c, rng, seed.processID)
		if err == nil && status == 201 {
			mu.Lock()
			created = append(created, id)
			mu.Unlock()
			createAnswers.add(id)
		}
		return status, err
	}))
	if opt.PocketBase != "" {
		if rep.PocketBase, err = drivePocketBase(ctx, opt, dir, logf); err != nil {
			return nil, fmt.Errorf("pocketbase: %w", err)
		}
		if rep.PocketBase.RPS > 0 {
			rep.CreateVsPocketBase = rep.Paths[0].RPS / rep.PocketBase.RPS
		}
	}
	spread := run(fmt.Sprintf("POST simplified over %d processes", len(seed.spread)), func(c *client, rng *rand.Rand) (int, error) {
		_, status, err := seed.create(c, rng, seed.spread[rng.IntN(len(seed.spread))])
		return status, err
	})
	rep.Paths = append(rep.Paths, spread)
	if rep.CreateLagP50ms, rep.CreateLagP99ms, err = integrationLag(ctx, rep.Engine, dbURL, createAnswers.list, 1); err != nil {
		logf("integration lag of creates: %v", err)
	}
	var next atomic.Int64
	approve := run("POST /v1/measurements/{id}/actions", func(c *client, _ *rand.Rand) (int, error) {
		i := int(next.Add(1)) - 1
		if i >= len(created) {
			return 0, errExhausted
		}
		status, err := seed.approve(c, created[i])
		if err == nil && status == 201 {
			approveAnswers.add(created[i])
		}
		return status, err
	})
	rep.Paths = append(rep.Paths, approve)
	if rep.ApproveLagP50ms, rep.ApproveLagP99ms, err = integrationLag(ctx, rep.Engine, dbURL, approveAnswers.list, 2); err != nil {
		logf("integration lag of approvals: %v", err)
	}
	if len(created) == 0 {
		return nil, errors.New("no measurement was created")
	}
	pick := func(rng *rand.Rand) string { return created[rng.IntN(len(created))] }
	rep.Paths = append(rep.Paths, run("GET /v1/measurements/{id}", func(c *client, rng *rand.Rand) (int, error) {
		return c.do("GET", "/v1/measurements/"+pick(rng), seed.adminKey, nil, nil)
	}))
	var body json.RawMessage
	if _, err := c.do("GET", "/v1/measurements/"+created[0], seed.adminKey, nil, &body); err != nil {
		return nil, err
	}
	logf("driving bare net/http serving the same %d-byte answer for %s...", len(body), opt.Duration)
	if rep.Ceiling, err = ceiling(ctx, body, seed.adminKey, opt.Clients, opt.Duration); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	if rep.Ceiling.RPS > 0 {
		rep.GetVsCeiling = rep.Paths[len(rep.Paths)-1].RPS / rep.Ceiling.RPS
	}
	rep.Paths = append(rep.Paths, run("GET /v1/process", func(c *client, _ *rand.Rand) (int, error) {
		return c.do("GET", "/v1/process", seed.adminKey, nil, nil)
	}))
	rep.Paths = append(rep.Paths, run("GET /v1/measurements?status=STAGE_OPEN", func(c *client, _ *rand.Rand) (int, error) {
		return c.do("GET", "/v1/measurements?status=STAGE_OPEN&processId="+seed.processID, seed.adminKey, nil, nil)
	}))
	if rep.RawCommitsPerSec > 0 {
		rep.CreateVsRaw = rep.Paths[0].RPS / rep.RawCommitsPerSec
		rep.SpreadVsRaw = spread.RPS / rep.RawCommitsPerSec
		rep.ApproveVsRaw = approve.RPS / rep.RawCommitsPerSec
	}
	sb, err := seedSheets(c, seed)
	if err != nil {
		return nil, fmt.Errorf("seed sheets: %w", err)
	}
	plain := run("POST simplified, 15 NUMBER, no sheet", func(c *client, rng *rand.Rand) (int, error) { return sb.write(c, seed, rng, sb.without) })
	sheet := run("POST simplified, 10 INPUT + 5 OUTPUT cells", func(c *client, rng *rand.Rand) (int, error) { return sb.write(c, seed, rng, sb.withSheet) })
	rep.Paths = append(rep.Paths, plain, sheet)
	if plain.RPS > 0 {
		rep.SheetVsPlain = sheet.RPS / plain.RPS
	}

	if opt.Dataset > 0 {
		logf("generating %d measurements in bulk...", opt.Dataset)
		start := time.Now()
		if err := generate(ctx, dbURL, seed, opt.Dataset); err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		rep.Dataset, rep.DatasetSeconds = opt.Dataset, time.Since(start).Seconds()
		statuses := []string{"OPEN", "IN_CONSENSUS", "STAGE_OPEN", "APPROVED", "REPROVED"}
		rep.Paths = append(rep.Paths, run(fmt.Sprintf("GET /v1/measurements?status=… (%d rows)", opt.Dataset), func(c *client, rng *rand.Rand) (int, error) {
			q := "/v1/measurements?perPage=20&processId=" + seed.processID + "&status=" + statuses[rng.IntN(len(statuses))]
			if rng.IntN(2) == 0 {
				q += "&page=" + strconv.Itoa(1+rng.IntN(50))
			}
			return c.do("GET", q, seed.adminKey, nil, nil)
		}))
	}
	rep.PeakRSSMB = srv.peakRSSMB()
	return rep, nil
}

// drivePocketBase starts PocketBase on a fresh data folder and drives its
// create like wps's, with the same clients and time.
func drivePocketBase(ctx context.Context, opt Options, dir string, logf func(string, ...any)) (*PathResult, error) {
	pb, err := startPocketBase(ctx, opt.PocketBase, dir, opt.Stderr)
	if err != nil {
		return nil, err
	}
	defer pb.stop()
	logf("driving PocketBase's create for %s with %d clients...", opt.Duration, opt.Clients)
	cpu0, self0 := cpuTime(pb.cmd.Process.Pid), cpuTime(os.Getpid())
	r := drive(ctx, pb.base, opt.Clients, opt.Duration, func(c *client, rng *rand.Rand) (int, error) { return pb.create(c, rng) })
	if ok := float64(r.Requests - r.Errors); ok > 0 {
		r.ServerCPUus = float64((cpuTime(pb.cmd.Process.Pid) - cpu0).Microseconds()) / ok
		r.ClientCPUus = float64((cpuTime(os.Getpid()) - self0).Microseconds()) / ok
	}
	r.Path = "PocketBase POST /api/collections/…/records"
	return &r, nil
}

// ceiling serves body from a bare net/http server in this process, as the
// server sends a measurement (chunked JSON), and drives it like a path. The
// CPU columns stay empty: server and clients share this process.
func ceiling(ctx context.Context, body []byte, key string, clients int, d time.Duration) (PathResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return PathResult{}, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	r := drive(ctx, "http://"+ln.Addr().String(), clients, d, func(c *client, _ *rand.Rand) (int, error) {
		return c.do("GET", "/", key, nil, nil)
	})
	r.Path = fmt.Sprintf("GET the same %.1f KB from bare net/http", float64(len(body))/1000)
	return r, nil
}

var errExhausted = errors.New("no more measurements to approve")

// drive runs fn from n clients, each on its own connection, for d and
// collects latencies.
func drive(ctx context.Context, base string, n int, d time.Duration, fn func(*client, *rand.Rand) (int, error)) PathResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	lat := make([][]time.Duration, n)
	errs := make([]int, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			c := newConnClient(base)
			defer c.close()
			for ctx.Err() == nil {
				t0 := time.Now()
				status, err := fn(c, rng)
				if errors.Is(err, errExhausted) {
					return
				}
				if err != nil || status >= 400 {
					errs[i]++
					continue
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	r := PathResult{}
	for i := range n {
		all = append(all, lat[i]...)
		r.Errors += errs[i]
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r.Requests = len(all) + r.Errors
	r.RPS = float64(len(all)) / elapsed.Seconds()
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	r.P50ms, r.P95ms, r.P99ms = pct(0.50), pct(0.95), pct(0.99)
	return r
}

// server is the child process under test.
type server struct {
	cmd     *exec.Cmd
	base    string
	pprof   string
	metrics string
}

// storeCounts are the server's store counters at one time.
type storeCounts struct {
	statements, commits, written float64
}

// storeCounts reads the server's write statements and commits (its
// metrics) and the bytes it wrote to disk (/proc, Linux): zeros when
// either cannot be read.
func (s *server) storeCounts() storeCounts {
	var c storeCounts
	res, err := http.Get("http://" + s.metrics + "/metrics")
	if err != nil {
		return c
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			continue
		}
		switch name {
		case "wps_store_write_statements_total":
			c.statements = f
		case "wps_store_commit_batch_size_count":
			c.commits = f
		}
	}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.cmd.Process.Pid), "io")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
				c.written, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return c
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func profileName(path string) string {
	r := strings.NewReplacer(" ", "_", "/", "_", "{", "", "}", "", "?", "_", "=", "_", "…", "", "(", "", ")", "")
	return strings.Trim(r.Replace(path), "_") + ".pprof"
}

func startServer(ctx context.Context, exe, dbURL string, profile bool, stderr io.Writer) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--addr", addr)
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "WPS_DATABASE_URL="+dbURL, "WPS_BOOTSTRAP_API_KEY="+bootstrapKey,
		"WPS_RATE_LIMIT=0", "WPS_LOG_LEVEL=warn", "WPS_MAX_BODY_BYTES=1048576", "WPS_METRICS_ADDR="+metricsAddr)
	var pprofAddr string
	if profile {
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, "WPS_PPROF_ADDR="+pprofAddr)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr, pprof: pprofAddr, metrics: metricsAddr}
	for range 200 {
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("the server did not become ready")
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

// profile saves a CPU profile of the server taken over d.
func (s *server) profile(file string, d time.Duration) error {
	res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, max(1, int(d.Seconds()))))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, res.Body)
	return err
}

// cpuTime reads a process's CPU time, user and system (Linux; 0 elsewhere).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields are counted
	// after it. utime and stime are fields 14 and 15, in clock ticks (100/s).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// cpuTimesOf reads the CPU time of each process named name (Linux): all
// of a PostgreSQL server's processes, say. cpuSince sums what they spent
// after an earlier reading; one that exited in between is not counted (the
// bulk generator's sessions, which ended just before the list run, would
// otherwise make it negative).
func cpuTimesOf(name string) map[int]time.Duration {
	dirs, _ := os.ReadDir("/proc")
	out := map[int]time.Duration{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", d.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == name {
			out[pid] = cpuTime(pid)
		}
	}
	return out
}

func cpuSince(before, now map[int]time.Duration) time.Duration {
	var sum time.Duration
	for pid, t := range now {
		sum += t - before[pid]
	}
	return sum
}

// localDB reports a PostgreSQL URL whose server runs on this machine.
func localDB(dbURL string) bool {
	u, err := url.Parse(dbURL)
	if err != nil {
		return false
	}
	switch u.Hostname() {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// peakRSSMB reads the child's high-water resident set size (Linux).
func (s *server) peakRSSMB() float64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.cmd.Process.Pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// client is a keep-alive HTTP client: pooled for the seeding, or one
// connection of a load-generating worker.
type client struct {
	base string
	http *http.Client
}

func newClient(base string, conns int) *client {
	t := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute}
	return &client{base: base, http: &http.Client{Transport: t, Timeout: 30 * time.Second}}
}

// newConnClient is a worker's client: its requests go one after another on
// one connection, sent and read in the worker's goroutine, as a wrk
// connection's do. http.Transport would add its pool and two goroutines per
// connection to every request: load-generator work on the server's cores.
func newConnClient(base string) *client {
	return &client{base: base, http: &http.Client{Transport: &connTransport{addr: strings.TrimPrefix(base, "http://")}}}
}

func (c *client) close() {
	if t, ok := c.http.Transport.(*connTransport); ok && t.conn != nil {
		t.conn.Close()
	}
}

// connTransport makes one request at a time on one kept-alive connection.
// The caller reads a response's body to its end or closes it (which drains
// it) before the next request.
type connTransport struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	drop bool // the last answer closes the connection (after its body)
}

func (t *connTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.drop {
		t.conn.Close()
		t.conn, t.drop = nil, false
	}
	if t.conn == nil {
		conn, err := net.Dial("tcp", t.addr)
		if err != nil {
			return nil, err
		}
		t.conn, t.br, t.bw = conn, bufio.NewReaderSize(conn, 64<<10), bufio.NewWriter(conn)
	}
	res, err := t.exchange(req)
	if err != nil {
		t.conn.Close()
		t.conn = nil
		return nil, err
	}
	t.drop = res.Close
	return res, nil
}

func (t *connTransport) exchange(req *http.Request) (*http.Response, error) {
	if err := t.conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, err
	}
	if err := req.Write(t.bw); err != nil {
		return nil, err
	}
	if err := t.bw.Flush(); err != nil {
		return nil, err
	}
	return http.ReadResponse(t.br, req)
}

// send makes a request; an answer of 400 or more is an error holding its
// body. The caller reads and closes the body of a success.
func (c *client) send(method, path, key string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 400 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res, nil
}

// do makes a request and decodes the answer into out, or reads it whole
// and drops it (as a client that does not look at it still must).
func (c *client) do(method, path, key string, body, out any) (int, error) {
	res, err := c.send(method, path, key, body)
	if res == nil || err != nil {
		return status(res), err
	}
	defer res.Body.Close()
	if out != nil {
		return res.StatusCode, json.NewDecoder(res.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

func status(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}

// Table writes the report for people.
func (r *Report) Table(w io.Writer) {
	fmt.Fprintf(w, "engine %s, %d clients, %.0fs per path\n", r.Engine, r.Clients, r.DurationSec)
	fmt.Fprintf(w, "raw commit rate (one-row insert transactions): %.0f/s\n", r.RawCommitsPerSec)
	fmt.Fprintf(w, "create-measurement rate / raw commit rate: %.2f (spread over several processes: %.2f); approve: %.2f\n", r.CreateVsRaw, r.SpreadVsRaw, r.ApproveVsRaw)
	fmt.Fprintf(w, "ledger integration lag after the answer: creates p50 %.0f ms, p99 %.0f ms; approvals p50 %.0f ms, p99 %.0f ms\n",
		r.CreateLagP50ms, r.CreateLagP99ms, r.ApproveLagP50ms, r.ApproveLagP99ms)
	fmt.Fprintf(w, "server peak RSS: %.1f MB\n\n", r.PeakRSSMB)
	fmt.Fprintf(w, "%-52s %9s %7s %9s %8s %8s %8s %10s %10s %10s %8s %8s %8s\n", "path", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms", "cpu µs/req", "client µs", "db µs",
		"stmt/req", "req/cmt", "KB/cmt")
	for _, p := range r.Paths {
		opt := func(v float64, prec int) string {
			if v <= 0 {
				return "-"
			}
			return strconv.FormatFloat(v, 'f', prec, 64)
		}
		fmt.Fprintf(w, "%-52s %9d %7d %9.0f %8.2f %8.2f %8.2f %10.0f %10.0f %10s %8s %8s %8s\n", p.Path, p.Requests, p.Errors, p.RPS, p.P50ms, p.P95ms, p.P99ms, p.ServerCPUus, p.ClientCPUus,
			opt(p.DatabaseCPUus, 0), opt(p.StatementsPerReq, 1), opt(p.ReqPerCommit, 1), opt(p.KBPerCommit, 1))
	}
	if pb := r.PocketBase; pb != nil && pb.RPS > 0 {
		fmt.Fprintf(w, "\nPocketBase's create of the same fields (synchronous=NORMAL): %.0f req/s (p99 %.2f ms, cpu %.0f µs/req); wps's durable create reaches %.2f of it\n",
			pb.RPS, pb.P99ms, pb.ServerCPUus, r.CreateVsPocketBase)
	}
	if c := r.Ceiling; c.RPS > 0 {
		fmt.Fprintf(w, "\nceiling: %s: %.0f req/s (p99 %.2f ms); GET /v1/measurements/{id} reaches %.2f of it\n", c.Path, c.RPS, c.P99ms, r.GetVsCeiling)
	}
	if r.SheetVsPlain > 0 {
		fmt.Fprintf(w, "\nwrites recalculating a 200-formula workbook reach %.2f of the same writes without it\n", r.SheetVsPlain)
	}
	if r.Dataset > 0 {
		fmt.Fprintf(w, "\ndataset: %d measurements generated in %.1fs\n", r.Dataset, r.DatasetSeconds)
	}
}
