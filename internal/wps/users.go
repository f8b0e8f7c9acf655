package wps

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Me returns the caller's user.
func (s *Service) Me(ctx context.Context, p *Principal) (User, error) {
	var u User
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		u, err = tx.GetUser(p.OrgID, p.UserID)
		return err
	})
	return u, err
}

// MeUpdate is what a user changes of their own account; nil fields stay.
type MeUpdate struct {
	Name, TimeZone, Locale *string
}

// Locales are the languages of the console and of mail (semantics §21).
var Locales = []string{"en", "pt-BR", "es"}

// UpdateMe changes the caller's name, time zone (the console and mail show
// times in it) and language. Any active user may; an API key of a user
// acts for that user. Errors: CodeInvalid naming name, timeZone (an IANA
// name, or "") or locale (one of Locales, or "").
func (s *Service) UpdateMe(ctx context.Context, p *Principal, in MeUpdate) (User, error) {
	var v Validator
	if in.Name != nil {
		*in.Name = strings.TrimSpace(*in.Name)
		v.Check(*in.Name != "" && validName(*in.Name, 200), "name", "must be 1 to 200 printable characters")
	}
	if in.TimeZone != nil && *in.TimeZone != "" {
		_, err := time.LoadLocation(*in.TimeZone)
		v.Check(err == nil && *in.TimeZone != "Local", "timeZone", "must be an IANA time zone name such as America/Sao_Paulo (or empty: not set)")
	}
	if in.Locale != nil {
		v.Check(*in.Locale == "" || slices.Contains(Locales, *in.Locale), "locale", "must be en, pt-BR or es (or empty: not set)")
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	var u User
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if u, err = tx.LockUser(p.OrgID, p.UserID); err != nil {
			return err
		}
		before := u
		setIf(&u.Name, in.Name)
		setIf(&u.TimeZone, in.TimeZone)
		setIf(&u.Locale, in.Locale)
		u.UpdatedAt = s.Now()
		if err := tx.UpdateUser(u); err != nil {
			return err
		}
		return s.auditUser(tx, actorOf(p), before, u)
	})
	if err == nil {
		s.keys.forget(p.OrgID) // cached principals carry the user
	}
	return u, err
}

// ListUsers returns one page of the org's users and the total count.
func (s *Service) ListUsers(ctx context.Context, p *Principal, page Page) ([]User, int, error) {
	if err := p.Require(FnUsersRead); err != nil {
		return nil, 0, err
	}
	var users []User
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		users, total, err = tx.ListUsers(p.OrgID, page)
		return err
	})
	return users, total, err
}

// CreateAPIKey makes a new key for the caller; its secret is shown once.
// Every active user may make keys for themselves, whatever they hold: a
// key carries no powers of its own, each request with it is allowed what
// the user's roles allow at that time (Authenticate). Errors: CodeInvalid
// for the name, CodeUnauthorized when the user was deactivated while the
// request ran.
func (s *Service) CreateAPIKey(ctx context.Context, p *Principal, name string) (APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return APIKey{}, Invalid("name", "must be 1 to 100 characters")
	}
	k := newAPIKey(p.OrgID, p.UserID, name, s.Now())
	return k, s.store.Write(ctx, func(tx Tx) error {
		u, err := activeUser(tx, p.OrgID, p.UserID)
		if err != nil {
			return err
		}
		if err := tx.CreateAPIKey(k); err != nil {
			return err
		}
		return s.auditKey(tx, actorOf(p), AuditAPIKeyCreated, k, u)
	})
}

// auditKey records a key made or revoked for u (never its secret).
func (s *Service) auditKey(tx Tx, actor AuditActor, typ string, k APIKey, u User) error {
	return s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: typ, Actor: actor,
		Target:  AuditTarget{Kind: TargetAPIKey, ID: k.ID, Name: k.Name},
		Changes: map[string]AuditChange{"user": {After: u.Email}}})
}

// revokeKey revokes a key of a user and records it.
func (s *Service) revokeKey(tx Tx, actor AuditActor, orgID, userID, keyID string) error {
	var k APIKey
	keys, err := tx.ListAPIKeys(orgID, userID)
	if err != nil {
		return err
	}
	for _, x := range keys {
		if x.ID == keyID {
			k = x
		}
	}
	if err := tx.RevokeAPIKey(orgID, userID, keyID, s.Now()); err != nil {
		return err
	}
	u, err := tx.GetUser(orgID, userID)
	if err != nil {
		return err
	}
	if k.ID == "" {
		k.ID = keyID
	}
	return s.auditKey(tx, actor, AuditAPIKeyRevoked, k, u)
}

// auditUser records a change of a user's fields (user.updated), if any.
func (s *Service) auditUser(tx Tx, actor AuditActor, before, after User) error {
	changes := diffFields(before, after, "roles", "lastSignInAt")
	if before.ExternalID != after.ExternalID {
		changes["externalId"] = valueChange(before.ExternalID, after.ExternalID)
	}
	if len(changes) == 0 {
		return nil
	}
	return s.recordAudit(tx, AuditEvent{OrgID: after.OrgID, Type: AuditUserUpdated, Actor: actor,
		Target: AuditTarget{Kind: TargetUser, ID: after.ID, Name: after.Email}, Changes: changes})
}

// auditCreated records a user made without an invite (user.created):
// provisioned, or signed in by SSO for the first time.
func (s *Service) auditCreated(tx Tx, actor AuditActor, u User) error {
	return s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: AuditUserCreated, Actor: actor,
		Target: AuditTarget{Kind: TargetUser, ID: u.ID, Name: u.Email}, Changes: diffFields(nil, u, "lastSignInAt")})
}

// auditRoles records a change of a user's roles, if any.
func (s *Service) auditRoles(tx Tx, actor AuditActor, u User, before, after []string) error {
	if slices.Equal(normalize(before), normalize(after)) {
		return nil
	}
	return s.recordAudit(tx, AuditEvent{OrgID: u.OrgID, Type: AuditUserRolesChanged, Actor: actor,
		Target:  AuditTarget{Kind: TargetUser, ID: u.ID, Name: u.Email},
		Changes: map[string]AuditChange{"roles": {Before: normalize(before), After: normalize(after)}}})
}

// activeUser reads and locks a user who must still be active. What a
// request authenticated before a deactivation writes for its user (a key,
// a session, a password) then either commits first, and the deactivation
// undoes it, or sees the deactivation: CodeUnauthorized.
func activeUser(tx Tx, orgID, userID string) (User, error) {
	u, err := tx.LockUser(orgID, userID)
	if err == nil && u.Status != UserActive {
		err = Errorf(CodeUnauthorized, "the user is deactivated")
	}
	return u, err
}

// ListAPIKeys lists the caller's live keys, without their secrets.
func (s *Service) ListAPIKeys(ctx context.Context, p *Principal) ([]APIKey, error) {
	var keys []APIKey
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		keys, err = tx.ListAPIKeys(p.OrgID, p.UserID)
		return err
	})
	return keys, err
}

// RevokeAPIKey revokes one of the caller's keys. Errors: CodeNotFound.
func (s *Service) RevokeAPIKey(ctx context.Context, p *Principal, id string) error {
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error { return s.revokeKey(tx, actorOf(p), p.OrgID, p.UserID, id) })
}

// GetUser returns a user of the caller's org. Errors: CodeNotFound.
func (s *Service) GetUser(ctx context.Context, p *Principal, id string) (User, error) {
	if err := p.Require(FnUsersRead); err != nil {
		return User{}, err
	}
	var u User
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		u, err = tx.GetUser(p.OrgID, id)
		return err
	})
	return u, err
}

// UserUpdate is the body of PATCH /v1/users/{id}; nil fields stay.
type UserUpdate struct {
	Name   *string
	Status *string
	// Email and ExternalID are changed by identity providers (SCIM's
	// userName and externalId).
	Email      *string
	ExternalID *string
}

// UpdateUser renames a user or changes their status. DEACTIVATED revokes
// every API key and ends every session of the user in the same
// transaction (this replica forgets them at once, others within the key
// cache's 2 s); ACTIVE again brings no key back. Errors: CodeInvalid,
// CodeNotFound, CodeConflict for the org's last active ADMIN or an email
// another user has.
func (s *Service) UpdateUser(ctx context.Context, p *Principal, id string, in UserUpdate) (User, error) {
	if err := p.Require(FnUsersManage); err != nil {
		return User{}, err
	}
	var v Validator
	if in.Name != nil {
		*in.Name = strings.TrimSpace(*in.Name)
		v.Check(len(*in.Name) <= 200, "name", "must be at most 200 characters")
	}
	if in.Email != nil {
		*in.Email = strings.ToLower(strings.TrimSpace(*in.Email))
		v.Check(validEmail(*in.Email), "email", "must be an email address")
	}
	if in.ExternalID != nil {
		v.Check(len(*in.ExternalID) <= 256, "externalId", "must be at most 256 characters")
	}
	if in.Status != nil {
		v.Check(*in.Status == UserActive || *in.Status == UserDeactivated, "status", "must be ACTIVE or DEACTIVATED")
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	var u User
	defer s.keys.forget(p.OrgID)
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		u, err = s.updateUser(tx, actorOf(p), p.OrgID, id, in)
		return err
	})
	return u, err
}

func (s *Service) updateUser(tx Tx, actor AuditActor, orgID, id string, in UserUpdate) (User, error) {
	if err := tx.LockOrg(orgID); err != nil {
		return User{}, err
	}
	u, err := tx.LockUser(orgID, id) // keys and sessions being made for the user wait
	if err != nil {
		return User{}, err
	}
	before := u
	now := s.Now()
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.Email != nil {
		u.Email = *in.Email
	}
	if in.ExternalID != nil {
		u.ExternalID = *in.ExternalID
	}
	if in.Status != nil && *in.Status != u.Status {
		if *in.Status == UserDeactivated {
			if slices.Contains(u.Roles, RoleAdmin) {
				n, err := tx.CountUsersWithRole(orgID, RoleAdmin)
				if err != nil {
					return User{}, err
				}
				if n <= 1 {
					return User{}, Errorf(CodeConflict, "cannot deactivate the organization's last active ADMIN")
				}
			}
			if err := tx.RevokeUserAPIKeys(orgID, id, now); err != nil {
				return User{}, err
			}
			if err := tx.DeleteSessions(orgID, id, ""); err != nil {
				return User{}, err
			}
		}
		u.Status = *in.Status
	}
	u.UpdatedAt = now
	if err := tx.UpdateUser(u); err != nil {
		return User{}, err
	}
	return u, s.auditUser(tx, actor, before, u)
}

// ListUserAPIKeys lists a user's live keys (prefixes only), for admins.
// Errors: CodeNotFound.
func (s *Service) ListUserAPIKeys(ctx context.Context, p *Principal, userID string) ([]APIKey, error) {
	if err := p.Require(FnUsersManage); err != nil {
		return nil, err
	}
	var keys []APIKey
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if _, err = tx.GetUser(p.OrgID, userID); err != nil {
			return err
		}
		keys, err = tx.ListAPIKeys(p.OrgID, userID)
		return err
	})
	return keys, err
}

// RevokeUserAPIKey revokes any user's key, for admins. Errors: CodeNotFound.
func (s *Service) RevokeUserAPIKey(ctx context.Context, p *Principal, userID, keyID string) error {
	if err := p.Require(FnUsersManage); err != nil {
		return err
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error { return s.revokeKey(tx, actorOf(p), p.OrgID, userID, keyID) })
}

// IssueKey is the operator's recovery: a new API key for the active user
// with email in org (the last admin key lost). Errors: CodeNotFound,
// CodeConflict for a deactivated user.
func (s *Service) IssueKey(ctx context.Context, orgID, email string) (APIKey, error) {
	var k APIKey
	err := s.store.Write(ctx, func(tx Tx) error {
		found, err := tx.FindUserByEmail(orgID, strings.ToLower(strings.TrimSpace(email)))
		if err != nil {
			return err
		}
		u, err := activeUser(tx, orgID, found.ID)
		if IsCode(err, CodeUnauthorized) {
			return Errorf(CodeConflict, "%s is deactivated", u.Email)
		}
		if err != nil {
			return err
		}
		k = newAPIKey(orgID, u.ID, "operator", s.Now())
		if err := tx.CreateAPIKey(k); err != nil {
			return err
		}
		return s.auditKey(tx, actorOf(nil), AuditAPIKeyCreated, k, u)
	})
	return k, err
}

// DeactivateByEmail is the operator's offboarding of a user by email, as
// PATCH status DEACTIVATED. Errors: as UpdateUser.
func (s *Service) DeactivateByEmail(ctx context.Context, orgID, email string) (User, error) {
	var u User
	st := UserDeactivated
	defer s.keys.forget(orgID)
	err := s.store.Write(ctx, func(tx Tx) error {
		found, err := tx.FindUserByEmail(orgID, strings.ToLower(strings.TrimSpace(email)))
		if err != nil {
			return err
		}
		u, err = s.updateUser(tx, actorOf(nil), orgID, found.ID, UserUpdate{Status: &st})
		return err
	})
	return u, err
}

// AssignRole gives a user a role (idempotent) and returns the user's roles.
// Errors: CodeInvalid for a malformed role, CodeNotFound for an unknown user.
func (s *Service) AssignRole(ctx context.Context, p *Principal, userID, role string) ([]string, error) {
	if err := p.Require(FnRolesManage); err != nil {
		return nil, err
	}
	return s.changeRole(ctx, p, userID, role, true)
}

// RevokeRole takes a role from a user (idempotent) and returns the user's
// roles. Errors: as AssignRole, plus CodeConflict when it would remove the
// org's last active ADMIN.
func (s *Service) RevokeRole(ctx context.Context, p *Principal, userID, role string) ([]string, error) {
	if err := p.Require(FnRolesManage); err != nil {
		return nil, err
	}
	return s.changeRole(ctx, p, userID, role, false)
}

func (s *Service) changeRole(ctx context.Context, p *Principal, userID, role string, assign bool) ([]string, error) {
	if !ValidRole(role) {
		return nil, Invalid("role", "must match ^[A-Z][A-Z0-9_]{0,63}$")
	}
	var roles []string
	defer s.keys.forget(p.OrgID)
	err := s.store.Write(ctx, func(tx Tx) error {
		if err := tx.LockOrg(p.OrgID); err != nil {
			return err
		}
		u, err := tx.GetUser(p.OrgID, userID)
		if err != nil {
			return err
		}
		has := slices.Contains(u.Roles, role)
		roles = u.Roles
		switch {
		case assign && !has:
			roles = append(slices.Clone(u.Roles), role)
			slices.Sort(roles)
		case !assign && has:
			if role == RoleAdmin && u.Status == UserActive { // a deactivated admin is not counted
				n, err := tx.CountUsersWithRole(p.OrgID, RoleAdmin)
				if err != nil {
					return err
				}
				if n <= 1 {
					return Errorf(CodeConflict, "cannot revoke the organization's last ADMIN")
				}
			}
			roles = slices.DeleteFunc(slices.Clone(u.Roles), func(r string) bool { return r == role })
		default:
			return nil
		}
		if err := tx.SetUserRoles(p.OrgID, userID, roles, s.Now()); err != nil {
			return err
		}
		return s.auditRoles(tx, actorOf(p), u, u.Roles, roles)
	})
	if roles == nil {
		roles = []string{}
	}
	return roles, err
}

// validRoles checks a list of role names, reporting each bad one under field.
func validRoles(v *Validator, field string, roles []string) {
	v.Check(len(roles) <= 100, field, "must have at most 100 items")
	for i, r := range roles {
		v.Check(ValidRole(r), fieldIndex(field, i), "must match ^[A-Z][A-Z0-9_]{0,63}$")
	}
}

// normalize returns a sorted copy of list without duplicates, never nil.
func normalize(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}
