// Package testutil gives tests a real database of each engine and a real
// HTTP server over it. PostgreSQL tests use their own schema in the database
// named by WPS_TEST_POSTGRES_URL (default: the local test database); when it
// cannot be reached they are skipped, except under CI=true, where they fail.
package testutil

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/apicall"
	"wps/internal/blob"
	"wps/internal/console"
	"wps/internal/httpapi"
	"wps/internal/identity"
	"wps/internal/sheets"
	"wps/internal/sqlstore"
	"wps/internal/wps"
)

// DefaultPostgresURL is the database the tests use unless WPS_TEST_POSTGRES_URL says otherwise.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Engines are the engines every store and API test runs on.
var Engines = []sqlstore.Engine{sqlstore.SQLite, sqlstore.Postgres}

var (
	pgOnce sync.Once
	pgErr  error
)

func postgresURL() string {
	if u := os.Getenv("WPS_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// requirePostgres skips (or, under CI=true, fails) when PostgreSQL is down.
func requirePostgres(t testing.TB) {
	t.Helper()
	pgOnce.Do(func() {
		db, err := sql.Open("pgx", postgresURL())
		if err != nil {
			pgErr = err
			return
		}
		defer db.Close()
		// A server that is down refuses at once; one that is up answers,
		// however busy the machine: the bound is for a hung one.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pgErr = db.PingContext(ctx)
	})
	if pgErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true but cannot be reached at %s: %v", postgresURL(), pgErr)
	}
	t.Skipf("PostgreSQL not reachable (%v); set WPS_TEST_POSTGRES_URL or start it", pgErr)
}

// DatabaseURL returns the URL of a new, empty database of engine that is
// removed when the test ends.
func DatabaseURL(t testing.TB, engine sqlstore.Engine) string {
	t.Helper()
	if engine == sqlstore.SQLite {
		return filepath.Join(t.TempDir(), "wps.db")
	}
	requirePostgres(t)
	schema := "t_" + strings.ReplaceAll(wps.NewID(), "-", "")
	admin, err := sql.Open("pgx", postgresURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return schemaURL(t, schema)
}

// schemaURL is the test server's URL with schema as the search path.
func schemaURL(t testing.TB, schema string) string {
	t.Helper()
	u, err := url.Parse(postgresURL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// OpenDB opens a new database of engine, closed when the test ends.
func OpenDB(t testing.TB, engine sqlstore.Engine) *sqlstore.DB {
	t.Helper()
	db, _ := openDB(t, engine)
	return db
}

func openDB(t testing.TB, engine sqlstore.Engine) (*sqlstore.DB, string) {
	t.Helper()
	url := DatabaseURL(t, engine)
	if engine == sqlstore.SQLite {
		if err := migratedSQLite(url); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sqlstore.Open(context.Background(), url, sqlstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, url
}

var sqliteTemplate struct {
	once sync.Once
	data []byte
	err  error
}

// migratedSQLite writes at path a SQLite database with every migration
// applied, a copy of one migrated once per test binary: migrating is most
// of a new SQLite store's cost (0.4 s of CPU under -race), and the tests
// open hundreds. Open then finds nothing to apply.
func migratedSQLite(path string) error {
	sqliteTemplate.once.Do(func() {
		dir, err := os.MkdirTemp("", "wps-template-")
		if err != nil {
			sqliteTemplate.err = err
			return
		}
		defer os.RemoveAll(dir)
		file := filepath.Join(dir, "wps.db")
		db, err := sqlstore.Open(context.Background(), file, sqlstore.Options{})
		if err == nil {
			err = db.Close() // the last connection's close folds the WAL into the file
		}
		if _, walErr := os.Stat(file + "-wal"); err == nil && walErr == nil {
			err = fmt.Errorf("the migrated template %s kept its WAL after closing", file)
		}
		if err == nil {
			sqliteTemplate.data, err = os.ReadFile(file)
		}
		sqliteTemplate.err = err
	})
	if sqliteTemplate.err != nil {
		return fmt.Errorf("a migrated SQLite database: %w", sqliteTemplate.err)
	}
	return os.WriteFile(path, sqliteTemplate.data, 0o600)
}

// ForEachEngine runs fn as a parallel subtest on every engine, and t in
// parallel with the other tests of its package that do (t must not call
// t.Parallel itself).
func ForEachEngine(t *testing.T, fn func(t *testing.T, engine sqlstore.Engine)) {
	t.Helper()
	t.Parallel()
	for _, e := range Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, e)
		})
	}
}

// ForEachEngineAlone runs fn on every engine, one after the other, with no
// other test of the package running (it does not call t.Parallel, and Go
// runs a package's parallel tests after the others): for a test that
// measures the whole process, its heap say.
func ForEachEngineAlone(t *testing.T, fn func(t *testing.T, engine sqlstore.Engine)) {
	t.Helper()
	for _, e := range Engines {
		t.Run(string(e), func(t *testing.T) { fn(t, e) })
	}
}

// Clock is a controllable clock for tests.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)} }

// Now tells the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Env is a running API over a real database, with the bootstrap admin's key.
type Env struct {
	T        testing.TB
	Engine   sqlstore.Engine
	DB       *sqlstore.DB
	Service  *wps.Service
	Server   *httptest.Server
	Clock    *Clock
	AdminKey string
	OrgID    string
	url      string
	opt      Options // as NewEnv filled them, for replicas
}

// Blobs is the blob store of the API (attachments, import jobs' rows),
// shared by its replicas.
func (e *Env) Blobs() wps.BlobStore { return e.opt.API.Blobs }

// URL is the database URL behind the store, to open a second replica on it.
func (e *Env) URL() string { return e.url }

// Replica is a second API server on the same PostgreSQL database, with its
// own store and service, as another replica of a deployment would be; it
// shares the org, keys and clock.
func (e *Env) Replica() *Env {
	e.T.Helper()
	if e.Engine != sqlstore.Postgres {
		e.T.Fatal("replicas need PostgreSQL")
	}
	return e.Reopen()
}

// Reopen is a new store, service and API server on the same database, as
// a restarted server would be: opening it applies the migrations the
// database lacks. It shares the org, keys and clock. (The first store
// stays open: on SQLite, leave it idle.)
func (e *Env) Reopen() *Env {
	e.T.Helper()
	db, err := sqlstore.Open(context.Background(), e.url, sqlstore.Options{MaxConns: 8})
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { _ = db.Close() })
	r := *e
	r.DB = db
	r.Service, r.Server = serve(e.T, db, e.Clock, e.opt)
	return &r
}

// heldSheets is the workbook engine with a hook before each Fill.
type heldSheets struct {
	wps.SheetEngine
	before func()
}

func (h heldSheets) Fill(f wps.SheetFile, links []wps.SheetLink, inputs []any, want []int) (wps.SheetFill, error) {
	h.before()
	return h.SheetEngine.Fill(f, links, inputs, want)
}

// serve starts a service and its API over db with opt's settings (Logger
// and Blobs filled).
func serve(t testing.TB, db *sqlstore.DB, clock *Clock, opt Options) (*wps.Service, *httptest.Server) {
	var engine wps.SheetEngine = sheets.New(opt.Sheets)
	if opt.BeforeFill != nil {
		engine = heldSheets{engine, opt.BeforeFill}
	}
	sc := wps.ServiceConfig{Now: clock.Now, AllowPrivateWebhooks: !opt.RefusePrivateWebhooks, Sessions: opt.Sessions, Sheets: engine,
		Imports: opt.Imports, Documents: opt.Documents, Mail: opt.Mail}
	if opt.APICalls != nil {
		sc.APICaller = apicall.New(*opt.APICalls)
	}
	srv := httptest.NewUnstartedServer(nil)
	// Single sign-on's issuers follow the webhooks' private-address rule.
	rp := identity.New(identity.Config{PublicURL: "http://" + srv.Listener.Addr().String(), AllowPrivate: !opt.RefusePrivateWebhooks, Logger: opt.API.Logger})
	sc.SSO = rp
	svc := wps.NewService(db, sc)
	if opt.Console {
		opt.API.Console = console.New(svc, console.Options{Logger: opt.API.Logger, Blobs: opt.API.Blobs, SecureCookies: opt.API.SecureCookies})
	}
	opt.API.SSO = rp.Handler(svc)
	srv.Config.Handler = httpapi.New(svc, opt.API)
	srv.Start()
	t.Cleanup(srv.Close)
	return svc, srv
}

// RawInt runs a query that returns one integer on the database behind the store.
func (e *Env) RawInt(query string, args ...any) int {
	e.T.Helper()
	db := e.raw()
	defer db.Close()
	var n int
	if err := db.QueryRow(e.rebind(query), args...).Scan(&n); err != nil {
		e.T.Fatal(err)
	}
	return n
}

// rebind turns ? placeholders into PostgreSQL's $n.
func (e *Env) rebind(query string) string {
	if e.Engine == sqlstore.SQLite {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (e *Env) raw() *sql.DB {
	e.T.Helper()
	driver, dsn := "pgx", e.url
	if e.Engine == sqlstore.SQLite {
		driver, dsn = "sqlite", "file:"+e.url+"?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		e.T.Fatal(err)
	}
	return db
}

// RawExec runs SQL on the database behind the store, as an operator (or an
// attacker) with database access would: for tests of tamper detection.
func (e *Env) RawExec(query string, args ...any) {
	e.T.Helper()
	db := e.raw()
	defer db.Close()
	if _, err := db.Exec(e.rebind(query), args...); err != nil {
		e.T.Fatal(err)
	}
}

// Options change the API under test.
type Options struct {
	API      httpapi.Options
	APICalls *apicall.Config // nil: API calls off
	Sessions wps.SessionConfig
	// Console serves the web console beside the API.
	Console bool
	// Sheets are the workbook limits (zero: the defaults).
	Sheets sheets.Limits
	// BeforeFill, when set, runs as each recalculation of a workbook for a
	// write starts (wps.SheetEngine.Fill): a test holds it to see what
	// waits for the recalculation.
	BeforeFill func()
	// Imports tunes records imports (zero: the defaults).
	Imports wps.ImportConfig
	// Documents bounds contract documents (zero: the defaults).
	Documents wps.DocumentConfig
	// RefusePrivateWebhooks refuses webhook and step webhookUrls that name
	// loopback or private addresses, as a server does by default (tests'
	// receivers listen on 127.0.0.1, so they are allowed unless this is set).
	RefusePrivateWebhooks bool
	// Mail turns mail on (messages are written to the outbox) with the
	// console's address for links.
	Mail wps.MailConfig
}

// NewEnv starts an API on engine with a bootstrapped org.
func NewEnv(t testing.TB, engine sqlstore.Engine, opt ...Options) *Env {
	t.Helper()
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	if o.API.Logger == nil {
		o.API.Logger = slog.New(slog.DiscardHandler)
	}
	if o.API.Blobs == nil {
		blobs, err := blob.NewDisk(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.API.Blobs = blobs
	}
	db, url := openDB(t, engine)
	clock := NewClock()
	svc, srv := serve(t, db, clock, o)
	boot, err := svc.Bootstrap(context.Background(), "Acme", "")
	if err != nil || boot == nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return &Env{T: t, Engine: engine, DB: db, Service: svc, Server: srv, Clock: clock, AdminKey: boot.Key.Key, OrgID: boot.Org.ID, url: url, opt: o}
}

// NewOrg creates another org the way the operator command does and returns its admin key.
func (e *Env) NewOrg(name string) string {
	e.T.Helper()
	out, err := e.Service.CreateOrg(context.Background(), name, "")
	if err != nil {
		e.T.Fatal(err)
	}
	return out.Key.Key
}

// Response is an API answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r *Response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Request is one call to the API; Body may be a string (sent as is), nil or
// any value (sent as JSON).
type Request struct {
	Method string
	Path   string
	Key    string
	Body   any
	Header map[string]string
}

// Do sends r and returns the answer, which must match the OpenAPI
// document the server serves (openapi.go): else the test fails, naming the
// route, the status and what does not match.
func (e *Env) Do(r Request) *Response {
	e.T.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		body = bytes.NewReader(j)
	}
	req, err := http.NewRequest(r.Method, e.Server.URL+r.Path, body)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Key != "" {
		req.Header.Set("Authorization", "Bearer "+r.Key)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: b}
	e.check(req, out)
	return out
}

// Call sends a request with key and fails the test unless the status is want.
func (e *Env) Call(method, path, key string, body any, want int) *Response {
	e.T.Helper()
	r := e.Do(Request{Method: method, Path: path, Key: key, Body: body})
	if r.Status != want {
		e.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Problem checks that r is a problem+json answer with status and, when
// field is not empty, an error naming field.
func Problem(t testing.TB, r *Response, status int, field string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("content type %q, want application/problem+json: %s", ct, r.Body)
	}
	m := r.JSON()
	for _, k := range []string{"type", "title", "status", "detail", "code"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("problem without %q: %s", k, r.Body)
		}
	}
	if field != "" && !strings.Contains(fmt.Sprint(m["errors"]), "field:"+field+" ") {
		t.Fatalf("problem does not name field %q: %s", field, r.Body)
	}
	return m
}

// SyncBuffer is a bytes.Buffer safe to read while a server writes to it
// (its output, its log).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// keptEnv is what KeptEnv keeps beside its database.
type keptEnv struct {
	OrgID    string            `json:"orgId"`
	AdminKey string            `json:"adminKey"`
	Data     map[string]string `json:"data"`
}

// KeptEnv is NewEnv over a database that outlives the test, in dir, for
// benchmarks whose dataset takes minutes to write: SQLite's file
// dir/wps.db, or on PostgreSQL the schema kept_<dir's base name> of the
// test database; dir/env.json keeps the org, its admin key and the
// benchmark's data (SaveKept). data is nil when the database is new (the
// caller writes its dataset, then SaveKept); opening it applies the
// migrations it lacks.
func KeptEnv(t testing.TB, engine sqlstore.Engine, dir string) (env *Env, data map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dsn := filepath.Join(dir, "wps.db")
	if engine == sqlstore.Postgres {
		requirePostgres(t)
		schema := "kept_" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, strings.ToLower(filepath.Base(dir)))
		admin, err := sql.Open("pgx", postgresURL())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		if _, err := admin.Exec("CREATE SCHEMA IF NOT EXISTS " + schema); err != nil {
			t.Fatal(err)
		}
		dsn = schemaURL(t, schema)
	}
	db, err := sqlstore.Open(context.Background(), dsn, sqlstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	o := Options{}
	o.API.Logger = slog.New(slog.DiscardHandler)
	blobs, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.API.Blobs = blobs
	clock := NewClock()
	svc, srv := serve(t, db, clock, o)
	env = &Env{T: t, Engine: engine, DB: db, Service: svc, Server: srv, Clock: clock, url: dsn, opt: o}
	var kept keptEnv
	if b, err := os.ReadFile(filepath.Join(dir, "env.json")); err == nil && json.Unmarshal(b, &kept) == nil && kept.Data != nil {
		env.OrgID, env.AdminKey = kept.OrgID, kept.AdminKey
		return env, kept.Data
	}
	boot, err := svc.Bootstrap(context.Background(), "Acme", "")
	if err != nil || boot == nil {
		t.Fatalf("bootstrap of %s (remove it to start again): %v", dir, err)
	}
	env.OrgID, env.AdminKey = boot.Org.ID, boot.Key.Key
	return env, nil
}

// SaveKept records data beside the kept database in dir (KeptEnv), once
// its dataset is written.
func (e *Env) SaveKept(dir string, data map[string]string) {
	e.T.Helper()
	b, _ := json.Marshal(keptEnv{OrgID: e.OrgID, AdminKey: e.AdminKey, Data: data})
	if err := os.WriteFile(filepath.Join(dir, "env.json"), b, 0o644); err != nil {
		e.T.Fatal(err)
	}
}
