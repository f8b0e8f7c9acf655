package apicall

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wps/internal/outbound"
	"wps/internal/wps"
)

func TestExtract(t *testing.T) {
	for _, c := range []struct{ body, path, want, err string }{
		{`{"value": 1.50}`, "", "1.50", ""},
		{`"abc"`, "", `"abc"`, ""},
		{`{"other": 1}`, "", "", ""},
		{`{"data": {"rates": [{"usd": 5}]}}`, "data.rates.0.usd", "5", ""},
		{`{"data": null}`, "data", "", ""},
		{`{"data": {}}`, "data.rate", "", "has no"},
		{`[1]`, "3", "", "has no"},
		{`<html>`, "", "", "not JSON"},
	} {
		got, err := Extract([]byte(c.body), c.path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s at %q: error %v, want %q", c.body, c.path, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s at %q: %s, %v; want %s", c.body, c.path, got, err, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	c := New(Config{Hosts: wps.SplitList(" rates.example.com, *.corp.example ,")})
	for url, want := range map[string]string{
		"https://rates.example.com/x":       "",
		"https://RATES.example.com/x":       "",
		"https://a.b.corp.example/x":        "",
		"https://corp.example/x":            "allow-list",
		"https://evil-corp.example/x":       "allow-list",
		"ftp://rates.example.com/x":         "http or https",
		"https://other.example.com/x":       "allow-list",
		"http://10.0.0.1/x":                 "allow-list",
		"rates.example.com/no-scheme/x":     "http or https",
		"https://rates.example.com:443/x":   "",
		"https://rates.example.com:70000/x": "http or https",
	} {
		err := c.Check(url)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", url, err, want)
		}
	}
	if err := New(Config{}).Check("https://rates.example.com"); err == nil || !strings.Contains(err.Error(), "off") {
		t.Errorf("no hosts: %v", err)
	}
	// An operator who lists a private host still needs AllowPrivate, in
	// whatever spelling the URL names it.
	private := New(Config{Hosts: []string{"127.0.0.1", "localhost", "localhost.", "127.1", "2130706433", "0x7f000001", "017700000001"}})
	for _, url := range []string{"http://127.0.0.1:9/x", "http://localhost/x", "http://LOCALHOST/x", "http://localhost./x", "http://127.1/x",
		"http://2130706433/x", "http://0x7f000001/x", "http://017700000001/x"} {
		if err := private.Check(url); err == nil || !strings.Contains(err.Error(), "private") {
			t.Errorf("%s: %v", url, err)
		}
	}
}

// The dialer refuses private addresses after resolution, whatever the URL says.
func TestClientRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	if _, err := outbound.Client(time.Second, false).Get(srv.URL); err == nil || !strings.Contains(err.Error(), "prohibited") {
		t.Fatalf("loopback dialled: %v", err)
	}
	res, err := outbound.Client(time.Second, true).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}

// The operator's headers for a host go with each call to it, and only to it.
func TestCallSendsHostHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("X-Other") != "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"value": 42}`))
	}))
	defer srv.Close()
	c := New(Config{Hosts: []string{"127.0.0.1"}, AllowPrivate: true, Headers: map[string]map[string]string{
		"127.0.0.1": {"Authorization": "Bearer k"}, "*.example.com": {"X-Other": "no"}}})
	got, err := c.Call(context.Background(), wps.APIRequest{Method: "POST", URL: srv.URL + "/x", Values: map[string]any{}})
	if err != nil || string(got) != "42" {
		t.Fatalf("%s, %v", got, err)
	}
}

// TestFailureSaysNoAddress: a failed call's error says what happened in
// words, never the address a name resolved to nor the resolver's.
func TestFailureSaysNoAddress(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	for _, c := range []struct {
		cfg  Config
		url  string
		want string
	}{
		{Config{Hosts: []string{"wps-test.invalid"}, AllowPrivate: true, Timeout: 2 * time.Second}, "http://wps-test.invalid/rate", "does not resolve"},
		{Config{Hosts: []string{"127.0.0.1"}, AllowPrivate: true, Timeout: 2 * time.Second}, closedURL + "/rate", "refused"},
	} {
		_, err := New(c.cfg).Call(context.Background(), wps.APIRequest{Method: http.MethodGet, URL: c.url})
		if err == nil {
			t.Fatalf("%s: no error", c.url)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "lookup") || strings.Contains(msg, "dial") || strings.Contains(msg, ":53") {
			t.Errorf("%s: %q", c.url, msg)
		}
	}
}
