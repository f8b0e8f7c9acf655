package wps

import (
	"context"
	"slices"
	"strings"
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

// ListUsers returns one page of the org's users and the total count.
func (s *Service) ListUsers(ctx context.Context, p *Principal, page Page) ([]User, int, error) {
	var users []User
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		users, total, err = tx.ListUsers(p.OrgID, page)
		return err
	})
	return users, total, err
}

// CreateAPIKey makes a new key for the caller; its secret is shown once.
func (s *Service) CreateAPIKey(ctx context.Context, p *Principal, name string) (APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return APIKey{}, Invalid("name", "must be 1 to 100 characters")
	}
	k := newAPIKey(p.OrgID, p.UserID, name, s.Now())
	return k, s.store.Write(ctx, func(tx Tx) error { return tx.CreateAPIKey(k) })
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
	return s.store.Write(ctx, func(tx Tx) error { return tx.RevokeAPIKey(p.OrgID, p.UserID, id, s.Now()) })
}

// AssignRole gives a user a role (idempotent) and returns the user's roles.
// Errors: CodeInvalid for a malformed role, CodeNotFound for an unknown user.
func (s *Service) AssignRole(ctx context.Context, p *Principal, userID, role string) ([]string, error) {
	return s.changeRole(ctx, p, userID, role, true)
}

// RevokeRole takes a role from a user (idempotent) and returns the user's
// roles. Errors: as AssignRole, plus CodeConflict when it would remove the
// org's last ADMIN.
func (s *Service) RevokeRole(ctx context.Context, p *Principal, userID, role string) ([]string, error) {
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
			if role == RoleAdmin {
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
		return tx.SetUserRoles(p.OrgID, userID, roles, s.Now())
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
