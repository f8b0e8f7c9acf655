// Package sqlstore implements wps.Store on SQLite and on PostgreSQL with one
// set of plain SQL: the engines differ only in the few places the dialect
// names (placeholders, row locks, error codes, connection setup). The
// numbered migrations under migrations/ are portable SQL run on both.
//
// On SQLite every write goes through one writer goroutine that commits the
// transactions of concurrent requests together (group commit): each request
// runs inside its own savepoint, so one request's failure never touches
// another's, and one fsync makes them all durable. On PostgreSQL each write
// is its own transaction from a pool, retried on serialization failures.
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"wps/internal/wps"
)

//go:embed migrations
var migrations embed.FS

// Engine names a database engine.
type Engine string

// The two engines.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// Options tunes a DB; zero values take defaults.
type Options struct {
	Logger    *slog.Logger
	MaxBatch  int // SQLite: most transactions in one group commit (default 128)
	ReadConns int // SQLite: reader connections (default 4)
	MaxConns  int // PostgreSQL: pool size (default 16)
	// Synchronous is SQLite's synchronous pragma (default FULL: an
	// acknowledged write survives a power loss).
	Synchronous string
	// ObserveCommit, when set, is told of every commit (metrics): on SQLite
	// the number of transactions the group commit made durable together and
	// the time of its COMMIT (the fsync); on PostgreSQL 1 and the time of
	// the round trip that carried the COMMIT.
	ObserveCommit func(batch int, took time.Duration)
}

// DB is a wps.Store.
type DB struct {
	engine Engine
	write  *sql.DB // SQLite: the writer's single connection; PostgreSQL: the pool
	read   *sql.DB // SQLite: reader connections; PostgreSQL: the same pool
	log    *slog.Logger

	jobs     chan *job // SQLite group commit queue
	maxBatch int
	readers  chan *conn // SQLite: reader connections, each with its statements
	wconn    *conn      // SQLite: the writer goroutine's connection
	// touches tells whether a statement names a table of batchAdds, by
	// query text (SQLite: the writer goroutine's, like wconn).
	touches  map[string]bool
	stop     chan struct{}
	stopped  chan struct{}
	once     sync.Once
	rebinds  sync.Map // query text → PostgreSQL form
	steps    stepsCache
	versions versionCache
	stripes  [16]stripe   // PostgreSQL: queues for processes' contended rows (tx.hot)
	retries  atomic.Int64 // PostgreSQL: writes run again (Retries)
	observe  func(batch int, took time.Duration)
	waits    atomic.Int64 // SQLite: reads that waited for a reader connection (Stats)
	waited   atomic.Int64 // SQLite: nanoseconds they waited
	written  atomic.Int64 // statements write transactions sent (WriteStatements)
}

// WriteStatements counts the statements that write transactions sent to
// the database since Open: each of a PostgreSQL pipeline's, and on SQLite
// the group commit's BEGIN, SAVEPOINT, RELEASE and COMMIT too. Divided by
// the writes made, it is what a write costs the one SQLite writer.
func (db *DB) WriteStatements() int64 { return db.written.Load() }

var _ wps.Store = (*DB)(nil)

// ParseURL tells which engine a database URL selects and the driver's DSN
// for it: "" is the SQLite file wps.db, "postgres://" or "postgresql://" is
// PostgreSQL, "sqlite:PATH" or a plain path is a SQLite file.
func ParseURL(raw string) (Engine, string) {
	switch {
	case raw == "":
		return SQLite, "wps.db"
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return Postgres, raw
	case strings.HasPrefix(raw, "sqlite://"):
		return SQLite, strings.TrimPrefix(raw, "sqlite://")
	case strings.HasPrefix(raw, "sqlite:"):
		return SQLite, strings.TrimPrefix(raw, "sqlite:")
	}
	return SQLite, raw
}

// Open connects to the database that rawURL names and applies pending migrations.
func Open(ctx context.Context, rawURL string, opt Options) (*DB, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 128
	}
	if opt.ReadConns <= 0 {
		opt.ReadConns = 4
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = 16
	}
	if opt.Synchronous == "" {
		opt.Synchronous = "FULL"
	}
	engine, dsn := ParseURL(rawURL)
	db := &DB{engine: engine, log: opt.Logger, maxBatch: opt.MaxBatch, observe: opt.ObserveCommit}
	var err error
	switch engine {
	case SQLite:
		err = db.openSQLite(dsn, opt)
	case Postgres:
		err = db.openPostgres(dsn, opt)
	}
	if err != nil {
		return nil, err
	}
	if err := db.ping(ctx); err != nil {
		db.closeConns()
		return nil, fmt.Errorf("connect to %s: %w", engine, err)
	}
	if err := db.Migrate(ctx); err != nil {
		db.closeConns()
		return nil, err
	}
	for i := range db.stripes {
		db.stripes[i] = stripe{turn: make(chan struct{}, 1), sent: make(chan struct{}, 2)}
	}
	if engine == SQLite {
		if err := db.holdConns(ctx, opt.ReadConns); err != nil {
			db.closeConns()
			return nil, err
		}
		db.jobs = make(chan *job, 4*opt.MaxBatch)
		db.stop = make(chan struct{})
		db.stopped = make(chan struct{})
		go db.writer()
	}
	return db, nil
}

func (db *DB) openSQLite(path string, opt Options) error {
	switch strings.ToUpper(opt.Synchronous) {
	case "OFF", "NORMAL", "FULL", "EXTRA":
	default:
		return fmt.Errorf("unknown SQLite synchronous mode %q", opt.Synchronous)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+opt.Synchronous+")")
	q.Add("_pragma", "foreign_keys(ON)")
	// The writer wraps each request of a batch in a savepoint; SQLite keeps
	// the pages a savepoint may restore in a sub-journal, which spills to a
	// temp file past 64 KiB unless temp storage is in memory.
	w := url.Values{"_txlock": {"immediate"}, "_pragma": {"temp_store(MEMORY)"}}
	for k, v := range q {
		w[k] = append(w[k], v...)
	}
	var err error
	if db.write, err = sql.Open("sqlite", "file:"+path+"?"+w.Encode()); err != nil {
		return err
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetConnMaxIdleTime(0)
	q.Add("_pragma", "query_only(ON)")
	if db.read, err = sql.Open("sqlite", "file:"+path+"?"+q.Encode()); err != nil {
		return err
	}
	db.read.SetMaxOpenConns(opt.ReadConns)
	db.read.SetMaxIdleConns(opt.ReadConns)
	return nil
}

func (db *DB) openPostgres(dsn string, opt Options) error {
	var err error
	if db.write, err = sql.Open("pgx", dsn); err != nil {
		return err
	}
	db.write.SetMaxOpenConns(opt.MaxConns)
	db.write.SetMaxIdleConns(opt.MaxConns)
	db.read = db.write
	return nil
}

func (db *DB) ping(ctx context.Context) error {
	if err := db.write.PingContext(ctx); err != nil {
		return err
	}
	return db.read.PingContext(ctx)
}

// Engine reports which engine the DB runs on.
func (db *DB) Engine() Engine { return db.engine }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if db.engine == SQLite {
		return db.Read(ctx, func(t wps.Tx) error {
			var one int
			return t.(*tx).queryRow(`SELECT 1`).Scan(&one)
		})
	}
	return db.ping(ctx)
}

// Migrate applies the pending migrations of the DB's engine, each in a transaction.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	for _, r := range res {
		db.log.Info("migration applied", "version", r.Source.Version, "path", r.Source.Path)
	}
	return nil
}

// MigrateTo applies or reverts the migrations of the database that rawURL
// names until it is at version, on a connection of its own: for tests of
// upgrades, which take a database back to what an older release left (a
// Go migration's revert does nothing).
func MigrateTo(ctx context.Context, rawURL string, version int64) error {
	engine, dsn := ParseURL(rawURL)
	db := &DB{engine: engine, log: slog.New(slog.DiscardHandler)}
	var err error
	if engine == SQLite {
		err = db.openSQLite(dsn, Options{Synchronous: "FULL", ReadConns: 1})
	} else {
		err = db.openPostgres(dsn, Options{MaxConns: 1})
	}
	if err != nil {
		return err
	}
	defer db.closeConns()
	p, err := db.migrations()
	if err != nil {
		return err
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if version < current {
		_, err = p.DownTo(ctx, version)
	} else {
		_, err = p.UpTo(ctx, version)
	}
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// migrations is the goose provider of the DB's engine, with the Go
// migrations: those that write rows only the domain can work out.
func (db *DB) migrations() (*goose.Provider, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	if db.engine == Postgres {
		dialect = goose.DialectPostgres
	}
	// Out of order: branches take numbers ahead of time, and one merged
	// later applies below a higher one applied before (22 and 23 after 25).
	p, err := goose.NewProvider(dialect, db.write, dir, goose.WithAllowOutofOrder(true), goose.WithGoMigrations(
		goose.NewGoMigration(16, &goose.GoFunc{RunTx: db.backfillOpenSeats}, nil),
		goose.NewGoMigration(23, &goose.GoFunc{RunTx: db.backfillLedger}, nil),
		goose.NewGoMigration(44, &goose.GoFunc{RunTx: db.backfillReports}, &goose.GoFunc{RunTx: dropReportFacts}),
		goose.NewGoMigration(50, &goose.GoFunc{RunTx: db.rekeyReportFacts("report_facts_by_kind", factKeyByKind)},
			&goose.GoFunc{RunTx: db.rekeyReportFacts("report_facts_pkey", factKeyByDay)}),
	))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Close stops the writer after the queued writes and closes the connections.
func (db *DB) Close() error {
	db.once.Do(func() {
		if db.stop != nil {
			close(db.stop)
			<-db.stopped
		}
	})
	return db.closeConns()
}

func (db *DB) closeConns() error {
	if db.wconn != nil {
		db.wconn.close()
	}
	for len(db.readers) > 0 {
		(<-db.readers).close()
	}
	err := db.write.Close()
	if db.read != db.write {
		err = errors.Join(err, db.read.Close())
	}
	return err
}

// View runs fn as a read without a transaction: each statement is its own
// snapshot. On PostgreSQL that is two round trips fewer than Read.
func (db *DB) View(ctx context.Context, fn func(wps.Tx) error) error {
	if db.engine == SQLite {
		c, err := db.reader(ctx)
		if err != nil {
			return err
		}
		defer func() { db.readers <- c }()
		return call(fn, &tx{db: db, q: c, ctx: ctx, write: false})
	}
	return call(fn, &tx{db: db, q: db.read, ctx: ctx, write: false})
}

// reader takes one of SQLite's reader connections; give it back to db.readers.
func (db *DB) reader(ctx context.Context) (*conn, error) {
	select {
	case c := <-db.readers:
		return c, nil
	default:
	}
	start := time.Now()
	defer func() {
		db.waits.Add(1)
		db.waited.Add(int64(time.Since(start)))
	}()
	select {
	case c := <-db.readers:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Read runs fn in a read-only transaction: one snapshot for all its statements.
func (db *DB) Read(ctx context.Context, fn func(wps.Tx) error) error {
	if db.engine == SQLite {
		c, err := db.reader(ctx)
		if err != nil {
			return err
		}
		defer func() { db.readers <- c }()
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			return db.txErr(ctx, err)
		}
		defer c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // read-only: nothing to keep
		return call(fn, &tx{db: db, q: c, ctx: ctx, write: false})
	}
	// One snapshot for every statement of the read (READ COMMITTED would
	// give each its own: a view could show an action its state lacks).
	sqltx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return db.txErr(ctx, err)
	}
	defer sqltx.Rollback() //nolint:errcheck // read-only: nothing to keep
	return call(fn, &tx{db: db, q: sqltx, ctx: ctx, write: false})
}

// Write runs fn in a transaction that commits when fn returns nil. When
// ctx carries an Idempotency-Key claim (wps.WithIdempotency), the same
// transaction marks that key's record committed.
func (db *DB) Write(ctx context.Context, fn func(wps.Tx) error) error {
	if claim, ok := wps.IdempotencyOf(ctx); ok {
		// The request's Idempotency-Key is marked committed with its changes.
		changes := fn
		fn = func(t wps.Tx) error {
			if err := changes(t); err != nil {
				return err
			}
			return t.CommitIdempotent(claim.Scope, claim.Key, claim.CreatedAt)
		}
	}
	if db.engine == SQLite {
		return db.enqueue(ctx, fn)
	}
	for attempt := 0; ; attempt++ {
		err := db.writeOnce(ctx, fn)
		if !retryable(err) || attempt == 9 {
			return err
		}
		db.retries.Add(1)
		db.log.Info("write retried", "attempt", attempt+1, "err", err)
		time.Sleep(time.Duration(attempt+1) * 2 * time.Millisecond)
	}
}

// Retries counts the PostgreSQL writes run again after a deadlock or a
// serialization failure since Open.
func (db *DB) Retries() int64 { return db.retries.Load() }

// writeOnce runs fn in a transaction on a connection of the pool. The
// transaction's last statements are sent with its COMMIT, in one round trip
// (tx.send): the rows every writer of a process contends for are locked by
// those statements, so they are held inside PostgreSQL only, for the
// statements and the flush, never across a round trip to this process.
func (db *DB) writeOnce(ctx context.Context, fn func(wps.Tx) error) error {
	c, err := db.write.Conn(ctx)
	if err != nil {
		return db.txErr(ctx, err)
	}
	defer c.Close()
	t := &tx{db: db, q: &counted{c, &db.written}, conn: c, ctx: ctx, write: true}
	defer t.leaveStripe()
	err = call(fn, t)
	if err == nil {
		start := time.Now()
		err = call(func(wps.Tx) error { return t.send(true) }, t) // a panic in a statement's read too
		if err == nil && db.observe != nil {
			db.observe(1, time.Since(start))
		}
	}
	if err != nil {
		// After a failed statement a transaction begun is aborted and its
		// COMMIT was not run; after a failed COMMIT there is none, and this
		// only warns. An implicit transaction (send) is gone already.
		if t.begun {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return err
	}
	t.committed()
	return nil
}

// stripe queues the PostgreSQL write transactions of this server whose
// process (of the domain: a workflow) hashes to it, for the rows that every
// writer of a process contends for (its measurement sequence, its status
// counters). A transaction takes both before its first write to those
// rows (hot):
//   - sent, one of two places, kept until the transaction ends: one
//     transaction runs inside PostgreSQL, and the statements of the other
//     wait there for its locks and run as soon as it commits. Every other
//     waits here: with more waiters on a row, each commit wakes them, and
//     PostgreSQL's lock manager costs more CPU than the work.
//   - turn, kept until its COMMIT is sent (tx.send).
//
// Every contended row is locked after both, so a transaction waiting for
// either holds none of them; and a transaction that holds them locks no
// other row after (the scheduler opens each measurement in a write of its
// own), as a writer waiting for them may hold it. So no wait that
// PostgreSQL cannot see closes a cycle. A transaction takes at most one
// stripe (a second process's rows are locked without one).
type stripe struct {
	turn chan struct{}
	sent chan struct{}
}

// hot takes the turn of the process's stripe (see stripe), once per
// transaction.
func (t *tx) hot(processID string) error {
	if t.db.engine != Postgres || !t.write || t.stripe != nil {
		return nil
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(processID))
	s := &t.db.stripes[h.Sum32()%uint32(len(t.db.stripes))]
	select {
	case s.sent <- struct{}{}:
		t.stripe = s
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
	select {
	case s.turn <- struct{}{}:
		t.turn = true
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

// releaseHot lets the stripe's turn go.
func (t *tx) releaseHot() {
	if t.turn {
		<-t.stripe.turn
		t.turn = false
	}
}

// leaveStripe lets the turn and the place go, once the transaction ended.
func (t *tx) leaveStripe() {
	t.releaseHot()
	if t.stripe != nil {
		<-t.stripe.sent
		t.stripe = nil
	}
}

// call runs fn, turning a panic into an internal error so that one bad
// request cannot take the writer down.
func call(fn func(wps.Tx) error, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = wps.Internal(fmt.Errorf("panic in transaction: %v", r))
		}
	}()
	return fn(t)
}

// flushKept writes a batch's kept rows before its COMMIT. A panic there
// (a row its merge cannot take) fails every write of the batch, as an
// error of the flush would: outside call, it would have told them all
// they succeeded as it unwound, then stopped the server before the COMMIT.
func flushKept(ctx context.Context, adds *batchAdds, w *counted) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic writing the batch's kept rows: %v", r)
		}
	}()
	return adds.flush(ctx, w)
}

// txErr classifies an error of BeginTx or Commit.
func (db *DB) txErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01") {
		return &wps.Error{Code: wps.CodeConflict, Message: "concurrent update, try again", Err: err}
	}
	return wps.Internal(err)
}

// errStale is a write's conditional update that found its row changed
// since the write read it: on PostgreSQL (READ COMMITTED) another
// transaction committed a change in between. Write runs the write again,
// from its reads.
var errStale = errors.New("a row this write read was changed by another before it was written")

// retryable reports a PostgreSQL serialization failure or deadlock, or a
// stale read (errStale).
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.Is(err, errStale) || errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01")
}

// job is one Write waiting for the SQLite writer.
type job struct {
	ctx  context.Context
	fn   func(wps.Tx) error
	done chan error
}

func (db *DB) enqueue(ctx context.Context, fn func(wps.Tx) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case db.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.stop:
		return wps.Internal(errors.New("store is closed"))
	}
	// Once queued the job runs to the end even if ctx ends: the caller
	// must learn whether its change was committed.
	return <-j.done
}

// writer is the only goroutine that writes to SQLite. It takes every job
// waiting in the queue (up to MaxBatch) and commits them together.
func (db *DB) writer() {
	defer close(db.stopped)
	batch := make([]*job, 0, db.maxBatch)
	for {
		select {
		case j := <-db.jobs:
			batch = append(batch[:0], j)
		drain:
			for len(batch) < db.maxBatch {
				select {
				case j := <-db.jobs:
					batch = append(batch, j)
				default:
					break drain
				}
			}
			db.commitBatch(batch)
		case <-db.stop:
			for {
				select {
				case j := <-db.jobs:
					db.commitBatch([]*job{j})
				default:
					return
				}
			}
		}
	}
}

func (db *DB) commitBatch(batch []*job) {
	ctx := context.Background()
	w := &counted{db.wconn, &db.written}
	errs := make([]error, len(batch))
	defer func() {
		for i, j := range batch {
			j.done <- errs[i]
		}
	}()
	fail := func(err error) {
		_, _ = w.ExecContext(ctx, "ROLLBACK")
		for i := range errs {
			if errs[i] == nil || !wps.IsCode(errs[i], wps.CodeInternal) {
				errs[i] = wps.Internal(err)
			}
		}
	}
	if _, err := w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		fail(err)
		return
	}
	single := len(batch) == 1
	txs := make([]*tx, len(batch))
	adds := &batchAdds{}
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		t := &tx{db: db, q: w, ctx: ctx, write: true, adds: adds}
		txs[i] = t
		if single {
			errs[i] = call(j.fn, t)
			break
		}
		start := adds.begin()
		if _, err := w.ExecContext(ctx, "SAVEPOINT job"); err != nil {
			fail(err)
			return
		}
		errs[i] = call(j.fn, t)
		if errs[i] != nil {
			if _, err := w.ExecContext(ctx, "ROLLBACK TO job"); err != nil {
				fail(err)
				return
			}
			adds.rollback(start)
		}
		if _, err := w.ExecContext(ctx, "RELEASE job"); err != nil {
			fail(err)
			return
		}
	}
	if single && errs[0] != nil {
		_, _ = w.ExecContext(ctx, "ROLLBACK")
		return
	}
	if err := flushKept(ctx, adds, w); err != nil {
		fail(err)
		return
	}
	start := time.Now()
	if _, err := w.ExecContext(ctx, "COMMIT"); err != nil {
		for i := range errs {
			errs[i] = nil
		}
		fail(err)
		return
	}
	took, n := time.Since(start), 0
	for i, t := range txs {
		if t != nil && errs[i] == nil {
			t.committed()
			n++
		}
	}
	if db.observe != nil {
		db.observe(n, took)
	}
}

// control are the group commit's statements, run for every write: kept
// prepared like the others rather than parsed at each run.
var control = map[string]bool{"BEGIN IMMEDIATE": true, "SAVEPOINT job": true, "RELEASE job": true, "ROLLBACK TO job": true, "COMMIT": true}

// maxStmts bounds the statements kept prepared on one connection.
const maxStmts = 512

// conn is a connection held for the life of the DB, with the statements
// prepared on it: SQLite parses each query text once per connection.
type conn struct {
	c     *sql.Conn
	stmts map[string]*sql.Stmt
}

// holdConns takes SQLite's writer connection and its reader connections.
func (db *DB) holdConns(ctx context.Context, readers int) error {
	c, err := db.write.Conn(ctx)
	if err != nil {
		return err
	}
	db.wconn = &conn{c: c, stmts: map[string]*sql.Stmt{}}
	db.readers = make(chan *conn, readers)
	for range readers {
		c, err := db.read.Conn(ctx)
		if err != nil {
			return err
		}
		db.readers <- &conn{c: c, stmts: map[string]*sql.Stmt{}}
	}
	return nil
}

func (c *conn) close() {
	for _, s := range c.stmts {
		_ = s.Close()
	}
	_ = c.c.Close()
}

// stmt returns query prepared on c (one goroutine uses a conn at a time).
func (c *conn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	if len(c.stmts) >= maxStmts { // deep pages make new texts: start over
		for q, s := range c.stmts {
			_ = s.Close()
			delete(c.stmts, q)
		}
	}
	s, err := c.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = s
	return s, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if len(args) == 0 && !strings.HasPrefix(query, "SELECT") && !control[query] {
		return c.c.ExecContext(ctx, query) // PRAGMA, DDL...
	}
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (c *conn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (c *conn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := c.stmt(ctx, query)
	if err != nil {
		return c.c.QueryRowContext(ctx, query, args...) // carries the same error
	}
	return s.QueryRowContext(ctx, args...)
}

// counted is a querier that counts the statements run through it.
type counted struct {
	querier
	n *atomic.Int64
}

func (c *counted) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	c.n.Add(1)
	return c.querier.ExecContext(ctx, query, args...)
}

func (c *counted) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.n.Add(1)
	return c.querier.QueryContext(ctx, query, args...)
}

func (c *counted) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	c.n.Add(1)
	return c.querier.QueryRowContext(ctx, query, args...)
}

// querier runs SQL: a PostgreSQL transaction, or a held SQLite connection
// inside its BEGIN ... COMMIT.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx is a wps.Tx over one SQL transaction.
type tx struct {
	db       *DB
	q        querier
	conn     *sql.Conn // PostgreSQL write: the connection q is, for pipelines (send)
	ctx      context.Context
	write    bool
	stripe   *stripe              // PostgreSQL: the stripe of the process whose contended rows it writes (hot)
	turn     bool                 // it holds the stripe's turn
	begun    bool                 // PostgreSQL write: BEGIN was sent (begin)
	versions []versionSteps       // versions read, kept once committed
	revs     map[versionRef]int64 // the revision of each process version read (oneProcess)
	hooks    *prefetchedHooks     // PostgreSQL: an org's webhooks read along (hooksCol)
	pending  []laterWrite         // PostgreSQL: writes not sent yet (later, deferTop)
	laterErr error                // the error of pending writes sent before a queryRow
	adds     *batchAdds           // SQLite's writer: rows added to append-only tables, written before the COMMIT (add)
}

// laterWrite is a write statement not sent yet.
type laterWrite struct {
	query string
	args  []any
	top   bool                 // a statement of its own (deferTop), never a WITH query of another
	read  func(pgx.Rows) error // reads its rows, if anything does (deferTop)
	dup   string               // what a unique violation of it means
}

// later runs a write whose result (rows affected, returned columns) nobody
// reads. SQLite runs it at once. PostgreSQL sends it with the transaction's
// next write, as a data-modifying WITH of it, or before the next read, or
// with the COMMIT: one round trip fewer each. Its error is the error of
// the statement that carried it. Two writes of one statement see the same
// snapshot, so a later write must not touch rows that the statement
// carrying it touches.
func (t *tx) later(query string, args ...any) error {
	if t.db.engine != Postgres || !t.write {
		_, err := t.exec(query, args...)
		return err
	}
	t.pending = append(t.pending, laterWrite{query: query, args: args})
	return nil
}

// deferTop keeps a PostgreSQL write statement to send with the
// transaction's next read or with its COMMIT (send), in one round trip with
// the others kept, in order. read, if not nil, reads its rows then. Nothing
// can act on its result before the COMMIT runs: the statement must fail by
// itself when what it writes would be wrong.
//
// The later writes made before it go in a statement of their own before
// it, never as its WITH queries: PostgreSQL runs those after the main
// query, and every transaction must lock the rows writers contend for in
// one order (a process's sequence, then its status counters in status
// order), or two of them in PostgreSQL at once deadlock.
func (t *tx) deferTop(query string, args []any, dup string, read func(pgx.Rows) error) {
	t.pending = append(t.pending, laterWrite{query: query, args: args, top: true, read: read, dup: dup})
}

// withLater prefixes a write statement with writes as WITH queries.
func withLater(ws []laterWrite, query string, args []any) (string, []any) {
	if len(ws) == 0 {
		return query, args
	}
	ctes := make([]string, len(ws))
	var all []any
	for i, w := range ws {
		ctes[i] = fmt.Sprintf("later%d AS (%s)", i, w.query)
		all = append(all, w.args...)
	}
	query = strings.TrimSpace(query)
	for _, with := range []string{"WITH RECURSIVE ", "WITH "} {
		if rest, ok := strings.CutPrefix(query, with); ok {
			return with + strings.Join(ctes, ", ") + ", " + rest, append(all, args...)
		}
	}
	return "WITH " + strings.Join(ctes, ", ") + " " + query, append(all, args...)
}

// carry prefixes a write statement with the pending writes as WITH
// queries; before any other statement, or when a pending statement stands
// on its own, it sends them first.
func (t *tx) carry(query string, args []any) (string, []any, error) {
	if len(t.pending) == 0 {
		return query, args, t.begin(query)
	}
	if slices.Contains([]string{"INSERT", "UPDATE", "DELETE", "WITH"}, verb(query)) &&
		!slices.ContainsFunc(t.pending, func(w laterWrite) bool { return w.top }) {
		query, args = withLater(t.pending, query, args)
		t.pending = nil
		return query, args, t.begin(query)
	}
	if err := t.send(false); err != nil {
		return query, args, err
	}
	return query, args, t.begin(query)
}

// verb is a statement's first word, upper case.
func verb(query string) string {
	head, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	return strings.ToUpper(head)
}

// writes reports whether a statement may write or lock rows.
func writes(query string) bool {
	return verb(query) != "SELECT" || strings.Contains(query, "FOR UPDATE") || strings.Contains(query, "FOR SHARE")
}

// begin sends a PostgreSQL write transaction's BEGIN before its first
// statement that writes or locks: its reads before that run on their own,
// as they would see the same in the transaction (READ COMMITTED gives each
// statement its own snapshot), and a transaction whose only writes go with
// its COMMIT sends no BEGIN at all (send).
func (t *tx) begin(query string) error {
	if t.conn == nil || t.begun || !writes(query) {
		return nil
	}
	t.db.written.Add(1)
	_, err := t.conn.ExecContext(t.ctx, "BEGIN")
	t.begun = err == nil
	return err
}

// send sends the pending writes, and the COMMIT if commit, in one round
// trip (a pipeline), then reads their results. Later writes after the last
// statement of its own ride on the last of them. In a transaction not begun
// yet, the pipeline is one: without BEGIN and COMMIT, PostgreSQL runs the
// statements of a pipeline as one implicit transaction, committed at its
// end; to send writes before a read, it begins one. The stripe's turn is
// let go once a commit is sent (see stripe).
func (t *tx) send(commit bool) error {
	if t.conn == nil {
		return nil
	}
	var ws, run []laterWrite
	endRun := func() { // a run of later writes rides on its last
		if n := len(run); n > 0 {
			last := run[n-1]
			last.query, last.args = withLater(run[:n-1], last.query, last.args)
			ws, run = append(ws, last), nil
		}
	}
	for _, w := range t.pending {
		if !w.top {
			run = append(run, w)
			continue
		}
		endRun()
		ws = append(ws, w)
	}
	endRun()
	t.pending = nil
	if len(ws) == 0 && (!commit || !t.begun) {
		return nil
	}
	var b pgx.Batch
	begins, commits := !t.begun && !commit, commit && t.begun
	if begins {
		b.Queue("BEGIN")
	}
	for _, w := range ws {
		b.Queue(t.rebind(w.query), w.args...)
	}
	if commits {
		b.Queue("COMMIT")
	}
	t.db.written.Add(int64(b.Len()))
	return t.conn.Raw(func(dc any) error {
		br := dc.(*stdlib.Conn).Conn().SendBatch(t.ctx, &b)
		if commit {
			t.releaseHot()
		}
		var err, readErr error
		if begins {
			_, err = br.Exec()
			t.begun = err == nil
		}
		if err == nil {
			err, readErr = t.results(br, ws)
		}
		if err == nil && commits {
			_, err = br.Exec()
		}
		// Close reads the pipeline to its end: an implicit transaction
		// commits there.
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if we := (*wps.Error)(nil); err != nil && !errors.As(err, &we) {
			return t.db.txErr(t.ctx, err)
		}
		if err == nil && readErr != nil && commit {
			// A bug, never a client's mistake; the client must not think
			// its change was lost.
			t.db.log.Error("a write committed, but reading a statement's result failed", "err", readErr)
			return wps.Internal(fmt.Errorf("the change was committed, but reading its result failed: %w", readErr))
		}
		return cmp.Or(err, readErr)
	})
}

// results reads the results of a pipeline's writes. A statement's error
// ends it (PostgreSQL skips the rest, and the transaction is aborted). An
// error in reading a statement's rows (read) does not: the statement ran,
// and so does a COMMIT sent with it; it is returned as readErr.
func (t *tx) results(br pgx.BatchResults, ws []laterWrite) (err, readErr error) {
	for _, w := range ws {
		if w.read == nil {
			if _, err := br.Exec(); err != nil {
				return t.err(err, "", w.dup), readErr
			}
			continue
		}
		rows, _ := br.Query() // a statement's error comes with its rows, for read to map
		err := w.read(rows)
		rows.Close()
		var pg *pgconn.PgError
		if failed := rows.Err(); errors.As(failed, &pg) {
			if we := (*wps.Error)(nil); errors.As(err, &we) { // read's own meaning of it
				return err, readErr
			}
			return t.err(failed, "", w.dup), readErr
		}
		if err != nil && readErr == nil {
			readErr = err
		}
	}
	return nil, readErr
}

// rebind turns a query written with ? placeholders into the engine's form.
func (t *tx) rebind(query string) string { return t.db.rebind(query) }

func (db *DB) rebind(query string) string {
	if db.engine != Postgres {
		return query
	}
	if v, ok := db.rebinds.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	db.rebinds.Store(query, b.String())
	return b.String()
}

func (t *tx) exec(query string, args ...any) (sql.Result, error) {
	if err := t.addsBefore(query); err != nil {
		return nil, err
	}
	query, args, err := t.carry(query, args)
	if err != nil {
		return nil, err
	}
	return t.q.ExecContext(t.ctx, t.rebind(query), args...)
}

func (t *tx) query(query string, args ...any) (*sql.Rows, error) {
	if err := t.addsBefore(query); err != nil {
		return nil, err
	}
	query, args, err := t.carry(query, args)
	if err != nil {
		return nil, err
	}
	return t.q.QueryContext(t.ctx, t.rebind(query), args...)
}

func (t *tx) queryRow(query string, args ...any) *sql.Row {
	err := t.addsBefore(query)
	if err == nil {
		query, args, err = t.carry(query, args)
	}
	if err != nil {
		// The transaction is aborted, or was never begun: t.err reports
		// this, not the row's error, and the statement is not run.
		t.laterErr = err
		return t.q.QueryRowContext(t.ctx, `SELECT 1 WHERE false`)
	}
	return t.q.QueryRowContext(t.ctx, t.rebind(query), args...)
}

// page is the LIMIT and OFFSET of a page, written as literals: SQLite
// re-prepares a statement whose bound LIMIT changes, as its planner may use
// the value, which would defeat the statement cache.
func page(p wps.Page) string {
	return " LIMIT " + strconv.Itoa(p.PerPage) + " OFFSET " + strconv.Itoa(p.Offset())
}

// asText binds a value that SQLite must not look into when it plans:
// compared with the WHERE of a partial index (status = ? against
// measurements_pending), or a LIKE pattern, a bare parameter makes SQLite
// re-prepare the statement every time it is bound (18% of a list's CPU).
const asText = `CAST(? AS TEXT)`

// limitN is a LIMIT written as a literal (see page).
func limitN(n int) string { return " LIMIT " + strconv.Itoa(n) }

// indexedBy makes SQLite use the named index, where its planner, which
// has no statistics (docs/operations.md), would pick one that reads every
// pending row: SQLite fails the statement when the index cannot serve it.
// PostgreSQL plans with statistics and needs no hint.
func (t *tx) indexedBy(index string) string {
	if t.db.engine == SQLite {
		return " INDEXED BY " + index
	}
	return ""
}

// forUpdate is the row-lock suffix of a SELECT in a write transaction:
// SQLite needs none (its one writer serializes every write transaction).
func (t *tx) forUpdate() string {
	if t.write && t.db.engine == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// forUpdateOf is forUpdate for the rows of one table of a join (alias).
func (t *tx) forUpdateOf(alias string) string {
	if f := t.forUpdate(); f != "" {
		return f + " OF " + alias
	}
	return ""
}

// err translates a driver error: no rows → not found (what), unique
// violation → conflict (dup), anything else → internal.
func (t *tx) err(err error, what, dup string) error {
	switch {
	case err == nil:
		return nil
	case t.laterErr != nil:
		return t.laterErr
	case errors.Is(err, sql.ErrNoRows):
		return wps.NotFound(what)
	case isUnique(err):
		return &wps.Error{Code: wps.CodeConflict, Message: dup, Err: err}
	case retryable(err):
		return err // Write retries it
	case isBadText(err):
		// The API refuses such text in bodies and URLs; this is for text
		// that reaches PostgreSQL another way.
		return &wps.Error{Code: wps.CodeInvalid, Message: "text must be valid UTF-8 without the NUL character (U+0000)", Err: err}
	}
	var we *wps.Error
	if errors.As(err, &we) {
		return err
	}
	if t.ctx.Err() != nil {
		return t.ctx.Err()
	}
	return wps.Internal(err)
}

func isUnique(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

// isBadText reports PostgreSQL refusing a string its text cannot hold:
// one with the NUL character or invalid UTF-8.
func isBadText(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "22021" || pg.Code == "22P05")
}

// isNotNull reports PostgreSQL's not-null violation.
func isNotNull(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23502"
}

// affected turns "no row changed" into a not-found error.
func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return wps.NotFound(what)
	}
	return nil
}
