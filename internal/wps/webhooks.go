package wps

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"time"

	"wps/internal/outbound"
)

// Webhook is an org-level subscription to events.
type Webhook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events" doc:"Event types; empty: all"`
	Secret    string   `json:"secret,omitempty" doc:"The org's signing secret (whsec_...), shown on creation"`
	CreatedAt Time     `json:"createdAt"`
	UpdatedAt Time     `json:"updatedAt"`
	OrgID     string   `json:"-"`
}

// Wants reports whether the subscription takes events of typ.
func (w Webhook) Wants(typ string) bool { return len(w.Events) == 0 || slices.Contains(w.Events, typ) }

// SigningSecret is an org's webhook signing secret; after a rotation the
// previous one keeps signing alongside until PreviousUntil.
type SigningSecret struct {
	OrgID         string
	Secret        string
	Previous      string
	PreviousUntil Time
	RotatedAt     Time
}

// Secrets lists the secrets that sign at now.
func (s SigningSecret) Secrets(now time.Time) []string {
	out := []string{s.Secret}
	if s.Previous != "" && now.Before(s.PreviousUntil.Time) {
		out = append(out, s.Previous)
	}
	return out
}

// Delivery statuses.
const (
	DeliveryPending   = "PENDING"
	DeliverySucceeded = "SUCCEEDED"
	DeliveryGivenUp   = "GIVEN_UP"
	// DeliveryCancelled: its subscription was deleted before it was delivered.
	DeliveryCancelled = "CANCELLED"
)

// Delivery is one event to one URL, retried until it succeeds or is given up.
type Delivery struct {
	ID            string    `json:"id"`
	EventID       string    `json:"eventId"`
	EventType     string    `json:"eventType"`
	WebhookID     string    `json:"webhookId,omitempty" doc:"The subscription, or the chat channel of a work.* message; empty for a step's webhookUrls"`
	URL           string    `json:"url"`
	MeasurementID string    `json:"measurementId,omitempty"`
	Status        string    `json:"status" enum:"PENDING,SUCCEEDED,GIVEN_UP,CANCELLED"`
	Attempts      int       `json:"attempts"`
	NextAttemptAt Time      `json:"nextAttemptAt"`
	GiveUpAt      Time      `json:"giveUpAt"`
	LastStatus    int       `json:"lastStatusCode"`
	LastError     string    `json:"lastError"`
	CreatedAt     Time      `json:"createdAt"`
	UpdatedAt     Time      `json:"updatedAt"`
	DeliveredAt   *Time     `json:"deliveredAt,omitempty"`
	History       []Attempt `json:"attemptLog"`
	OrgID         string    `json:"-"`
	LockedUntil   *Time     `json:"-"`
	Payload       []byte    `json:"-"`
}

// DestinationOf names the receiver of a webhook URL, its host and port in
// lower case ("hooks.example.com", "127.0.0.1:8081"): the URLs of one
// server share it, and an org's deliveries in flight to one destination
// are bounded (Tx.DueDeliveries). A URL that does not parse is its own
// destination.
func DestinationOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	return strings.ToLower(u.Host)
}

// Attempt is one try of a delivery.
type Attempt struct {
	ID          string `json:"id"`
	DeliveryID  string `json:"deliveryId"`
	At          Time   `json:"attemptedAt"`
	StatusCode  int    `json:"statusCode" doc:"0 when no answer came"`
	Error       string `json:"error"`
	DurationMs  int64  `json:"durationMs"`
	OrgID       string `json:"-"`
	Interrupted bool   `json:"-"` // the worker stopped mid-attempt: no answer, retry at once
}

// DeliveryQuery filters and pages deliveries.
type DeliveryQuery struct {
	Page    Page
	Status  string
	EventID string
}

// RetryWindow is how long a delivery is retried.
const RetryWindow = 24 * time.Hour

// stepEvents are the events a step's webhookUrls receive.
var stepEvents = []string{EvActionCreated, EvActionReproved, EvStepConsensed, EvStepOverdue, EvStepEscalated}

// fanOut writes events and one delivery per target of each: the
// subscriptions that want it and, for step events, the webhookUrls of the
// step stepURLs names.
func fanOut(tx Tx, events []Event, stepURLs func(stepID string) string, hooks []Webhook) error {
	if err := tx.InsertEvents(events); err != nil {
		return err
	}
	for _, e := range events {
		if err := deliver(tx, e, stepURLs(e.StepID), hooks); err != nil {
			return err
		}
	}
	return nil
}

// deliver writes one delivery of e per target.
func deliver(tx Tx, e Event, stepURLs string, hooks []Webhook) error {
	type target struct{ url, hook string }
	var targets []target
	seen := map[string]bool{}
	for _, h := range hooks {
		if h.Wants(e.Type) && !seen[h.URL] {
			seen[h.URL] = true
			targets = append(targets, target{h.URL, h.ID})
		}
	}
	if slices.Contains(stepEvents, e.Type) {
		for _, u := range SplitList(stepURLs) {
			if !seen[u] {
				seen[u] = true
				targets = append(targets, target{u, ""})
			}
		}
	}
	for _, tg := range targets {
		d := Delivery{ID: NewID(), OrgID: e.OrgID, EventID: e.ID, EventType: e.Type, WebhookID: tg.hook, URL: tg.url,
			MeasurementID: e.MeasurementID, Status: DeliveryPending, NextAttemptAt: e.CreatedAt,
			GiveUpAt: At(e.CreatedAt.Add(RetryWindow)), CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt}
		if err := tx.CreateDelivery(d); err != nil {
			return err
		}
	}
	return nil
}

// WebhookInput is the body of a subscription create or update.
type WebhookInput struct {
	URL    *string
	Events *[]string
}

func checkWebhook(v *Validator, in WebhookInput, allowPrivate bool) {
	if in.URL != nil {
		v.Check(validHTTPURL(*in.URL), "url", "must be an absolute http or https URL")
		if validHTTPURL(*in.URL) && !allowPrivate && outbound.PrivateHost(*in.URL) {
			v.Add("url", "must not point to a loopback, private or link-local address")
		}
	}
	if in.Events != nil {
		for i, e := range *in.Events {
			v.Check(slices.Contains(EventTypes, e), fieldIndex("events", i), "unknown event %q (known: %s)", e, strings.Join(EventTypes, ", "))
		}
	}
}

// newSigningSecret is whsec_ and 32 random bytes in base64.
func newSigningSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// EnsureSecret returns the org's signing secret, creating it on first use.
func EnsureSecret(tx Tx, orgID string, now Time) (SigningSecret, error) {
	s, err := tx.GetSigningSecret(orgID)
	if IsCode(err, CodeNotFound) {
		s = SigningSecret{OrgID: orgID, Secret: newSigningSecret(), RotatedAt: now}
		if err := tx.PutSigningSecret(s); err != nil {
			return s, err
		}
		return tx.GetSigningSecret(orgID)
	}
	return s, err
}

// CreateWebhook subscribes a URL to events. The answer carries the org's
// signing secret. Errors: CodeInvalid.
func (s *Service) CreateWebhook(ctx context.Context, p *Principal, in WebhookInput) (Webhook, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return Webhook{}, err
	}
	var v Validator
	if in.URL == nil {
		v.Add("url", "is required")
	}
	checkWebhook(&v, in, s.allowPrivate)
	if err := v.Err(); err != nil {
		return Webhook{}, err
	}
	now := s.Now()
	w := Webhook{ID: NewID(), OrgID: p.OrgID, URL: *in.URL, Events: []string{}, CreatedAt: now, UpdatedAt: now}
	if in.Events != nil {
		w.Events = normalize(*in.Events)
	}
	err := s.store.Write(ctx, func(tx Tx) error {
		sec, err := EnsureSecret(tx, p.OrgID, now)
		if err != nil {
			return err
		}
		w.Secret = sec.Secret
		if err := tx.CreateWebhook(w); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditWebhookCreated, TargetWebhook, w.ID, w.URL, nil, w, "secret")
	})
	return w, err
}

// ListWebhooks lists the org's subscriptions.
func (s *Service) ListWebhooks(ctx context.Context, p *Principal) ([]Webhook, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return nil, err
	}
	var out []Webhook
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		out, err = tx.ListWebhooks(p.OrgID)
		return err
	})
	return out, err
}

// UpdateWebhook changes a subscription. Errors: CodeInvalid, CodeNotFound.
func (s *Service) UpdateWebhook(ctx context.Context, p *Principal, id string, in WebhookInput) (Webhook, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return Webhook{}, err
	}
	var v Validator
	checkWebhook(&v, in, s.allowPrivate)
	if err := v.Err(); err != nil {
		return Webhook{}, err
	}
	var w Webhook
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if w, err = tx.GetWebhook(p.OrgID, id); err != nil {
			return err
		}
		before := w
		setIf(&w.URL, in.URL)
		if in.Events != nil {
			w.Events = normalize(*in.Events)
		}
		w.UpdatedAt = s.Now()
		if err := tx.UpdateWebhook(w); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditWebhookUpdated, TargetWebhook, w.ID, w.URL, before, w, "secret")
	})
	return w, err
}

// DeleteWebhook removes a subscription and cancels its pending deliveries
// (one in flight is not retried). Errors: CodeNotFound.
func (s *Service) DeleteWebhook(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnWebhooksManage); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		w, err := tx.GetWebhook(p.OrgID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteWebhook(p.OrgID, id); err != nil {
			return err
		}
		if err := s.auditChange(tx, p, AuditWebhookDeleted, TargetWebhook, w.ID, w.URL, w, nil, "secret"); err != nil {
			return err
		}
		return tx.CancelDeliveries(p.OrgID, id, "cancelled: its webhook was deleted", s.Now())
	})
}

// GetSigningSecret shows the org's signing secret.
func (s *Service) GetSigningSecret(ctx context.Context, p *Principal) (SigningSecret, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return SigningSecret{}, err
	}
	var sec SigningSecret
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		sec, err = EnsureSecret(tx, p.OrgID, s.Now())
		return err
	})
	return sec, err
}

// RotateSigningSecret replaces the secret; the old one keeps signing
// alongside for 24 hours, so receivers can switch without losing events.
func (s *Service) RotateSigningSecret(ctx context.Context, p *Principal) (SigningSecret, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return SigningSecret{}, err
	}
	var sec SigningSecret
	err := s.store.Write(ctx, func(tx Tx) error {
		now := s.Now()
		old, err := EnsureSecret(tx, p.OrgID, now)
		if err != nil {
			return err
		}
		sec = SigningSecret{OrgID: p.OrgID, Secret: newSigningSecret(), Previous: old.Secret, PreviousUntil: At(now.Add(24 * time.Hour)), RotatedAt: now}
		if err := tx.PutSigningSecret(sec); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditWebhookSecret, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetOrg, ID: p.OrgID, Name: "webhook signing secret"},
			Changes: map[string]AuditChange{"secret": secretChanged}})
	})
	return sec, err
}

// ListDeliveries pages the org's deliveries, newest first, with their attempts.
func (s *Service) ListDeliveries(ctx context.Context, p *Principal, q DeliveryQuery) ([]Delivery, int, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return nil, 0, err
	}
	var out []Delivery
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		out, total, err = tx.ListDeliveries(p.OrgID, q)
		return err
	})
	return out, total, err
}

// RetryDelivery sends a delivery again now, with a fresh retry window.
// Errors: CodeNotFound, CodeConflict (cancelled: its webhook was deleted).
func (s *Service) RetryDelivery(ctx context.Context, p *Principal, id string) (Delivery, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return Delivery{}, err
	}
	var d Delivery
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if d, err = tx.GetDelivery(p.OrgID, id); err != nil {
			return err
		}
		if d.Status == DeliveryCancelled {
			return Errorf(CodeConflict, "this delivery was cancelled with its webhook, which no longer exists")
		}
		now := s.Now()
		d.Status, d.NextAttemptAt, d.GiveUpAt, d.LockedUntil, d.UpdatedAt = DeliveryPending, now, At(now.Add(RetryWindow)), nil, now
		return tx.UpdateDelivery(d)
	})
	return d, err
}
