package main

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// With WPS_SMTP_URL the server's background worker mails: the first
// admin's invitation reaches them with a link under WPS_PUBLIC_URL, the
// same invitation the server prints, and the metrics count it.
func TestServeMails(t *testing.T) {
	srv := tu.NewSMTP(t)
	env := map[string]string{"WPS_DATABASE_URL": tu.DatabaseURL(t, sqlstore.SQLite), "WPS_SMTP_URL": srv.URL(),
		"WPS_SMTP_FROM": "wps@example.com", "WPS_PUBLIC_URL": "https://wps.example.com", "WPS_BOOTSTRAP_ADMIN_EMAIL": "first@example.com",
		"WPS_METRICS_ADDR": "127.0.0.1:0", "WPS_LOG_FORMAT": "json"}
	var log tu.SyncBuffer
	_, out, stop := startLogging(t, env, &log)
	defer stop()
	tu.Await(t, "the first admin's invitation by mail", func() error {
		if len(srv.Mails("first@example.com")) == 0 {
			return errors.New("no mail yet")
		}
		return nil
	})
	m := srv.Mails("first@example.com")[0]
	link := m.Link("https://wps.example.com/invite/")
	_, token, _ := strings.Cut(link, "/invite/")
	if token == "" || !strings.Contains(out.String(), "/invite/"+token) || m.From != "wps@example.com" {
		t.Fatalf("mail %q from %s, printed %q", m.Body, m.From, out.String())
	}
	metricsAddr := regexp.MustCompile(`"msg":"metrics listening","addr":"([^"]+)"`).FindStringSubmatch(log.String())
	if metricsAddr == nil {
		t.Fatalf("no metrics address in the log:\n%s", log.String())
	}
	tu.Await(t, "the mail counted in the metrics", func() error {
		res, err := http.Get("http://" + metricsAddr[1] + "/metrics")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if !strings.Contains(string(b), `wps_mail_attempts_total{outcome="sent"} 1`) {
			return errors.New("not counted yet")
		}
		return nil
	})
}
