package wps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Audit events (docs/api.md, Audit events) record every change that is not
// an action: who changed what, when, and the fields before and after. Each
// is written in the transaction of its change (recordAudit) and is a leaf
// of the org's ledger (LeafAudit), whose data is made from its row, so the
// ledger's verification covers it. Secrets never appear: a changed secret
// is recorded as {"changed": true}.

// LeafAudit is the kind of an audit event's ledger entry (auditLeaf).
const LeafAudit = "audit"

// Types of audit events.
const (
	AuditUserInvited       = "user.invited"
	AuditInviteRevoked     = "invite.revoked"
	AuditUserJoined        = "user.joined"
	AuditUserCreated       = "user.created" // provisioned (SCIM), or first signed in by SSO
	AuditUserUpdated       = "user.updated"
	AuditUserRolesChanged  = "user.roles_changed"
	AuditAPIKeyCreated     = "apikey.created"
	AuditAPIKeyRevoked     = "apikey.revoked"
	AuditSessionCreated    = "session.created"
	AuditSessionEnded      = "session.ended" // signed out
	AuditPolicyCreated     = "policy.created"
	AuditPolicyUpdated     = "policy.updated"
	AuditPolicyDeleted     = "policy.deleted"
	AuditProcessCreated    = "process.created"
	AuditProcessUpdated    = "process.updated"
	AuditProcessDeleted    = "process.deleted"
	AuditProcessRestored   = "process.restored"
	AuditEntityCreated     = "entity.created"
	AuditEntityUpdated     = "entity.updated"
	AuditEntityDeleted     = "entity.deleted"
	AuditEntityRestored    = "entity.restored"
	AuditRecordCreated     = "record.created"
	AuditRecordUpdated     = "record.updated"
	AuditRecordDeleted     = "record.deleted"
	AuditOrgUpdated        = "org.updated"
	AuditCalendarUpdated   = "calendar.updated"
	AuditSSOUpdated        = "sso.updated"
	AuditWebhookCreated    = "webhook.created"
	AuditWebhookUpdated    = "webhook.updated"
	AuditWebhookDeleted    = "webhook.deleted"
	AuditWebhookSecret     = "webhook.secret_rotated"
	AuditChatCreated       = "chat_channel.created"
	AuditChatDeleted       = "chat_channel.deleted"
	AuditTemplateCreated   = "contract_template.created"
	AuditTemplateUpdated   = "contract_template.updated"
	AuditTemplateDeleted   = "contract_template.deleted"
	AuditSheetCreated      = "sheet.created"
	AuditSheetDeleted      = "sheet.deleted"
	AuditPasswordChanged   = "user.password_changed"
	AuditNotificationPrefs = "user.notifications_changed"
	AuditDelegationCreated = "delegation.created"
	AuditDelegationRevoked = "delegation.revoked"
	AuditProcessMigrated   = "process.migrated"
)

// Kinds of audit targets.
const (
	TargetUser       = "user"
	TargetInvite     = "invite"
	TargetAPIKey     = "apikey"
	TargetSession    = "session"
	TargetPolicy     = "policy"
	TargetProcess    = "process"
	TargetEntity     = "entity"
	TargetRecord     = "record"
	TargetOrg        = "org"
	TargetWebhook    = "webhook"
	TargetChat       = "chat_channel"
	TargetTemplate   = "contract_template"
	TargetSheet      = "sheet"
	TargetDelegation = "delegation"
)

// AuditActor is who made a change.
type AuditActor struct {
	ID    string `json:"id" doc:"The user's id; empty for the operator's command line"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// AuditTarget is what a change was made to.
type AuditTarget struct {
	Kind string `json:"kind" doc:"user, invite, apikey, session, policy, process, entity, record, org, webhook, chat_channel, contract_template or sheet"`
	ID   string `json:"id"`
	Name string `json:"name" doc:"Its name when the change was made"`
}

// AuditChange is how one field changed. A scalar or small value shows
// before and after (absent: no value); a secret shows only changed; a list
// of steps or parameters names the items added, removed and updated.
type AuditChange struct {
	Before  any      `json:"before,omitempty" doc:"The value before (absent: none)"`
	After   any      `json:"after,omitempty" doc:"The value after (absent: none)"`
	Changed bool     `json:"changed,omitempty" doc:"The field changed; its values are not shown (a secret, or too large)"`
	Added   []string `json:"added,omitempty" doc:"Items added (steps, parameters), by name"`
	Removed []string `json:"removed,omitempty" doc:"Items removed, by name"`
	Updated []string `json:"updated,omitempty" doc:"Items changed, by name, with the fields that changed: \"Inspect: label, policyNames\""`
}

// AuditEvent is a change that is not an action.
type AuditEvent struct {
	ID       string                 `json:"id"`
	Type     string                 `json:"type" doc:"What happened: user.invited, user.joined, user.updated, user.roles_changed, apikey.created, apikey.revoked, session.created, session.ended, policy.*, process.*, entity.*, record.*, user.notifications_changed, org.updated, calendar.updated, sso.updated, webhook.*, chat_channel.*, …"`
	At       Time                   `json:"at"`
	Actor    AuditActor             `json:"actor" doc:"Who made the change"`
	Target   AuditTarget            `json:"target" doc:"What was changed"`
	Changes  map[string]AuditChange `json:"changes" doc:"The fields changed, by name"`
	Reason   string                 `json:"reason,omitempty" doc:"Why, when the change carries a reason (a delegation's reason)"`
	LeafHash string                 `json:"leafHash" doc:"Its leaf hash in the organization's ledger (base64)"`
	OrgID    string                 `json:"-"`
	// Leaf is the event's leaf data as stored (auditLeaf, canonical JSON).
	Leaf []byte `json:"-"`
}

// auditLeaf is an audit event's leaf data.
type auditLeaf struct {
	Kind    string                 `json:"kind"`
	OrgID   string                 `json:"orgId"`
	ID      string                 `json:"id"`
	Type    string                 `json:"type"`
	At      Time                   `json:"at"`
	Actor   AuditActor             `json:"actor"`
	Target  AuditTarget            `json:"target"`
	Changes map[string]AuditChange `json:"changes"`
	Reason  string                 `json:"reason,omitempty"`
}

// AuditLeafEvent reads an audit event from its leaf data. Errors: the
// data is not an audit leaf.
func AuditLeafEvent(data []byte) (AuditEvent, error) {
	var l auditLeaf
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&l); err != nil || l.Kind != LeafAudit {
		return AuditEvent{}, fmt.Errorf("not an audit event's leaf")
	}
	if l.Changes == nil {
		l.Changes = map[string]AuditChange{}
	}
	return AuditEvent{ID: l.ID, OrgID: l.OrgID, Type: l.Type, At: l.At, Actor: l.Actor, Target: l.Target, Changes: l.Changes,
		Reason: l.Reason, Leaf: data}, nil
}

// actorOf is the principal as an actor (nil: the operator).
func actorOf(p *Principal) AuditActor {
	if p == nil {
		return AuditActor{Name: "operator"}
	}
	return AuditActor{ID: p.UserID, Name: p.User.Name, Email: p.User.Email}
}

// userActor is a user acting for themselves without a principal (joining,
// signing in).
func userActor(u User) AuditActor { return AuditActor{ID: u.ID, Name: u.Name, Email: u.Email} }

// recordAudit writes an audit event in tx, the transaction of the change it
// records, and queues its ledger entry: both commit with the change or not
// at all. It sets the event's id, time (the service's clock) and leaf hash.
// Any change that is not an action calls it:
//
//	err := s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: "delegation.created", Actor: actorOf(p),
//		Target: AuditTarget{Kind: "user", ID: u.ID, Name: u.Name}, Changes: diffFields(nil, d)})
func (s *Service) recordAudit(tx Tx, ev AuditEvent) error {
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.At.IsZero() {
		ev.At = s.Now()
	}
	if ev.Changes == nil {
		ev.Changes = map[string]AuditChange{}
	}
	ev.Leaf = leafJSON(auditLeaf{Kind: LeafAudit, OrgID: ev.OrgID, ID: ev.ID, Type: ev.Type, At: ev.At, Actor: ev.Actor,
		Target: ev.Target, Changes: ev.Changes, Reason: ev.Reason})
	e := newEntry(ev.OrgID, LeafAudit, "", ev.Leaf, ev.At)
	e.ID = ev.ID
	ev.LeafHash = e.LeafHash.String()
	if err := tx.InsertAuditEvent(ev); err != nil {
		return err
	}
	e.Payload = nil // made from the row, as an action's
	return tx.AppendLedger([]LedgerEntry{e})
}

// auditChange records a change of a definition (a policy, process,
// entity, webhook...) from before to after (nil: none), with the fields
// that differ (diffFields, skipping skip).
func (s *Service) auditChange(tx Tx, p *Principal, typ, kind, id, name string, before, after any, skip ...string) error {
	return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: typ, Actor: actorOf(p),
		Target: AuditTarget{Kind: kind, ID: id, Name: name}, Changes: diffFields(before, after, skip...)})
}

// auditRecord records a record of e created (before nil), changed or
// deleted (after nil): its values by parameter name, each field that
// changed. A value some readers may not see (a parameter hidden from a
// policy, or derived from one) is recorded as changed, never shown.
func (s *Service) auditRecord(tx Tx, p *Principal, typ string, e Entity, id string, before, after map[string]any) error {
	restricted := map[string]bool{}
	hideParams(e.Parameters, func(prm Parameter) bool { return prm.AdvancedOptions != nil && len(prm.AdvancedOptions.HiddenFrom) > 0 }, restricted)
	for _, prm := range e.Parameters { // a TABLE holding a restricted column is said changed, never shown
		if slices.ContainsFunc(prm.Parameters, func(c Parameter) bool { return restricted[c.ID] }) {
			restricted[prm.ID] = true
		}
	}
	if len(restricted) > 0 {
		hideDerived([][]Parameter{e.Parameters}, restricted)
	}
	var b, a any
	if before != nil {
		b = byName(e.Parameters, before)
	}
	if after != nil {
		a = byName(e.Parameters, after)
	}
	changes := diffFields(b, a)
	for _, prm := range e.Parameters {
		if _, ok := changes[prm.Name]; ok && restricted[prm.ID] {
			changes[prm.Name] = secretChanged
		}
	}
	return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: typ, Actor: actorOf(p),
		Target: AuditTarget{Kind: TargetRecord, ID: id, Name: e.Name}, Changes: changes})
}

// AuditQuery narrows a list of audit events; the fields set must all match.
type AuditQuery struct {
	Page     Page
	Type     string
	ActorID  string
	TargetID string
	From, To *Time // at ≥ From, at < To
}

// ListAuditEvents pages the org's audit events, newest first. Errors:
// CodeForbidden without audit:read, CodeInvalid naming to when it is not
// after from.
func (s *Service) ListAuditEvents(ctx context.Context, p *Principal, q AuditQuery) ([]AuditEvent, int, error) {
	if err := p.Require(FnAuditRead); err != nil {
		return nil, 0, err
	}
	if q.From != nil && q.To != nil && !q.To.After(q.From.Time) {
		return nil, 0, Invalid("to", "must be after from")
	}
	var out []AuditEvent
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		out, total, err = tx.ListAuditEvents(p.OrgID, q)
		return err
	})
	if out == nil {
		out = []AuditEvent{}
	}
	return out, total, err
}

// The changes of an audit event are bounded: values longer than this are
// shown only as changed, lists of items name at most maxItems.
const (
	maxChangeValue = 500
	maxItems       = 50
)

// ignoredFields are never changes: ids, versions and times the service sets.
var ignoredFields = []string{"id", "orgId", "createdAt", "updatedAt", "deletedAt", "version", "tokenIds", "processId", "entityId", "index"}

// diffFields lists the top-level fields of before and after (values
// marshalled to JSON objects; nil: none) that differ, except skipped ones.
// Lists of objects with an id (steps, parameters) are compared item by
// item, by id, and named by their name or label; other values show before
// and after when small, else only that they changed.
func diffFields(before, after any, skip ...string) map[string]AuditChange {
	b, a := asObject(before), asObject(after)
	out := map[string]AuditChange{}
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	for k := range keys {
		if slices.Contains(ignoredFields, k) || slices.Contains(skip, k) {
			continue
		}
		bv, av := b[k], a[k]
		if reflect.DeepEqual(bv, av) || isEmptyValue(bv) && isEmptyValue(av) {
			continue
		}
		if c, ok := diffItems(bv, av); ok {
			if c.Added != nil || c.Removed != nil || c.Updated != nil { // else only what is ignored changed
				out[k] = c
			}
			continue
		}
		out[k] = valueChange(bv, av)
	}
	return out
}

// valueChange is a field's change: before and after when small.
func valueChange(bv, av any) AuditChange {
	if jsonLen(bv) > maxChangeValue || jsonLen(av) > maxChangeValue {
		return AuditChange{Changed: true}
	}
	c := AuditChange{Before: bv, After: av}
	if isEmptyValue(bv) {
		c.Before = nil
	}
	if isEmptyValue(av) {
		c.After = nil
	}
	return c
}

// diffItems compares two lists of objects with ids (either may be absent).
func diffItems(bv, av any) (AuditChange, bool) {
	bl, ok1 := itemList(bv)
	al, ok2 := itemList(av)
	if !ok1 || !ok2 || len(bl) == 0 && len(al) == 0 {
		return AuditChange{}, false
	}
	var c AuditChange
	old := map[string]map[string]any{}
	for _, it := range bl {
		old[it["id"].(string)] = it
	}
	seen := map[string]bool{}
	for _, it := range al {
		id := it["id"].(string)
		seen[id] = true
		prev, ok := old[id]
		if !ok {
			c.Added = appendBounded(c.Added, itemName(it))
			continue
		}
		if fields := diffFields(prev, it); len(fields) > 0 {
			names := make([]string, 0, len(fields))
			for f, fc := range fields {
				names = append(names, f+fc.items())
			}
			sort.Strings(names)
			c.Updated = appendBounded(c.Updated, itemName(it)+": "+strings.Join(names, ", "))
		}
	}
	for _, it := range bl {
		if !seen[it["id"].(string)] {
			c.Removed = appendBounded(c.Removed, itemName(it))
		}
	}
	if c.Added == nil && c.Removed == nil && c.Updated == nil && !sameOrder(bl, al) {
		c.Updated = []string{"order"}
	}
	return c, true
}

// items describes the items a list's change added, removed and updated,
// by name, in parentheses ("" for a change of a value).
func (c AuditChange) items() string {
	var parts []string
	for _, p := range []struct {
		verb  string
		names []string
	}{{"added", c.Added}, {"removed", c.Removed}, {"updated", c.Updated}} {
		if len(p.names) > 0 {
			names := p.names
			if p.verb == "updated" { // the item's name, not its fields
				names = make([]string, len(p.names))
				for i, n := range p.names {
					names[i], _, _ = strings.Cut(n, ": ")
				}
			}
			parts = append(parts, p.verb+" "+strings.Join(names, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// sameOrder reports whether two lists of items have the same ids in the
// same order.
func sameOrder(a, b []map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i]["id"] != b[i]["id"] {
			return false
		}
	}
	return true
}

func appendBounded(list []string, s string) []string {
	switch {
	case len(list) < maxItems:
		return append(list, s)
	case len(list) == maxItems:
		return append(list, "…")
	}
	return list
}

// itemList reads a JSON list whose items are all objects with a string id.
func itemList(v any) ([]map[string]any, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		if _, ok := m["id"].(string); !ok {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// itemName is an item's name, label or id.
func itemName(it map[string]any) string {
	for _, k := range []string{"name", "label", "id"} {
		if s, ok := it[k].(string); ok && s != "" {
			if utf8.RuneCountInString(s) > 80 {
				s = string([]rune(s)[:80]) + "…"
			}
			return s
		}
	}
	return "?"
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return maxChangeValue + 1
	}
	return len(b)
}

// asObject is v as a JSON object (numbers as json.Number); nil for none.
func asObject(v any) map[string]any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain values only
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

// secretChanged records that a secret changed, never its value.
var secretChanged = AuditChange{Changed: true}
