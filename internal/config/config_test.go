package config

import (
	"io"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	env := map[string]string{"WPS_ADDR": "0.0.0.0:9000", "WPS_RATE_LIMIT": "5", "WPS_SHUTDOWN_TIMEOUT": "3s"}
	c, err := Load(func(k string) string { return env[k] }, []string{"--rate-limit", "7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Load(func(k string) string {
		return map[string]string{"WPS_API_CALL_HEADERS": `{"fx.example.com": {"Authorization": "Bearer k"}}`}[k]
	}, nil, io.Discard)
	if err != nil || h.APICallHeaders["fx.example.com"]["Authorization"] != "Bearer k" {
		t.Fatalf("headers: %v %v", h.APICallHeaders, err)
	}
	if l, err := Load(func(k string) string { return map[string]string{"WPS_IDEMPOTENCY_LEASE": "45s"}[k] }, nil, io.Discard); err != nil || l.IdempotencyLease != 45*time.Second || c.IdempotencyLease != 30*time.Second {
		t.Fatalf("idempotency lease: %v, default %v (%v)", l.IdempotencyLease, c.IdempotencyLease, err)
	}
	if o, err := Load(func(k string) string {
		return map[string]string{"WPS_CORS_ORIGINS": " https://app.example.com, http://localhost:3000 ,"}[k]
	}, nil, io.Discard); err != nil || len(o.CORSOrigins) != 2 || o.CORSOrigins[1] != "http://localhost:3000" || c.CORSOrigins != nil {
		t.Fatalf("cors origins: %q, default %q (%v)", o.CORSOrigins, c.CORSOrigins, err)
	}
	if u, err := Load(func(k string) string { return map[string]string{"WPS_PUBLIC_URL": "https://wps.example.com"}[k] }, nil, io.Discard); err != nil || u.PublicURL != "https://wps.example.com" || c.PublicURL != "" {
		t.Fatalf("public url: %q, default %q (%v)", u.PublicURL, c.PublicURL, err)
	}
	if d, err := Load(func(k string) string { return map[string]string{"WPS_CONTRACT_RENDER_TIMEOUT": "3s"}[k] }, []string{"--contract-max-chars", "5000"}, io.Discard); err != nil ||
		d.ContractChars != 5000 || d.ContractTimeout != 3*time.Second || c.ContractChars != 200000 || c.ContractBytes != 4<<20 ||
		c.ContractTimeout != 10*time.Second || c.Rerenders != 6 {
		t.Fatalf("contract limits: %+v, defaults %+v (%v)", d, c, err)
	}
	if c.Addr != "0.0.0.0:9000" || c.RateLimit != 7 || c.ShutdownTimeout != 3*time.Second || c.DatabaseURL != "" || c.MaxBodyBytes != 1<<20 {
		t.Fatalf("config: %+v", c)
	}
	if c.ImportJobs != 2 || c.ImportJobsPerOrg != 1 || c.WebhookWorkers != 8 || c.WebhookPerDest != 2 {
		t.Fatalf("fairness defaults: %+v", c)
	}
	if f, err := Load(func(k string) string { return map[string]string{"WPS_WEBHOOK_PER_DESTINATION": "3"}[k] },
		[]string{"--webhook-concurrency", "16", "--import-jobs-per-org", "2"}, io.Discard); err != nil ||
		f.WebhookWorkers != 16 || f.WebhookPerDest != 3 || f.ImportJobsPerOrg != 2 {
		t.Fatalf("fairness settings: %+v (%v)", f, err)
	}
	if m, err := Load(func(k string) string {
		return map[string]string{"WPS_SMTP_URL": "smtp://u:p@mail.example.com:587", "WPS_SMTP_FROM": "wps@example.com"}[k]
	}, []string{"--public-url", "https://wps.example.com"}, io.Discard); err != nil || m.SMTPURL != "smtp://u:p@mail.example.com:587" ||
		m.SMTPFrom != "wps@example.com" || m.PublicURL != "https://wps.example.com" || c.SMTPURL != "" {
		t.Fatalf("smtp settings: %+v (%v)", m, err)
	}
	for _, bad := range []map[string]string{
		{"WPS_SMTP_URL": "http://mail.example.com", "WPS_SMTP_FROM": "a@b.c", "WPS_PUBLIC_URL": "https://w.example.com"},
		{"WPS_SMTP_URL": "smtp://mail.example.com:25", "WPS_PUBLIC_URL": "https://w.example.com"},
		{"WPS_SMTP_URL": "smtp://mail.example.com:25", "WPS_SMTP_FROM": "a@b.c"},
		{"WPS_WEBHOOK_CONCURRENCY": "0"},
		{"WPS_WEBHOOK_PER_DESTINATION": "-1"},
		{"WPS_IMPORT_JOBS_PER_ORG": "0"},
		{"WPS_RATE_LIMIT": "fast"},
		{"WPS_RATE_LIMIT": "-1"},
		{"WPS_LOG_FORMAT": "xml"},
		{"WPS_SHUTDOWN_TIMEOUT": "soon"},
		{"WPS_API_CALL_HEADERS": "Authorization: x"},
		{"WPS_IDEMPOTENCY_LEASE": "soon"},
		{"WPS_IDEMPOTENCY_LEASE": "0s"},
		{"WPS_CORS_ORIGINS": "*, https://app.example.com"},
		{"WPS_CORS_ORIGINS": "https://app.example.com/"},
		{"WPS_CORS_ORIGINS": "app.example.com"},
		{"WPS_CORS_ORIGINS": "https://App.example.com"},
		{"WPS_PUBLIC_URL": "wps.example.com"},
		{"WPS_PUBLIC_URL": "ftp://wps.example.com"},
		{"WPS_PUBLIC_URL": "https://wps.example.com/?x=1"},
		{"WPS_CONTRACT_MAX_CHARS": "999"},
		{"WPS_CONTRACT_MAX_BYTES": "1000"},
		{"WPS_CONTRACT_RENDER_TIMEOUT": "0s"},
		{"WPS_CONTRACT_RERENDERS_PER_MINUTE": "0"},
	} {
		if _, err := Load(func(k string) string { return bad[k] }, nil, io.Discard); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}
