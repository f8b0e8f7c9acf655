package bench

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// answers records when the server answered a write, by measurement.
type answers struct {
	mu   sync.Mutex
	list []answer
}

type answer struct {
	measurementID string
	at            time.Time
}

func (a *answers) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, answer{id, time.Now()})
}

// integrationLag waits until the ledger's leaves hold the actions of each
// measurement answered (actions: how many it has by then), and returns the
// 50th and 99th percentiles, in ms, of the time from the answer to the
// integration of its last action (the leaf's integrated_at, the server's
// clock on this machine): how long after its answer an action has its leaf
// index and proof.
func integrationLag(ctx context.Context, engine, dbURL string, got []answer, actions int) (p50, p99 float64, err error) {
	if len(got) == 0 {
		return 0, 0, nil
	}
	driver, dsn := "pgx", dbURL
	if engine == "sqlite" {
		driver, dsn = "sqlite", "file:"+dbURL+"?_pragma=busy_timeout(10000)&_pragma=query_only(ON)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	at := map[string]int64{} // measurement → integrated_at of its last action
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < len(got); {
		chunk := got[i:min(i+500, len(got))]
		q := `SELECT measurement_id, count(*), max(integrated_at) FROM ledger_leaves WHERE kind IN ('action', 'creation') AND measurement_id IN (` +
			strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + `) GROUP BY measurement_id`
		args := make([]any, len(chunk))
		for j, a := range chunk {
			args[j] = a.measurementID
		}
		if engine != "sqlite" {
			q = rebindPG(q)
		}
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return 0, 0, err
		}
		done := 0
		for rows.Next() {
			var id string
			var n int
			var integrated int64
			if err := rows.Scan(&id, &n, &integrated); err != nil {
				rows.Close()
				return 0, 0, err
			}
			if n >= actions {
				at[id] = integrated
				done++
			}
		}
		rows.Close()
		if done < len(chunk) {
			if time.Now().After(deadline) {
				return 0, 0, errors.New("the ledger did not integrate the actions within 5 s")
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		i += len(chunk)
	}
	lags := make([]float64, 0, len(got))
	for _, a := range got {
		lags = append(lags, float64(at[a.measurementID]-a.at.UnixMilli()))
	}
	sort.Float64s(lags)
	pct := func(p float64) float64 { return max(0, lags[min(len(lags)-1, int(p*float64(len(lags))))]) }
	return pct(0.50), pct(0.99), nil
}

func rebindPG(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
