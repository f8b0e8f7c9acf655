package sqlstore

import "wps/internal/wps"

const ssoCols = `org_id, issuer, client_id, client_secret, email_domains, groups_claim, group_roles, auto_create_users, password_sign_in, updated_at`

func (t *tx) GetSSO(orgID string) (wps.SSOSettings, error) {
	var s wps.SSOSettings
	var domains, roles string
	var auto int
	var updated int64
	err := t.queryRow(`SELECT `+ssoCols+` FROM sso_settings WHERE org_id = ?`, orgID).
		Scan(&s.OrgID, &s.Issuer, &s.ClientID, &s.ClientSecret, &domains, &s.GroupsClaim, &roles, &auto, &s.PasswordSignIn, &updated)
	if err != nil {
		return s, t.err(err, "single sign-on settings", "")
	}
	fromJSON(domains, &s.EmailDomains)
	fromJSON(roles, &s.GroupRoles)
	if s.EmailDomains == nil {
		s.EmailDomains = []string{}
	}
	if s.GroupRoles == nil {
		s.GroupRoles = map[string][]string{}
	}
	s.AutoCreateUsers, s.ClientSecretSet = auto != 0, s.ClientSecret != ""
	s.UpdatedAt = wps.FromMillis(updated)
	return s, nil
}

func (t *tx) PutSSO(s wps.SSOSettings) error {
	auto := 0
	if s.AutoCreateUsers {
		auto = 1
	}
	if _, err := t.exec(`DELETE FROM sso_domains WHERE org_id = ?`, s.OrgID); err != nil {
		return t.err(err, "", "")
	}
	if _, err := t.exec(`DELETE FROM sso_settings WHERE org_id = ?`, s.OrgID); err != nil {
		return t.err(err, "", "")
	}
	_, err := t.exec(`INSERT INTO sso_settings (`+ssoCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.OrgID, s.Issuer, s.ClientID, s.ClientSecret, jsonText(s.EmailDomains), s.GroupsClaim, jsonText(s.GroupRoles), auto, s.PasswordSignIn, s.UpdatedAt.Millis())
	if err != nil {
		return t.err(err, "single sign-on settings", "")
	}
	for _, d := range s.EmailDomains {
		if _, err := t.exec(`INSERT INTO sso_domains (domain, org_id) VALUES (?, ?)`, d, s.OrgID); err != nil {
			return t.err(err, "email domain", "the email domain "+d+" belongs to another organization")
		}
	}
	return nil
}

func (t *tx) DeleteSSO(orgID string) error {
	if _, err := t.exec(`DELETE FROM sso_domains WHERE org_id = ?`, orgID); err != nil {
		return t.err(err, "", "")
	}
	res, err := t.exec(`DELETE FROM sso_settings WHERE org_id = ?`, orgID)
	return t.err(affected(res, err, "single sign-on settings"), "single sign-on settings", "")
}

// SSOOrgByDomain looks across orgs, as sign-in by email does: the domain is
// the key, unique over every org.
func (t *tx) SSOOrgByDomain(domain string) (string, error) {
	var org string
	err := t.queryRow(`SELECT org_id FROM sso_domains WHERE domain = ?`, domain).Scan(&org)
	return org, t.err(err, "organization", "")
}

func (t *tx) RecordSSOSignIn(r wps.SSOSignInRecord) error {
	_, err := t.exec(`INSERT INTO sso_sign_ins (org_id, user_id, at, roles_added, roles_removed) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id, user_id) DO UPDATE SET at = excluded.at, roles_added = excluded.roles_added, roles_removed = excluded.roles_removed`,
		r.OrgID, r.UserID, r.At.Millis(), jsonText(r.RolesAdded), jsonText(r.RolesRemoved))
	return t.err(err, "", "")
}

func (t *tx) SSOSignInAt(orgID, userID string) (wps.Time, error) {
	var at int64
	err := t.queryRow(`SELECT at FROM sso_sign_ins WHERE org_id = ? AND user_id = ?`, orgID, userID).Scan(&at)
	return wps.FromMillis(at), t.err(err, "single sign-on sign-in", "")
}

func (t *tx) ListSSOSignIns(orgID string) ([]wps.SSOSignInRecord, error) {
	rows, err := t.query(`SELECT org_id, user_id, at, roles_added, roles_removed FROM sso_sign_ins WHERE org_id = ? ORDER BY user_id`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.SSOSignInRecord, error) {
		var r wps.SSOSignInRecord
		var at int64
		var added, removed string
		if err := s.Scan(&r.OrgID, &r.UserID, &at, &added, &removed); err != nil {
			return r, err
		}
		r.At = wps.FromMillis(at)
		fromJSON(added, &r.RolesAdded)
		fromJSON(removed, &r.RolesRemoved)
		return r, nil
	})
	return list, t.err(err, "", "")
}
