package wps

import (
	"context"
	"slices"
)

// MaxRoleScan bounds the users a role listing or a group replacement
// reads (in one read transaction).
const MaxRoleScan = 10000

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
			holders, _, err := tx.FindUsers(p.OrgID, UserQuery{Role: role}, Page{Page: 1, PerPage: MaxRoleScan})
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

// ReadUsers lets holders of users:read, and those who manage users
// (users:manage), read them.
func ReadUsers(p *Principal) error {
	if p.Can(FnUsersManage) {
		return nil
	}
	return p.Require(FnUsersRead)
}

// ValidEmail reports an email address as wps keeps them (at most 320
// characters, nothing but the address).
func ValidEmail(s string) bool { return validEmail(s) }

// RecordUserCreated records a user created (provisioned, or first signed
// in by SSO) in tx.
func (s *Service) RecordUserCreated(tx Tx, actor AuditActor, u User) error {
	return s.auditCreated(tx, actor, u)
}
