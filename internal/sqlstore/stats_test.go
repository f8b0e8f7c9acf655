package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

// Every committed write is counted once by ObserveCommit: on SQLite in the
// batch its group commit made durable (a failed one in none), on
// PostgreSQL alone. Stats and Backlog answer on both engines.
func TestObserveCommitStatsBacklog(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		var mu sync.Mutex
		commits, written := 0, 0
		db, err := sqlstore.Open(context.Background(), tu.DatabaseURL(t, engine), sqlstore.Options{ObserveCommit: func(batch int, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			commits++
			written += batch
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mu.Lock()
		commits, written = 0, 0 // migrations and setup
		mu.Unlock()
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				_ = db.Write(context.Background(), func(tx wps.Tx) error {
					if i%10 == 0 {
						return wps.Errorf(wps.CodeConflict, "refused")
					}
					return nil
				})
			})
		}
		wg.Wait()
		mu.Lock()
		if written != 36 || commits < 1 || commits > 36 {
			t.Errorf("%d commits made %d writes durable, want 36", commits, written)
		}
		mu.Unlock()

		st := db.Stats()
		if st.Engine != engine || st.MaxOpen < 1 || st.InUse+st.Idle > st.MaxOpen || st.WriteQueue != 0 {
			t.Errorf("stats: %+v", st)
		}
		b, err := db.Backlog(context.Background(), time.Now())
		if err != nil || b.PendingDeliveries != 0 || !b.OldestDue.IsZero() || b.Overdue != 0 || b.Occurrences != 0 || b.Escalations != 0 {
			t.Errorf("backlog of an empty database: %+v %v", b, err)
		}
	})
}
