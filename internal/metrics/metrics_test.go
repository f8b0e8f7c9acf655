package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wps/internal/sqlstore"
)

type fakeStore struct {
	b   sqlstore.Backlog
	err error
}

func (f fakeStore) Stats() sqlstore.Stats {
	return sqlstore.Stats{Engine: sqlstore.SQLite, MaxOpen: 4, InUse: 1, Idle: 3, Waits: 2, WaitTime: time.Second, WriteQueue: 5}
}

func (f fakeStore) Backlog(context.Context, time.Time) (sqlstore.Backlog, error) { return f.b, f.err }

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Lags are measured from the service's clock; work not yet due is no lag.
func TestStoreCollector(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	m := New()
	m.WatchStore(fakeStore{b: sqlstore.Backlog{PendingDeliveries: 7, OldestDue: now.Add(-90 * time.Second),
		Overdue: 2, OldestOverdue: now.Add(-3 * time.Second), Occurrences: 0, Escalations: 4, OldestEscalation: now.Add(-5 * time.Second)}}, func() time.Time { return now })
	m.Request("GET /v1/users/me", 200, 3*time.Millisecond)
	m.Commit(12, time.Millisecond)
	text := scrape(t, m)
	for _, want := range []string{
		"wps_outbox_pending_deliveries 7", "wps_outbox_oldest_due_seconds 90", `wps_scheduler_lag_seconds{work="overdue"} 3`,
		`wps_scheduler_lag_seconds{work="occurrence"} 0`, `wps_scheduler_backlog{work="overdue"} 2`,
		`wps_scheduler_lag_seconds{work="escalation"} 5`, `wps_scheduler_backlog{work="escalation"} 4`, `wps_store_connections{state="in_use"} 1`,
		"wps_store_write_queue 5", "wps_store_connection_wait_seconds_total 1", `wps_http_request_duration_seconds_count{route="GET /v1/users/me",status="200"} 1`,
		"wps_store_commit_batch_size_sum 12",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

// A backlog that cannot be read fails its own series, not the scrape.
func TestStoreCollectorError(t *testing.T) {
	m := New()
	m.WatchStore(fakeStore{err: errors.New("database is down")}, time.Now)
	text := scrape(t, m)
	if !strings.Contains(text, "wps_store_connections_max 4") || strings.Contains(text, "wps_outbox_pending_deliveries ") {
		t.Fatalf("scrape with a failing backlog:\n%s", text)
	}
}
