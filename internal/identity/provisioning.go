package identity

import (
	"context"
	"strings"

	"wps/internal/wps"
)

// Provisioning: the user operations an identity provider drives (SCIM,
// internal/scim). They keep the rules of the operations people use: an
// email is one user of an org, deactivation is wps.Service.UpdateUser's,
// and a role change (wps.Service.ChangeRoleMembers) never leaves the org
// without an active ADMIN.

// NewUser is a user an identity provider creates. Email is required.
type NewUser struct {
	Email      string
	Name       string
	ExternalID string
	// Deactivated creates the user DEACTIVATED (SCIM's active: false).
	Deactivated bool
}

// CreateUser adds a user to the caller's org, with no role, password or
// key: they sign in through their identity provider, or are given a key.
// Errors: CodeInvalid, CodeConflict when the email is a member's.
func CreateUser(ctx context.Context, s *wps.Service, p *wps.Principal, in NewUser) (wps.User, error) {
	if err := p.Require(wps.FnUsersManage); err != nil {
		return wps.User{}, err
	}
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	var v wps.Validator
	v.Check(wps.ValidEmail(in.Email), "email", "must be an email address")
	v.Check(len(in.Name) <= 200, "name", "must be at most 200 characters")
	v.Check(len(in.ExternalID) <= 256, "externalId", "must be at most 256 characters")
	if err := v.Err(); err != nil {
		return wps.User{}, err
	}
	now := s.Now()
	u := wps.User{ID: wps.NewID(), OrgID: p.OrgID, Email: in.Email, Name: in.Name, Roles: []string{}, Status: wps.UserActive,
		ExternalID: in.ExternalID, CreatedAt: now, UpdatedAt: now}
	if in.Deactivated {
		u.Status = wps.UserDeactivated
	}
	return u, s.Store().Write(ctx, func(tx wps.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		return s.RecordUserCreated(tx, wps.ActorOf(p), u)
	})
}

// FindUsers returns one page of the org's users matching q, and their
// count. Errors: CodeInvalid for a malformed role.
func FindUsers(ctx context.Context, s *wps.Service, p *wps.Principal, q wps.UserQuery, page wps.Page) ([]wps.User, int, error) {
	if err := wps.ReadUsers(p); err != nil {
		return nil, 0, err
	}
	q.Email = strings.ToLower(strings.TrimSpace(q.Email))
	if q.Role != "" && !wps.ValidRole(q.Role) {
		return nil, 0, wps.Invalid("role", "must match ^[A-Z][A-Z0-9_]{0,63}$")
	}
	var users []wps.User
	var total int
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		users, total, err = tx.FindUsers(p.OrgID, q, page)
		return err
	})
	return users, total, err
}

// FindUser returns a user of the caller's org, for those who read or
// manage users. Errors: CodeNotFound.
func FindUser(ctx context.Context, s *wps.Service, p *wps.Principal, id string) (wps.User, error) {
	if err := wps.ReadUsers(p); err != nil {
		return wps.User{}, err
	}
	var u wps.User
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		u, err = tx.GetUser(p.OrgID, id)
		return err
	})
	return u, err
}

// RoleNames lists the org's roles, sorted: those a user holds and those a
// policy names (roles are free strings; nothing else keeps them).
func RoleNames(ctx context.Context, s *wps.Service, p *wps.Principal) ([]string, error) {
	if err := wps.ReadUsers(p); err != nil {
		return nil, err
	}
	var names []string
	err := s.Store().Read(ctx, func(tx wps.Tx) error {
		users, _, err := tx.FindUsers(p.OrgID, wps.UserQuery{}, wps.Page{Page: 1, PerPage: wps.MaxRoleScan})
		if err != nil {
			return err
		}
		pols, err := tx.ListPolicies(p.OrgID)
		if err != nil {
			return err
		}
		for _, u := range users {
			names = append(names, u.Roles...)
		}
		for _, pol := range pols {
			names = append(names, pol.Roles...)
		}
		return nil
	})
	return wps.Normalize(names), err
}
