package wps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"

	"wps/internal/outbound"
)

// The kinds of chat channel.
const (
	ChatSlack = "slack"
	ChatTeams = "teams"
)

// ChatEvents are the messages a chat channel may be told.
var ChatEvents = []string{KindWorkWaiting, KindWorkOverdue, KindWorkReturned, KindWorkEscalated}

// ChatChannel is an org's Slack or Teams incoming webhook, told the work.*
// messages (one per change, not per user).
type ChatChannel struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind" enum:"slack,teams"`
	URL       string   `json:"url" doc:"The channel's incoming-webhook URL"`
	Events    []string `json:"events" doc:"The work.* messages it is told; empty: all"`
	CreatedAt Time     `json:"createdAt"`
	UpdatedAt Time     `json:"updatedAt"`
	OrgID     string   `json:"-"`
}

// Wants reports whether the channel is told messages of kind.
func (c ChatChannel) Wants(kind string) bool {
	return len(c.Events) == 0 || slices.Contains(c.Events, kind)
}

// IsChatMessage tells a delivery of a chat message (its event type is a
// work.* kind): its payload is posted as is, unsigned.
func IsChatMessage(eventType string) bool { return strings.HasPrefix(eventType, "work.") }

// ChatChannelInput is the body of POST /v1/chat-channels.
type ChatChannelInput struct {
	Kind   string
	URL    string
	Events []string
}

// CreateChatChannel saves a channel. Errors: CodeInvalid.
func (s *Service) CreateChatChannel(ctx context.Context, p *Principal, in ChatChannelInput) (ChatChannel, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return ChatChannel{}, err
	}
	var v Validator
	v.Check(in.Kind == ChatSlack || in.Kind == ChatTeams, "kind", "must be slack or teams")
	v.Check(validHTTPURL(in.URL), "url", "must be an absolute http or https URL")
	if validHTTPURL(in.URL) && !s.allowPrivate && outbound.PrivateHost(in.URL) {
		v.Add("url", "must not point to a loopback, private or link-local address")
	}
	for i, e := range in.Events {
		v.Check(slices.Contains(ChatEvents, e), fieldIndex("events", i), "unknown message %q (known: %s)", e, strings.Join(ChatEvents, ", "))
	}
	if err := v.Err(); err != nil {
		return ChatChannel{}, err
	}
	now := s.Now()
	c := ChatChannel{ID: NewID(), OrgID: p.OrgID, Kind: in.Kind, URL: in.URL, Events: normalize(in.Events), CreatedAt: now, UpdatedAt: now}
	err := s.store.Write(ctx, func(tx Tx) error {
		if err := tx.CreateChatChannel(c); err != nil {
			return err
		}
		return s.auditChat(tx, p, AuditChatCreated, c)
	})
	s.noChat.Delete(p.OrgID)
	return c, err
}

// ListChatChannels lists the org's channels.
func (s *Service) ListChatChannels(ctx context.Context, p *Principal) ([]ChatChannel, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return nil, err
	}
	var out []ChatChannel
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		out, err = tx.ListChatChannels(p.OrgID)
		return err
	})
	return out, err
}

// GetChatChannel shows one channel. Errors: CodeNotFound.
func (s *Service) GetChatChannel(ctx context.Context, p *Principal, id string) (ChatChannel, error) {
	if err := p.Require(FnWebhooksManage); err != nil {
		return ChatChannel{}, err
	}
	var c ChatChannel
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		c, err = tx.GetChatChannel(p.OrgID, id)
		return err
	})
	return c, err
}

// DeleteChatChannel removes a channel and cancels its pending messages.
// Errors: CodeNotFound.
func (s *Service) DeleteChatChannel(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnWebhooksManage); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		c, err := tx.GetChatChannel(p.OrgID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteChatChannel(p.OrgID, id); err != nil {
			return err
		}
		if err := s.auditChat(tx, p, AuditChatDeleted, c); err != nil {
			return err
		}
		return tx.CancelDeliveries(p.OrgID, id, "cancelled: its chat channel was deleted", s.Now())
	})
}

// auditChat records a channel created or deleted. Its URL holds the
// channel's credential: it is recorded as changed, never shown.
func (s *Service) auditChat(tx Tx, p *Principal, typ string, c ChatChannel) error {
	changes := map[string]AuditChange{"kind": {After: c.Kind}, "events": {After: c.Events}, "url": secretChanged}
	if typ == AuditChatDeleted {
		changes = map[string]AuditChange{"kind": {Before: c.Kind}, "events": {Before: c.Events}, "url": secretChanged}
	}
	return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: typ, Actor: actorOf(p),
		Target: AuditTarget{Kind: TargetChat, ID: c.ID, Name: c.Kind}, Changes: changes})
}

// noChatFor is how long an org seen without chat channels is taken to
// have none, so that most writes read nothing for chat: a channel created
// on another replica is told messages from at most this long after (this
// replica forgets at once, see CreateChatChannel).
const noChatFor = 2 * time.Second

// chatMessage is one work.* message about a step, for the chat channels.
type chatMessage struct{ stepID, text string }

// chatWork writes each message for each of the org's channels that wants
// kind: an event of that type whose payload is the channel's JSON, and its
// delivery, in the change's transaction. It reads the org's channels (one
// statement) and nothing else.
func (s *Service) chatWork(tx Tx, m Measurement, kind string, msgs ...chatMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	if at, ok := s.noChat.Load(m.OrgID); ok && s.Now().Sub(at.(time.Time)) < noChatFor {
		return nil // the org had no channel a moment ago: no read on the write path
	}
	channels, err := tx.ListChatChannels(m.OrgID)
	if err != nil {
		return err
	}
	if len(channels) == 0 {
		s.noChat.Store(m.OrgID, s.Now().Time)
		return nil
	}
	now := s.Now()
	for _, msg := range msgs {
		for _, c := range channels {
			if !c.Wants(kind) {
				continue
			}
			e := Event{ID: NewID(), OrgID: m.OrgID, Type: kind, MeasurementID: m.ID, StepID: msg.stepID, Payload: chatBody(c.Kind, msg.text), CreatedAt: now}
			if err := tx.InsertEvents([]Event{e}); err != nil {
				return err
			}
			d := Delivery{ID: NewID(), OrgID: m.OrgID, EventID: e.ID, EventType: kind, WebhookID: c.ID, URL: c.URL,
				MeasurementID: m.ID, Status: DeliveryPending, NextAttemptAt: now, GiveUpAt: At(now.Add(RetryWindow)), CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateDelivery(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// chatBody is a Slack incoming-webhook message or a Teams message card.
func chatBody(kind, text string) []byte {
	var b []byte
	if kind == ChatTeams {
		summary, _, _ := strings.Cut(text, "\n")
		b, _ = gojson.Marshal(map[string]string{"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": summary, "text": strings.ReplaceAll(text, "\n", "\n\n")})
	} else {
		b, _ = gojson.Marshal(map[string]string{"text": strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)})
	}
	return b
}

// chatText is a work.* message for a channel: what happened to which step
// of which measurement and process, the due time and the link. No
// parameter value.
func chatText(kind, measurement, process, step string, due *Time, link string) string {
	what := OneLine(measurement, 100)
	if what == "" {
		what = "a new measurement"
	}
	head := map[string]string{KindWorkWaiting: "Waiting", KindWorkOverdue: "Overdue", KindWorkReturned: "Returned", KindWorkEscalated: "Escalated"}[kind]
	dueText := ", no deadline"
	switch {
	case kind == KindWorkReturned:
		dueText = ": rejected or reproved, open again"
	case due != nil:
		dueText = ", due " + due.UTC().Format("2006-01-02 15:04 UTC")
	}
	return fmt.Sprintf("%s: %s of %s (process %s)%s\n%s", head, OneLine(step, 100), what, OneLine(process, 100), dueText, link)
}
