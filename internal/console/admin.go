package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"wps/internal/identity"
	"wps/internal/notify"
	"wps/internal/wps"
)

type adminLink struct{ Href, Label, Text string } // Label and Text: message ids

// adminLinks are the admin pages the user's functions open.
func adminLinks(p *wps.Principal) []adminLink {
	var out []adminLink
	if p.Can(wps.FnUsersRead) {
		out = append(out, adminLink{"/admin/users", "title.users", "admin.users"})
		out = append(out, adminLink{"/admin/policies", "title.policies", "admin.policies"})
	}
	if p.Can(wps.FnWebhooksManage) {
		out = append(out, adminLink{"/admin/webhooks", "title.webhooks", "admin.webhooks"})
	}
	if p.Can(wps.FnOrgUpdate) {
		out = append(out, adminLink{"/admin/org", "title.org", "admin.org"})
		out = append(out, adminLink{"/admin/sso", "title.sso", "admin.sso"})
	}
	if p.Can(wps.FnAuditRead) {
		out = append(out, adminLink{"/admin/audit", "audit.title", "admin.audit"})
	}
	return out
}

func (c *Console) admin(q *req) error {
	links := adminLinks(q.p)
	if len(links) == 0 {
		return wps.Errorf(wps.CodeForbidden, "%s", q.t("admin.none"))
	}
	c.render(q, http.StatusOK, "admin", q.t("nav.admin"), links)
	return nil
}

// Users.

type usersData struct {
	Users     []wps.User
	Invites   []wps.Invite
	Roles     []string // every role a policy names, for the pickers
	NewInvite *wps.Invite
	InviteURL string
	Error     string
	Fields    map[string]string
	Form      url.Values
	// The refused invitation's roles: those of the pickers ticked, the rest typed.
	InviteRoles []string
	OtherRoles  string
	CanManage   bool
	CanInvite   bool
	CanRoles    bool
	// SSO is each user's last sign-in through single sign-on, by user id.
	SSO   map[string]wps.SSOSignInRecord
	Mail  bool               // messages are mailed (WPS_SMTP_URL is set)
	Mails []wps.Notification // the latest messages, for users:manage: failures show here
}

func (c *Console) users(q *req) error { return c.showUsers(q, http.StatusOK, usersData{}) }

func (c *Console) showUsers(q *req, status int, d usersData) error {
	list, _, err := c.svc.ListUsers(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 500})
	if err != nil {
		return err
	}
	d.Users = list
	if d.SSO, err = identity.SSOSignIns(q.ctx(), c.svc, q.p); err != nil {
		return err
	}
	d.CanManage, d.CanInvite, d.CanRoles = q.p.Can(wps.FnUsersManage), q.p.Can(wps.FnUsersInvite), q.p.Can(wps.FnRolesManage)
	d.Mail = c.svc.MailEnabled()
	if d.CanManage && d.Mail {
		if d.Mails, _, err = notify.ListNotifications(q.ctx(), c.svc, q.p, wps.NotificationQuery{Page: wps.Page{Page: 1, PerPage: 10}}); err != nil {
			return err
		}
	}
	if d.CanInvite {
		if d.Invites, err = c.svc.ListInvites(q.ctx(), q.p); err != nil {
			return err
		}
	}
	d.Roles = []string{wps.RoleAdmin}
	for _, pol := range q.p.OrgPolicies {
		for _, r := range pol.Roles {
			if !slices.Contains(d.Roles, r) {
				d.Roles = append(d.Roles, r)
			}
		}
	}
	var other []string
	for _, r := range splitRoles(d.Form["roles"]) {
		if slices.Contains(d.Roles, r) {
			d.InviteRoles = append(d.InviteRoles, r)
		} else {
			other = append(other, r)
		}
	}
	d.OtherRoles = strings.Join(other, ", ")
	c.render(q, status, "users", q.t("title.users"), d)
	return nil
}

// invite creates an invitation and shows its link once.
func (c *Console) invite(q *req) error {
	in := wps.InviteInput{Email: strings.TrimSpace(q.r.PostFormValue("email")), Name: strings.TrimSpace(q.r.PostFormValue("name")),
		Roles: splitRoles(q.r.PostForm["roles"])}
	inv, err := c.svc.Invite(q.ctx(), q.p, in)
	if err != nil {
		if !wps.IsCode(err, wps.CodeInvalid) && !wps.IsCode(err, wps.CodeConflict) {
			return err
		}
		return c.showUsers(q, statusOf(err), usersData{Error: q.message(err), Fields: q.fieldErrors(err, ""), Form: q.r.PostForm})
	}
	link := c.svc.Link("/invite/" + inv.Token) // the invitation mail's link, when the server knows its address
	if !strings.HasPrefix(link, "http") {
		u := url.URL{Scheme: "http", Host: q.r.Host, Path: "/invite/" + inv.Token}
		if q.r.TLS != nil || c.opt.SecureCookies {
			u.Scheme = "https"
		}
		link = u.String()
	}
	return c.showUsers(q, http.StatusCreated, usersData{NewInvite: &inv, InviteURL: link})
}

// splitRoles reads roles from checkboxes and a free text box (comma separated).
func splitRoles(vs []string) []string {
	out := []string{}
	for _, v := range vs {
		for _, r := range strings.Split(v, ",") {
			if r = strings.ToUpper(strings.TrimSpace(r)); r != "" && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// updateUser deactivates or reactivates a user, or gives or takes a role.
func (c *Console) updateUser(q *req) error {
	id := q.r.PathValue("id")
	var err error
	done := "updated"
	switch q.r.PostFormValue("do") {
	case "deactivate", "reactivate":
		st := wps.UserDeactivated
		if q.r.PostFormValue("do") == "reactivate" {
			st = wps.UserActive
		} else {
			done = "deactivated"
		}
		_, err = c.svc.UpdateUser(q.ctx(), q.p, id, wps.UserUpdate{Status: &st})
	case "assign":
		_, err = c.svc.AssignRole(q.ctx(), q.p, id, strings.ToUpper(strings.TrimSpace(q.r.PostFormValue("role"))))
	case "revoke":
		_, err = c.svc.RevokeRole(q.ctx(), q.p, id, q.r.PostFormValue("role"))
	default:
		return wps.Invalid("do", "must be deactivate, reactivate, assign or revoke")
	}
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) || wps.IsCode(err, wps.CodeConflict) {
			return c.showUsers(q, statusOf(err), usersData{Error: q.message(err)})
		}
		return err
	}
	return q.redirect("/admin/users", done)
}

// Policies.

type policiesData struct {
	Items     []wps.Policy
	Functions []wps.Function
	Error     string
	New       url.Values // the refused new policy, to fill its form again
	CanManage bool
}

func (c *Console) policies(q *req) error { return c.showPolicies(q, http.StatusOK, policiesData{}) }

func (c *Console) showPolicies(q *req, status int, d policiesData) error {
	list, err := c.svc.ListPolicies(q.ctx(), q.p)
	if err != nil {
		return err
	}
	d.Items, d.Functions, d.CanManage = list, wps.Functions, q.p.Can(wps.FnPoliciesManage)
	c.render(q, status, "policies", q.t("title.policies"), d)
	return nil
}

// savePolicy creates a policy, or (with id) updates or deletes one.
func (c *Console) savePolicy(q *req) error {
	f := q.r.PostForm
	in := wps.PolicyInput{Name: strings.TrimSpace(f.Get("name")), Roles: splitRoles(f["roles"]), Functions: f["functions"]}
	if in.Functions == nil {
		in.Functions = []string{}
	}
	var err error
	switch id := f.Get("id"); {
	case id == "":
		_, err = c.svc.CreatePolicy(q.ctx(), q.p, in)
	case f.Get("do") == "delete":
		err = c.svc.DeletePolicy(q.ctx(), q.p, id)
	default:
		_, err = c.svc.UpdatePolicy(q.ctx(), q.p, id, in)
	}
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) || wps.IsCode(err, wps.CodeConflict) {
			d := policiesData{Error: q.message(err)}
			if f.Get("id") == "" {
				d.New = f
			}
			return c.showPolicies(q, statusOf(err), d)
		}
		return err
	}
	return q.redirect("/admin/policies", "updated")
}

// Webhooks.

type webhooksData struct {
	Items      []wps.Webhook
	Deliveries []wps.Delivery
	Total      int
	Status     string
	Secret     string
	Error      string
	Form       url.Values
}

func (c *Console) webhooks(q *req) error { return c.showWebhooks(q, http.StatusOK, webhooksData{}) }

func (c *Console) showWebhooks(q *req, status int, d webhooksData) error {
	list, err := c.svc.ListWebhooks(q.ctx(), q.p)
	if err != nil {
		return err
	}
	d.Items = list
	d.Status = q.r.URL.Query().Get("status")
	page, _ := strconv.Atoi(q.r.URL.Query().Get("page"))
	d.Deliveries, d.Total, err = c.svc.ListDeliveries(q.ctx(), q.p, wps.DeliveryQuery{Page: wps.Page{Page: max(page, 1), PerPage: 50}, Status: d.Status})
	if err != nil && !wps.IsCode(err, wps.CodeInvalid) {
		return err
	}
	c.render(q, status, "webhooks", q.t("title.webhooks"), d)
	return nil
}

func (c *Console) createWebhook(q *req) error {
	f := q.r.PostForm
	if id := f.Get("id"); id != "" {
		if err := c.svc.DeleteWebhook(q.ctx(), q.p, id); err != nil {
			return err
		}
		return q.redirect("/admin/webhooks", "updated")
	}
	u := strings.TrimSpace(f.Get("url"))
	events := []string{}
	for _, e := range strings.Split(f.Get("events"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			events = append(events, e)
		}
	}
	w, err := c.svc.CreateWebhook(q.ctx(), q.p, wps.WebhookInput{URL: &u, Events: &events})
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) {
			return c.showWebhooks(q, statusOf(err), webhooksData{Error: q.message(err), Form: f})
		}
		return err
	}
	return c.showWebhooks(q, http.StatusCreated, webhooksData{Secret: w.Secret})
}

func (c *Console) retryDelivery(q *req) error {
	if _, err := c.svc.RetryDelivery(q.ctx(), q.p, q.r.PathValue("id")); err != nil {
		return err
	}
	return q.redirect("/admin/webhooks", "retried")
}

// Org settings.

type orgData struct {
	Sections []navItem
	Error    string
	Fields   map[string]string
	Contrast string
	Logo     bool // the user may upload a logo (wps.Principal.CanUpload)
	// The values the form shows: the org's, or what was sent and refused.
	ThemeColor, PinnedURL string
	Operations            []string
}

func (c *Console) orgSettings(q *req) error {
	if err := q.p.Require(wps.FnOrgUpdate); err != nil {
		return err
	}
	return c.showOrg(q, http.StatusOK, orgData{ThemeColor: q.org.ThemeColor, PinnedURL: q.org.PinnedURL, Operations: q.org.Operations})
}

func (c *Console) showOrg(q *req, status int, d orgData) error {
	d.Sections, d.Logo = sections, q.p.CanUpload()
	if col, ok := parseHex(q.org.ThemeColor); ok {
		d.Contrast = strconv.FormatFloat(contrast(col, onColor(col)), 'f', 1, 64)
	}
	c.render(q, status, "org", q.t("title.org"), d)
	return nil
}

// saveOrg updates the org's settings; a logo file is uploaded first and
// its attachment id becomes logoKey.
func (c *Console) saveOrg(q *req) error {
	f := q.r.PostForm
	u := wps.OrgUpdate{}
	pinned, color := strings.TrimSpace(f.Get("pinnedUrl")), strings.TrimSpace(f.Get("themeColor"))
	ops := f["operations"]
	if ops == nil {
		ops = []string{}
	}
	u.PinnedURL, u.ThemeColor, u.Operations = &pinned, &color, &ops
	if q.r.MultipartForm != nil {
		if fhs := q.r.MultipartForm.File["logo"]; len(fhs) > 0 {
			file, err := fhs[0].Open()
			if err != nil {
				return err
			}
			a, err := c.svc.Upload(q.ctx(), q.p, c.opt.Blobs, fhs[0].Filename, fhs[0].Header.Get("Content-Type"), file)
			file.Close()
			if err != nil {
				if !wps.IsCode(err, wps.CodeForbidden) && !wps.IsCode(err, wps.CodeInvalid) && !wps.IsCode(err, wps.CodeTooLarge) {
					return err
				}
				// Refused (no right to upload, too large): the form again, as typed.
				return c.showOrg(q, statusOf(err), orgData{Error: q.message(err), ThemeColor: color, PinnedURL: pinned, Operations: ops})
			}
			if !strings.HasPrefix(a.ContentType, "image/") || a.ContentType == "image/svg+xml" {
				return c.showOrg(q, http.StatusUnprocessableEntity, orgData{Error: q.t("error.attention"), Fields: map[string]string{"logo": q.t("org.logoType")},
					ThemeColor: color, PinnedURL: pinned, Operations: ops})
			}
			u.LogoKey = &a.ID
		}
	}
	if f.Get("removeLogo") == "on" {
		empty := ""
		u.LogoKey = &empty
	}
	org, err := c.svc.UpdateOrg(q.ctx(), q.p, u)
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) {
			d := orgData{Error: q.t("error.attention"), Fields: q.fieldErrors(err, ""), ThemeColor: color, PinnedURL: pinned, Operations: ops}
			if len(d.Fields) == 0 {
				d.Error = q.message(err)
			}
			return c.showOrg(q, statusOf(err), d)
		}
		return err
	}
	q.org = org
	return q.redirect("/admin/org", "updated")
}
