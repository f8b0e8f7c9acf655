package wps

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"

	"wps/internal/outbound"
)

// Values of SSOSettings.PasswordSignIn.
const (
	PasswordAllowed    = "allowed"
	PasswordAdminsOnly = "admins-only"
	PasswordDisabled   = "disabled"
)

// SSOSettings are an org's OpenID Connect sign-in (semantics section 18).
// ClientSecret is write-only: answers show ClientSecretSet.
type SSOSettings struct {
	OrgID           string              `json:"-"`
	Issuer          string              `json:"issuer" doc:"The OpenID provider's issuer URL; its /.well-known/openid-configuration is fetched when saved"`
	ClientID        string              `json:"clientId" doc:"The client id wps has at the provider"`
	ClientSecret    string              `json:"-"`
	ClientSecretSet bool                `json:"clientSecretSet" doc:"Whether a client secret is kept (it is never shown)"`
	EmailDomains    []string            `json:"emailDomains" doc:"Domains whose people sign in here from /sso/start?email=; a domain belongs to one organization"`
	GroupsClaim     string              `json:"groupsClaim,omitempty" doc:"The ID token claim that lists the person's groups; when set, each sign-in sets their roles from groupRoles"`
	GroupRoles      map[string][]string `json:"groupRoles" doc:"For each group, the roles its members hold"`
	AutoCreateUsers bool                `json:"autoCreateUsers" doc:"Create the user at their first sign-in (otherwise only existing users sign in)"`
	PasswordSignIn  string              `json:"passwordSignIn" enum:"allowed,admins-only,disabled" doc:"Who may still sign in with a password: everyone, ADMINs only, or nobody"`
	UpdatedAt       Time                `json:"updatedAt"`
}

// SSOInput is the body of PUT /v1/sso. A nil ClientSecret keeps the one
// kept (required the first time).
type SSOInput struct {
	Issuer          string
	ClientID        string
	ClientSecret    *string
	EmailDomains    []string
	GroupsClaim     string
	GroupRoles      map[string][]string
	AutoCreateUsers bool
	PasswordSignIn  string
}

// SSODiscoverer fetches an issuer's discovery document (the identity
// package, over outbound's guarded client).
type SSODiscoverer interface {
	Discover(ctx context.Context, issuer string) error
}

var domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// GetSSO returns the caller's org's SSO settings. Errors: CodeNotFound
// when SSO is off.
func (s *Service) GetSSO(ctx context.Context, p *Principal) (SSOSettings, error) {
	if err := p.Require(FnOrgUpdate); err != nil {
		return SSOSettings{}, err
	}
	var out SSOSettings
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		out, err = tx.GetSSO(p.OrgID)
		return err
	})
	return out, err
}

// PutSSO sets the org's SSO settings after fetching the issuer's discovery
// document (outside any transaction). Errors: CodeInvalid naming the field
// (issuer when its discovery document cannot be fetched, or it is on a
// private address and the server does not allow them), CodeConflict when an
// email domain belongs to another org.
func (s *Service) PutSSO(ctx context.Context, p *Principal, in SSOInput) (SSOSettings, error) {
	if err := p.Require(FnOrgUpdate); err != nil {
		return SSOSettings{}, err
	}
	in.Issuer = strings.TrimSuffix(strings.TrimSpace(in.Issuer), "/")
	if in.PasswordSignIn == "" {
		in.PasswordSignIn = PasswordAllowed
	}
	var v Validator
	v.Check(validHTTPURL(in.Issuer), "issuer", "must be an absolute http or https URL")
	v.Check(strings.TrimSpace(in.ClientID) != "" && len(in.ClientID) <= 500, "clientId", "must be 1 to 500 characters")
	if in.ClientSecret != nil {
		v.Check(len(*in.ClientSecret) <= 1000, "clientSecret", "must be at most 1000 characters")
	}
	v.Check(len(in.EmailDomains) <= 50, "emailDomains", "must have at most 50 items")
	domains := make([]string, 0, len(in.EmailDomains))
	for i, d := range in.EmailDomains {
		d = strings.ToLower(strings.TrimSpace(d))
		v.Check(domainRe.MatchString(d) && len(d) <= 253, fieldIndex("emailDomains", i), "must be a domain name such as example.com")
		domains = append(domains, d)
	}
	v.Check(len(in.GroupsClaim) <= 100, "groupsClaim", "must be at most 100 characters")
	v.Check(len(in.GroupRoles) <= 200, "groupRoles", "must have at most 200 groups")
	for _, g := range slices.Sorted(maps.Keys(in.GroupRoles)) {
		v.Check(g != "" && len(g) <= 300, "groupRoles", "group names must be 1 to 300 characters")
		validRoles(&v, "groupRoles."+g, in.GroupRoles[g])
	}
	v.Check(slices.Contains([]string{PasswordAllowed, PasswordAdminsOnly, PasswordDisabled}, in.PasswordSignIn), "passwordSignIn", "must be allowed, admins-only or disabled")
	if err := v.Err(); err != nil {
		return SSOSettings{}, err
	}
	if err := s.TestSSOIssuer(ctx, p, in.Issuer); err != nil {
		return SSOSettings{}, err
	}
	roles := map[string][]string{}
	for g, rs := range in.GroupRoles {
		roles[g] = normalize(rs)
	}
	out := SSOSettings{OrgID: p.OrgID, Issuer: in.Issuer, ClientID: strings.TrimSpace(in.ClientID), EmailDomains: normalize(domains),
		GroupsClaim: strings.TrimSpace(in.GroupsClaim), GroupRoles: roles, AutoCreateUsers: in.AutoCreateUsers, PasswordSignIn: in.PasswordSignIn, UpdatedAt: s.Now()}
	err := s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.GetSSO(p.OrgID)
		if err != nil && !IsCode(err, CodeNotFound) {
			return err
		}
		out.ClientSecret = cur.ClientSecret
		if in.ClientSecret != nil {
			out.ClientSecret = *in.ClientSecret
		}
		if out.ClientSecret == "" {
			return Invalid("clientSecret", "is required")
		}
		var before any
		if cur.OrgID != "" {
			cur.ClientSecretSet = cur.ClientSecret != ""
			before = cur
		}
		out.ClientSecretSet = true
		changes := diffFields(before, out)
		if out.ClientSecret != cur.ClientSecret {
			changes["clientSecret"] = secretChanged
		}
		if err := s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditSSOUpdated, Actor: actorOf(p),
			Target: AuditTarget{Kind: TargetOrg, ID: p.OrgID, Name: "sso"}, Changes: changes}); err != nil {
			return err
		}
		for _, d := range out.EmailDomains {
			if org, err := tx.SSOOrgByDomain(d); err == nil && org != p.OrgID {
				return Errorf(CodeConflict, "the email domain %s belongs to another organization", d)
			} else if err != nil && !IsCode(err, CodeNotFound) {
				return err
			}
		}
		return tx.PutSSO(out)
	})
	out.ClientSecretSet = out.ClientSecret != ""
	return out, err
}

// DeleteSSO turns the org's SSO off (password sign-in is allowed again).
// Errors: CodeNotFound when it was off.
func (s *Service) DeleteSSO(ctx context.Context, p *Principal) error {
	if err := p.Require(FnOrgUpdate); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.GetSSO(p.OrgID)
		if err != nil {
			return err
		}
		if err := tx.DeleteSSO(p.OrgID); err != nil {
			return err
		}
		cur.ClientSecretSet = cur.ClientSecret != ""
		changes := diffFields(cur, nil)
		changes["enabled"] = AuditChange{Before: true, After: false}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditSSOUpdated, Actor: actorOf(p),
			Target: AuditTarget{Kind: TargetOrg, ID: p.OrgID, Name: "sso"}, Changes: changes})
	})
}

// SSOConfig returns an org's SSO settings with the client secret, for the
// relying party (identity): by org id, or by the domain of email when
// orgID is empty. Errors: CodeNotFound.
func (s *Service) SSOConfig(ctx context.Context, orgID, email string) (SSOSettings, error) {
	var out SSOSettings
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if orgID == "" {
			_, domain, ok := strings.Cut(strings.ToLower(strings.TrimSpace(email)), "@")
			if !ok || domain == "" {
				return Errorf(CodeNotFound, "no organization signs in %q with single sign-on", email)
			}
			if orgID, err = tx.SSOOrgByDomain(domain); err != nil {
				return err
			}
		}
		out, err = tx.GetSSO(orgID)
		return err
	})
	return out, err
}

// SSOIdentity is what a verified ID token says of a person.
type SSOIdentity struct {
	Email  string
	Name   string
	Groups []string // nil when the token lacks the groups claim
}

// SSOSignIn starts a session for the person a verified ID token names in
// orgID (semantics section 18): the org's user with that email (case
// insensitive), created when the org's autoCreateUsers allows; with a
// groupsClaim, their roles become the union of groupRoles of their groups
// (the org's last active ADMIN keeps the role). Errors: CodeForbidden for
// an unknown email without autoCreateUsers and for a deactivated user,
// CodeNotFound when the org's SSO is off.
func (s *Service) SSOSignIn(ctx context.Context, orgID string, id SSOIdentity) (SignedIn, error) {
	email := strings.ToLower(strings.TrimSpace(id.Email))
	if !validEmail(email) {
		return SignedIn{}, Errorf(CodeForbidden, "the provider gave no usable email address")
	}
	token := newSecret(SessionPrefix)
	var out SignedIn
	defer s.keys.forget(orgID)
	err := s.store.Write(ctx, func(tx Tx) error {
		set, err := tx.GetSSO(orgID)
		if err != nil {
			return err
		}
		if err := tx.LockOrg(orgID); err != nil {
			return err
		}
		now := s.Now()
		u, err := tx.FindUserByEmail(orgID, email)
		switch {
		case IsCode(err, CodeNotFound) && set.AutoCreateUsers:
			name := []rune(strings.TrimSpace(id.Name))
			name = name[:min(len(name), 200)]
			u = User{ID: NewID(), OrgID: orgID, Email: email, Name: string(name), Roles: []string{}, Status: UserActive, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateUser(u); err != nil {
				return err
			}
			if err := s.auditCreated(tx, userActor(u), u); err != nil {
				return err
			}
		case IsCode(err, CodeNotFound):
			return Errorf(CodeForbidden, "%s has no account in this organization; ask an administrator to invite you", email)
		case err != nil:
			return err
		}
		if u, err = tx.LockUser(orgID, u.ID); err != nil {
			return err
		}
		if u.Status != UserActive {
			return Errorf(CodeForbidden, "%s is deactivated in this organization", email)
		}
		rec := SSOSignInRecord{OrgID: orgID, UserID: u.ID, At: now, RolesAdded: []string{}, RolesRemoved: []string{}}
		if set.GroupsClaim != "" {
			roles, err := s.rolesFromGroups(tx, u, set, id.Groups)
			if err != nil {
				return err
			}
			if before := normalize(u.Roles); !slices.Equal(roles, before) {
				if err := tx.SetUserRoles(orgID, u.ID, roles, now); err != nil {
					return err
				}
				if err := s.auditRoles(tx, userActor(u), u, before, roles); err != nil {
					return err
				}
				rec.RolesAdded, rec.RolesRemoved = difference(roles, before), difference(before, roles)
				u.Roles = roles
			}
		}
		if err := tx.RecordSSOSignIn(rec); err != nil {
			return err
		}
		u.LastSignInAt, u.UpdatedAt = now, now
		if err := tx.UpdateUser(u); err != nil {
			return err
		}
		sess := Session{ID: NewID(), OrgID: orgID, UserID: u.ID, TokenHash: HashSecret(token), CreatedAt: now, LastSeenAt: now,
			ExpiresAt: At(now.Add(s.sessions.MaxAge))}
		out = SignedIn{Token: token, CSRFToken: CSRFToken(token), User: u, ExpiresAt: sess.ExpiresAt}
		if err := tx.CreateSession(sess); err != nil {
			return err
		}
		return s.auditSession(tx, u, sess, "sso")
	})
	return out, err
}

// rolesFromGroups is the union of the roles set gives groups, keeping ADMIN
// when u is the org's last active ADMIN.
func (s *Service) rolesFromGroups(tx Tx, u User, set SSOSettings, groups []string) ([]string, error) {
	var roles []string
	for _, g := range groups {
		roles = append(roles, set.GroupRoles[g]...)
	}
	roles = normalize(roles)
	if slices.Contains(u.Roles, RoleAdmin) && !slices.Contains(roles, RoleAdmin) {
		n, err := tx.CountUsersWithRole(u.OrgID, RoleAdmin)
		if err != nil {
			return nil, err
		}
		if n <= 1 {
			roles = normalize(append(roles, RoleAdmin))
		}
	}
	return roles, nil
}

// passwordAllowed applies the org's passwordSignIn to u. Errors:
// CodeForbidden.
func passwordAllowed(tx Tx, u User) error {
	set, err := tx.GetSSO(u.OrgID)
	if IsCode(err, CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case set.PasswordSignIn == PasswordDisabled:
		return Errorf(CodeForbidden, "this organization signs in with single sign-on only (/sso/start?org=%s)", u.OrgID)
	case set.PasswordSignIn == PasswordAdminsOnly && !slices.Contains(u.Roles, RoleAdmin):
		return Errorf(CodeForbidden, "this organization signs in with single sign-on; only administrators may use a password")
	}
	return nil
}

// TestSSOIssuer fetches issuer's discovery document, as PutSSO does, and
// saves nothing (the console's "test connection"). Errors: CodeInvalid
// naming issuer.
func (s *Service) TestSSOIssuer(ctx context.Context, p *Principal, issuer string) error {
	if err := p.Require(FnOrgUpdate); err != nil {
		return err
	}
	issuer = strings.TrimSuffix(strings.TrimSpace(issuer), "/")
	if !validHTTPURL(issuer) {
		return Invalid("issuer", "must be an absolute http or https URL")
	}
	if !s.allowPrivate && outbound.PrivateHost(issuer) {
		return Invalid("issuer", "must not be a loopback, private or reserved address")
	}
	if s.sso == nil {
		return Errorf(CodeInternal, "single sign-on is not set up on this server")
	}
	if err := s.sso.Discover(ctx, issuer); err != nil {
		return &Error{Code: CodeInvalid, Message: "invalid settings", Fields: []FieldError{{Field: "issuer", Message: "its discovery document (/.well-known/openid-configuration) could not be fetched"}}, Err: err}
	}
	return nil
}

// difference lists the items of a that b lacks, never nil.
func difference(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// SSOSignInRecord is a user's last sign-in through SSO and what it changed
// of their roles.
type SSOSignInRecord struct {
	OrgID, UserID string
	At            Time
	RolesAdded    []string
	RolesRemoved  []string
}

// SSOSignIns lists the last sign-in through SSO of the org's users who
// signed in so, by user id (the console's users page). Errors: as ListUsers.
func (s *Service) SSOSignIns(ctx context.Context, p *Principal) (map[string]SSOSignInRecord, error) {
	if err := p.Require(FnUsersRead); err != nil {
		return nil, err
	}
	var list []SSOSignInRecord
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, err = tx.ListSSOSignIns(p.OrgID)
		return err
	})
	out := make(map[string]SSOSignInRecord, len(list))
	for _, r := range list {
		out[r.UserID] = r
	}
	return out, err
}
