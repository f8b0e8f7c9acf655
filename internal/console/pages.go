package console

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wps/internal/identity"
	"wps/internal/lang"
	"wps/internal/notify"
	"wps/internal/wps"
)

// Signing in and out.

type signInData struct {
	Email, Next, Error string
	Org                string // ?org=: "Sign in with SSO" names the org
	Mail               bool   // the service mails: "Forgot your password?" is offered
}

func (c *Console) signInPage(q *req) error {
	c.render(q, http.StatusOK, "signin", q.t("title.signin"), signInData{Next: localPath(q.r.URL.Query().Get("next")), Org: q.r.URL.Query().Get("org"), Mail: c.svc.MailEnabled()})
	return nil
}

// signIn starts a new session (a new token every time: a session id known
// before sign-in is never kept) and goes where the person was going.
func (c *Console) signIn(q *req) error {
	email, next := q.r.PostFormValue("email"), localPath(q.r.PostFormValue("next"))
	out, err := c.svc.SignIn(q.ctx(), wps.SignInInput{Email: email, Password: q.r.PostFormValue("password"), Address: clientAddr(q.r)})
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) || wps.IsCode(err, wps.CodeUnauthorized) || wps.IsCode(err, wps.CodeForbidden) || wps.IsCode(err, wps.CodeRateLimited) {
			c.render(q, statusOf(err), "signin", q.t("title.signin"), signInData{Email: email, Next: next, Error: q.message(err), Mail: c.svc.MailEnabled()})
			return nil
		}
		return err
	}
	ck := identity.SessionCookie(out.Token, out.ExpiresAt.Time, q.r.TLS != nil || c.opt.SecureCookies)
	http.SetCookie(q.w, &ck)
	return q.redirect(next, "")
}

func (c *Console) signOut(q *req) error {
	if err := c.svc.SignOut(q.ctx(), q.p); err != nil {
		return err
	}
	ck := identity.SessionCookie("", time.Time{}, q.r.TLS != nil || c.opt.SecureCookies)
	http.SetCookie(q.w, &ck)
	return q.redirect("/signin", "signedout")
}

type inviteData struct {
	Token, Name, Error string
	Fields             map[string]string
}

func (c *Console) invitePage(q *req) error {
	c.render(q, http.StatusOK, "invite", q.t("title.invite"), inviteData{Token: q.r.PathValue("token")})
	return nil
}

func (c *Console) acceptInvite(q *req) error {
	d := inviteData{Token: q.r.PathValue("token"), Name: q.r.PostFormValue("name")}
	pw := q.r.PostFormValue("password")
	if pw != q.r.PostFormValue("confirm") {
		d.Fields = map[string]string{"confirm": q.t("password.mismatch")}
		c.render(q, http.StatusUnprocessableEntity, "invite", q.t("title.invite"), d)
		return nil
	}
	if pw == "" {
		d.Fields = map[string]string{"password": q.t("password.required")}
		c.render(q, http.StatusUnprocessableEntity, "invite", q.t("title.invite"), d)
		return nil
	}
	if _, err := c.svc.AcceptInvite(q.ctx(), d.Token, d.Name, pw); err != nil {
		if !wps.IsCode(err, wps.CodeInvalid) {
			return err
		}
		d.Error, d.Fields = q.message(err), q.fieldErrors(err, "")
		if d.Fields["password"] != "" || d.Fields["confirm"] != "" {
			d.Error = q.t("error.attention") // said once, by the field
		}
		c.render(q, http.StatusUnprocessableEntity, "invite", q.t("title.invite"), d)
		return nil
	}
	return q.redirect("/signin", "welcome")
}

// Password reset by mail.

type forgotData struct {
	Email, Error string
	Mail         bool // without mail no link can be sent: the page says to ask an administrator
}

func (c *Console) forgotPage(q *req) error {
	c.render(q, http.StatusOK, "forgot", q.t("title.forgot"), forgotData{Mail: c.svc.MailEnabled()})
	return nil
}

// forgot asks for a reset link; the page says the same whether or not
// the email is known.
func (c *Console) forgot(q *req) error {
	email := q.r.PostFormValue("email")
	if !c.svc.MailEnabled() {
		return c.forgotPage(q)
	}
	if err := c.svc.RequestPasswordReset(q.ctx(), email, clientAddr(q.r)); err != nil {
		if wps.IsCode(err, wps.CodeInvalid) || wps.IsCode(err, wps.CodeRateLimited) {
			c.render(q, statusOf(err), "forgot", q.t("title.forgot"), forgotData{Email: email, Error: q.message(err), Mail: true})
			return nil
		}
		return err
	}
	return q.redirect("/signin", "resetsent")
}

type resetData struct {
	Token, Error string
	Gone         bool // the link cannot be used: ask for another
	Fields       map[string]string
}

func (c *Console) resetPage(q *req) error {
	c.render(q, http.StatusOK, "reset", q.t("title.reset"), resetData{Token: q.r.PathValue("token")})
	return nil
}

func (c *Console) reset(q *req) error {
	d := resetData{Token: q.r.PathValue("token")}
	pw := q.r.PostFormValue("password")
	if pw != q.r.PostFormValue("confirm") {
		d.Fields = map[string]string{"confirm": q.t("password.mismatch")}
		c.render(q, http.StatusUnprocessableEntity, "reset", q.t("title.reset"), d)
		return nil
	}
	err := c.svc.AcceptPasswordReset(q.ctx(), d.Token, pw)
	switch {
	case err == nil:
		return q.redirect("/signin", "reset")
	case wps.IsCode(err, wps.CodeInvalid):
		d.Error, d.Fields = q.t("error.attention"), q.fieldErrors(err, "")
	case wps.IsCode(err, wps.CodeGone) || wps.IsCode(err, wps.CodeNotFound):
		d.Error, d.Gone = q.t("reset.gone"), true
	default:
		return err
	}
	c.render(q, statusOf(err), "reset", q.t("title.reset"), d)
	return nil
}

// The user's settings: language, time zone, mail about work.

type settingsData struct {
	Email    string
	Mail     bool // mail is on (WPS_SMTP_URL)
	Locale   string
	TimeZone string
	Locales  []string // the languages, each named in itself (lang.name.*)
	Zones    []string // time zones offered (any IANA name may be typed)
	Error    string
	Fields   map[string]string
}

// zones are the time zones the settings page suggests.
var zones = []string{"UTC", "America/Sao_Paulo", "America/Manaus", "America/Recife", "America/Argentina/Buenos_Aires", "America/Santiago",
	"America/Bogota", "America/Lima", "America/Mexico_City", "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
	"Europe/Lisbon", "Europe/London", "Europe/Madrid", "Europe/Paris", "Europe/Berlin", "Africa/Luanda", "Africa/Maputo", "Asia/Tokyo", "Australia/Sydney"}

func (c *Console) settings(q *req) error {
	prefs, err := notify.GetNotificationPrefs(q.ctx(), c.svc, q.p)
	if err != nil {
		return err
	}
	return c.showSettings(q, http.StatusOK, settingsData{Email: prefs.Email, Locale: q.p.User.Locale, TimeZone: q.p.User.TimeZone})
}

func (c *Console) showSettings(q *req, status int, d settingsData) error {
	d.Mail, d.Locales, d.Zones = c.svc.MailEnabled(), lang.Supported, zones
	c.render(q, status, "settings", q.t("nav.settings"), d)
	return nil
}

// saveSettings saves the language and time zone (PATCH /v1/users/me) and
// the choice of mail; the next page is in the new language.
func (c *Console) saveSettings(q *req) error {
	d := settingsData{Email: q.r.PostFormValue("email"), Locale: q.r.PostFormValue("locale"), TimeZone: strings.TrimSpace(q.r.PostFormValue("timeZone"))}
	_, err := c.svc.UpdateMe(q.ctx(), q.p, wps.MeUpdate{Locale: &d.Locale, TimeZone: &d.TimeZone})
	if err == nil {
		_, err = notify.SetNotificationPrefs(q.ctx(), c.svc, q.p, wps.NotificationPrefs{Email: d.Email})
	}
	if wps.IsCode(err, wps.CodeInvalid) {
		d.Error, d.Fields = q.t("error.attention"), q.fieldErrors(err, "")
		return c.showSettings(q, http.StatusUnprocessableEntity, d)
	}
	if err != nil {
		return err
	}
	return q.redirect("/settings", "saved")
}

// Measurements.

type listData struct {
	Items     []row
	Total     int
	Page      int
	Pages     int
	Query     url.Values
	Processes []wps.ProcessName
	CanStart  bool
	Statuses  []string
	Prev      string
	Next      string
	Inbox     bool
}

// row is a measurement in a list, with what the list shows of its steps.
type row struct {
	wps.MeasurementSummary
	Process string
	Icon    string
	Steps   []string // the open steps' labels
	Due     wps.Time
	Overdue bool
}

const perPage = 25

func (c *Console) inbox(q *req) error {
	return c.list(q, true)
}

func (c *Console) measurements(q *req) error {
	return c.list(q, false)
}

// list is the Inbox (measurements with a seat the user can fill now) and
// the list of all measurements, with their filters.
func (c *Console) list(q *req, inbox bool) error {
	v := q.r.URL.Query()
	page, _ := strconv.Atoi(v.Get("page"))
	page = max(page, 1)
	mq := wps.MeasurementQuery{Page: wps.Page{Page: page, PerPage: perPage}, Actionable: inbox,
		ProcessID: v.Get("process"), Status: v.Get("status"), Overdue: v.Get("overdue") == "on", Name: strings.TrimSpace(v.Get("q"))}
	list, total, err := c.svc.ListMeasurements(q.ctx(), q.p, mq)
	if err != nil {
		if wps.IsCode(err, wps.CodeInvalid) {
			c.render(q, http.StatusUnprocessableEntity, "error", q.t("nav.measurements"), map[string]any{"Status": 422, "StatusText": q.t("list.invalidFilter"), "Message": q.message(err)})
			return nil
		}
		return err
	}
	procs, err := c.svc.ProcessNames(q.ctx(), q.p)
	if err != nil {
		return err
	}
	names := map[string]wps.ProcessName{}
	for _, p := range procs {
		names[p.ID] = p
	}
	d := listData{Total: total, Page: page, Pages: (total + perPage - 1) / perPage, Query: v, Processes: procs, Inbox: inbox,
		Statuses: wps.MeasurementStatuses, CanStart: q.p.Can(wps.FnMeasurementCreate)}
	for _, m := range list {
		r := row{MeasurementSummary: m, Process: names[m.ProcessID].Label, Icon: names[m.ProcessID].IconName}
		if r.Process == "" {
			r.Process = names[m.ProcessID].Name
		}
		if inbox { // the steps waiting on the user, with their deadlines
			for _, a := range m.ActionableSteps {
				if a.OnBehalfOf != nil { // received by a delegation
					r.Steps = append(r.Steps, q.t("inbox.forWhom", "Step", a.Label, "For", a.OnBehalfOf.Name))
				} else {
					r.Steps = append(r.Steps, a.Label)
				}
				if a.DueAt != nil && (r.Due.IsZero() || a.DueAt.Before(r.Due.Time)) {
					r.Due = *a.DueAt
				}
				r.Overdue = r.Overdue || a.Overdue
			}
		} else {
			for _, id := range m.OpenStepIDs {
				if l := names[m.ProcessID].Steps[id]; l != "" {
					r.Steps = append(r.Steps, l)
				}
			}
		}
		d.Items = append(d.Items, r)
	}
	if page > 1 {
		d.Prev = pageURL(q.r.URL.Path, v, page-1)
	}
	if page < d.Pages {
		d.Next = pageURL(q.r.URL.Path, v, page+1)
	}
	title := q.t("list.all")
	if inbox {
		title = q.t("nav.inbox")
	}
	c.render(q, http.StatusOK, "list", title, d)
	return nil
}

// startMeasurement starts a measurement of the chosen process and opens it.
func (c *Console) startMeasurement(q *req) error {
	m, err := c.svc.CreateMeasurement(q.ctx(), q.p, q.r.PostFormValue("processId"))
	if err != nil {
		return err
	}
	return q.redirect("/measurements/"+url.PathEscape(m.ID), "started")
}

// file sends an attachment the user may download (the service decides).
func (c *Console) file(q *req) error {
	a, rc, err := c.svc.OpenAttachment(q.ctx(), q.p, c.opt.Blobs, q.r.PathValue("id"))
	if err != nil {
		return err
	}
	defer rc.Close()
	h := q.w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("Content-Disposition", "inline; filename*=UTF-8''"+url.PathEscape(a.Filename))
	if !strings.HasPrefix(a.ContentType, "image/") || a.ContentType == "image/svg+xml" {
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(a.Filename))
	}
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, err = io.Copy(q.w, rc)
	return nil
}
