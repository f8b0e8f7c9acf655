// Package outbound builds the HTTP client wps uses to call URLs that users
// configure (webhooks, apiCalls): a timeout on every phase, no redirects
// followed, and a dialer that refuses loopback, private and link-local
// addresses after name resolution, so that a DNS name pointing inside the
// network is refused as well as a literal address.
package outbound

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// Client returns an HTTP client with timeout for the whole exchange.
// allowPrivate lifts the address guard (tests, or an operator's explicit
// choice).
func Client(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = ssrf.New(ssrf.WithAnyPort()).Safe
	}
	transport := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
		TLSHandshakeTimeout: timeout, ResponseHeaderTimeout: timeout}
	return &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// PrivateHost reports a URL whose host is a literal loopback, private,
// link-local or unspecified address, or localhost: refused when a URL is
// saved, before any name is resolved. Client's dialer refuses the rest.
func PrivateHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified())
}
