package console

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"wps/internal/wps"
)

// auditData is the Audit page: the audit events the filters select.
type auditData struct {
	Events      []auditRow
	Users       []wps.User
	Type, Actor string
	From, To    string // dates (YYYY-MM-DD) as the form sent them
	Total, Page int
	Prev, Next  string
	Types       []string
	Error       string
}

// auditRow is an event with its changes as text, field by field.
type auditRow struct {
	wps.AuditEvent
	Changes []auditLine
}

type auditLine struct{ Field, Before, After string }

// auditTypes are the types the filter offers.
var auditTypes = []string{wps.AuditUserInvited, wps.AuditUserJoined, wps.AuditUserCreated, wps.AuditUserUpdated, wps.AuditUserRolesChanged,
	wps.AuditPasswordChanged, wps.AuditAPIKeyCreated, wps.AuditAPIKeyRevoked, wps.AuditSessionCreated, wps.AuditSessionEnded, wps.AuditInviteRevoked,
	wps.AuditPolicyCreated, wps.AuditPolicyUpdated, wps.AuditPolicyDeleted, wps.AuditProcessCreated, wps.AuditProcessUpdated,
	wps.AuditProcessDeleted, wps.AuditProcessRestored, wps.AuditEntityCreated, wps.AuditEntityUpdated, wps.AuditEntityDeleted,
	wps.AuditEntityRestored, wps.AuditRecordCreated, wps.AuditRecordUpdated, wps.AuditRecordDeleted, wps.AuditNotificationPrefs, wps.AuditOrgUpdated, wps.AuditCalendarUpdated, wps.AuditSSOUpdated, wps.AuditWebhookCreated,
	wps.AuditWebhookUpdated, wps.AuditWebhookDeleted, wps.AuditWebhookSecret, wps.AuditChatCreated, wps.AuditChatDeleted,
	wps.AuditTemplateCreated, wps.AuditTemplateUpdated, wps.AuditTemplateDeleted, wps.AuditSheetCreated, wps.AuditSheetDeleted,
	wps.AuditDelegationCreated, wps.AuditDelegationRevoked, wps.AuditProcessMigrated}

// audit shows the audit events, newest first, filtered by type, actor and
// dates (in the user's time zone), 50 a page.
func (c *Console) audit(q *req) error {
	v := q.r.URL.Query()
	d := auditData{Type: v.Get("type"), Actor: v.Get("actor"), From: v.Get("from"), To: v.Get("to"), Types: auditTypes}
	d.Page, _ = strconv.Atoi(v.Get("page"))
	d.Page = max(d.Page, 1)
	query := wps.AuditQuery{Page: wps.Page{Page: d.Page, PerPage: 50}, Type: d.Type, ActorID: d.Actor}
	loc := time.UTC
	if l, err := time.LoadLocation(q.p.User.TimeZone); err == nil && q.p.User.TimeZone != "" {
		loc = l // the user's dates
	}
	if t, err := time.ParseInLocation(time.DateOnly, d.From, loc); err == nil {
		at := wps.At(t)
		query.From = &at
	}
	if t, err := time.ParseInLocation(time.DateOnly, d.To, loc); err == nil {
		at := wps.At(t.AddDate(0, 0, 1)) // the whole day
		query.To = &at
	}
	events, total, err := c.svc.ListAuditEvents(q.ctx(), q.p, query)
	if wps.IsCode(err, wps.CodeInvalid) {
		d.Error, err = q.t("audit.badRange"), nil
	}
	if err != nil {
		return err
	}
	if d.Users, _, err = c.svc.ListUsers(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 500}); wps.IsCode(err, wps.CodeForbidden) {
		err = nil
	}
	if err != nil {
		return err
	}
	d.Total = total
	for _, e := range events {
		d.Events = append(d.Events, auditRow{AuditEvent: e, Changes: changeLines(q, e.Changes)})
	}
	if d.Page > 1 {
		d.Prev = pageURL(q.r.URL.Path, v, d.Page-1)
	}
	if d.Page*50 < total {
		d.Next = pageURL(q.r.URL.Path, v, d.Page+1)
	}
	c.render(q, http.StatusOK, "audit", q.t("audit.title"), d)
	return nil
}

// changeLines are an event's changes as text, by field, in the page's words.
func changeLines(q *req, changes map[string]wps.AuditChange) []auditLine {
	out := make([]auditLine, 0, len(changes))
	for f, ch := range changes {
		l := auditLine{Field: f, Before: changeText(ch.Before), After: changeText(ch.After)}
		switch {
		case ch.Changed:
			l.After = q.t("audit.secret")
		case ch.Added != nil || ch.Removed != nil || ch.Updated != nil:
			l.Before, l.After = "", ""
			for _, p := range []struct {
				verb  string
				names []string
			}{{q.t("audit.added") + " ", ch.Added}, {q.t("audit.removed") + " ", ch.Removed}, {q.t("audit.updated") + " ", ch.Updated}} {
				if len(p.names) > 0 {
					b, _ := json.Marshal(p.names)
					if l.After != "" {
						l.After += "; "
					}
					l.After += p.verb + string(b)
				}
			}
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// changeText is a value as text: strings as they are, others as JSON.
func changeText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
