package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// due writes n deliveries of org, due at now, the i-th to urls[i % len],
// each for a measurement of its own; their events go in one statement.
func due(tb testing.TB, db *sqlstore.DB, org wps.Org, now wps.Time, n int, urls ...string) {
	tb.Helper()
	err := db.Write(context.Background(), func(tx wps.Tx) error {
		events := make([]wps.Event, n)
		for i := range events {
			events[i] = wps.Event{ID: wps.NewID(), OrgID: org.ID, Type: "measurement.created", MeasurementID: wps.NewID(), Payload: []byte(`{}`), CreatedAt: now}
		}
		if err := tx.InsertEvents(events); err != nil {
			return err
		}
		for i, e := range events {
			u := urls[i%len(urls)]
			if err := tx.CreateDelivery(wps.Delivery{ID: wps.NewID(), OrgID: org.ID, EventID: e.ID, EventType: e.Type, URL: u,
				MeasurementID: e.MeasurementID, Status: wps.DeliveryPending, NextAttemptAt: now,
				GiveUpAt: wps.At(now.Add(wps.RetryWindow)), CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func org(tb testing.TB, db *sqlstore.DB, name string) wps.Org {
	tb.Helper()
	now := wps.At(tu.NewClock().Now())
	o := wps.Org{ID: wps.NewID(), Name: name, Operations: []string{}, CreatedAt: now, UpdatedAt: now}
	if err := db.Write(context.Background(), func(tx wps.Tx) error { return tx.CreateOrg(o) }); err != nil {
		tb.Fatal(err)
	}
	return o
}

// claim finds due deliveries in a read, then leases them, as the worker
// does.
func claim(tb testing.TB, db *sqlstore.DB, now wps.Time, limit, perDestination int) []wps.Delivery {
	tb.Helper()
	got, _, err := claimOrUndo(db, now, limit, perDestination, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// claimOrUndo also tells how many were found due.
func claimOrUndo(db *sqlstore.DB, now wps.Time, limit, perDestination int, undo error) ([]wps.Delivery, int, error) {
	var ids []string
	if err := db.View(context.Background(), func(tx wps.Tx) (err error) {
		ids, err = tx.DueDeliveries(now, limit, perDestination)
		return err
	}); err != nil {
		return nil, 0, err
	}
	var got []wps.Delivery
	err := db.Write(context.Background(), func(tx wps.Tx) (err error) {
		if got, err = tx.ClaimDeliveries(ids, now, wps.At(now.Add(time.Minute))); err == nil {
			err = undo
		}
		return err
	})
	return got, len(ids), err
}

// Orgs take turns at claims, counting what each has in flight, and one
// org's destination (host and port, whatever the path) gets perDestination
// leases at once, over every claim.
func TestClaimDeliveriesTakesTurns(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		now := wps.At(tu.NewClock().Now())
		a, b := org(t, db, "A"), org(t, db, "B")
		due(t, db, a, now, 30, "https://slow.example.com/one", "https://slow.example.com/two", "https://other.example.com/x")
		due(t, db, b, wps.At(now.Add(time.Millisecond)), 3, "https://slow.example.com/one") // younger than all of A's
		count := func(list []wps.Delivery) string {
			n := map[string]int{}
			for _, d := range list {
				n[map[string]string{a.ID: "A", b.ID: "B"}[d.OrgID]+" "+wps.DestinationOf(d.URL)]++
			}
			return fmt.Sprint(n)
		}
		later := wps.At(now.Add(time.Second))
		// B's first delivery goes before A's second, though younger.
		if got := count(claim(t, db, later, 3, 2)); got != "map[A slow.example.com:2 B slow.example.com:1]" {
			t.Fatalf("first claim: %s", got)
		}
		// A's slow destination is full; B's has one place, and B, with one
		// in flight, goes before A, with two.
		if got := count(claim(t, db, later, 8, 2)); got != "map[A other.example.com:2 B slow.example.com:1]" {
			t.Fatalf("second claim: %s", got)
		}
		if got := count(claim(t, db, later, 8, 2)); got != "map[]" {
			t.Fatalf("third claim: %s", got)
		}
		// Leases that ran out count no more.
		expired := wps.At(now.Add(2 * time.Minute))
		if got := count(claim(t, db, expired, 8, 2)); got != "map[A other.example.com:2 A slow.example.com:2 B slow.example.com:2]" {
			t.Fatalf("after the leases: %s", got)
		}
	})
}

// Workers claiming at once never lease one delivery twice.
func TestClaimDeliveriesOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		db := tu.OpenDB(t, engine)
		now := wps.At(tu.NewClock().Now())
		for i := range 4 {
			o := org(t, db, fmt.Sprint("O", i))
			due(t, db, o, now, 50, "https://a.example.com/", "https://b.example.com/", "https://c.example.com/")
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 { // until a claim finds none due
					got, due, err := claimOrUndo(db, now, 3, 100, nil)
					if err != nil || due == 0 {
						if err != nil {
							t.Error(err)
						}
						return
					}
					mu.Lock()
					for _, d := range got {
						seen[d.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 200 {
			t.Fatalf("%d of 200 claimed", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("%s claimed %d times", id, n)
			}
		}
	})
}

// BenchmarkClaimDeliveries claims 8 deliveries as the worker does, a read
// then a write (rolled back, so each claim sees the same database): from a backlog of 10,000 due deliveries
// of 10 orgs to 3 receivers each, and from 1,000 due beside 2,000 queues
// (orgs' receivers) whose deliveries wait for their retry. PostgreSQL's
// tables are analyzed first: without statistics it leases the ids found by
// scanning (7 ms instead of 0.5).
//
//	go test -run X -bench ClaimDeliveries ./internal/sqlstore
func BenchmarkClaimDeliveries(b *testing.B) {
	for _, c := range []struct {
		name            string
		orgs, due, idle int
	}{
		{"backlog", 10, 1000, 0},
		{"idle queues", 10, 100, 2000},
	} {
		for _, engine := range tu.Engines {
			b.Run(c.name+"/"+string(engine), func(b *testing.B) {
				u := tu.DatabaseURL(b, engine)
				db, err := sqlstore.Open(context.Background(), u, sqlstore.Options{MaxConns: 8})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				now := wps.At(tu.NewClock().Now())
				for i := range c.orgs {
					due(b, db, org(b, db, fmt.Sprint("O", i)), now, c.due, "https://a.example.com/", "https://b.example.com/", "https://c.example.com/")
				}
				for i := range c.idle {
					due(b, db, org(b, db, fmt.Sprint("I", i)), wps.At(now.Add(time.Hour)), 2, fmt.Sprintf("https://r%d.example.com/", i))
				}
				if engine == sqlstore.Postgres { // the statistics autovacuum would have gathered
					raw, err := sql.Open("pgx", u)
					if err == nil {
						_, err = raw.Exec(`ANALYZE`)
						raw.Close()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				undo := errors.New("undo")
				for b.Loop() {
					list, _, err := claimOrUndo(db, now, 8, 2, undo)
					if !errors.Is(err, undo) || len(list) != 8 {
						b.Fatal(len(list), err)
					}
				}
			})
		}
	}
}
