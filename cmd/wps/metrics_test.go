package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// With WPS_METRICS_ADDR the server serves Prometheus metrics there, and
// only there: requests by route and status, commits, connections, the
// outbox, webhook attempts and the scheduler. Each server has its own
// registry (the two engines' servers run side by side here), and the
// access log names the route, org and user.
func TestMetrics(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		key := "wps_" + strings.Repeat("m", 40)
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
		defer hook.Close()
		var log tu.SyncBuffer
		addr, _, stop := startLogging(t, map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, engine), "WPS_BOOTSTRAP_API_KEY": key,
			"WPS_METRICS_ADDR": "127.0.0.1:0", "WPS_WEBHOOK_ALLOW_PRIVATE": "true", "WPS_LOG_FORMAT": "json"}, &log)
		defer stop()
		metricsAddr := regexp.MustCompile(`"msg":"metrics listening","addr":"([^"]+)"`).FindStringSubmatch(log.String())
		if metricsAddr == nil {
			t.Fatalf("no metrics address in the log:\n%s", log.String())
		}
		call := func(method, path string, body any, want int) {
			t.Helper()
			b, _ := json.Marshal(body)
			req, _ := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != want {
				t.Fatalf("%s %s: %v %v", method, path, res, err)
			}
			res.Body.Close()
		}
		call("GET", "/v1/users/me", nil, 200)
		call("GET", "/v1/users/me", nil, 200)
		call("GET", "/v1/process/nope", nil, 404)
		call("POST", "/v1/webhooks", map[string]any{"url": hook.URL + "/wps"}, 201)
		call("POST", "/v1/process", map[string]any{"name": "Metered", "steps": []map[string]any{{"label": "One"}}}, 201)
		call("POST", "/v1/measurements/simplified", map[string]any{"processLabel": "Metered"}, 201)

		scrape := func() string {
			t.Helper()
			res, err := http.Get("http://" + metricsAddr[1] + "/metrics")
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("scrape: %v %v", res, err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return string(b)
		}
		value := func(text, series string) float64 {
			for _, line := range strings.Split(text, "\n") {
				if rest, ok := strings.CutPrefix(line, series+" "); ok {
					v, _ := strconv.ParseFloat(rest, 64)
					return v
				}
			}
			return -1
		}
		// The worker tries the receiver (503: retried later) and the
		// scheduler runs, within a few seconds (longer on a busy machine).
		var text string
		tu.Await(t, "a webhook attempt retried and a scheduler run", func() error {
			text = scrape()
			retried, ran := value(text, `wps_webhook_delivery_attempts_total{outcome="retry"}`), value(text, "wps_scheduler_last_run_timestamp_seconds")
			if retried >= 1 && ran > 0 {
				return nil
			}
			return fmt.Errorf("retried attempts %v, scheduler's last run %v", retried, ran)
		})
		for series, want := range map[string]func(float64) bool{
			`wps_http_request_duration_seconds_count{route="GET /v1/users/me",status="200"}`:                 func(v float64) bool { return v == 2 },
			`wps_http_request_duration_seconds_count{route="GET /v1/process/{id}",status="404"}`:             func(v float64) bool { return v == 1 },
			`wps_http_request_duration_seconds_count{route="POST /v1/measurements/simplified",status="201"}`: func(v float64) bool { return v == 1 },
			`wps_store_commit_batch_size_count`:                                                              func(v float64) bool { return v >= 3 },
			`wps_store_commit_duration_seconds_count`:                                                        func(v float64) bool { return v >= 3 },
			`wps_store_connections_max`:                                                                      func(v float64) bool { return v > 0 },
			`wps_store_connections{state="idle"}`:                                                            func(v float64) bool { return v >= 0 },
			`wps_store_write_queue`:                                                                          func(v float64) bool { return v >= 0 },
			`wps_store_write_statements_total`:                                                               func(v float64) bool { return v >= 3 },
			`wps_outbox_pending_deliveries`:                                                                  func(v float64) bool { return v == 4 }, // the measurement's 4 events, the first retried
			`wps_outbox_oldest_due_seconds`:                                                                  func(v float64) bool { return v >= 0 },
			`wps_webhook_delivery_attempts_total{outcome="retry"}`:                                           func(v float64) bool { return v >= 1 },
			`wps_scheduler_lag_seconds{work="overdue"}`:                                                      func(v float64) bool { return v == 0 },
			`wps_scheduler_backlog{work="occurrence"}`:                                                       func(v float64) bool { return v == 0 },
			`wps_scheduler_last_run_timestamp_seconds`:                                                       func(v float64) bool { return v > 0 },
			`wps_scheduler_run_duration_seconds_count{result="ok"}`:                                          func(v float64) bool { return v >= 1 },
			`go_goroutines`: func(v float64) bool { return v > 0 },
		} {
			if v := value(text, series); !want(v) {
				t.Errorf("%s = %v", series, v)
			}
		}
		if t.Failed() {
			t.Logf("metrics:\n%s", text)
		}
		// The API does not serve them.
		if res, err := http.Get("http://" + addr + "/metrics"); err != nil || res.StatusCode == 200 {
			t.Fatalf("the API address serves /metrics: %v %v", res, err)
		}
		// The access log names the route, org and user.
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, `"path":"/v1/users/me"`) {
				if !strings.Contains(line, `"route":"GET /v1/users/me"`) || !strings.Contains(line, `"org":"`) || !strings.Contains(line, `"user":"`) {
					t.Fatalf("access log line: %s", line)
				}
				return
			}
		}
		t.Fatal("no access log line for /v1/users/me")
	})
}
