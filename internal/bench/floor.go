package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"wps/internal/sqlstore"
)

// prepareDatabase returns the URL the server will use: a temp SQLite file,
// or a fresh schema in the given PostgreSQL database (dropped afterwards).
func prepareDatabase(ctx context.Context, spec, dir string) (string, func(), error) {
	if spec == "" || spec == "sqlite" {
		return filepath.Join(dir, "wps.db"), func() {}, nil
	}
	admin, err := sql.Open("pgx", spec)
	if err != nil {
		return "", nil, err
	}
	schema := fmt.Sprintf("bench_%d", rand.Uint32())
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		return "", nil, err
	}
	u, err := url.Parse(spec)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	}, nil
}

// rawCommitRate is the floor: one-row insert transactions per second, with
// the durability the server uses (SQLite WAL synchronous=FULL through one
// connection, as SQLite has one writer; PostgreSQL with `writers` sessions).
func rawCommitRate(ctx context.Context, engine, dbURL, dir string, writers int, d time.Duration) (float64, error) {
	var db *sql.DB
	var err error
	if engine == "sqlite" {
		db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "floor.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
		writers = 1
	} else {
		db, err = sql.Open("pgx", dbURL)
	}
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(writers)
	if _, err := db.ExecContext(ctx, `CREATE TABLE floor (id BIGINT PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		return 0, err
	}
	insert := `INSERT INTO floor (id, v) VALUES (?, ?)`
	if engine != "sqlite" {
		insert = strings.NewReplacer("?, ?", "$1, $2").Replace(insert)
	}
	var n atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				tx, err := db.BeginTx(context.Background(), nil)
				if err == nil {
					_, err = tx.Exec(insert, n.Add(1), "a row of about the size of a small record")
					if err == nil {
						err = tx.Commit()
					} else {
						_ = tx.Rollback()
					}
				}
				if err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds(), first
}

// generate copies a measurement n times straight into the database.
func generate(ctx context.Context, dbURL string, s *seeded, n int) error {
	db, err := sqlstore.Open(ctx, dbURL, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.GenerateMeasurements(ctx, s.orgID, s.processID, n)
}
