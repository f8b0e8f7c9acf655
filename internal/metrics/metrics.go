// Package metrics holds wps's Prometheus metrics. Each server has its own
// registry (never the global default), so tests run servers side by side.
// The packages that do the work know nothing of Prometheus: each takes a
// function to call (httpapi's ObserveRequest, sqlstore's ObserveCommit,
// webhook's OnAttempt, schedule's OnRun), and cmd/wps passes this
// package's methods; what lives in the database (the outbox's backlog, the
// scheduler's lag) and the connection pools are read when scraped
// (WatchStore). docs/operations.md lists every metric.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"wps/internal/sqlstore"
)

// Metrics is one server's metrics and their registry.
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.HistogramVec
	batch     prometheus.Histogram
	commit    prometheus.Histogram
	attempts  *prometheus.CounterVec
	mails     *prometheus.CounterVec
	runs      *prometheus.HistogramVec
	lastRun   prometheus.Gauge
	scrapeTTL time.Duration
}

// latency buckets, in seconds: 0.5 ms to 10 s.
var latency = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New makes the metrics in a registry of their own, with the Go runtime's
// and the process's.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), scrapeTTL: 5 * time.Second}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wps_http_request_duration_seconds",
		Help:    "Requests by route (method and pattern) and status, and how long each took to answer; _count is the number of requests.",
		Buckets: latency}, []string{"route", "status"})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wps_store_commit_batch_size",
		Help:    "Write transactions each commit made durable: SQLite's group commit (up to 128); 1 on PostgreSQL.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}})
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "wps_store_commit_duration_seconds",
		Help:    "Time of a COMMIT: SQLite's (its fsync), or PostgreSQL's round trip carrying it.",
		Buckets: latency})
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wps_webhook_delivery_attempts_total",
		Help: "Webhook delivery attempts by outcome: succeeded, retry, given_up, refused (address guard), interrupted."}, []string{"outcome"})
	m.mails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wps_mail_attempts_total",
		Help: "Attempts to send a mail by outcome: sent, retry, failed (refused for good, out of time, or the user deactivated), interrupted."}, []string{"outcome"})
	m.runs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "wps_scheduler_run_duration_seconds",
		Help:    "Runs of the scheduler's loop (overdue steps, recurrences, sweeps) by result (ok, error), and how long each took.",
		Buckets: latency}, []string{"result"})
	m.lastRun = prometheus.NewGauge(prometheus.GaugeOpts{Name: "wps_scheduler_last_run_timestamp_seconds",
		Help: "When the scheduler's loop last finished a run (Unix seconds); 0 before the first or with WPS_BACKGROUND=false."})
	m.reg.MustRegister(m.requests, m.batch, m.commit, m.attempts, m.mails, m.runs, m.lastRun,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the metrics are registered (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus's text format. A scrape whose
// database read fails still answers the rest.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Request records one answered request (httpapi.Options.ObserveRequest).
func (m *Metrics) Request(route string, status int, took time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Observe(took.Seconds())
}

// Commit records one commit (sqlstore.Options.ObserveCommit).
func (m *Metrics) Commit(batch int, took time.Duration) {
	m.batch.Observe(float64(batch))
	m.commit.Observe(took.Seconds())
}

// Attempt records a webhook delivery attempt's outcome (webhook.Config.OnAttempt).
func (m *Metrics) Attempt(outcome string) { m.attempts.WithLabelValues(outcome).Inc() }

// MailAttempt records a mail's attempt outcome (notify.Config.OnAttempt).
func (m *Metrics) MailAttempt(outcome string) { m.mails.WithLabelValues(outcome).Inc() }

// SchedulerRun records a run of the scheduler's loop (schedule.Config.OnRun).
func (m *Metrics) SchedulerRun(took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.runs.WithLabelValues(result).Observe(took.Seconds())
	m.lastRun.SetToCurrentTime()
}

// Store is what WatchStore reads when scraped.
type Store interface {
	Stats() sqlstore.Stats
	Backlog(ctx context.Context, now time.Time) (sqlstore.Backlog, error)
}

// WatchStore reads the store's connection pool and backlog at each scrape:
// the outbox (pending deliveries, how long the oldest due one has waited)
// and the scheduler's lag (how long the oldest overdue step has waited for
// its step.overdue, the oldest due occurrence for its opening). now is the
// clock the service runs on.
//
// The ledger's integration lag (wps_ledger_lag_seconds: how long the
// oldest action not yet anchored has waited) belongs here too when the
// ledger work lands: a field of sqlstore.Backlog read in the same scrape,
// and one more gauge in storeCollector.
func (m *Metrics) WatchStore(db Store, now func() time.Time) {
	m.reg.MustRegister(&storeCollector{db: db, now: now, ttl: m.scrapeTTL})
}

// storeCollector reads the store when scraped.
type storeCollector struct {
	db  Store
	now func() time.Time
	ttl time.Duration
}

var (
	connsDesc = prometheus.NewDesc("wps_store_connections", "Database connections by state (in_use, idle): PostgreSQL's pool, or SQLite's reader connections.",
		[]string{"state"}, nil)
	connsMaxDesc   = prometheus.NewDesc("wps_store_connections_max", "The most database connections the pool holds.", nil, nil)
	waitsDesc      = prometheus.NewDesc("wps_store_connection_waits_total", "Reads or writes that waited for a free connection.", nil, nil)
	waitedDesc     = prometheus.NewDesc("wps_store_connection_wait_seconds_total", "Time spent waiting for a free connection.", nil, nil)
	writeQueueDesc = prometheus.NewDesc("wps_store_write_queue", "Writes waiting for SQLite's writer (0 on PostgreSQL).", nil, nil)
	writeStmtsDesc = prometheus.NewDesc("wps_store_write_statements_total",
		"Statements write transactions sent to the database: on SQLite with the group commit's BEGIN, SAVEPOINT, RELEASE and COMMIT; on PostgreSQL each of a pipeline's.", nil, nil)
	pendingDesc = prometheus.NewDesc("wps_outbox_pending_deliveries", "Webhook deliveries not yet delivered, given up or cancelled.", nil, nil)
	oldestDesc  = prometheus.NewDesc("wps_outbox_oldest_due_seconds", "How long the longest-waiting due delivery has been due (0 when none is).", nil, nil)
	lagDesc     = prometheus.NewDesc("wps_scheduler_lag_seconds",
		"How long the scheduler's oldest due work has waited: overdue (a step past its deadline without its step.overdue), escalation (a step's escalation due without its step.escalated), occurrence (a recurring measurement not yet opened); 0 when none.",
		[]string{"work"}, nil)
	backlogDesc = prometheus.NewDesc("wps_scheduler_backlog", "Due work the scheduler has not done yet, by kind (overdue, escalation, occurrence).", []string{"work"}, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{connsDesc, connsMaxDesc, waitsDesc, waitedDesc, writeQueueDesc, writeStmtsDesc, pendingDesc, oldestDesc, lagDesc, backlogDesc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.db.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(connsDesc, float64(st.InUse), "in_use")
	gauge(connsDesc, float64(st.Idle), "idle")
	gauge(connsMaxDesc, float64(st.MaxOpen))
	ch <- prometheus.MustNewConstMetric(waitsDesc, prometheus.CounterValue, float64(st.Waits))
	ch <- prometheus.MustNewConstMetric(waitedDesc, prometheus.CounterValue, st.WaitTime.Seconds())
	gauge(writeQueueDesc, float64(st.WriteQueue))
	ch <- prometheus.MustNewConstMetric(writeStmtsDesc, prometheus.CounterValue, float64(st.WriteStatements))

	ctx, cancel := context.WithTimeout(context.Background(), c.ttl)
	defer cancel()
	now := c.now()
	b, err := c.db.Backlog(ctx, now)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	since := func(t time.Time) float64 {
		if t.IsZero() || !t.Before(now) {
			return 0
		}
		return now.Sub(t).Seconds()
	}
	gauge(pendingDesc, float64(b.PendingDeliveries))
	gauge(oldestDesc, since(b.OldestDue))
	gauge(lagDesc, since(b.OldestOverdue), "overdue")
	gauge(lagDesc, since(b.OldestOccurrence), "occurrence")
	gauge(lagDesc, since(b.OldestEscalation), "escalation")
	gauge(backlogDesc, float64(b.Overdue), "overdue")
	gauge(backlogDesc, float64(b.Escalations), "escalation")
	gauge(backlogDesc, float64(b.Occurrences), "occurrence")
}
