// Package notify turns outbox rows into mails: it leases due notifications
// (wps.Tx.ClaimNotifications: one worker per message, across replicas),
// sends each through the SMTP server of WPS_SMTP_URL, and records the
// outcome, retrying with exponential backoff and jitter until the message's
// window ends. It words each message (subject and text) in its recipient's
// language and time zone when it sends it (messages.go). It owns no rule
// about who is told what (the domain writes the outbox).
package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/wneessen/go-mail"

	"wps/internal/backoff"
	"wps/internal/wps"
)

// Config tunes a Worker; zero values take defaults.
type Config struct {
	// URL is the SMTP server: smtp://[user:pass@]host:port (STARTTLS when
	// the server offers it) or smtps://[user:pass@]host:port (implicit TLS).
	URL  string
	From string // the From address
	Now  func() time.Time
	// TLS, when set, replaces the TLS settings (tests: a server's own CA).
	TLS         *tls.Config
	Poll        time.Duration // between claims when nothing was due (default 1s)
	Concurrency int           // messages sent at once by one worker (default 4)
	Timeout     time.Duration // one message's connection and dialogue (default 30s)
	Lease       time.Duration // a claim's hold; a crashed worker's claims free after it (default 2m)
	BaseDelay   time.Duration // first retry delay (default 30s)
	MaxDelay    time.Duration // retry delay cap (default 1h)
	Logger      *slog.Logger
	// OnAttempt, when set, is told the outcome of every attempt (metrics):
	// one of the Outcome constants.
	OnAttempt func(outcome string)
}

// The outcomes of an attempt.
const (
	OutcomeSent        = "sent"        // the SMTP server accepted it
	OutcomeRetry       = "retry"       // not sent: due again later
	OutcomeFailed      = "failed"      // refused for good, out of its window, or its user deactivated
	OutcomeInterrupted = "interrupted" // the worker stopped mid-attempt: due again at once
)

// Server is a parsed WPS_SMTP_URL.
type Server struct {
	Host, User, Password string
	Port                 int
	ImplicitTLS          bool
}

// ParseURL reads an SMTP URL (smtp:// or smtps://, host, port, optional
// user and password). The port defaults to 587 for smtp and 465 for smtps.
func ParseURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, fmt.Errorf("SMTP URL: %w", err)
	}
	s := Server{Host: u.Hostname()}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port, s.ImplicitTLS = 465, true
	default:
		return Server{}, fmt.Errorf("SMTP URL: the scheme must be smtp or smtps")
	}
	if s.Host == "" || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return Server{}, fmt.Errorf("SMTP URL: must be smtp://[user:pass@]host:port")
	}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil || s.Port < 1 || s.Port > 65535 {
			return Server{}, fmt.Errorf("SMTP URL: bad port %q", p)
		}
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}

// Worker sends the outbox. Several workers (replicas) may share a database.
type Worker struct {
	store  wps.Store
	cfg    Config
	server Server
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Worker over store; it fails on a bad URL or From.
func New(store wps.Store, cfg Config) (*Worker, error) {
	srv, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if err := mail.NewMsg().From(cfg.From); err != nil {
		return nil, fmt.Errorf("SMTP from %q: %w", cfg.From, err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&cfg.Poll, time.Second)
	set(&cfg.Timeout, 30*time.Second)
	set(&cfg.Lease, 2*time.Minute)
	set(&cfg.BaseDelay, 30*time.Second)
	set(&cfg.MaxDelay, time.Hour)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{store: store, cfg: cfg, server: srv}, nil
}

// Start runs the worker until Stop or ctx ends.
func (w *Worker) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			n, err := w.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("notify", "err", err)
			}
			if n > 0 && err == nil {
				continue // perhaps more are due
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(w.cfg.Poll):
			}
		}
	}()
}

// Stop ends the worker; a message in flight is tried again after its lease.
func (w *Worker) Stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
}

// RunOnce claims up to Concurrency due messages, sends them at once and
// records each outcome. It returns how many it attempted.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	now := wps.At(w.cfg.Now())
	var ids []string
	err := w.store.View(ctx, func(tx wps.Tx) (err error) {
		ids, err = tx.DueNotifications(now, w.cfg.Concurrency)
		return err
	})
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	var batch []wps.Notification
	err = w.store.Write(ctx, func(tx wps.Tx) (err error) {
		batch, err = tx.ClaimNotifications(ids, now, wps.At(now.Add(w.cfg.Lease)))
		return err
	})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(batch))
	for i, n := range batch {
		wg.Go(func() { errs[i] = w.attempt(ctx, n) })
	}
	wg.Wait()
	return len(batch), errors.Join(errs...)
}

// errDeactivated ends a message whose recipient was deactivated after it
// was written.
var errDeactivated = errors.New("not sent: the user is deactivated")

// attempt sends one message and records the outcome.
func (w *Worker) attempt(ctx context.Context, n wps.Notification) error {
	u, err := w.recipient(ctx, n)
	if err == nil {
		var text string
		n.Subject, text = render(n, u) // the body keeps the facts until sent
		n.Subject = wps.OneLine(n.Subject, 200)
		err = w.send(ctx, n, text)
	}
	now := wps.At(w.cfg.Now())
	n.LockedUntil, n.LastError = nil, ""
	var se *mail.SendError
	switch {
	case errors.Is(err, errDeactivated):
		n.Status, n.Body = wps.NotificationFailed, ""
	case err == nil:
		n.Status, n.SentAt, n.Body = wps.NotificationSent, &now, ""
	case ctx.Err() != nil:
		// Stopped mid-attempt: due again at once (the lease is released).
		n.NextAttemptAt, n.LastError = now, "interrupted: the worker stopped"
	case errors.As(err, &se) && !se.IsTemp() && se.ErrorCode() >= 500:
		n.Status, n.Body = wps.NotificationFailed, "" // refused for good: retrying will not help
	default:
		n.NextAttemptAt = wps.At(now.Add(w.backoff(n.Attempts)))
		if !n.NextAttemptAt.Before(n.GiveUpAt.Time) {
			n.Status, n.Body = wps.NotificationFailed, ""
		}
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(outcomeOf(n, err, ctx.Err() != nil))
	}
	if err != nil {
		n.LastError = wps.OneLine(err.Error(), 500)
		w.cfg.Logger.Warn("notify: not sent", "notification", n.ID, "kind", n.Kind, "attempts", n.Attempts, "status", n.Status, "err", n.LastError)
	}
	return w.store.Write(context.WithoutCancel(ctx), func(tx wps.Tx) error { return tx.FinishNotification(n) })
}

// outcomeOf names an attempt's outcome from the message as recorded.
func outcomeOf(n wps.Notification, err error, interrupted bool) string {
	switch {
	case n.Status == wps.NotificationSent:
		return OutcomeSent
	case n.Status == wps.NotificationFailed:
		return OutcomeFailed
	case interrupted && err != nil:
		return OutcomeInterrupted
	}
	return OutcomeRetry
}

// recipient is the user the message is for (nil for an invitation, to
// someone who is not a user yet); it fails with errDeactivated when the
// user is no longer active (deactivated users get nothing).
func (w *Worker) recipient(ctx context.Context, n wps.Notification) (*wps.User, error) {
	if n.UserID == "" {
		return nil, nil
	}
	var u wps.User
	err := w.store.View(ctx, func(tx wps.Tx) (err error) {
		u, err = tx.GetUser(n.OrgID, n.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if u.Status != wps.UserActive {
		return nil, errDeactivated
	}
	return &u, nil
}

// backoff is the delay before attempt n+1 (internal/backoff).
func (w *Worker) backoff(attempts int) time.Duration {
	return backoff.Delay(w.cfg.BaseDelay, w.cfg.MaxDelay, attempts)
}

// send builds the message n with text and hands it to the SMTP server.
func (w *Worker) send(ctx context.Context, n wps.Notification, text string) error {
	m := mail.NewMsg()
	if err := m.From(w.cfg.From); err != nil {
		return err
	}
	if err := m.To(n.To); err != nil {
		return err
	}
	// The subject was put on one line when worded; once more here, as
	// the header is the place where a line break would do harm.
	m.Subject(wps.OneLine(n.Subject, 200))
	m.SetMessageIDWithValue(n.ID + "@wps")
	m.SetDate()
	m.SetBodyString(mail.TypeTextPlain, text)
	opts := []mail.Option{mail.WithPort(w.server.Port), mail.WithTimeout(w.cfg.Timeout)}
	if w.server.ImplicitTLS {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if w.cfg.TLS != nil {
		opts = append(opts, mail.WithTLSConfig(w.cfg.TLS))
	}
	if w.server.User != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(w.server.User), mail.WithPassword(w.server.Password))
	}
	c, err := mail.NewClient(w.server.Host, opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	return c.DialAndSendWithContext(ctx, m)
}
