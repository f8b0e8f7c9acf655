package console

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"wps/internal/identity"
	"wps/internal/wps"
)

// Single sign-on: the org's OpenID provider (docs/sso.md).

type ssoData struct {
	Error, Notice string
	Fields        map[string]string
	On            bool // settings are saved
	SecretSet     bool
	// The values the form shows: the saved ones, or what was sent.
	Issuer, ClientID, EmailDomains, GroupsClaim, GroupRoles, PasswordSignIn string
	AutoCreate                                                              bool
	StartURL                                                                string
}

func ssoForm(s wps.SSOSettings) ssoData {
	var roles []string
	for _, g := range slices.Sorted(maps.Keys(s.GroupRoles)) {
		roles = append(roles, g+": "+strings.Join(s.GroupRoles[g], ", "))
	}
	return ssoData{Issuer: s.Issuer, ClientID: s.ClientID, EmailDomains: strings.Join(s.EmailDomains, ", "), GroupsClaim: s.GroupsClaim,
		GroupRoles: strings.Join(roles, "\n"), PasswordSignIn: s.PasswordSignIn, AutoCreate: s.AutoCreateUsers, SecretSet: s.ClientSecretSet}
}

func (c *Console) ssoSettings(q *req) error {
	s, err := identity.GetSSO(q.ctx(), c.svc, q.p)
	d := ssoForm(s)
	switch {
	case wps.IsCode(err, wps.CodeNotFound):
		d.PasswordSignIn = wps.PasswordAllowed
	case err != nil:
		return err
	default:
		d.On = true
	}
	return c.showSSO(q, http.StatusOK, d)
}

func (c *Console) showSSO(q *req, status int, d ssoData) error {
	d.StartURL = "/sso/start?org=" + q.p.OrgID
	c.render(q, status, "sso", q.t("title.sso"), d)
	return nil
}

// saveSSO saves the settings, tests the issuer (action=test: its discovery
// document is fetched, nothing saved) or turns SSO off (action=off).
func (c *Console) saveSSO(q *req) error {
	f := q.r.PostForm
	d := ssoData{Issuer: strings.TrimSpace(f.Get("issuer")), ClientID: strings.TrimSpace(f.Get("clientId")), EmailDomains: f.Get("emailDomains"),
		GroupsClaim: strings.TrimSpace(f.Get("groupsClaim")), GroupRoles: f.Get("groupRoles"), PasswordSignIn: f.Get("passwordSignIn"),
		AutoCreate: f.Get("autoCreateUsers") == "on", On: f.Get("on") == "true", SecretSet: f.Get("secretSet") == "true"}
	refused := func(err error) error {
		if !wps.IsCode(err, wps.CodeInvalid) && !wps.IsCode(err, wps.CodeConflict) {
			return err
		}
		d.Error, d.Fields = q.t("error.attention"), q.fieldErrors(err, "")
		if len(d.Fields) == 0 {
			d.Error = q.message(err)
		}
		return c.showSSO(q, statusOf(err), d)
	}
	switch f.Get("action") {
	case "test":
		if err := identity.TestSSOIssuer(q.ctx(), c.svc, q.p, d.Issuer); err != nil {
			return refused(err)
		}
		d.Notice = q.t("sso.works")
		return c.showSSO(q, http.StatusOK, d)
	case "off":
		if err := identity.DeleteSSO(q.ctx(), c.svc, q.p); err != nil && !wps.IsCode(err, wps.CodeNotFound) {
			return err
		}
		return q.redirect("/admin/sso", "updated")
	}
	in := identity.SSOInput{Issuer: d.Issuer, ClientID: d.ClientID, GroupsClaim: d.GroupsClaim, AutoCreateUsers: d.AutoCreate,
		PasswordSignIn: d.PasswordSignIn, EmailDomains: strings.FieldsFunc(d.EmailDomains, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' })}
	if secret := f.Get("clientSecret"); secret != "" {
		in.ClientSecret = &secret
	}
	in.GroupRoles = map[string][]string{}
	for _, line := range strings.Split(d.GroupRoles, "\n") {
		group, roles, ok := strings.Cut(line, ":")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !ok {
			d.Error, d.Fields = q.t("error.attention"), map[string]string{"groupRoles": q.t("sso.groupRolesFormat")}
			return c.showSSO(q, http.StatusUnprocessableEntity, d)
		}
		for _, r := range strings.Split(roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				in.GroupRoles[strings.TrimSpace(group)] = append(in.GroupRoles[strings.TrimSpace(group)], r)
			}
		}
	}
	if _, err := identity.PutSSO(q.ctx(), c.svc, q.p, in); err != nil {
		return refused(err)
	}
	return q.redirect("/admin/sso", "updated")
}

// ssoContinue goes on to /sso/start with the sign-in form's values: by a
// page that moves on at once, not by the form itself, because the console's
// CSP (form-action 'self') would stop a form whose answer redirects to the
// provider, another site.
func (c *Console) ssoContinue(q *req) error {
	in := q.r.URL.Query()
	out := url.Values{}
	for _, k := range []string{"email", "org", "next"} {
		if v := in.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	c.render(q, http.StatusOK, "ssocontinue", q.t("title.sso"), ssoContinueData{URL: "/sso/start?" + out.Encode()})
	return nil
}

// ssoContinueData is the page that moves on to /sso/start.
type ssoContinueData struct{ URL string }

func (d ssoContinueData) refresh() string { return d.URL }
