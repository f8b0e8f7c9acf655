// Package outbound builds the HTTP client wps uses to call URLs that users
// configure (webhooks, apiCalls): a timeout on every phase, no redirects
// followed, and a dialer that refuses loopback, private and link-local
// addresses after name resolution, so that a DNS name pointing inside the
// network is refused as well as a literal address.
package outbound

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"
	"golang.org/x/net/idna"
)

// guard is the one address policy, for the dialer and for URLs as they are
// saved: loopback, private, link-local, shared (CGNAT), multicast, reserved
// and documentation ranges are refused, on any port.
var guard = ssrf.New(ssrf.WithAnyPort())

// Client returns an HTTP client with timeout for the whole exchange.
// allowPrivate lifts the address guard (tests, or an operator's explicit
// choice).
func Client(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = guard.Safe
	}
	transport := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
		TLSHandshakeTimeout: timeout, ResponseHeaderTimeout: timeout}
	return &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Refused reports an error of Client's dialer refusing the address a name
// resolved to: trying again cannot help while the name resolves there.
func Refused(err error) bool { return errors.Is(err, ssrf.ErrProhibitedIP) }

// PrivateHost reports a URL that cannot be parsed, or whose host is
// localhost (or a name under .localhost) or a literal address the guard
// refuses: refused when a URL is saved, before any name is resolved.
// Client's dialer refuses the names that resolve to such addresses.
//
// The host is read as a resolver would read it, so that no spelling of an
// address slips past: mapped as an international name is before it is
// looked up (IDNA: full-width and circled characters, ideographic dots), any case, a trailing dot (localhost., 127.0.0.1.),
// IPv6 in any form (::1, ::ffff:127.0.0.1, with a zone), and the forms
// inet_aton accepts, which getaddrinfo resolves without asking DNS: 127.1,
// 2130706433, 0x7f000001, 017700000001, 0x7f.0.0.1.
func PrivateHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	host := u.Hostname()
	if ascii, err := idna.Lookup.ToASCII(host); err == nil {
		host = ascii // as the client will dial it: 127。0。0。1, ①②⑦.0.0.1, ⓛⓞⓒⓐⓛⓗⓞⓢⓣ
	}
	host = strings.TrimRight(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, ok := HostAddr(host)
	return ok && guard.SafeAddr(ip) != nil
}

// HostAddr reads host as a literal address the way a resolver would (see
// PrivateHost); ok is false for a name. An IPv4 address mapped into IPv6 is
// given as IPv4, and a zone is dropped.
func HostAddr(host string) (ip netip.Addr, ok bool) {
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.WithZone("").Unmap(), true
	}
	return inetAton(host)
}

// inetAton parses the IPv4 forms of inet_aton(3): one to four parts, each
// decimal, octal (leading 0) or hexadecimal (0x), the last one filling the
// bytes left (a.b.c.d, a.b.c with a 16-bit c, a.b with a 24-bit b, a).
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v [4]uint64
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		v[i] = n
	}
	last := len(parts) - 1
	for i := range last {
		if v[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	if v[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n := v[last]
	for i := range last {
		n |= v[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
