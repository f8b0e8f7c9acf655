package outbound

import (
	"net/netip"
	"testing"
)

// Every spelling of a private address is refused when a URL is saved, as a
// resolver would read it; public addresses and names are not.
func TestPrivateHost(t *testing.T) {
	for _, u := range []string{
		"http://localhost/x", "http://LOCALHOST/x", "http://localhost./x", "http://Api.LocalHost/x", "http://a.localhost../x",
		"http://127.0.0.1:9/x", "http://127.0.0.1./x", "http://127.1/x", "http://127.0.1/x", "http://2130706433/x",
		"http://0x7f000001/x", "http://0X7F000001/x", "http://017700000001/x", "http://0x7f.1/x", "http://0177.0.0.01/x",
		"http://0/x", "http://0.0.0.0/x", "http://10.0.0.8/x", "http://167772168/x", "http://172.16.0.1/x", "http://192.168.1.1/x",
		"http://169.254.169.254/latest", "http://100.64.0.1/x", "http://[::1]/x", "http://[0:0:0:0:0:0:0:1]:8080/x",
		"http://[::ffff:127.0.0.1]/x", "http://[::ffff:7f00:1]/x", "http://[fe80::1%25eth0]/x", "http://[fc00::1]/x",
		"http://%6c%6fcalhost/x", "://nope",
		"http://127。0。0。1/x", "http://①②⑦.0.0.1/x", "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/x", "http://１２７.０.０.１/x", "http://LOCALHOST｡/x",
	} {
		if !PrivateHost(u) {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{
		"https://hooks.example.com/x", "http://93.184.216.34/x", "http://1572395042/x", "http://[2606:2800:220:1:248:1893:25c8:1946]/x",
		"http://localhost.example.com/x", "http://0x7f000001.example.com/x", "http://127.0.0.1.nip.io/x", "http://1e100/x",
	} {
		if PrivateHost(u) {
			t.Errorf("%s refused", u)
		}
	}
}

func TestInetAton(t *testing.T) {
	for in, want := range map[string]string{
		"127.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1", "017700000001": "127.0.0.1",
		"10.1.258": "10.1.1.2", "10.65538": "10.1.0.2", "0": "0.0.0.0", "0xff.0377.0.1": "255.255.0.1",
	} {
		got, ok := inetAton(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"256.0.0.1", "1.2.3.4.5", "1..2", "08", "0x", "4294967296", "1.16777216", "example", ""} {
		if got, ok := inetAton(in); ok {
			t.Errorf("%s: %v", in, got)
		}
	}
}
