package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"wps/internal/apicall"
	"wps/internal/bench"
	"wps/internal/blob"
	"wps/internal/config"
	"wps/internal/console"
	"wps/internal/contract"
	"wps/internal/httpapi"
	"wps/internal/identity"
	"wps/internal/imports"
	"wps/internal/ledger"
	"wps/internal/metrics"
	"wps/internal/notify"
	"wps/internal/schedule"
	"wps/internal/sheets"
	"wps/internal/sqlstore"
	"wps/internal/webhook"
	"wps/internal/wps"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run is the whole program; main only wires signals and the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || slices.Contains([]string{"-h", "-help", "--help"}, args[0])) {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr, nil)
	case "migrate":
		cfg, err := config.Load(getenv, args, stderr)
		if err != nil {
			return err
		}
		db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{Logger: newLogger(cfg, stderr), Synchronous: cfg.SQLiteSync})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations applied")
		return db.Close()
	case "org":
		return orgCommand(ctx, args, getenv, stdout, stderr)
	case "admin", "user":
		return userCommand(ctx, cmd, args, getenv, stdout, stderr)
	case "bench":
		return benchCommand(ctx, args, stdout, stderr)
	case "ledger":
		return ledgerCommand(ctx, args, getenv, stdout, stderr)
	case "backup":
		return backupCommand(ctx, args, getenv, stdout, stderr)
	case "openapi":
		_, err := stdout.Write(httpapi.Document())
		return err
	case "version":
		fmt.Fprintln(stdout, versionLine())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q; wps help lists them", cmd)
}

// usage lists the commands; each one's --help lists its flags.
const usage = `wps runs the Workflow Process Service.

Usage:
  wps [serve] [flags]                          run the server (the default)
  wps migrate [flags]                          apply database migrations and exit
  wps org create --name NAME [--admin-email E] add an org with its own ADMIN and print its key
  wps admin key --org ID --email EMAIL         print a new API key for a user
  wps user deactivate --org ID --email EMAIL   offboard a user: keys and sessions stop
  wps ledger verify --key F --checkpoint F --proof F --action F
                                               check an action's inclusion offline (docs/ledger.md)
  wps ledger monitor --url URL --key FILE      watch the ledger's checkpoints, each consistent with the last
  wps bench [flags]                            measure the server (docs/performance.md)
  wps backup --out FILE                        copy a SQLite database, consistent, while it serves
  wps openapi                                  print the API's OpenAPI document (as GET /v1/openapi.json)
  wps version                                  print the version and the source revision
  wps help                                     print this

Each command's flags: wps COMMAND --help (the server's: wps serve --help).
Every server flag can be set by an environment variable (docs/operations.md).
`

// versionLine is the version set at build time, else the module's, and the
// VCS revision the binary was built from.
func versionLine() string {
	v, rev, dirty := version, "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	line := "wps " + v
	if rev != "" {
		line += " (" + rev
		if dirty {
			line += ", modified"
		}
		line += ")"
	}
	return line
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the HTTP server until ctx ends, then lets in-flight requests
// finish. When ready is not nil it receives the listening address.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := config.Load(getenv, args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	tuneGC(getenv)
	hooks := observers(cfg)
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{Logger: log, Synchronous: cfg.SQLiteSync, ObserveCommit: hooks.commit})
	if err != nil {
		return err
	}
	defer db.Close()
	// The issuers of single sign-on follow the private-address rule of webhooks.
	rp := identity.New(identity.Config{PublicURL: cfg.PublicURL, AllowPrivate: cfg.AllowPrivate, SecureCookies: cfg.SecureCookies, Logger: log})
	svc := wps.NewService(db, wps.ServiceConfig{AllowPrivateWebhooks: cfg.AllowPrivate, SSO: rp, APICaller: apicall.New(apicall.Config{
		Hosts: wps.SplitList(cfg.APICallHosts), AllowPrivate: cfg.APICallPrivate, Timeout: cfg.APICallTimeout, Headers: cfg.APICallHeaders, Log: log}),
		Sessions:         wps.SessionConfig{Idle: cfg.SessionIdle, MaxAge: cfg.SessionMaxAge, AccountBurst: cfg.SignInPerAccount, AddressBurst: cfg.SignInPerAddress},
		Sheets:           sheets.New(sheets.Limits{MaxUnzippedBytes: cfg.SheetUnzipped, MaxPages: cfg.SheetPages, MaxCells: cfg.SheetCells, CalcTimeout: cfg.SheetCalcTimeout}),
		MaxTemplateBytes: cfg.MaxTemplateBytes,
		Documents: wps.DocumentConfig{Limits: contract.Limits{MaxChars: cfg.ContractChars, MaxBytes: cfg.ContractBytes, Timeout: cfg.ContractTimeout},
			RerendersPerMinute: cfg.Rerenders},
		Mail: wps.MailConfig{Enabled: cfg.SMTPURL != "", PublicURL: cfg.PublicURL},
		Imports: wps.ImportConfig{SyncMaxRows: cfg.ImportSyncMax, ChunkRows: cfg.ImportChunk, ChunkTime: importChunkTime(cfg, db), Lease: cfg.ImportLease, MaxOpen: cfg.ImportMaxOpen,
			PerOrg: cfg.ImportJobsPerOrg}})

	boot, err := svc.Bootstrap(ctx, cfg.BootstrapOrgName, cfg.BootstrapAPIKey)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if _, err := svc.LedgerKey(ctx); err != nil { // made at first start
		return fmt.Errorf("ledger key: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	rp.SetPublicURL("http://" + ln.Addr().String())
	if boot != nil {
		fmt.Fprintf(stdout, "Created organization %q with an ADMIN user.\n", boot.Org.Name)
		if cfg.BootstrapAPIKey == "" {
			fmt.Fprintf(stdout, "Admin API key (shown once, keep it safe):\n%s\n", boot.Key.Key)
		} else {
			fmt.Fprintln(stdout, "The admin's API key is the one set in WPS_BOOTSTRAP_API_KEY.")
		}
		if err := inviteConsoleAdmin(ctx, svc, boot, cfg.BootstrapEmail, ln.Addr().String(), stdout); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
	}
	blobs, err := blob.NewDisk(cfg.AttachmentDir)
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	con := console.New(svc, console.Options{Logger: log, Blobs: blobs, SecureCookies: cfg.SecureCookies})
	api := httpapi.New(svc, httpapi.Options{Logger: log, MaxBodyBytes: cfg.MaxBodyBytes,
		RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst, Version: version, Blobs: blobs, IdempotencyLease: cfg.IdempotencyLease,
		SecureCookies: cfg.SecureCookies, Console: con, SSO: rp.Handler(svc), CORSOrigins: cfg.CORSOrigins, ObserveRequest: hooks.request,
		ReportMaxDays: cfg.ReportMaxDays})
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if hooks.m != nil {
		stopMetrics, err := serveMetrics(cfg.MetricsAddr, hooks.m, db, svc, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	log.Info("serving", "addr", ln.Addr().String(), "database", string(db.Engine()), "version", version)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	if cfg.PprofAddr != "" {
		go func() {
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
			log.Warn("pprof listening", "addr", cfg.PprofAddr, "err", http.ListenAndServe(cfg.PprofAddr, mux))
		}()
	}
	if cfg.Background {
		bg := context.WithoutCancel(ctx)
		worker := webhook.New(db, webhook.Config{AllowPrivate: cfg.AllowPrivate, Concurrency: cfg.WebhookWorkers, PerDestination: cfg.WebhookPerDest,
			Logger: log, OnAttempt: hooks.attempt})
		sched := schedule.New(svc, schedule.Config{Logger: log, OnRun: hooks.run})
		integrator := ledger.New(svc, ledger.Config{Logger: log, CheckpointEvery: cfg.CheckpointEvery})
		importer := imports.New(svc, blobs, imports.Config{Jobs: cfg.ImportJobs, Logger: log})
		worker.Start(bg)
		sched.Start(bg)
		integrator.Start(bg)
		importer.Start(bg)
		if cfg.SMTPURL != "" {
			mailer, err := notify.New(db, notify.Config{URL: cfg.SMTPURL, From: cfg.SMTPFrom, Logger: log, OnAttempt: hooks.mail})
			if err != nil {
				return err
			}
			mailer.Start(bg)
			defer mailer.Stop()
		}
		defer worker.Stop()
		defer sched.Stop()
		defer integrator.Stop()
		defer importer.Stop()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// hooks are the functions that tell the metrics what happens; all nil
// when metrics are off (WPS_METRICS_ADDR empty), which costs nothing.
type hooks struct {
	m       *metrics.Metrics
	commit  func(batch int, took time.Duration)
	request func(route string, status int, took time.Duration)
	attempt func(outcome string)
	mail    func(outcome string)
	run     func(took time.Duration, err error)
}

func observers(cfg config.Config) hooks {
	if cfg.MetricsAddr == "" {
		return hooks{}
	}
	m := metrics.New()
	return hooks{m: m, commit: m.Commit, request: m.Request, attempt: m.Attempt, mail: m.MailAttempt, run: m.SchedulerRun}
}

// serveMetrics serves /metrics on its own address, apart from the API, so
// that it can stay private (a scraper's network) while the API is public.
// The returned function stops it.
func serveMetrics(addr string, m *metrics.Metrics, db *sqlstore.DB, svc *wps.Service, log *slog.Logger) (stop func(), err error) {
	m.WatchStore(db, func() time.Time { return svc.Now().Time })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics", "err", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// inviteConsoleAdmin invites the console's first admin (role ADMIN) and
// prints the one-time link where they choose their password.
func inviteConsoleAdmin(ctx context.Context, svc *wps.Service, boot *wps.OrgAdmin, email, addr string, stdout io.Writer) error {
	p, err := svc.Authenticate(ctx, boot.Key.Key)
	if err != nil {
		return err
	}
	inv, err := svc.Invite(ctx, p, wps.InviteInput{Email: email, Name: "Administrator", Roles: []string{wps.RoleAdmin}})
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	fmt.Fprintf(stdout, "Console: open http://%s/invite/%s (once, before %s) to set the password of %s, then sign in at http://%s/\n",
		net.JoinHostPort(host, port), inv.Token, inv.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"), email, net.JoinHostPort(host, port))
	return nil
}

// tuneGC trades memory for CPU: the garbage collector runs at 4× the live
// heap instead of 2×, under a soft limit of 100 MiB that keeps the server
// well inside its memory budget. GOGC and GOMEMLIMIT, when set, win.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(100 << 20)
	}
}

// orgCommand implements "wps org create --name NAME [--admin-email E]".
func orgCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: wps org create --name NAME [--admin-email EMAIL] [--database-url URL]")
	}
	fs := flag.NewFlagSet("org create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the new org's name")
	email := fs.String("admin-email", "", "the admin's email (optional)")
	dbURL := fs.String("database-url", getenv("WPS_DATABASE_URL"), "database (WPS_DATABASE_URL)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("--name is required")
	}
	db, err := sqlstore.Open(ctx, *dbURL, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := wps.NewService(db, wps.ServiceConfig{}).CreateOrg(ctx, *name, *email)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created organization %q (%s) with an ADMIN user.\nAdmin API key (shown once, keep it safe):\n%s\n",
		out.Org.Name, out.Org.ID, out.Key.Key)
	return nil
}

// userCommand implements the operator's commands on one user, by email:
// "wps admin key --org ID --email EMAIL" prints a new API key for that
// active user (when an org's last admin key is lost), and
// "wps user deactivate --org ID --email EMAIL" offboards them.
func userCommand(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	usage := map[string]string{"admin": "key", "user": "deactivate"}[cmd]
	if len(args) == 0 || args[0] != usage {
		return fmt.Errorf("usage: wps %s %s --org ID --email EMAIL [--database-url URL]", cmd, usage)
	}
	fs := flag.NewFlagSet(cmd+" "+usage, flag.ContinueOnError)
	fs.SetOutput(stderr)
	org := fs.String("org", "", "the organization's id")
	email := fs.String("email", "", "the user's email")
	dbURL := fs.String("database-url", getenv("WPS_DATABASE_URL"), "database (WPS_DATABASE_URL)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *org == "" || *email == "" {
		return errors.New("--org and --email are required")
	}
	db, err := sqlstore.Open(ctx, *dbURL, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	svc := wps.NewService(db, wps.ServiceConfig{})
	if cmd == "admin" {
		k, err := svc.IssueKey(ctx, *org, *email)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "API key for %s (shown once, keep it safe):\n%s\n", *email, k.Key)
		return nil
	}
	u, err := svc.DeactivateByEmail(ctx, *org, *email)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Deactivated %s (%s): their API keys and sessions no longer work.\n", u.Email, u.ID)
	return nil
}

// backupCommand implements "wps backup --out FILE": a consistent copy of a
// SQLite database, made while the server may be running (PostgreSQL: the
// answer points to pg_dump).
func backupCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the new file to write the copy to (it must not exist)")
	dbURL := fs.String("database-url", getenv("WPS_DATABASE_URL"), "the database: a SQLite path or sqlite: URL (WPS_DATABASE_URL); default ./wps.db")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return errors.New("usage: wps backup --out FILE [--database-url URL]")
	}
	n, err := sqlstore.Backup(ctx, *dbURL, *out)
	if err != nil {
		return err
	}
	_, src := sqlstore.ParseURL(*dbURL)
	fmt.Fprintf(stdout, "Backed up %s to %s (%d bytes). Copy the attachments folder (WPS_ATTACHMENT_DIR) after it.\n", src, *out, n)
	return nil
}

// benchCommand implements "wps bench": see internal/bench and docs/performance.md.
func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("database", "sqlite", `"sqlite" (a temp file) or a postgres:// URL (a temp schema is made in it)`)
	clients := fs.Int("clients", 32, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "time per path")
	dataset := fs.Int("dataset", 0, "also generate this many measurements in bulk and time the filtered list over them")
	profile := fs.String("profile", "", "write a server CPU profile of each path into this folder")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	server := fs.String("server", "", "the wps binary to measure (default: this one), to compare two builds under the same load generator")
	pocketBase := fs.String("pocketbase", "", "a PocketBase binary: also drive its create of a record of the same fields, for the side-by-side")
	if err := fs.Parse(args); err != nil {
		return err
	}
	exe := *server
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	rep, err := bench.Run(ctx, bench.Options{Exe: exe, Database: *db, Clients: *clients, Duration: *duration, Dataset: *dataset, ProfileDir: *profile,
		PocketBase: *pocketBase, Stderr: stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Table(stdout)
	return nil
}

// importChunkTime is how long an import job's write may take: on SQLite,
// whose one writer every other write waits for, 2ms; on PostgreSQL, where
// other writes go on meanwhile, long enough for a chunk of rows.
func importChunkTime(cfg config.Config, db *sqlstore.DB) time.Duration {
	switch {
	case cfg.ImportChunkTime > 0:
		return cfg.ImportChunkTime
	case db.Engine() == sqlstore.Postgres:
		return 100 * time.Millisecond
	}
	return 2 * time.Millisecond
}
