package console

import (
	"net/http"
	"net/url"
	"time"

	"wps/internal/wps"
)

// The user's absence: delegations of their seats, given and received.

type delegationsData struct {
	wps.Delegations
	People   []wps.Colleague   // the org's users, by name
	Names    map[string]string // user id → name
	Me       string
	Policies []string // the caller's own policies
	Form     url.Values
	Error    string
	Fields   map[string]string
}

func (c *Console) delegations(q *req) error {
	return c.showDelegations(q, http.StatusOK, delegationsData{})
}

func (c *Console) showDelegations(q *req, status int, d delegationsData) error {
	var err error
	if d.Delegations, err = c.svc.ListDelegations(q.ctx(), q.p); err != nil {
		return err
	}
	if d.People, err = c.svc.Colleagues(q.ctx(), q.p); err != nil {
		return err
	}
	d.Names, d.Me = map[string]string{}, q.p.UserID
	for _, u := range d.People {
		d.Names[u.ID] = u.Name
	}
	for _, pol := range q.p.Policies {
		d.Policies = append(d.Policies, pol.Name)
	}
	c.render(q, status, "delegations", q.t("deleg.title"), d)
	return nil
}

// delegate records the absence the form describes: from the start date
// (today: now) to the end of the end date, in the user's time zone.
func (c *Console) delegate(q *req) error {
	if err := q.r.ParseForm(); err != nil {
		return wps.Invalid("form", "unreadable form")
	}
	f := q.r.PostForm
	loc := time.UTC
	if l, err := time.LoadLocation(q.p.User.TimeZone); err == nil && q.p.User.TimeZone != "" {
		loc = l
	}
	in := wps.DelegationInput{ToUserID: f.Get("toUserId"), PolicyNames: f["policyNames"], Reason: f.Get("reason"), EndsAt: f.Get("endsAt")}
	if t, err := time.ParseInLocation("2006-01-02", f.Get("startsAt"), loc); err == nil {
		in.StartsAt = t.Format(time.RFC3339)
	}
	if t, err := time.ParseInLocation("2006-01-02", f.Get("endsAt"), loc); err == nil {
		in.EndsAt = t.AddDate(0, 0, 1).Format(time.RFC3339) // the whole last day
	}
	if _, err := c.svc.CreateDelegation(q.ctx(), q.p, in); err != nil {
		if !wps.IsCode(err, wps.CodeInvalid) {
			return err
		}
		return c.showDelegations(q, http.StatusUnprocessableEntity, delegationsData{Form: f, Error: q.t("error.attention"), Fields: q.fieldErrors(err, "")})
	}
	return q.redirect("/settings/delegations", "saved")
}

func (c *Console) revokeDelegation(q *req) error {
	if err := c.svc.RevokeDelegation(q.ctx(), q.p, q.r.PathValue("id")); err != nil {
		return err
	}
	return q.redirect("/settings/delegations", "revoked")
}
