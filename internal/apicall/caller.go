// Package apicall makes the HTTP calls that fill step parameters
// (a parameter's apiCalls). Only hosts on the operator's allow-list are
// called, through the outbound client: one timeout for the exchange, no
// redirects, no private addresses unless the operator allows them, and a
// bounded answer.
package apicall

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wps/internal/outbound"
	"wps/internal/wps"
)

// Config is the operator's choice of what may be called.
type Config struct {
	Hosts        []string      // allowed hosts: "api.example.com" or "*.example.com"; none: no calls
	AllowPrivate bool          // allow loopback and private addresses
	Timeout      time.Duration // per call (default 5s)
	MaxBytes     int64         // largest answer read (default 1 MiB)
	// Headers are sent to a host (as the allow-list names it) with every
	// call: its credentials stay with the operator, out of process
	// definitions that users can read and export.
	Headers map[string]map[string]string
	// Log gets the cause of a failed call (an address, the resolver's
	// words), which the answer leaves out. Default: slog.Default().
	Log *slog.Logger
}

// Caller implements wps.APICaller.
type Caller struct {
	cfg    Config
	client *http.Client
}

// New returns a Caller for cfg.
func New(cfg Config) *Caller {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	for i, h := range cfg.Hosts {
		cfg.Hosts[i] = strings.ToLower(strings.TrimSpace(h))
	}
	headers := map[string]map[string]string{}
	for h, m := range cfg.Headers {
		headers[strings.ToLower(strings.TrimSpace(h))] = m
	}
	cfg.Headers = headers
	return &Caller{cfg: cfg, client: outbound.Client(cfg.Timeout, cfg.AllowPrivate)}
}

// Check says why raw may not be called, or nil.
func (c *Caller) Check(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !wps.ValidPort(u.Port()) {
		return fmt.Errorf("must be an absolute http or https URL")
	}
	if !c.allowed(strings.ToLower(u.Hostname())) {
		if len(c.cfg.Hosts) == 0 {
			return fmt.Errorf("API calls are off on this server (its operator sets WPS_API_CALL_HOSTS)")
		}
		return fmt.Errorf("host %q is not in this server's allow-list (WPS_API_CALL_HOSTS)", u.Hostname())
	}
	if !c.cfg.AllowPrivate && outbound.PrivateHost(raw) {
		return fmt.Errorf("must not point to a loopback, private or link-local address")
	}
	return nil
}

func (c *Caller) allowed(host string) bool {
	for _, h := range c.cfg.Hosts {
		if matches(h, host) {
			return true
		}
	}
	return false
}

// matches says whether pattern ("api.example.com" or "*.example.com")
// names host.
func matches(pattern, host string) bool {
	return pattern == host || strings.HasPrefix(pattern, "*.") && strings.HasSuffix(host, pattern[1:])
}

// Call sends req and returns the value its answer holds at req.ResultPath,
// nil when that is null. The error says what went wrong in terms an
// operator can act on; it never holds the answer's body.
func (c *Caller) Call(ctx context.Context, req wps.APIRequest) (json.RawMessage, error) {
	if err := c.Check(req.URL); err != nil {
		return nil, err
	}
	u, _ := url.Parse(req.URL)
	var body io.Reader
	if req.Method == http.MethodGet {
		q := u.Query()
		for k, v := range req.Values {
			for _, s := range queryValues(v) {
				q.Add(k, s)
			}
		}
		u.RawQuery = q.Encode()
	} else {
		b, err := json.Marshal(req.Body())
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for pattern, headers := range c.cfg.Headers {
		if matches(pattern, strings.ToLower(u.Hostname())) {
			for k, v := range headers {
				hr.Header.Set(k, v)
			}
		}
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "wps")
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	res, err := c.client.Do(hr)
	if err != nil {
		c.cfg.Log.WarnContext(ctx, "api call failed", "method", req.Method, "host", u.Host, "err", err)
		return nil, fmt.Errorf("%s %s: %w", req.Method, u.Host, unwrapURLError(err))
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, fmt.Errorf("%s %s answered %d", req.Method, u.Host, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, c.cfg.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", req.Method, u.Host, err)
	}
	if int64(len(b)) > c.cfg.MaxBytes {
		return nil, fmt.Errorf("%s %s answered more than %d bytes", req.Method, u.Host, c.cfg.MaxBytes)
	}
	return Extract(b, req.ResultPath)
}

// Extract returns the value at path (dot-separated object members and
// array indexes) of the JSON answer b. With no path, an object answer
// gives its "value" member and any other answer is the value itself.
func Extract(b []byte, path string) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON")
	}
	if path == "" {
		if m, ok := v.(map[string]any); ok {
			v = m["value"]
		}
	}
	for part := range strings.SplitSeq(path, ".") {
		if path == "" {
			break
		}
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return nil, fmt.Errorf("the answer has no %q", path)
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("the answer has no %q", path)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("the answer has no %q", path)
		}
	}
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// queryValues renders a value as query parameters: a list gives one each.
func queryValues(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []string{x}
	case []string:
		return x
	case json.Number:
		return []string{x.String()}
	case bool:
		return []string{strconv.FormatBool(x)}
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}

func unwrapURLError(err error) error {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return errors.New("no answer within the timeout")
	case outbound.Refused(err):
		return errors.New("its host resolves to a loopback, private or link-local address")
	case errors.As(err, &dns):
		return errors.New("its host name does not resolve") // not the resolver's address, nor the name server's words
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("the connection was refused")
	case errors.As(err, &op):
		return errors.New("could not connect") // the resolved address stays in the log, not in the answer
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return errors.New("its TLS certificate is not valid for it")
	}
	return errors.New("the exchange failed")
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
