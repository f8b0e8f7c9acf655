package wps

import (
	"context"
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

// SSODiscoverer fetches an issuer's discovery document (the identity
// package, over outbound's guarded client).
type SSODiscoverer interface {
	Discover(ctx context.Context, issuer string) error
}

// DiscoverSSO fetches issuer's discovery document through the server's
// SSODiscoverer, once issuer is known to be an absolute http(s) URL.
// Errors: CodeInvalid naming issuer when it is on a private address the
// server does not allow, or its document cannot be fetched; CodeInternal
// when the server has no SSO.
func (s *Service) DiscoverSSO(ctx context.Context, issuer string) error {
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

// ValidHTTPURL reports an absolute http or https URL wps may call.
func ValidHTTPURL(u string) bool { return validHTTPURL(u) }

// ValidRoles checks a list of role names of field.
func ValidRoles(v *Validator, field string, roles []string) { validRoles(v, field, roles) }

// Normalize returns a sorted copy of list without duplicates, never nil.
func Normalize(list []string) []string { return normalize(list) }

// DiffFields is the audit changes from before to after (nil: none): each
// field that differs (diffFields).
func DiffFields(before, after any) map[string]AuditChange { return diffFields(before, after) }

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
