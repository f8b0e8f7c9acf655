package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrBackupPostgres is Backup's answer for a PostgreSQL database, whose own
// tools make a consistent copy of a live database.
var ErrBackupPostgres = errors.New("wps backup copies a SQLite database; for PostgreSQL use pg_dump " +
	"(pg_dump --format=custom --file=wps.dump \"$WPS_DATABASE_URL\"; restore into an empty database with pg_restore --dbname=URL wps.dump): see docs/operations.md")

// Backup writes a consistent copy of the SQLite database that rawURL names
// into the new file out, and returns its size. A server may be using the
// database meanwhile: VACUUM INTO reads one snapshot in a read transaction
// (WAL lets the writer go on), so the copy holds exactly the transactions
// committed when it began. The copy is written under a temporary name,
// checked (PRAGMA quick_check), synced, and only then renamed to out, so out
// is either absent or complete. Backup applies no migration: the copy has
// the source's schema version, and a server started on it migrates it.
func Backup(ctx context.Context, rawURL, out string) (int64, error) {
	engine, path := ParseURL(rawURL)
	if engine == Postgres {
		return 0, ErrBackupPostgres
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return 0, fmt.Errorf("no SQLite database at %s", path)
	}
	if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s exists: back up into a new file", out)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-"+hex.EncodeToString(b))
	defer os.Remove(tmp) // gone once renamed; left only by a failure

	src, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return 0, fmt.Errorf("copy %s: %w", path, err)
	}
	if err := check(ctx, tmp); err != nil {
		return 0, err
	}
	if err := syncFile(tmp); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return 0, err
	}
	if err := syncFile(filepath.Dir(out)); err != nil {
		return 0, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// check runs SQLite's quick_check on the copy at path.
func check(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("the copy fails SQLite's quick_check: %s", res)
	}
	return nil
}

// syncFile flushes a file, or a folder's entries, to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
