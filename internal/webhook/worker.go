// Package webhook delivers the outbox: it claims due deliveries, signs them
// per the Standard Webhooks scheme with the org's secret(s), POSTs them with
// a timeout through a dialer that refuses private addresses, and records
// every attempt, retrying with exponential backoff and jitter for 24 hours.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"wps/internal/backoff"
	"wps/internal/outbound"
	"wps/internal/wps"
)

// Config tunes a Worker; zero values take defaults.
type Config struct {
	Now  func() time.Time // default time.Now
	Poll time.Duration    // between claims when nothing more could be claimed (default 500ms)
	// Concurrency is how many attempts are in flight at once (default 8):
	// a place that frees is claimed again at once.
	Concurrency int
	// PerDestination is how many of an org's deliveries to one receiver
	// (wps.DestinationOf) are in flight at once, over every worker
	// (default 2): a slow or failing receiver holds that many places, and
	// the others go to other receivers.
	PerDestination int
	Timeout        time.Duration // per attempt (default 10s)
	Lease          time.Duration // a claim's hold; a crashed worker's claims free after it (default 2m)
	BaseDelay      time.Duration // first retry delay (default 5s)
	MaxDelay       time.Duration // retry delay cap (default 1h)
	AllowPrivate   bool          // allow loopback and private addresses (tests)
	Logger         *slog.Logger
	// OnAttempt, when set, is told the outcome of every attempt (metrics):
	// one of the Outcome constants.
	OnAttempt func(outcome string)
}

// The outcomes of an attempt.
const (
	OutcomeSucceeded   = "succeeded"   // 2xx
	OutcomeRetry       = "retry"       // 408, 429, 5xx or a network error: due again later
	OutcomeGivenUp     = "given_up"    // another status, or the retry window is over
	OutcomeRefused     = "refused"     // the address guard refused the receiver's address
	OutcomeInterrupted = "interrupted" // the worker stopped mid-attempt: due again at once
)

// Worker delivers webhooks. Several workers (replicas) may share a database.
type Worker struct {
	store  wps.Store
	cfg    Config
	client *http.Client
	places chan struct{} // one per attempt in flight or being claimed (capacity Concurrency)
	freed  chan struct{} // told when a place frees
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Worker over store.
func New(store wps.Store, cfg Config) *Worker {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.PerDestination <= 0 {
		cfg.PerDestination = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 5 * time.Second
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{store: store, cfg: cfg, client: outbound.Client(cfg.Timeout, cfg.AllowPrivate),
		places: make(chan struct{}, cfg.Concurrency), freed: make(chan struct{}, 1)}
}

// Start runs the worker until Stop or ctx ends: a pool of Concurrency
// places, each claimed again as soon as its attempt ends, so that a slow
// receiver holds only the places of its own attempts.
func (w *Worker) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		var attempts sync.WaitGroup
		defer close(w.done)
		defer attempts.Wait()
		raced := false
		for {
			batch, secrets, lost, err := w.claim(ctx)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("webhook claim", "err", err)
			}
			for _, d := range batch {
				attempts.Go(func() {
					defer w.release()
					if err := w.attempt(ctx, d, secrets[d.OrgID]); err != nil {
						w.cfg.Logger.Error("webhook attempt", "delivery", d.ID, "err", err)
					}
				})
			}
			// Another worker leased some of those found: look again at once
			// (once: a row held by a long transaction is not worth a spin).
			if raced = lost && !raced; raced {
				continue
			}
			// Every free place was claimed, or nothing more may be: claim
			// again when a place frees, or after Poll (retries come due).
			select {
			case <-ctx.Done():
				return
			case <-w.freed:
			case <-time.After(w.cfg.Poll):
			}
		}
	}()
}

// Stop ends the worker; attempts in flight are interrupted and retried later.
func (w *Worker) Stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
}

// RunOnce claims due deliveries for the free places (all of them unless
// Start's attempts hold some) and attempts each once, waiting for them. It
// returns how many it attempted.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	batch, secrets, _, err := w.claim(ctx)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(batch))
	for i, d := range batch {
		wg.Go(func() {
			defer w.release()
			errs[i] = w.attempt(ctx, d, secrets[d.OrgID])
		})
	}
	wg.Wait()
	return len(batch), errors.Join(errs...)
}

// claim takes the free places and leases a due delivery for each it can
// (orgs taking turns, PerDestination per receiver), with the signing
// secrets of their orgs. The places it could not fill are freed again; each
// delivery returned holds one until release. lost tells that some of the
// deliveries found were gone when it leased them (another worker's).
func (w *Worker) claim(ctx context.Context) (batch []wps.Delivery, secrets map[string][]string, lost bool, err error) {
	free := 0
take:
	for free < w.cfg.Concurrency {
		select {
		case w.places <- struct{}{}:
			free++
		default:
			break take
		}
	}
	if free == 0 {
		return nil, nil, false, nil
	}
	now := wps.At(w.cfg.Now())
	var ids []string
	secrets = map[string][]string{}
	// Which deliveries is a read (on SQLite, beside the writer, which it
	// would hold up); the lease checks them again.
	err = w.store.View(ctx, func(tx wps.Tx) (err error) {
		ids, err = tx.DueDeliveries(now, free, w.cfg.PerDestination)
		return err
	})
	if err == nil && len(ids) > 0 {
		err = w.store.Write(ctx, func(tx wps.Tx) (err error) {
			clear(secrets)
			if batch, err = tx.ClaimDeliveries(ids, now, wps.At(now.Add(w.cfg.Lease))); err != nil {
				return err
			}
			for _, d := range batch {
				if _, ok := secrets[d.OrgID]; ok {
					continue
				}
				s, err := wps.EnsureSecret(tx, d.OrgID, now)
				if err != nil {
					return err
				}
				secrets[d.OrgID] = s.Secrets(now.Time)
			}
			return nil
		})
	}
	if err != nil {
		batch = nil
	}
	for range free - len(batch) {
		<-w.places // not filled: free again, nobody to tell
	}
	return batch, secrets, len(batch) < len(ids), err
}

// release frees the place of an attempt that ended and tells Start's loop.
func (w *Worker) release() {
	<-w.places
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// attempt POSTs one delivery and records the outcome.
func (w *Worker) attempt(ctx context.Context, d wps.Delivery, secrets []string) error {
	start := w.cfg.Now()
	code, retryAfter, err := w.post(ctx, d, secrets, start)
	a := wps.Attempt{ID: wps.NewID(), DeliveryID: d.ID, OrgID: d.OrgID, At: wps.At(start), StatusCode: code,
		DurationMs: w.cfg.Now().Sub(start).Milliseconds()}
	if err != nil {
		a.Error = err.Error()
	}
	now := wps.At(w.cfg.Now())
	interrupted := ctx.Err() != nil
	var outcome string
	switch {
	case interrupted:
		d.NextAttemptAt, a.Error, outcome = now, "interrupted: the worker stopped", OutcomeInterrupted
	case code >= 200 && code < 300:
		d.Status, d.DeliveredAt, outcome = wps.DeliverySucceeded, &now, OutcomeSucceeded
	case code >= 300 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout:
		d.Status, outcome = wps.DeliveryGivenUp, OutcomeGivenUp // the receiver refuses it; retrying will not help
	case outbound.Refused(err):
		// The URL's name resolves to an address the guard refuses: it will
		// not change within the retry window, and retrying would only hide
		// the reason for a day.
		d.Status, outcome = wps.DeliveryGivenUp, OutcomeRefused
		a.Error = "refused: the receiver's address is loopback, private or reserved (" + a.Error + ")"
	default:
		delay := w.backoff(d.Attempts)
		if retryAfter > delay {
			delay = retryAfter
		}
		d.NextAttemptAt, outcome = wps.At(now.Add(delay)), OutcomeRetry
		if !d.NextAttemptAt.Before(d.GiveUpAt.Time) {
			d.Status, outcome = wps.DeliveryGivenUp, OutcomeGivenUp
		}
	}
	if w.cfg.OnAttempt != nil {
		w.cfg.OnAttempt(outcome)
	}
	if len(a.Error) > 500 {
		a.Error = strings.ToValidUTF8(a.Error[:500], "")
	}
	d.LockedUntil, d.LastStatus, d.LastError, d.UpdatedAt = nil, code, a.Error, now
	// Record even when ctx ended: the claim must be released. A delivery
	// cancelled meanwhile (its webhook deleted) keeps the attempt and stays
	// cancelled.
	return w.store.Write(context.WithoutCancel(ctx), func(tx wps.Tx) error {
		if err := tx.AddAttempt(a); err != nil {
			return err
		}
		return tx.FinishDelivery(d)
	})
}

// backoff is the delay before attempt n+1 (internal/backoff).
func (w *Worker) backoff(attempts int) time.Duration {
	return backoff.Delay(w.cfg.BaseDelay, w.cfg.MaxDelay, attempts)
}

// post sends the signed request; it returns the status code (0 without an
// answer) and the receiver's Retry-After.
// A chat message (wps.IsChatMessage) is posted as it is, unsigned: Slack
// and Teams take their own JSON and no signature.
func (w *Worker) post(ctx context.Context, d wps.Delivery, secrets []string, at time.Time) (int, time.Duration, error) {
	chat := wps.IsChatMessage(d.EventType)
	var sig string
	if !chat {
		var err error
		if sig, err = Sign(secrets, d.EventID, at, d.Payload); err != nil {
			return 0, 0, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "wps-webhooks/1")
	if !chat {
		req.Header.Set("webhook-id", d.EventID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		req.Header.Set("webhook-signature", sig)
	}
	res, err := w.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	var retryAfter time.Duration
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, retryAfter, fmt.Errorf("the receiver answered %d", res.StatusCode)
	}
	return res.StatusCode, retryAfter, nil
}

// Sign makes the webhook-signature header: one "v1,<base64>" per secret,
// separated by spaces (receivers accept any of them).
func Sign(secrets []string, msgID string, at time.Time, payload []byte) (string, error) {
	var sigs []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return "", err
		}
		sig, err := wh.Sign(msgID, at, payload)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}
