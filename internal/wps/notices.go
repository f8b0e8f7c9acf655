package wps

import (
	"fmt"
	"slices"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"

	"wps/internal/outbound"
)

// What internal/notify (chat channels, mail preferences, digests, the
// outbox's list) needs of the domain: the types the store takes, the
// seats a digest lists, and the writes that must happen in a change's
// transaction (chatWork, QueueMail). The use cases themselves live there.

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

// What a user chooses to be mailed about work (semantics §16).
const (
	PrefImmediate = "immediate" // each work.* message as it happens (the default)
	PrefDaily     = "daily"     // one work.digest a day at 08:00 in the user's time zone listing what waits
	PrefOff       = "off"       // no work.* message (invitations and resets still go)
)

// KindWorkDigest is the daily list of what waits on a user who chose daily.
const KindWorkDigest = "work.digest"

// NotificationPrefs is GET/PUT /v1/users/me/notifications.
type NotificationPrefs struct {
	Email string `json:"email" enum:"immediate,daily,off" doc:"Mail about work: immediate (each message as it happens), daily (one digest at 08:00 in the user's time zone listing what waits) or off"`
}

// DigestDue is a user whose daily digest is due.
type DigestDue struct {
	OrgID  string
	UserID string
}

// CheckOutboundURL checks a URL wps will post to: absolute http or https,
// and not to a loopback, private or link-local address unless the service
// allows them (AllowPrivateWebhooks).
func (s *Service) CheckOutboundURL(v *Validator, field, u string) {
	v.Check(validHTTPURL(u), field, "must be an absolute http or https URL")
	if validHTTPURL(u) && !s.allowPrivate && outbound.PrivateHost(u) {
		v.Add(field, "must not point to a loopback, private or link-local address")
	}
}

// ChatChannelsChanged forgets that an org had no chat channel (chatWork),
// after one was created.
func (s *Service) ChatChannelsChanged(orgID string) { s.noChat.Delete(orgID) }

// RecordAudit writes an audit event in tx (recordAudit), for a change a
// package beside the domain makes.
func (s *Service) RecordAudit(tx Tx, ev AuditEvent) error { return s.recordAudit(tx, ev) }

// ActorOf is the principal as an audit actor (nil: the operator).
func ActorOf(p *Principal) AuditActor { return actorOf(p) }

// ActiveUser reads and locks a user who must still be active
// (CodeUnauthorized once deactivated).
func ActiveUser(tx Tx, orgID, userID string) (User, error) { return activeUser(tx, orgID, userID) }

// DigestFiller is whom a user's daily digest lists work for: the user
// (nil when gone) and, when the Inbox lists anything for them (active,
// reads measurements, and acts themselves or by a delegation), their
// Filler as ListMeasurements matches it; ok is false otherwise.
func DigestFiller(tx Tx, orgID, userID string, now Time) (u *User, f Filler, ok bool, err error) {
	p, err := principalOf(tx, orgID, userID)
	if IsCode(err, CodeNotFound) {
		return nil, f, false, nil
	}
	if err != nil {
		return nil, f, false, err
	}
	if p.User.Status != UserActive || !p.Can(FnMeasurementRead) {
		return &p.User, f, false, nil
	}
	dels, err := delegatorsOf(tx, orgID, userID, now)
	if err != nil {
		return nil, f, false, err
	}
	if !mayAct(p) {
		if dels = slices.DeleteFunc(dels, func(d delegator) bool { return !mayActFor(d) }); len(dels) == 0 {
			return &p.User, f, false, nil
		}
	}
	f = fillerOf(p.User, p.Policies, dels)
	if !mayAct(p) {
		f.Keys = nil // only delegated seats
	}
	return &p.User, f, true, nil
}

// noChatFor is how long an org seen without chat channels is taken to
// have none, so that most writes read nothing for chat: a channel created
// on another replica is told messages from at most this long after (this
// replica forgets at once, see ChatChannelsChanged).
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
