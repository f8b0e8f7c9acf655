// Package config reads wps's configuration from flags and the environment.
// Flags win over environment variables; both are documented in docs/operations.md.
package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is everything the server needs to start.
type Config struct {
	Addr             string                       // WPS_ADDR
	DatabaseURL      string                       // WPS_DATABASE_URL: "" is ./wps.db
	BootstrapAPIKey  string                       // WPS_BOOTSTRAP_API_KEY
	BootstrapOrgName string                       // WPS_BOOTSTRAP_ORG_NAME
	BootstrapEmail   string                       // WPS_BOOTSTRAP_ADMIN_EMAIL
	RateLimit        float64                      // WPS_RATE_LIMIT: requests/s per API key, 0 = off
	RateBurst        int                          // WPS_RATE_BURST
	MaxBodyBytes     int64                        // WPS_MAX_BODY_BYTES
	ShutdownTimeout  time.Duration                // WPS_SHUTDOWN_TIMEOUT
	LogFormat        string                       // WPS_LOG_FORMAT: text or json
	LogLevel         string                       // WPS_LOG_LEVEL: debug, info, warn, error
	SQLiteSync       string                       // WPS_SQLITE_SYNCHRONOUS: FULL (default), NORMAL, ...
	AllowPrivate     bool                         // WPS_WEBHOOK_ALLOW_PRIVATE: webhooks may target loopback/private addresses
	Background       bool                         // WPS_BACKGROUND: run the webhook worker, the scheduler and the ledger's integrator here
	CheckpointEvery  time.Duration                // WPS_LEDGER_CHECKPOINT_EVERY: a growing ledger's new signed checkpoint, at most this often
	PprofAddr        string                       // WPS_PPROF_ADDR: serve /debug/pprof there (off when empty)
	MetricsAddr      string                       // WPS_METRICS_ADDR: serve Prometheus /metrics there (off when empty)
	AttachmentDir    string                       // WPS_ATTACHMENT_DIR: where uploaded files are kept
	APICallHosts     string                       // WPS_API_CALL_HOSTS: hosts apiCalls may call, comma-separated ("" = off)
	APICallPrivate   bool                         // WPS_API_CALL_ALLOW_PRIVATE: apiCalls may reach loopback/private addresses
	APICallTimeout   time.Duration                // WPS_API_CALL_TIMEOUT: per call
	APICallHeaders   map[string]map[string]string // WPS_API_CALL_HEADERS: JSON {host: {header: value}}
	SessionIdle      time.Duration                // WPS_SESSION_IDLE: a session unused this long ends
	SessionMaxAge    time.Duration                // WPS_SESSION_MAX_AGE: a session ends this long after sign-in
	SignInPerAccount int                          // WPS_SIGNIN_FAILURES_PER_ACCOUNT: failed sign-ins before throttling, per email
	SignInPerAddress int                          // WPS_SIGNIN_FAILURES_PER_ADDRESS: the same, per client address
	IdempotencyLease time.Duration                // WPS_IDEMPOTENCY_LEASE: a pending Idempotency-Key is held this long unrenewed
	SecureCookies    bool                         // WPS_SECURE_COOKIES: session cookies Secure behind a TLS-terminating proxy
	PublicURL        string                       // WPS_PUBLIC_URL: where browsers reach wps ("": http:// and the listen address); SSO's redirect_uri is it + /sso/callback
	SheetUnzipped    int64                        // WPS_SHEET_MAX_UNZIPPED_BYTES: a workbook's parts once unzipped
	SheetPages       int                          // WPS_SHEET_MAX_PAGES: worksheets per workbook
	SheetCells       int                          // WPS_SHEET_MAX_CELLS: cells over a workbook's used ranges
	SheetCalcTimeout time.Duration                // WPS_SHEET_CALC_TIMEOUT: one recalculation
	ReportMaxDays    int                          // WPS_REPORT_MAX_DAYS: the longest range of days a report covers (default 366)
	CORSOrigins      []string                     // WPS_CORS_ORIGINS: origins whose pages may call the API ("*": any); none: off
	MaxTemplateBytes int                          // WPS_CONTRACT_TEMPLATE_MAX_BYTES: the largest contract template body
	ContractChars    int                          // WPS_CONTRACT_MAX_CHARS: characters of a document's filled body
	ContractBytes    int                          // WPS_CONTRACT_MAX_BYTES: a document's PDF
	ContractTimeout  time.Duration                // WPS_CONTRACT_RENDER_TIMEOUT: one rendering
	Rerenders        int                          // WPS_CONTRACT_RERENDERS_PER_MINUTE: documents a user may have rendered again
	ImportSyncMax    int                          // WPS_IMPORT_SYNC_MAX_ROWS: larger records imports run as jobs
	ImportChunk      int                          // WPS_IMPORT_CHUNK_ROWS: rows per transaction of an import job
	ImportLease      time.Duration                // WPS_IMPORT_LEASE: a crashed worker's job is resumed this long after
	ImportChunkTime  time.Duration                // WPS_IMPORT_CHUNK_TIME: an import job's write ends after this (0: the engine's default)
	ImportJobs       int                          // WPS_IMPORT_JOBS: import jobs run at once by one replica
	ImportJobsPerOrg int                          // WPS_IMPORT_JOBS_PER_ORG: one org's import jobs run at once, over every replica
	WebhookWorkers   int                          // WPS_WEBHOOK_CONCURRENCY: webhook attempts in flight in one replica
	WebhookPerDest   int                          // WPS_WEBHOOK_PER_DESTINATION: one org's attempts in flight to one receiver (host), over every replica
	ImportMaxOpen    int                          // WPS_IMPORT_MAX_OPEN_JOBS: an org's import jobs not yet ended, at most
	SMTPURL          string                       // WPS_SMTP_URL: smtp://[user:pass@]host:port or smtps://...; empty: nothing is mailed
	SMTPFrom         string                       // WPS_SMTP_FROM: the From address of mails
}

// Load builds a Config from the environment, then applies flags from args.
func Load(getenv func(string) string, args []string, stderr io.Writer) (Config, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	c := Config{}
	fs := flag.NewFlagSet("wps", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", env("WPS_ADDR", "127.0.0.1:8080"), "listen address (WPS_ADDR)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("WPS_DATABASE_URL", ""), "SQLite path or sqlite: URL, or postgres:// URL (WPS_DATABASE_URL); default ./wps.db")
	fs.StringVar(&c.BootstrapAPIKey, "bootstrap-api-key", env("WPS_BOOTSTRAP_API_KEY", ""), "the first admin's API key on an empty database (WPS_BOOTSTRAP_API_KEY)")
	fs.StringVar(&c.BootstrapEmail, "bootstrap-admin-email", env("WPS_BOOTSTRAP_ADMIN_EMAIL", "admin@example.com"), "the email of the console admin invited on an empty database (WPS_BOOTSTRAP_ADMIN_EMAIL)")
	fs.StringVar(&c.BootstrapOrgName, "bootstrap-org-name", env("WPS_BOOTSTRAP_ORG_NAME", "Default"), "the first org's name (WPS_BOOTSTRAP_ORG_NAME)")
	fs.StringVar(&c.LogFormat, "log-format", env("WPS_LOG_FORMAT", "text"), "text or json (WPS_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", env("WPS_LOG_LEVEL", "info"), "debug, info, warn or error (WPS_LOG_LEVEL)")
	fs.StringVar(&c.AttachmentDir, "attachment-dir", env("WPS_ATTACHMENT_DIR", "wps-attachments"), "folder for uploaded files (WPS_ATTACHMENT_DIR)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("WPS_PPROF_ADDR", ""), "serve /debug/pprof on this address; keep it private (WPS_PPROF_ADDR)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("WPS_METRICS_ADDR", ""), "serve Prometheus metrics at /metrics on this address (127.0.0.1:9090); keep it private; empty: off (WPS_METRICS_ADDR)")
	fs.StringVar(&c.SQLiteSync, "sqlite-synchronous", env("WPS_SQLITE_SYNCHRONOUS", "FULL"), "SQLite synchronous pragma (WPS_SQLITE_SYNCHRONOUS)")
	var err error
	if c.RateLimit, err = strconv.ParseFloat(env("WPS_RATE_LIMIT", "100"), 64); err != nil {
		return c, fmt.Errorf("WPS_RATE_LIMIT: %w", err)
	}
	if c.ReportMaxDays, err = strconv.Atoi(env("WPS_REPORT_MAX_DAYS", "366")); err != nil {
		return c, fmt.Errorf("WPS_REPORT_MAX_DAYS: %w", err)
	}
	if c.RateBurst, err = strconv.Atoi(env("WPS_RATE_BURST", "200")); err != nil {
		return c, fmt.Errorf("WPS_RATE_BURST: %w", err)
	}
	if c.MaxBodyBytes, err = strconv.ParseInt(env("WPS_MAX_BODY_BYTES", "1048576"), 10, 64); err != nil {
		return c, fmt.Errorf("WPS_MAX_BODY_BYTES: %w", err)
	}
	if c.ShutdownTimeout, err = time.ParseDuration(env("WPS_SHUTDOWN_TIMEOUT", "30s")); err != nil {
		return c, fmt.Errorf("WPS_SHUTDOWN_TIMEOUT: %w", err)
	}
	if c.AllowPrivate, err = strconv.ParseBool(env("WPS_WEBHOOK_ALLOW_PRIVATE", "false")); err != nil {
		return c, fmt.Errorf("WPS_WEBHOOK_ALLOW_PRIVATE: %w", err)
	}
	if c.APICallPrivate, err = strconv.ParseBool(env("WPS_API_CALL_ALLOW_PRIVATE", "false")); err != nil {
		return c, fmt.Errorf("WPS_API_CALL_ALLOW_PRIVATE: %w", err)
	}
	if c.APICallTimeout, err = time.ParseDuration(env("WPS_API_CALL_TIMEOUT", "5s")); err != nil {
		return c, fmt.Errorf("WPS_API_CALL_TIMEOUT: %w", err)
	}
	if h := env("WPS_API_CALL_HEADERS", ""); h != "" {
		if err := json.Unmarshal([]byte(h), &c.APICallHeaders); err != nil {
			return c, fmt.Errorf(`WPS_API_CALL_HEADERS: must be JSON like {"api.example.com": {"Authorization": "Bearer ..."}}: %w`, err)
		}
	}
	if c.Background, err = strconv.ParseBool(env("WPS_BACKGROUND", "true")); err != nil {
		return c, fmt.Errorf("WPS_BACKGROUND: %w", err)
	}
	if c.CheckpointEvery, err = time.ParseDuration(env("WPS_LEDGER_CHECKPOINT_EVERY", "2s")); err != nil {
		return c, fmt.Errorf("WPS_LEDGER_CHECKPOINT_EVERY: %w", err)
	}
	if c.SessionIdle, err = time.ParseDuration(env("WPS_SESSION_IDLE", "12h")); err != nil {
		return c, fmt.Errorf("WPS_SESSION_IDLE: %w", err)
	}
	if c.SessionMaxAge, err = time.ParseDuration(env("WPS_SESSION_MAX_AGE", "168h")); err != nil {
		return c, fmt.Errorf("WPS_SESSION_MAX_AGE: %w", err)
	}
	if c.SecureCookies, err = strconv.ParseBool(env("WPS_SECURE_COOKIES", "false")); err != nil {
		return c, fmt.Errorf("WPS_SECURE_COOKIES: %w", err)
	}
	if c.IdempotencyLease, err = time.ParseDuration(env("WPS_IDEMPOTENCY_LEASE", "30s")); err != nil {
		return c, fmt.Errorf("WPS_IDEMPOTENCY_LEASE: %w", err)
	}
	if c.SheetUnzipped, err = strconv.ParseInt(env("WPS_SHEET_MAX_UNZIPPED_BYTES", "104857600"), 10, 64); err != nil {
		return c, fmt.Errorf("WPS_SHEET_MAX_UNZIPPED_BYTES: %w", err)
	}
	if c.SheetPages, err = strconv.Atoi(env("WPS_SHEET_MAX_PAGES", "50")); err != nil {
		return c, fmt.Errorf("WPS_SHEET_MAX_PAGES: %w", err)
	}
	if c.SheetCells, err = strconv.Atoi(env("WPS_SHEET_MAX_CELLS", "200000")); err != nil {
		return c, fmt.Errorf("WPS_SHEET_MAX_CELLS: %w", err)
	}
	if c.SheetCalcTimeout, err = time.ParseDuration(env("WPS_SHEET_CALC_TIMEOUT", "2s")); err != nil {
		return c, fmt.Errorf("WPS_SHEET_CALC_TIMEOUT: %w", err)
	}
	if c.SignInPerAccount, err = strconv.Atoi(env("WPS_SIGNIN_FAILURES_PER_ACCOUNT", "5")); err != nil {
		return c, fmt.Errorf("WPS_SIGNIN_FAILURES_PER_ACCOUNT: %w", err)
	}
	if c.SignInPerAddress, err = strconv.Atoi(env("WPS_SIGNIN_FAILURES_PER_ADDRESS", "20")); err != nil {
		return c, fmt.Errorf("WPS_SIGNIN_FAILURES_PER_ADDRESS: %w", err)
	}
	if c.MaxTemplateBytes, err = strconv.Atoi(env("WPS_CONTRACT_TEMPLATE_MAX_BYTES", "65536")); err != nil {
		return c, fmt.Errorf("WPS_CONTRACT_TEMPLATE_MAX_BYTES: %w", err)
	}
	if c.ContractChars, err = strconv.Atoi(env("WPS_CONTRACT_MAX_CHARS", "200000")); err != nil {
		return c, fmt.Errorf("WPS_CONTRACT_MAX_CHARS: %w", err)
	}
	if c.ContractBytes, err = strconv.Atoi(env("WPS_CONTRACT_MAX_BYTES", "4194304")); err != nil {
		return c, fmt.Errorf("WPS_CONTRACT_MAX_BYTES: %w", err)
	}
	if c.ContractTimeout, err = time.ParseDuration(env("WPS_CONTRACT_RENDER_TIMEOUT", "10s")); err != nil {
		return c, fmt.Errorf("WPS_CONTRACT_RENDER_TIMEOUT: %w", err)
	}
	if c.Rerenders, err = strconv.Atoi(env("WPS_CONTRACT_RERENDERS_PER_MINUTE", "6")); err != nil {
		return c, fmt.Errorf("WPS_CONTRACT_RERENDERS_PER_MINUTE: %w", err)
	}
	if c.ImportSyncMax, err = strconv.Atoi(env("WPS_IMPORT_SYNC_MAX_ROWS", "1000")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_SYNC_MAX_ROWS: %w", err)
	}
	if c.ImportChunk, err = strconv.Atoi(env("WPS_IMPORT_CHUNK_ROWS", "500")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_CHUNK_ROWS: %w", err)
	}
	if c.ImportLease, err = time.ParseDuration(env("WPS_IMPORT_LEASE", "30s")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_LEASE: %w", err)
	}
	if c.ImportChunkTime, err = time.ParseDuration(env("WPS_IMPORT_CHUNK_TIME", "0s")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_CHUNK_TIME: %w", err)
	}
	if c.ImportMaxOpen, err = strconv.Atoi(env("WPS_IMPORT_MAX_OPEN_JOBS", "10")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_MAX_OPEN_JOBS: %w", err)
	}
	if c.ImportJobs, err = strconv.Atoi(env("WPS_IMPORT_JOBS", "2")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_JOBS: %w", err)
	}
	if c.ImportJobsPerOrg, err = strconv.Atoi(env("WPS_IMPORT_JOBS_PER_ORG", "1")); err != nil {
		return c, fmt.Errorf("WPS_IMPORT_JOBS_PER_ORG: %w", err)
	}
	if c.WebhookWorkers, err = strconv.Atoi(env("WPS_WEBHOOK_CONCURRENCY", "8")); err != nil {
		return c, fmt.Errorf("WPS_WEBHOOK_CONCURRENCY: %w", err)
	}
	if c.WebhookPerDest, err = strconv.Atoi(env("WPS_WEBHOOK_PER_DESTINATION", "2")); err != nil {
		return c, fmt.Errorf("WPS_WEBHOOK_PER_DESTINATION: %w", err)
	}
	fs.BoolVar(&c.AllowPrivate, "webhook-allow-private", c.AllowPrivate, "let webhooks target loopback and private addresses (WPS_WEBHOOK_ALLOW_PRIVATE)")
	fs.StringVar(&c.APICallHosts, "api-call-hosts", env("WPS_API_CALL_HOSTS", ""), "hosts that apiCalls may call, comma-separated, *.example.com for subdomains; empty turns API calls off (WPS_API_CALL_HOSTS)")
	fs.BoolVar(&c.APICallPrivate, "api-call-allow-private", c.APICallPrivate, "let apiCalls reach loopback and private addresses (WPS_API_CALL_ALLOW_PRIVATE)")
	fs.DurationVar(&c.APICallTimeout, "api-call-timeout", c.APICallTimeout, "time limit of one API call (WPS_API_CALL_TIMEOUT)")
	fs.BoolVar(&c.Background, "background", c.Background, "run the webhook worker, the scheduler, the ledger's integrator, the import jobs' worker and the mail worker in this replica (WPS_BACKGROUND)")
	fs.DurationVar(&c.CheckpointEvery, "ledger-checkpoint-every", c.CheckpointEvery, "a growing ledger gets a new signed checkpoint at most this often (WPS_LEDGER_CHECKPOINT_EVERY)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "requests per second per API key, 0 turns it off (WPS_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "burst per API key (WPS_RATE_BURST)")
	fs.IntVar(&c.ReportMaxDays, "report-max-days", c.ReportMaxDays, "the longest range of days a report covers (WPS_REPORT_MAX_DAYS)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "request body limit (WPS_MAX_BODY_BYTES)")
	fs.StringVar(&c.PublicURL, "public-url", env("WPS_PUBLIC_URL", ""), "where browsers reach this server, such as https://wps.example.com; single sign-on's redirect_uri is it + /sso/callback (WPS_PUBLIC_URL; default http:// and the listen address)")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", c.SecureCookies, "mark session cookies Secure although requests arrive over plain HTTP (TLS ends at a proxy) (WPS_SECURE_COOKIES)")
	fs.DurationVar(&c.IdempotencyLease, "idempotency-lease", c.IdempotencyLease, "how long a pending Idempotency-Key is held unless its request renews it; after a crash the key frees this long after (WPS_IDEMPOTENCY_LEASE)")
	fs.DurationVar(&c.SessionIdle, "session-idle", c.SessionIdle, "a console session unused this long ends (WPS_SESSION_IDLE)")
	fs.DurationVar(&c.SessionMaxAge, "session-max-age", c.SessionMaxAge, "a console session ends this long after sign-in (WPS_SESSION_MAX_AGE)")
	fs.IntVar(&c.SignInPerAccount, "signin-failures-per-account", c.SignInPerAccount, "failed sign-ins per email before throttling; then one a minute (WPS_SIGNIN_FAILURES_PER_ACCOUNT)")
	fs.IntVar(&c.SignInPerAddress, "signin-failures-per-address", c.SignInPerAddress, "failed sign-ins per client address before throttling; then one per 10 s (WPS_SIGNIN_FAILURES_PER_ADDRESS)")
	fs.Int64Var(&c.SheetUnzipped, "sheet-max-unzipped-bytes", c.SheetUnzipped, "a workbook's parts once unzipped, at most (WPS_SHEET_MAX_UNZIPPED_BYTES)")
	fs.IntVar(&c.SheetPages, "sheet-max-pages", c.SheetPages, "worksheets per workbook, at most (WPS_SHEET_MAX_PAGES)")
	fs.IntVar(&c.SheetCells, "sheet-max-cells", c.SheetCells, "cells over a workbook's used ranges, at most (WPS_SHEET_MAX_CELLS)")
	fs.DurationVar(&c.SheetCalcTimeout, "sheet-calc-timeout", c.SheetCalcTimeout, "time limit of one workbook recalculation (WPS_SHEET_CALC_TIMEOUT)")
	fs.IntVar(&c.MaxTemplateBytes, "contract-template-max-bytes", c.MaxTemplateBytes, "the largest contract template body, in bytes (WPS_CONTRACT_TEMPLATE_MAX_BYTES)")
	fs.IntVar(&c.ContractChars, "contract-max-chars", c.ContractChars, "characters of a contract document's filled body (its text and every value it prints), at most (WPS_CONTRACT_MAX_CHARS)")
	fs.IntVar(&c.ContractBytes, "contract-max-bytes", c.ContractBytes, "a contract document's PDF, in bytes, at most (WPS_CONTRACT_MAX_BYTES)")
	fs.DurationVar(&c.ContractTimeout, "contract-render-timeout", c.ContractTimeout, "time limit of rendering one contract document (WPS_CONTRACT_RENDER_TIMEOUT)")
	fs.IntVar(&c.Rerenders, "contract-rerenders-per-minute", c.Rerenders, "documents one user may have rendered again by a verification per minute (WPS_CONTRACT_RERENDERS_PER_MINUTE)")
	fs.IntVar(&c.ImportSyncMax, "import-sync-max-rows", c.ImportSyncMax, "a records import of more rows runs as a job, answered 202 (WPS_IMPORT_SYNC_MAX_ROWS)")
	fs.IntVar(&c.ImportChunk, "import-chunk-rows", c.ImportChunk, "rows an import job writes per transaction (WPS_IMPORT_CHUNK_ROWS)")
	fs.DurationVar(&c.ImportLease, "import-lease", c.ImportLease, "an import job whose worker stopped is resumed this long after (WPS_IMPORT_LEASE)")
	fs.DurationVar(&c.ImportChunkTime, "import-chunk-time", c.ImportChunkTime, "an import job's write transaction ends after this; 0: 2ms on SQLite, 100ms on PostgreSQL (WPS_IMPORT_CHUNK_TIME)")
	fs.IntVar(&c.ImportMaxOpen, "import-max-open-jobs", c.ImportMaxOpen, "an org's import jobs not yet ended, at most; one more answers 429 (WPS_IMPORT_MAX_OPEN_JOBS)")
	fs.IntVar(&c.ImportJobs, "import-jobs", c.ImportJobs, "import jobs one replica runs at once (WPS_IMPORT_JOBS)")
	fs.IntVar(&c.ImportJobsPerOrg, "import-jobs-per-org", c.ImportJobsPerOrg, "one org's import jobs run at once over every replica; the other workers serve other orgs (WPS_IMPORT_JOBS_PER_ORG)")
	fs.IntVar(&c.WebhookWorkers, "webhook-concurrency", c.WebhookWorkers, "webhook delivery attempts in flight in one replica (WPS_WEBHOOK_CONCURRENCY)")
	fs.IntVar(&c.WebhookPerDest, "webhook-per-destination", c.WebhookPerDest, "one org's webhook attempts in flight to one receiver host over every replica (WPS_WEBHOOK_PER_DESTINATION)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long in-flight requests may finish on SIGTERM (WPS_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.SMTPURL, "smtp-url", env("WPS_SMTP_URL", ""), "the SMTP server mails go through: smtp://[user:pass@]host:port (STARTTLS when offered) or smtps://... (implicit TLS); empty: nothing is mailed (WPS_SMTP_URL)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", env("WPS_SMTP_FROM", ""), "the From address of mails, e.g. wps@example.com (WPS_SMTP_FROM)")
	cors := fs.String("cors-origins", env("WPS_CORS_ORIGINS", ""), "origins whose browser pages may call the API, comma-separated (https://app.example.com), or * for any (without cookies); empty: CORS off (WPS_CORS_ORIGINS)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.CORSOrigins = splitList(*cors)
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("addr must not be empty")
	case c.RateLimit < 0 || c.RateBurst < 0:
		return fmt.Errorf("rate limit and burst must not be negative")
	case c.ReportMaxDays < 1:
		return fmt.Errorf("report max days must be at least 1")
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("max body bytes must be at least 1024")
	case c.APICallTimeout <= 0:
		return fmt.Errorf("api call timeout must be positive")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("log format must be text or json")
	case c.IdempotencyLease < 3*time.Millisecond:
		return fmt.Errorf("idempotency lease must be at least 3ms (it is renewed every third of it)")
	case c.CheckpointEvery <= 0:
		return fmt.Errorf("ledger checkpoint interval must be positive")
	case c.SessionIdle <= 0 || c.SessionMaxAge <= 0:
		return fmt.Errorf("session idle time and max age must be positive")
	case c.SheetUnzipped < 1<<20 || c.SheetPages < 1 || c.SheetCells < 1 || c.SheetCalcTimeout <= 0:
		return fmt.Errorf("sheet limits must be positive (unzipped bytes at least 1 MiB)")
	case c.MaxTemplateBytes < 1024 || c.MaxTemplateBytes > 1<<20:
		return fmt.Errorf("contract template max bytes must be from 1024 to 1048576 (a request body's default limit)")
	case c.ContractChars < 1000 || c.ContractBytes < 64<<10 || c.ContractTimeout <= 0 || c.Rerenders < 1:
		return fmt.Errorf("contract limits: max chars at least 1000, max bytes at least 65536, a positive render timeout, at least 1 re-rendering per minute")
	case c.ImportSyncMax < 1 || c.ImportChunk < 1 || c.ImportChunk > 10000 || c.ImportJobs < 1 || c.ImportMaxOpen < 1 || c.ImportJobsPerOrg < 1:
		return fmt.Errorf("import sync max rows, import jobs, import jobs per org and import max open jobs must be at least 1, import chunk rows from 1 to 10000")
	case c.WebhookWorkers < 1 || c.WebhookWorkers > 1000 || c.WebhookPerDest < 1:
		return fmt.Errorf("webhook concurrency must be from 1 to 1000, webhook per destination at least 1")
	case c.ImportLease < time.Second:
		return fmt.Errorf("import lease must be at least 1s")
	case c.ImportChunkTime < 0 || c.ImportChunkTime > c.ImportLease/4:
		return fmt.Errorf("import chunk time must be from 0 to a quarter of the import lease")
	case c.SignInPerAccount < 1 || c.SignInPerAddress < 1:
		return fmt.Errorf("sign-in failures per account and per address must be at least 1")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("public url: %q is not an absolute http or https URL such as https://wps.example.com", c.PublicURL)
		}
	}
	if c.SMTPURL != "" {
		u, err := url.Parse(c.SMTPURL)
		if err != nil || u.Scheme != "smtp" && u.Scheme != "smtps" || u.Hostname() == "" {
			return fmt.Errorf("smtp url must be smtp://[user:pass@]host:port or smtps://[user:pass@]host:port")
		}
		if _, err := mail.ParseAddress(c.SMTPFrom); err != nil {
			return fmt.Errorf("smtp from must be an email address when smtp url is set")
		}
		if c.PublicURL == "" {
			return fmt.Errorf("public url must be the console's http(s) address when smtp url is set (links in mails)")
		}
	}
	for _, o := range c.CORSOrigins {
		if o == "*" && len(c.CORSOrigins) > 1 {
			return fmt.Errorf("cors origins: * allows every origin and cannot be listed with others")
		}
		if u, err := url.Parse(o); o != "*" && (err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ToLower(o) != o) {
			return fmt.Errorf("cors origins: %q is not an origin such as https://app.example.com (scheme and host in lower case, optional port, no path)", o)
		}
	}
	return nil
}

// splitList splits a comma-separated setting, trimming each item and
// dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
