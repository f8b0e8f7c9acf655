package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/webhook"
)

// gauge is a receiver that counts the requests it holds and has answered.
// It answers after hold, or when release closes if hold is 0.
type gauge struct {
	srv      *httptest.Server
	mu       sync.Mutex
	inFlight int
	most     int // the most requests held at once
	answered int
	arrived  chan struct{} // told of each request, once answered
}

func newGauge(t *testing.T, hold time.Duration, release <-chan struct{}) *gauge {
	g := &gauge{arrived: make(chan struct{}, 1000)}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.inFlight++
		g.most = max(g.most, g.inFlight)
		g.mu.Unlock()
		var wait <-chan time.Time
		if hold > 0 {
			wait = time.After(hold)
		}
		select {
		case <-wait:
		case <-release:
		case <-r.Context().Done(): // the worker stopped
		}
		g.mu.Lock()
		g.inFlight--
		if r.Context().Err() == nil {
			g.answered++
		}
		g.mu.Unlock()
		g.arrived <- struct{}{}
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gauge) counts() (answered, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.answered, g.most
}

// measurements subscribes the org of key to measurement.created at each
// URL, then creates n measurements: n deliveries to each URL.
func measurements(t *testing.T, env *tu.Env, key string, n int, urls ...string) {
	t.Helper()
	for _, u := range urls {
		env.Call("POST", "/v1/webhooks", key, map[string]any{"url": u, "events": []string{"measurement.created"}}, 201)
	}
	proc := env.Call("POST", "/v1/process", key, map[string]any{"name": "Plain", "steps": []map[string]any{{"label": "One"}}}, 201).JSON()["id"]
	for range n {
		env.Call("POST", "/v1/measurements/simplified", key, map[string]any{"processUuid": proc}, 201)
	}
}

// waitFor receives n times from c, failing after a bound that only a
// stalled worker reaches.
func waitFor(t *testing.T, c <-chan struct{}, n int, what string) {
	t.Helper()
	limit := time.After(60 * time.Second)
	for i := range n {
		select {
		case <-c:
		case <-limit:
			t.Fatalf("%s: %d of %d after 60 s", what, i, n)
		}
	}
}

// Org A floods a receiver that takes 250 ms to answer with 120 events;
// org B's one delivery, to its own receiver, arrives before A's backlog
// is half done (a queue served oldest first delivers it after all 120),
// and A's receiver never holds more than PerDestination requests.
func TestSlowReceiverDoesNotStarveAnotherOrg(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		const n, hold = 120, 250 * time.Millisecond
		slow, fast := newGauge(t, hold, nil), newGauge(t, 0, closed())
		measurements(t, env, env.AdminKey, n, slow.srv.URL)
		measurements(t, env, env.NewOrg("B"), 1, fast.srv.URL)

		w := webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: true, Lease: time.Hour})
		start := time.Now()
		w.Start(context.Background())
		defer w.Stop()
		waitFor(t, fast.arrived, 1, "org B's delivery")
		waited := time.Since(start)
		answered, most := slow.counts()
		t.Logf("%s: org B's delivery arrived %d ms after the worker started; org A's receiver (%d ms an answer) had answered %d of %d, holding at most %d at once",
			engine, waited.Milliseconds(), hold.Milliseconds(), answered, n, most)
		if answered >= n/2 {
			t.Fatalf("org B's delivery waited for %d of org A's %d", answered, n)
		}
		waitFor(t, slow.arrived, 6, "org A's deliveries")
		if _, most := slow.counts(); most > 2 {
			t.Fatalf("org A's receiver held %d requests at once, PerDestination is 2", most)
		}
	})
}

// A receiver that does not answer holds PerDestination of the worker's
// places; the deliveries to another receiver of the same org go on around
// it, each place claimed again as its attempt ends, and those held go
// out once it answers.
func TestHungReceiverDoesNotHoldOthers(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		release := make(chan struct{})
		hung, fast := newGauge(t, 0, release), newGauge(t, 0, closed())
		const n = 12
		measurements(t, env, env.AdminKey, n, hung.srv.URL, fast.srv.URL)

		w := webhook.New(env.DB, webhook.Config{Now: env.Clock.Now, AllowPrivate: true, Lease: time.Hour, Concurrency: 4, PerDestination: 2})
		w.Start(context.Background())
		defer w.Stop()
		waitFor(t, fast.arrived, n, "the other receiver's deliveries")
		hung.mu.Lock()
		held, answered := hung.inFlight, hung.answered
		hung.mu.Unlock()
		if answered != 0 || held > 2 {
			t.Fatalf("the hung receiver answered %d and holds %d, want 0 and at most 2", answered, held)
		}
		close(release)
		waitFor(t, hung.arrived, n, "the hung receiver's deliveries")
		if _, most := hung.counts(); most > 2 {
			t.Fatalf("the hung receiver held %d requests at once", most)
		}
	})
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
