package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/reports"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in     string
		engine sqlstore.Engine
		dsn    string
	}{
		{"", sqlstore.SQLite, "wps.db"},
		{"data/x.db", sqlstore.SQLite, "data/x.db"},
		{"sqlite:/tmp/x.db", sqlstore.SQLite, "/tmp/x.db"},
		{"sqlite:///tmp/x.db", sqlstore.SQLite, "/tmp/x.db"},
		{"postgres://u@h/db", sqlstore.Postgres, "postgres://u@h/db"},
		{"postgresql://u@h/db", sqlstore.Postgres, "postgresql://u@h/db"},
	} {
		if e, d := sqlstore.ParseURL(c.in); e != c.engine || d != c.dsn {
			t.Errorf("ParseURL(%q) = %s %s", c.in, e, d)
		}
	}
}

func newOrg(t *testing.T, db *sqlstore.DB) wps.Org {
	t.Helper()
	now := wps.At(tu.NewClock().Now())
	o := wps.Org{ID: wps.NewID(), Name: "O", Operations: []string{}, CreatedAt: now, UpdatedAt: now}
	if err := db.Write(context.Background(), func(tx wps.Tx) error { return tx.CreateOrg(o) }); err != nil {
		t.Fatal(err)
	}
	return o
}

// newProcess is a process of org with code P, not written yet.
func newProcess(org wps.Org, now wps.Time) wps.Process {
	return wps.Process{ID: wps.NewID(), OrgID: org.ID, Code: "P", Name: "P", Label: "P", Version: 1, CreatedAt: now, UpdatedAt: now}
}

// Concurrent writes, half of which fail after writing: every success is
// kept, every failure leaves nothing behind, whatever batch they shared.
func TestWritesAreIsolatedInABatch(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		boom := errors.New("boom")
		var wg sync.WaitGroup
		errs := make([]error, 100)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = db.Write(context.Background(), func(tx wps.Tx) error {
					p := wps.Policy{ID: wps.NewID(), OrgID: org.ID, Name: fmt.Sprint("p", i), Roles: []string{}, Functions: []string{}}
					if err := tx.CreatePolicy(p); err != nil {
						return err
					}
					if i%2 == 1 {
						return boom
					}
					return nil
				})
			}()
		}
		wg.Wait()
		var list []wps.Policy
		if err := db.Read(context.Background(), func(tx wps.Tx) (err error) {
			list, err = tx.ListPolicies(org.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if (i%2 == 1) != errors.Is(err, boom) || (i%2 == 0 && err != nil) {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		if len(list) != 50 {
			t.Fatalf("%d policies kept, want 50", len(list))
		}
		for _, p := range list {
			var n int
			fmt.Sscanf(p.Name, "p%d", &n)
			if n%2 == 1 {
				t.Fatalf("a failed write was kept: %s", p.Name)
			}
		}
	})
}

func TestErrorTranslation(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		ctx := context.Background()
		err := db.Read(ctx, func(tx wps.Tx) error { _, err := tx.GetPolicy(org.ID, "missing"); return err })
		if !wps.IsCode(err, wps.CodeNotFound) {
			t.Fatalf("missing row: %v", err)
		}
		p := wps.Policy{ID: wps.NewID(), OrgID: org.ID, Name: "dup", Roles: []string{}, Functions: []string{}}
		if err := db.Write(ctx, func(tx wps.Tx) error { return tx.CreatePolicy(p) }); err != nil {
			t.Fatal(err)
		}
		p.ID = wps.NewID()
		err = db.Write(ctx, func(tx wps.Tx) error { return tx.CreatePolicy(p) })
		if !wps.IsCode(err, wps.CodeConflict) {
			t.Fatalf("duplicate: %v", err)
		}
		err = db.Write(ctx, func(tx wps.Tx) error { panic("bug") })
		if !wps.IsCode(err, wps.CodeInternal) {
			t.Fatalf("panic: %v", err)
		}
		// The writer survives a panic.
		if err := db.Write(ctx, func(tx wps.Tx) error { return tx.LockOrg(org.ID) }); err != nil {
			t.Fatal(err)
		}
	})
}

// Decoded steps are reused by version revision, and what a rolled-back
// write read is never reused.
func TestVersionStepsAfterRollback(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		ctx := context.Background()
		now := wps.At(tu.NewClock().Now())
		p := newProcess(org, now)
		version := func(label string) wps.ProcessVersion {
			return wps.ProcessVersion{ProcessID: p.ID, OrgID: org.ID, Version: 1, CreatedAt: now, Steps: []wps.Step{{ID: "s", Label: label}}}
		}
		if err := db.Write(ctx, func(tx wps.Tx) error {
			if err := tx.CreateProcess(p); err != nil {
				return err
			}
			return tx.CreateProcessVersion(version("first"))
		}); err != nil {
			t.Fatal(err)
		}
		label := func() string {
			var got wps.Process
			if err := db.Read(ctx, func(tx wps.Tx) (err error) {
				got, err = tx.GetProcess(org.ID, p.ID, 0)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return got.Steps[0].Label
		}
		edit := func(l string, fail bool) {
			err := db.Write(ctx, func(tx wps.Tx) error {
				if err := tx.UpdateProcessVersion(version(l)); err != nil {
					return err
				}
				if got, err := tx.GetProcess(org.ID, p.ID, 0); err != nil || got.Steps[0].Label != l {
					return fmt.Errorf("own write not read: %v %v", got.Steps, err)
				}
				if fail {
					return errors.New("boom")
				}
				return nil
			})
			if (err != nil) != fail {
				t.Fatal(err)
			}
		}
		if label() != "first" {
			t.Fatal("first read")
		}
		edit("rolled back", true)
		if got := label(); got != "first" {
			t.Fatalf("after a rollback: %q", got)
		}
		edit("second", false)
		if got := label(); got != "second" {
			t.Fatalf("after a commit: %q", got)
		}
	})
}

// Writes whose result nobody reads (events, on PostgreSQL sent with the
// next statement or before the commit) are seen by the transaction's own
// reads, are committed, and when one fails nothing of its transaction is.
func TestLaterWrites(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		ctx := context.Background()
		event := func() wps.Event {
			return wps.Event{ID: wps.NewID(), OrgID: org.ID, Type: wps.EvMeasurementCreated, Payload: []byte(`{}`), CreatedAt: wps.At(tu.NewClock().Now())}
		}
		first, last := event(), event()
		err := db.Write(ctx, func(tx wps.Tx) error {
			if err := tx.InsertEvents([]wps.Event{first}); err != nil {
				return err
			}
			if _, err := tx.GetEvent(org.ID, first.ID); err != nil { // sent before this read
				return fmt.Errorf("own write not seen: %w", err)
			}
			return tx.InsertEvents([]wps.Event{last}) // sent before the commit
		})
		if err != nil {
			t.Fatal(err)
		}
		policy := wps.Policy{ID: wps.NewID(), OrgID: org.ID, Name: "kept?", Roles: []string{}, Functions: []string{}}
		err = db.Write(ctx, func(tx wps.Tx) error {
			if err := tx.CreatePolicy(policy); err != nil {
				return err
			}
			return tx.InsertEvents([]wps.Event{event(), first}) // first exists: fails at the commit on PostgreSQL
		})
		if err == nil {
			t.Fatal("a duplicate event was accepted")
		}
		if err := db.Read(ctx, func(tx wps.Tx) error {
			for _, id := range []string{first.ID, last.ID} {
				if _, err := tx.GetEvent(org.ID, id); err != nil {
					return fmt.Errorf("event %s: %w", id, err)
				}
			}
			if _, err := tx.GetPolicy(org.ID, policy.ID); !wps.IsCode(err, wps.CodeNotFound) {
				return fmt.Errorf("the failed transaction's policy: %v", err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// A measurement whose statement fails (here: no such process) fails its
// transaction, also on PostgreSQL, where the statements go with the COMMIT
// (or, with no BEGIN sent, make one implicit transaction): neither the event
// written before it nor the measurement created before it is kept.
func TestFailedMeasurementKeepsNothing(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		ctx := context.Background()
		now := wps.At(tu.NewClock().Now())
		p := newProcess(org, now)
		if err := db.Write(ctx, func(tx wps.Tx) error { return tx.CreateProcess(p) }); err != nil {
			t.Fatal(err)
		}
		ev := wps.Event{ID: wps.NewID(), OrgID: org.ID, Type: wps.EvMeasurementCreated, Payload: []byte(`{}`), CreatedAt: now}
		measurement := func(processID string) wps.Measurement {
			return wps.Measurement{ID: wps.NewID(), OrgID: org.ID, ProcessID: processID, Version: 1, Status: "STAGE_OPEN", CreatedAt: now, UpdatedAt: now}
		}
		kept, orphan := measurement(p.ID), measurement(wps.NewID())
		err := db.Write(ctx, func(tx wps.Tx) error {
			if err := tx.InsertEvents([]wps.Event{ev}); err != nil {
				return err
			}
			if err := tx.CreateMeasurement(&kept, "P", nil); err != nil {
				return err
			}
			return tx.CreateMeasurement(&orphan, "X", nil)
		})
		if !wps.IsCode(err, wps.CodeNotFound) {
			t.Fatalf("a measurement of no process: %v", err)
		}
		if err := db.Read(ctx, func(tx wps.Tx) error {
			if _, err := tx.GetEvent(org.ID, ev.ID); !wps.IsCode(err, wps.CodeNotFound) {
				return fmt.Errorf("the failed transaction's event: %v", err)
			}
			if _, err := tx.GetMeasurement(org.ID, kept.ID); !wps.IsCode(err, wps.CodeNotFound) {
				return fmt.Errorf("the failed transaction's first measurement: %v", err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		next := measurement(p.ID)
		if err := db.Write(ctx, func(tx wps.Tx) error { return tx.CreateMeasurement(&next, "P", nil) }); err != nil || next.Name != "P-1" {
			t.Fatalf("the next measurement: %q, %v", next.Name, err)
		}
	})
}

// A write transaction's webhooks, which PostgreSQL reads along with the
// process (or measurement) it reads first, are the org's at that read, and
// follow the transaction's own webhook changes.
func TestWebhooksReadAlong(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org, other := newOrg(t, db), newOrg(t, db)
		ctx := context.Background()
		now := wps.At(tu.NewClock().Now())
		p := newProcess(org, now)
		hook := func(orgID, url string, events ...string) wps.Webhook {
			return wps.Webhook{ID: wps.NewID(), OrgID: orgID, URL: url, Events: events, CreatedAt: now, UpdatedAt: now}
		}
		a, b := hook(org.ID, "https://a.example", wps.EvMeasurementCreated), hook(org.ID, "https://b.example")
		if err := db.Write(ctx, func(tx wps.Tx) error {
			for _, w := range []wps.Webhook{a, hook(other.ID, "https://other.example")} {
				if err := tx.CreateWebhook(w); err != nil {
					return err
				}
			}
			if err := tx.CreateProcess(p); err != nil {
				return err
			}
			return tx.CreateProcessVersion(wps.ProcessVersion{ProcessID: p.ID, OrgID: org.ID, Version: 1, CreatedAt: now, Steps: []wps.Step{{ID: "s"}}})
		}); err != nil {
			t.Fatal(err)
		}
		urls := func(tx wps.Tx) string {
			list, err := tx.ListWebhooks(org.ID)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, w := range list {
				out = append(out, fmt.Sprintf("%s %v %v %v", w.URL, w.Events, w.OrgID == org.ID, w.CreatedAt.Equal(now.Time)))
			}
			return strings.Join(out, " ")
		}
		if err := db.Write(ctx, func(tx wps.Tx) error {
			if _, err := tx.GetProcess(org.ID, p.ID, 0); err != nil {
				return err
			}
			if got, want := urls(tx), "https://a.example [measurement.created] true true"; got != want {
				return fmt.Errorf("read along: %q, want %q", got, want)
			}
			if err := tx.CreateWebhook(b); err != nil {
				return err
			}
			if got := urls(tx); !strings.Contains(got, "https://b.example") {
				return fmt.Errorf("after creating one: %q", got)
			}
			return tx.DeleteWebhook(org.ID, a.ID)
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Write(ctx, func(tx wps.Tx) error {
			if _, err := tx.GetProcess(org.ID, p.ID, 0); err != nil {
				return err
			}
			if got, want := urls(tx), "https://b.example [] true true"; got != want {
				return fmt.Errorf("next transaction: %q, want %q", got, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// The first measurement of a version locks it; an edit changes an unlocked
// version in place and makes a new version of a locked one. On PostgreSQL
// the two race: each reads the version before the other commits. Either
// way, the measurement must keep the steps it was made from.
func TestFirstMeasurementAndEditRace(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		ctx := context.Background()
		now := wps.At(tu.NewClock().Now())
		setup := func(t *testing.T) (*sqlstore.DB, wps.Org, wps.Process) {
			db := tu.OpenDB(t, engine)
			org := newOrg(t, db)
			p := newProcess(org, now)
			if err := db.Write(ctx, func(tx wps.Tx) error {
				if err := tx.CreateProcess(p); err != nil {
					return err
				}
				return tx.CreateProcessVersion(wps.ProcessVersion{ProcessID: p.ID, OrgID: org.ID, Version: 1, CreatedAt: now, Steps: []wps.Step{{ID: "old"}}})
			}); err != nil {
				t.Fatal(err)
			}
			return db, org, p
		}
		// create is wps.CreateMeasurement's part of the race; it reports
		// the steps it made the measurement from, and waits on hold (once)
		// before it commits.
		create := func(db *sqlstore.DB, org wps.Org, p wps.Process, hold func(), built *string) error {
			return db.Write(ctx, func(tx wps.Tx) error {
				cur, err := tx.GetProcess(org.ID, p.ID, 0)
				if err != nil {
					return err
				}
				*built = cur.Steps[0].ID
				if !cur.Locked {
					if err := tx.LockProcessVersion(org.ID, p.ID, cur.Version); err != nil {
						return err
					}
				}
				m := wps.Measurement{ID: wps.NewID(), OrgID: org.ID, ProcessID: p.ID, Version: cur.Version, Status: "OPEN", CreatedAt: now, UpdatedAt: now}
				if err := tx.CreateMeasurement(&m, "P", nil); err != nil {
					return err
				}
				hold()
				return nil
			})
		}
		// edit is wps.editProcess with new steps.
		edit := func(db *sqlstore.DB, org wps.Org, p wps.Process, hold func()) error {
			return db.Write(ctx, func(tx wps.Tx) error {
				cur, err := tx.GetProcess(org.ID, p.ID, 0)
				if err != nil {
					return err
				}
				next := cur
				next.Steps = []wps.Step{{ID: "new"}}
				v := wps.ProcessVersion{ProcessID: p.ID, OrgID: org.ID, Version: cur.Version, CreatedAt: now, Steps: next.Steps}
				if cur.Locked {
					next.Version++
					v.Version = next.Version
					err = tx.CreateProcessVersion(v)
				} else {
					err = tx.UpdateProcessVersion(v)
				}
				if err != nil {
					return err
				}
				if err := tx.UpdateProcess(next); err != nil {
					return err
				}
				hold()
				return nil
			})
		}
		// race runs first until it holds its changes, then second, which
		// reads and waits (PostgreSQL) or queues (SQLite), then lets first
		// commit.
		race := func(t *testing.T, first, second func(hold func()) error) {
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			done1, done2 := make(chan error, 1), make(chan error, 1)
			go func() {
				done1 <- first(func() { once.Do(func() { close(held); <-release }) })
			}()
			<-held
			go func() { done2 <- second(func() {}) }()
			time.Sleep(300 * time.Millisecond)
			close(release)
			if err := <-done1; err != nil {
				t.Fatal(err)
			}
			if err := <-done2; err != nil {
				t.Fatal(err)
			}
		}
		version1 := func(t *testing.T, db *sqlstore.DB, org wps.Org, p wps.Process) wps.Process {
			var v wps.Process
			if err := db.Read(ctx, func(tx wps.Tx) (err error) {
				v, err = tx.GetProcessVersion(org.ID, p.ID, 1)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return v
		}
		t.Run("creation first", func(t *testing.T) {
			db, org, p := setup(t)
			var built string
			race(t, func(hold func()) error { return create(db, org, p, hold, &built) },
				func(hold func()) error { return edit(db, org, p, hold) })
			if v := version1(t, db, org, p); v.Steps[0].ID != "old" || !v.Locked || built != "old" {
				t.Fatalf("version 1 has steps %q (locked %v); the measurement was made from %q", v.Steps[0].ID, v.Locked, built)
			}
		})
		t.Run("edit first", func(t *testing.T) {
			db, org, p := setup(t)
			var built string
			race(t, func(hold func()) error { return edit(db, org, p, hold) },
				func(hold func()) error { return create(db, org, p, hold, &built) })
			if v := version1(t, db, org, p); v.Steps[0].ID != "new" || !v.Locked || built != "new" {
				t.Fatalf("version 1 has steps %q (locked %v); the measurement was made from %q", v.Steps[0].ID, v.Locked, built)
			}
		})
	})
}

// PostgreSQL's text cannot hold the NUL character. The API refuses it in
// bodies and URLs; text that reaches PostgreSQL another way is a client's
// invalid input there too, never an internal error. SQLite stores it.
func TestNULInTextOnPostgres(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		p := newProcess(org, wps.At(tu.NewClock().Now()))
		p.Name = "a\x00b"
		err := db.Write(context.Background(), func(tx wps.Tx) error { return tx.CreateProcess(p) })
		if engine == sqlstore.Postgres && !wps.IsCode(err, wps.CodeInvalid) || engine == sqlstore.SQLite && err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
	})
}

// Concurrent writes (on SQLite, group commits of several) each add an
// event; some read theirs back, some then fail. The events of the writes
// that succeeded are kept, each once, and none of the failed ones', whether
// a read had written the batch's rows before the failure or not.
func TestAddedRowsOfConcurrentWrites(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		org := newOrg(t, db)
		ctx := context.Background()
		const n = 24
		ids := make([]string, n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			ids[i] = wps.NewID()
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = db.Write(ctx, func(tx wps.Tx) error {
					e := wps.Event{ID: ids[i], OrgID: org.ID, Type: wps.EvMeasurementCreated, Payload: []byte(`{}`), CreatedAt: wps.At(tu.NewClock().Now())}
					if err := tx.InsertEvents([]wps.Event{e}); err != nil {
						return err
					}
					// Report facts add to the sums of their keys (each write
					// the same key, and one of its own).
					facts := tx.(reports.Store)
					if err := facts.AddFacts([]reports.Fact{{OrgID: org.ID, ProcessID: "p", Day: 7, Kind: 1, N: 1},
						{OrgID: org.ID, ProcessID: "p", Day: 8 + int64(i), Kind: 1, N: 1}}); err != nil {
						return err
					}
					if i%2 == 0 {
						if _, err := tx.GetEvent(org.ID, e.ID); err != nil {
							return fmt.Errorf("own event not seen: %w", err)
						}
						if fs, err := facts.Facts(reports.Query{OrgID: org.ID, ProcessID: "p", From: 8 + int64(i), To: 8 + int64(i), ByDay: true}); err != nil || len(fs) != 1 {
							return fmt.Errorf("own fact not seen: %v %v", fs, err)
						}
					}
					if i%3 == 0 {
						return wps.Invalid("x", "fails on purpose")
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if (i%3 == 0) != wps.IsCode(err, wps.CodeInvalid) || (i%3 != 0 && err != nil) {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		if err := db.Read(ctx, func(tx wps.Tx) error {
			for i, id := range ids {
				_, err := tx.GetEvent(org.ID, id)
				if kept := err == nil; kept != (i%3 != 0) {
					return fmt.Errorf("event of write %d kept: %v (%v)", i, kept, err)
				}
			}
			fs, err := tx.(reports.Store).Facts(reports.Query{OrgID: org.ID, ProcessID: "p", From: 0, To: 100, ByDay: true})
			if err != nil {
				return err
			}
			byDay := map[int64]int64{}
			for _, f := range fs {
				byDay[f.Day] += f.N
			}
			for i := range n {
				if want := int64(min(1, i%3)); byDay[8+int64(i)] != want {
					return fmt.Errorf("the fact of write %d: %d, want %d", i, byDay[8+int64(i)], want)
				}
			}
			if byDay[7] != n-n/3 {
				return fmt.Errorf("the facts every write added: %d, want %d", byDay[7], n-n/3)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// A batch whose kept rows fail as they are written before the COMMIT, even
// by a panic, fails its writes: none is told it committed, and the writer
// goes on to the next batch.
func TestFlushPanicFailsTheBatch(t *testing.T) {
	db := tu.OpenDB(t, sqlstore.SQLite)
	org := newOrg(t, db)
	ctx := context.Background()
	err := db.Write(ctx, func(tx wps.Tx) error {
		_, err := sqlstore.KeepBadCount(tx, org.ID)
		return err
	})
	if !wps.IsCode(err, wps.CodeInternal) {
		t.Fatalf("a write whose kept rows cannot be written: %v", err)
	}
	now := wps.At(tu.NewClock().Now())
	if err := db.Write(ctx, func(tx wps.Tx) error { return tx.CreateProcess(newProcess(org, now)) }); err != nil {
		t.Fatalf("the next write: %v", err)
	}
}
