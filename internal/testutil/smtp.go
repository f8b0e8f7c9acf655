package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is a message an SMTPServer accepted.
type Mail struct {
	From    string
	To      []string
	Header  mail.Header
	Subject string
	Body    string
	Raw     string
	TLS     bool // it came over TLS (STARTTLS or implicit)
}

// Link returns the first URL in the body that starts with prefix, or "".
func (m Mail) Link(prefix string) string {
	return regexp.MustCompile(regexp.QuoteMeta(prefix) + `\S*`).FindString(m.Body)
}

// SMTPServer is a real SMTP server (github.com/emersion/go-smtp) on a
// loopback port, for tests: it keeps every message it accepts, and can be
// told to refuse them for a while (a temporary 451, as a busy server does).
type SMTPServer struct {
	Addr     string
	implicit bool
	mu       sync.Mutex
	mails    []Mail
	refuse   bool
	refused  int
	reject   map[string]bool // recipients refused for good (550)
	user     string          // when set, a client must authenticate (AUTH PLAIN) as user with pass
	pass     string
}

// Reject makes the server refuse rcpt for good (550 no such mailbox).
func (s *SMTPServer) Reject(rcpt string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reject == nil {
		s.reject = map[string]bool{}
	}
	s.reject[strings.ToLower(rcpt)] = true
}

// RequireAuth makes the server accept mail only from a client that
// authenticated (AUTH PLAIN) as user with pass.
func (s *SMTPServer) RequireAuth(user, pass string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.pass = user, pass
}

// NewSMTP starts an SMTPServer without TLS, stopped when the test ends.
func NewSMTP(t testing.TB) *SMTPServer {
	t.Helper()
	return newSMTP(t, nil, false)
}

// NewSMTPTLS starts an SMTPServer with a certificate of its own for
// 127.0.0.1: offering STARTTLS, or (implicit) speaking TLS from the first
// byte. clientTLS trusts that certificate.
func NewSMTPTLS(t testing.TB, implicit bool) (s *SMTPServer, clientTLS *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return newSMTP(t, server, implicit), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

func newSMTP(t testing.TB, tlsConfig *tls.Config, implicit bool) *SMTPServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPServer{Addr: ln.Addr().String(), implicit: implicit}
	srv := smtp.NewServer(smtpBackend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = tlsConfig
	if implicit {
		ln = tls.NewListener(ln, tlsConfig)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// URL is the server's WPS_SMTP_URL.
func (s *SMTPServer) URL() string {
	if s.implicit {
		return "smtps://" + s.Addr
	}
	return "smtp://" + s.Addr
}

// Refuse makes the server refuse (451) every message until Refuse(false).
func (s *SMTPServer) Refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// Refused counts the messages refused.
func (s *SMTPServer) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Mails lists the messages accepted, to rcpt when not "".
func (s *SMTPServer) Mails(rcpt string) []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Mail
	for _, m := range s.mails {
		for _, to := range m.To {
			if rcpt == "" || strings.EqualFold(to, rcpt) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

type smtpBackend struct{ s *SMTPServer }

func (b smtpBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{s: b.s, c: c}, nil
}

type smtpSession struct {
	s      *SMTPServer
	c      *smtp.Conn
	authed string
	from   string
	to     []string
}

func (x *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		x.s.mu.Lock()
		defer x.s.mu.Unlock()
		if x.s.user == "" || user != x.s.user || pass != x.s.pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		x.authed = user
		return nil
	}), nil
}

func (x *smtpSession) Reset()        { x.from, x.to = "", nil }
func (x *smtpSession) Logout() error { return nil }
func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	x.s.mu.Lock()
	need := x.s.user != "" && x.authed == ""
	x.s.mu.Unlock()
	if need {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	x.from = from
	return nil
}

func (x *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.refuse {
		x.s.refused++
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	if x.s.reject[strings.ToLower(to)] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *smtpSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		return errors.New("not a message")
	}
	body, _ := io.ReadAll(msg.Body)
	dec := new(mimeWordDecoder)
	m := Mail{From: x.from, To: x.to, Header: msg.Header, Subject: dec.decode(msg.Header.Get("Subject")),
		Body: decodeBody(msg.Header.Get("Content-Transfer-Encoding"), string(body)), Raw: string(raw)}
	_, m.TLS = x.c.TLSConnectionState()
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.s.mails = append(x.s.mails, m)
	return nil
}

type mimeWordDecoder struct{ mime.WordDecoder }

func (d *mimeWordDecoder) decode(s string) string {
	out, err := d.DecodeHeader(s)
	if err != nil {
		return s
	}
	return out
}

// decodeBody undoes a body's transfer encoding (go-mail writes
// quoted-printable by default).
func decodeBody(encoding, body string) string {
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body)))
		if err == nil {
			return string(b)
		}
	case "base64":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
		if err == nil {
			return string(b)
		}
	}
	return body
}
