package notify_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/notify"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
	"wps/internal/wps"
)

const publicURL = "https://wps.example.com"

func mailEnv(t *testing.T, engine sqlstore.Engine) *tu.Env {
	return tu.NewEnv(t, engine, tu.Options{Mail: wps.MailConfig{Enabled: true, PublicURL: publicURL}})
}

func worker(t *testing.T, env *tu.Env, db wps.Store, url string) *notify.Worker {
	t.Helper()
	w, err := notify.New(db, notify.Config{URL: url, From: "wps@example.com", Now: env.Clock.Now, BaseDelay: time.Minute,
		Timeout: time.Until(tu.Deadline(t)), Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// mailing is what most tests here start with: a mail-enabled Env on
// engine, an SMTP server, and a worker sending the outbox to it.
func mailing(t *testing.T, engine sqlstore.Engine) (*tu.Env, *tu.SMTPServer, *notify.Worker) {
	t.Helper()
	env := mailEnv(t, engine)
	srv := tu.NewSMTP(t)
	return env, srv, worker(t, env, env.DB, srv.URL())
}

// joined invites email with role and accepts (no password); it returns
// the new user's key and id.
func joined(t *testing.T, env *tu.Env, email, role string) (key, id string) {
	t.Helper()
	tok := env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": email, "roles": []string{role}}, 201).JSON()["token"]
	acc := env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": tok}, 201).JSON()
	return acc["apiKey"].(map[string]any)["key"].(string), acc["user"].(map[string]any)["id"].(string)
}

// drain runs w until nothing more is due.
func drain(t *testing.T, w *notify.Worker) {
	t.Helper()
	for {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func notifications(t *testing.T, env *tu.Env, key, query string) []map[string]any {
	t.Helper()
	var out struct{ Data []map[string]any }
	env.Call("GET", "/v1/notifications"+query, key, nil, 200).Decode(t, &out)
	return out.Data
}

// member invites email and accepts with a password; it returns the key.
func member(t *testing.T, env *tu.Env, email string) (key, id string) {
	t.Helper()
	tok := env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": email, "name": "M " + email}, 201).JSON()["token"].(string)
	acc := env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": tok, "password": "a good long password"}, 201).JSON()
	return acc["apiKey"].(map[string]any)["key"].(string), acc["user"].(map[string]any)["id"].(string)
}

func TestParseURL(t *testing.T) {
	for raw, want := range map[string]notify.Server{
		"smtp://mail.example.com":              {Host: "mail.example.com", Port: 587},
		"smtp://u:p%40ss@mail.example.com:25":  {Host: "mail.example.com", Port: 25, User: "u", Password: "p@ss"},
		"smtps://mail.example.com":             {Host: "mail.example.com", Port: 465, ImplicitTLS: true},
		"smtps://mail.example.com:2465/":       {Host: "mail.example.com", Port: 2465, ImplicitTLS: true},
		"http://mail.example.com":              {},
		"smtp://mail.example.com:99999":        {},
		"smtp://mail.example.com/x":            {},
		"smtp://:25":                           {},
		"smtp://mail.example.com:25?auth=none": {},
	} {
		got, err := notify.ParseURL(raw)
		if (err == nil) != (want.Host != "") || err == nil && got != want {
			t.Errorf("%s: %+v, %v; want %+v", raw, got, err, want)
		}
	}
}

// Invitations are mailed once although two workers (replicas on
// PostgreSQL) claim the same outbox at once, and the link accepts the invite.
func TestInvitesMailedExactlyOnce(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := mailEnv(t, engine)
		srv := tu.NewSMTP(t)
		second := env.DB
		if engine == sqlstore.Postgres {
			second = env.Replica().DB
		}
		workers := []*notify.Worker{worker(t, env, env.DB, srv.URL()), worker(t, env, second, srv.URL())}
		tokens := map[string]string{}
		for i := range 6 {
			email := fmt.Sprintf("new%d@example.com", i)
			tokens[email] = env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": email, "name": "New\r\nBcc: x@evil.example"}, 201).JSON()["token"].(string)
		}
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() { drain(t, w) })
		}
		wg.Wait()
		for email, tok := range tokens {
			got := srv.Mails(email)
			if len(got) != 1 {
				t.Fatalf("%s got %d mails, want 1", email, len(got))
			}
			m := got[0]
			if len(m.To) != 1 || m.From != "wps@example.com" || !strings.Contains(m.Subject, "Acme") || m.Header.Get("Bcc") != "" {
				t.Fatalf("mail: %+v", m)
			}
			if link := m.Link(publicURL + "/invite/"); link != publicURL+"/invite/"+tok {
				t.Fatalf("link %q, want the token %s", link, tok)
			}
			env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": strings.TrimPrefix(m.Link(publicURL+"/invite/"), publicURL+"/invite/"),
				"password": "a good long password"}, 201)
		}
		if n := len(srv.Mails("")); n != 6 {
			t.Fatalf("%d mails, want 6", n)
		}
		list := notifications(t, env, env.AdminKey, "?kind=invite&status=SENT")
		if len(list) != 6 || list[0]["attempts"] != float64(1) || list[0]["sentAt"] == nil || list[0]["to"] == "" {
			t.Fatalf("log: %v", list)
		}
		if n := env.RawInt(`SELECT count(*) FROM notifications WHERE body <> ''`); n != 0 {
			t.Fatalf("%d sent messages keep their body (and its token)", n)
		}
	})
}

// A refusing or unreachable SMTP server does not fail the invite; the
// message waits, is retried after its backoff, and arrives once.
func TestRefusingServerDelaysWithoutLosing(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := mailEnv(t, engine)
		srv := tu.NewSMTP(t)
		// An address nothing listens on: connections are refused.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "smtp://" + ln.Addr().String()
		ln.Close()

		env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "late@example.com"}, 201)
		drain(t, worker(t, env, env.DB, dead))
		list := notifications(t, env, env.AdminKey, "")
		if len(list) != 1 || list[0]["status"] != "PENDING" || list[0]["attempts"] != float64(1) || list[0]["lastError"] == "" {
			t.Fatalf("after a refused connection: %v", list)
		}
		var mu sync.Mutex
		var outcomes []string
		w, err := notify.New(env.DB, notify.Config{URL: srv.URL(), From: "wps@example.com", Now: env.Clock.Now, BaseDelay: time.Minute,
			Timeout: time.Until(tu.Deadline(t)), Lease: time.Hour, OnAttempt: func(o string) { mu.Lock(); outcomes = append(outcomes, o); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		srv.Refuse(true)
		drain(t, w) // not due yet: nothing tried
		if srv.Refused() != 0 {
			t.Fatal("tried before its backoff")
		}
		env.Clock.Advance(2 * time.Minute)
		drain(t, w)
		if srv.Refused() != 1 || len(srv.Mails("")) != 0 {
			t.Fatalf("refused %d, mails %d", srv.Refused(), len(srv.Mails("")))
		}
		if l := notifications(t, env, env.AdminKey, "?status=PENDING"); len(l) != 1 || !strings.Contains(l[0]["lastError"].(string), "451") {
			t.Fatalf("after a 451: %v", l)
		}
		srv.Refuse(false)
		env.Clock.Advance(10 * time.Minute)
		drain(t, w)
		if got := srv.Mails("late@example.com"); len(got) != 1 {
			t.Fatalf("%d mails", len(got))
		}
		if l := notifications(t, env, env.AdminKey, ""); l[0]["status"] != "SENT" || l[0]["attempts"] != float64(3) {
			t.Fatalf("log: %v", l)
		}

		// A permanent refusal (5xx) ends the message at once, with the answer.
		srv.Reject("nobody@example.com")
		env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "nobody@example.com"}, 201)
		drain(t, w)
		if l := notifications(t, env, env.AdminKey, "?status=FAILED"); len(l) != 1 || l[0]["attempts"] != float64(1) ||
			!strings.Contains(l[0]["lastError"].(string), "550") {
			t.Fatalf("after a 550: %v", l)
		}
		if n := env.RawInt(`SELECT count(*) FROM notifications WHERE body <> ''`); n != 0 {
			t.Fatalf("%d ended messages keep their body", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(outcomes) != "[retry sent failed]" {
			t.Fatalf("outcomes %v", outcomes)
		}
	})
}

// Without mail, nothing is written to the outbox.
func TestNothingQueuedWithoutMail(t *testing.T) {
	t.Parallel()
	env := tu.NewEnv(t, sqlstore.SQLite)
	env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "x@example.com"}, 201)
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "x@example.com"}, 202)
	if n := env.RawInt(`SELECT count(*) FROM notifications`); n != 0 {
		t.Fatalf("%d notifications without mail", n)
	}
}

// Members see their own messages; users:manage sees everyone's.
func TestNotificationsListedToTheirOwner(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	key, id := member(t, env, "m@example.com")
	_, other := member(t, env, "o@example.com")
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "m@example.com"}, 202)
	env.Call("POST", "/v1/password-resets", "", map[string]any{"email": "o@example.com"}, 202)
	if l := notifications(t, env, key, ""); len(l) != 1 || l[0]["userId"] != id || l[0]["kind"] != "password.reset" {
		t.Fatalf("own: %v", l)
	}
	tu.Problem(t, env.Do(tu.Request{Method: "GET", Path: "/v1/notifications?userId=" + other, Key: key}), 403, "")
	if l := notifications(t, env, env.AdminKey, "?userId="+other); len(l) != 1 || l[0]["userId"] != other {
		t.Fatalf("admin, filtered: %v", l)
	}
	if l := notifications(t, env, env.AdminKey, ""); len(l) != 4 { // two invites, two resets
		t.Fatalf("admin: %v", l)
	}
}

// STARTTLS is used when the server offers it (smtp://), and smtps:// speaks
// TLS from the start; the certificate is checked.
func TestTLS(t *testing.T) {
	t.Parallel()
	for _, implicit := range []bool{false, true} {
		t.Run(fmt.Sprint("implicit=", implicit), func(t *testing.T) {
			env := mailEnv(t, sqlstore.SQLite)
			srv, clientTLS := tu.NewSMTPTLS(t, implicit)
			env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "tls@example.com"}, 201)
			// A client that does not trust the certificate sends nothing.
			untrusting, err := notify.New(env.DB, notify.Config{URL: srv.URL(), From: "wps@example.com", Now: env.Clock.Now, Timeout: time.Until(tu.Deadline(t))})
			if err != nil {
				t.Fatal(err)
			}
			drain(t, untrusting)
			if l := notifications(t, env, env.AdminKey, ""); l[0]["status"] != "PENDING" || len(srv.Mails("")) != 0 {
				t.Fatalf("sent without a trusted certificate: %v", l)
			}
			env.Clock.Advance(2 * time.Minute)
			w, err := notify.New(env.DB, notify.Config{URL: srv.URL(), From: "wps@example.com", Now: env.Clock.Now, TLS: clientTLS,
				Timeout: time.Until(tu.Deadline(t))})
			if err != nil {
				t.Fatal(err)
			}
			drain(t, w)
			got := srv.Mails("tls@example.com")
			if len(got) != 1 || !got[0].TLS {
				t.Fatalf("mails %+v", got)
			}
		})
	}
}

// The user and password of the URL authenticate. Credentials refused are
// a configuration to fix, not the message's fault: it waits, with the
// server's answer, and goes once they are right.
func TestAuth(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	srv, clientTLS := tu.NewSMTPTLS(t, false)
	srv.RequireAuth("mailer", "s3cret:/@")
	send := func(url string) {
		t.Helper()
		w, err := notify.New(env.DB, notify.Config{URL: url, From: "wps@example.com", Now: env.Clock.Now, TLS: clientTLS, Timeout: time.Until(tu.Deadline(t))})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w)
	}
	env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "one@example.com"}, 201)
	send("smtp://mailer:wrong@" + srv.Addr)
	if l := notifications(t, env, env.AdminKey, ""); l[0]["status"] != "PENDING" || !strings.Contains(l[0]["lastError"].(string), "535") {
		t.Fatalf("bad credentials: %v", l)
	}
	env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "two@example.com"}, 201)
	env.Clock.Advance(2 * time.Minute)
	send("smtp://mailer:s3cret%3A%2F%40@" + srv.Addr)
	if len(srv.Mails("two@example.com")) != 1 || len(srv.Mails("one@example.com")) != 1 {
		t.Fatalf("mails: %v", srv.Mails(""))
	}
}

// Names with line breaks (an org's from the operator command, an inviter's
// from an invitation) add no header to the mail: they are put on one line.
func TestNoHeaderInjectionThroughNames(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	srv := tu.NewSMTP(t)
	key := env.NewOrg("Evil\r\nBcc: org@evil.example")
	tok := env.Call("POST", "/v1/invites", key, map[string]any{"email": "boss@example.com", "name": "Boss\r\nBcc: name@evil.example\r\n\r\nbody",
		"roles": []string{"ADMIN"}}, 201).JSON()["token"]
	boss := env.Call("POST", "/v1/invites/accept", "", map[string]any{"token": tok}, 201).JSON()["apiKey"].(map[string]any)["key"].(string)
	env.Call("POST", "/v1/invites", boss, map[string]any{"email": "new@example.com"}, 201)
	drain(t, worker(t, env, env.DB, srv.URL()))
	got := srv.Mails("new@example.com")
	if len(got) != 1 {
		t.Fatalf("%d mails", len(got))
	}
	m := got[0]
	if len(m.To) != 1 || m.Header.Get("Bcc") != "" || strings.Contains(m.Raw, "\r\nBcc:") || m.Subject != "You are invited to Evil Bcc: org@evil.example on wps" ||
		!strings.Contains(m.Body, "Boss Bcc: name@evil.example body invites you") {
		t.Fatalf("mail: %q", m.Raw)
	}
	if len(srv.Mails("org@evil.example"))+len(srv.Mails("name@evil.example")) != 0 {
		t.Fatal("mailed a Bcc")
	}
}

// An SMTP server that accepts the connection and never answers holds an
// attempt for the worker's timeout only; the message waits for its retry.
func TestSilentServerTimesOut(t *testing.T) {
	t.Parallel()
	env := mailEnv(t, sqlstore.SQLite)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 10) // held open, silent, until the test ends
	defer func() {
		ln.Close()
		for len(conns) > 0 {
			(<-conns).Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	env.Call("POST", "/v1/invites", env.AdminKey, map[string]any{"email": "late@example.com"}, 201)
	w, err := notify.New(env.DB, notify.Config{URL: "smtp://" + ln.Addr().String(), From: "wps@example.com", Now: env.Clock.Now,
		Timeout: 300 * time.Millisecond}) // exercised: the peer never answers
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("attempted %d: %v", n, err)
	}
	if l := notifications(t, env, env.AdminKey, ""); l[0]["status"] != "PENDING" || l[0]["lastError"] == "" || l[0]["attempts"] != float64(1) {
		t.Fatalf("after a silent server: %v", l)
	}
}
