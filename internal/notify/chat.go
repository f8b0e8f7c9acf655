package notify

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// The chat channels' use cases: an org's Slack or Teams incoming webhooks,
// told the work.* messages. The domain writes those messages in each
// change's transaction (wps.Service's chatWork); here are the channels.

// ChatChannelInput is the body of POST /v1/chat-channels.
type ChatChannelInput struct {
	Kind   string
	URL    string
	Events []string
}

// CreateChatChannel saves a channel. Errors: CodeInvalid.
func CreateChatChannel(ctx context.Context, s *wps.Service, p *wps.Principal, in ChatChannelInput) (wps.ChatChannel, error) {
	if err := p.Require(wps.FnWebhooksManage); err != nil {
		return wps.ChatChannel{}, err
	}
	var v wps.Validator
	v.Check(in.Kind == wps.ChatSlack || in.Kind == wps.ChatTeams, "kind", "must be slack or teams")
	s.CheckOutboundURL(&v, "url", in.URL)
	for i, e := range in.Events {
		v.Check(slices.Contains(wps.ChatEvents, e), "events["+strconv.Itoa(i)+"]", "unknown message %q (known: %s)", e, strings.Join(wps.ChatEvents, ", "))
	}
	if err := v.Err(); err != nil {
		return wps.ChatChannel{}, err
	}
	now := s.Now()
	events := slices.Compact(slices.Sorted(slices.Values(in.Events)))
	if events == nil {
		events = []string{}
	}
	c := wps.ChatChannel{ID: wps.NewID(), OrgID: p.OrgID, Kind: in.Kind, URL: in.URL, Events: events, CreatedAt: now, UpdatedAt: now}
	err := s.Store().Write(ctx, func(tx wps.Tx) error {
		if err := tx.CreateChatChannel(c); err != nil {
			return err
		}
		return auditChat(s, tx, p, wps.AuditChatCreated, c)
	})
	s.ChatChannelsChanged(p.OrgID)
	return c, err
}

// ListChatChannels lists the org's channels.
func ListChatChannels(ctx context.Context, s *wps.Service, p *wps.Principal) ([]wps.ChatChannel, error) {
	if err := p.Require(wps.FnWebhooksManage); err != nil {
		return nil, err
	}
	var out []wps.ChatChannel
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		out, err = tx.ListChatChannels(p.OrgID)
		return err
	})
	return out, err
}

// GetChatChannel shows one channel. Errors: CodeNotFound.
func GetChatChannel(ctx context.Context, s *wps.Service, p *wps.Principal, id string) (wps.ChatChannel, error) {
	if err := p.Require(wps.FnWebhooksManage); err != nil {
		return wps.ChatChannel{}, err
	}
	var c wps.ChatChannel
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		c, err = tx.GetChatChannel(p.OrgID, id)
		return err
	})
	return c, err
}

// DeleteChatChannel removes a channel and cancels its pending messages.
// Errors: CodeNotFound.
func DeleteChatChannel(ctx context.Context, s *wps.Service, p *wps.Principal, id string) error {
	if err := p.Require(wps.FnWebhooksManage); err != nil {
		return err
	}
	return s.Store().Write(ctx, func(tx wps.Tx) error {
		c, err := tx.GetChatChannel(p.OrgID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteChatChannel(p.OrgID, id); err != nil {
			return err
		}
		if err := auditChat(s, tx, p, wps.AuditChatDeleted, c); err != nil {
			return err
		}
		return tx.CancelDeliveries(p.OrgID, id, "cancelled: its chat channel was deleted", s.Now())
	})
}

// auditChat records a channel created or deleted. Its URL holds the
// channel's credential: it is recorded as changed, never shown.
func auditChat(s *wps.Service, tx wps.Tx, p *wps.Principal, typ string, c wps.ChatChannel) error {
	secret := wps.AuditChange{Changed: true}
	changes := map[string]wps.AuditChange{"kind": {After: c.Kind}, "events": {After: c.Events}, "url": secret}
	if typ == wps.AuditChatDeleted {
		changes = map[string]wps.AuditChange{"kind": {Before: c.Kind}, "events": {Before: c.Events}, "url": secret}
	}
	return s.RecordAudit(tx, wps.AuditEvent{OrgID: p.OrgID, Type: typ, Actor: wps.ActorOf(p),
		Target: wps.AuditTarget{Kind: wps.TargetChat, ID: c.ID, Name: c.Kind}, Changes: changes})
}
