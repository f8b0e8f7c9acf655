package testutil

import (
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"testing"

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
}

// Link returns the first URL in the body that starts with prefix, or "".
func (m Mail) Link(prefix string) string {
	return regexp.MustCompile(regexp.QuoteMeta(prefix) + `\S*`).FindString(m.Body)
}

// SMTPServer is a real SMTP server (github.com/emersion/go-smtp) on a
// loopback port, for tests: it keeps every message it accepts, and can be
// told to refuse them for a while (a temporary 451, as a busy server does).
type SMTPServer struct {
	Addr    string
	mu      sync.Mutex
	mails   []Mail
	refuse  bool
	refused int
}

// NewSMTP starts an SMTPServer, stopped when the test ends.
func NewSMTP(t testing.TB) *SMTPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPServer{Addr: ln.Addr().String()}
	srv := smtp.NewServer(smtpBackend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// URL is the server's WPS_SMTP_URL.
func (s *SMTPServer) URL() string { return "smtp://" + s.Addr }

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

func (b smtpBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &smtpSession{s: b.s}, nil }

type smtpSession struct {
	s    *SMTPServer
	from string
	to   []string
}

func (x *smtpSession) Reset()        { x.from, x.to = "", nil }
func (x *smtpSession) Logout() error { return nil }
func (x *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
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
