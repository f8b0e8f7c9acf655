package wps

import (
	"context"
	"slices"
	"strings"
)

// Provisioning: the user operations an identity provider drives (SCIM,
// internal/scim). They keep the rules of the operations people use: an
// email is one user of an org, deactivation is UpdateUser's, and a role
// change never leaves the org without an active ADMIN.

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
func (s *Service) CreateUser(ctx context.Context, p *Principal, in NewUser) (User, error) {
	if err := p.Require(FnUsersManage); err != nil {
		return User{}, err
	}
	in.Email = strings.ToLower(strings.TrimSpace(in.Email))
	in.Name = strings.TrimSpace(in.Name)
	var v Validator
	v.Check(validEmail(in.Email), "email", "must be an email address")
	v.Check(len(in.Name) <= 200, "name", "must be at most 200 characters")
	v.Check(len(in.ExternalID) <= 256, "externalId", "must be at most 256 characters")
	if err := v.Err(); err != nil {
		return User{}, err
	}
	now := s.Now()
	u := User{ID: NewID(), OrgID: p.OrgID, Email: in.Email, Name: in.Name, Roles: []string{}, Status: UserActive,
		ExternalID: in.ExternalID, CreatedAt: now, UpdatedAt: now}
	if in.Deactivated {
		u.Status = UserDeactivated
	}
	return u, s.store.Write(ctx, func(tx Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		return s.auditCreated(tx, actorOf(p), u)
	})
}

// readUsers lets holders of users:read, and those who manage users
// (users:manage), read them.
func readUsers(p *Principal) error {
	if p.Can(FnUsersManage) {
		return nil
	}
	return p.Require(FnUsersRead)
}

// FindUsers returns one page of the org's users matching q, and their
// count. Errors: CodeInvalid for a malformed role.
func (s *Service) FindUsers(ctx context.Context, p *Principal, q UserQuery, page Page) ([]User, int, error) {
	if err := readUsers(p); err != nil {
		return nil, 0, err
	}
	q.Email = strings.ToLower(strings.TrimSpace(q.Email))
	if q.Role != "" && !ValidRole(q.Role) {
		return nil, 0, Invalid("role", "must match ^[A-Z][A-Z0-9_]{0,63}$")
	}
	var users []User
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		users, total, err = tx.FindUsers(p.OrgID, q, page)
		return err
	})
	return users, total, err
}

// FindUser returns a user of the caller's org, for those who read or
// manage users. Errors: CodeNotFound.
func (s *Service) FindUser(ctx context.Context, p *Principal, id string) (User, error) {
	if err := readUsers(p); err != nil {
		return User{}, err
	}
	var u User
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		u, err = tx.GetUser(p.OrgID, id)
		return err
	})
	return u, err
}

// maxRoleScan bounds the users a role listing or a group replacement
// reads (in one read transaction).
const maxRoleScan = 10000

// RoleNames lists the org's roles, sorted: those a user holds and those a
// policy names (roles are free strings; nothing else keeps them).
func (s *Service) RoleNames(ctx context.Context, p *Principal) ([]string, error) {
	if err := readUsers(p); err != nil {
		return nil, err
	}
	var names []string
	err := s.store.Read(ctx, func(tx Tx) error {
		users, _, err := tx.FindUsers(p.OrgID, UserQuery{}, Page{Page: 1, PerPage: maxRoleScan})
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
	return normalize(names), err
}

// RoleChange changes who holds a role: Add and Remove are user ids; with
// Replace, the holders become exactly Add (Remove is ignored).
type RoleChange struct {
	Add, Remove []string
	Replace     bool
}

// ChangeRoleMembers assigns and revokes one role for several users in one
// transaction (AssignRole and RevokeRole's rules, all or nothing). Errors:
// CodeInvalid for a malformed role or a user id of no user of the org
// (naming "members"), CodeConflict when it would leave the org without an
// active ADMIN.
func (s *Service) ChangeRoleMembers(ctx context.Context, p *Principal, role string, c RoleChange) error {
	if err := p.Require(FnRolesManage); err != nil {
		return err
	}
	if !ValidRole(role) {
		return Invalid("role", "must match ^[A-Z][A-Z0-9_]{0,63}$")
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error {
		if err := tx.LockOrg(p.OrgID); err != nil {
			return err
		}
		remove := c.Remove
		if c.Replace {
			holders, _, err := tx.FindUsers(p.OrgID, UserQuery{Role: role}, Page{Page: 1, PerPage: maxRoleScan})
			if err != nil {
				return err
			}
			remove = nil
			for _, u := range holders {
				if !slices.Contains(c.Add, u.ID) {
					remove = append(remove, u.ID)
				}
			}
		}
		admins := -1 // active ADMINs after the change, once counted
		now := s.Now()
		change := func(id string, assign bool) error {
			u, err := tx.GetUser(p.OrgID, id)
			if IsCode(err, CodeNotFound) {
				return Invalid("members", "%q is no user of the organization", id)
			}
			if err != nil {
				return err
			}
			has := slices.Contains(u.Roles, role)
			if has == assign {
				return nil
			}
			roles := slices.DeleteFunc(slices.Clone(u.Roles), func(r string) bool { return r == role })
			if assign {
				roles = append(roles, role)
				slices.Sort(roles)
			}
			if role == RoleAdmin && u.Status == UserActive {
				if admins < 0 {
					if admins, err = tx.CountUsersWithRole(p.OrgID, RoleAdmin); err != nil {
						return err
					}
				}
				if assign {
					admins++
				} else {
					admins--
				}
			}
			if err := tx.SetUserRoles(p.OrgID, id, normalize(roles), now); err != nil {
				return err
			}
			return s.auditRoles(tx, actorOf(p), u, u.Roles, roles)
		}
		for _, id := range normalize(c.Add) {
			if err := change(id, true); err != nil {
				return err
			}
		}
		for _, id := range normalize(remove) {
			if slices.Contains(c.Add, id) {
				continue
			}
			if err := change(id, false); err != nil {
				return err
			}
		}
		if admins == 0 {
			return Errorf(CodeConflict, "cannot revoke the organization's last ADMIN")
		}
		return nil
	})
}
