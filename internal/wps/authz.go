package wps

import (
	"regexp"
	"slices"
	"time"
)

// RoleAdmin is allowed every function; it still fills seats only through policies.
const RoleAdmin = "ADMIN"

// Function names a permission a policy can grant.
type Function string

// The function catalogue (docs/api.md lists which endpoint needs which).
const (
	FnOrgUpdate         Function = "org:update"
	FnUsersRead         Function = "users:read"
	FnUsersManage       Function = "users:manage"
	FnUsersInvite       Function = "users:invite"
	FnRolesManage       Function = "roles:manage"
	FnPoliciesManage    Function = "policies:manage"
	FnEntityRead        Function = "entity:read"
	FnEntityWrite       Function = "entity:write"
	FnProcessRead       Function = "process:read"
	FnProcessWrite      Function = "process:write"
	FnMeasurementRead   Function = "measurement:read"
	FnMeasurementCreate Function = "measurement:create"
	FnActionWrite       Function = "action:write"
	FnActionApprove     Function = "action:approve"
	FnActionReprove     Function = "action:reprove"
	FnWebhooksManage    Function = "webhooks:manage"
	FnLedgerRead        Function = "ledger:read"
	FnAuditRead         Function = "audit:read"
)

// Functions is the whole catalogue, in documentation order.
var Functions = []Function{
	FnOrgUpdate, FnUsersRead, FnUsersManage, FnUsersInvite, FnRolesManage, FnPoliciesManage,
	FnEntityRead, FnEntityWrite, FnProcessRead, FnProcessWrite,
	FnMeasurementRead, FnMeasurementCreate, FnActionWrite, FnActionApprove,
	FnActionReprove, FnWebhooksManage, FnLedgerRead, FnAuditRead,
}

// IsFunction reports whether name is in the catalogue.
func IsFunction(name string) bool { return slices.Contains(Functions, Function(name)) }

var roleRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidRole reports whether r is a well-formed role name.
func ValidRole(r string) bool { return roleRe.MatchString(r) }

// Principal is the authenticated caller: a user of one org, the key used,
// the user's roles and the org's policies the user holds. OrgPolicies are
// all the org's policies as read when the key was resolved (views use
// them; they are as fresh as the key cache).
type Principal struct {
	OrgID       string
	UserID      string
	KeyID       string    // the API key used, or ""
	SessionID   string    // the session used, or ""
	sessionEnds time.Time // when the session ends unless used again
	sessionSeen time.Time // when it was last recorded as used
	Roles       []string
	User        User // as authentication read it (name, email, roles)
	Policies    []Policy
	OrgPolicies []Policy
}

// IsAdmin reports whether the caller holds role ADMIN.
func (p *Principal) IsAdmin() bool { return slices.Contains(p.Roles, RoleAdmin) }

// HoldsPolicy reports whether the caller holds the named policy.
func (p *Principal) HoldsPolicy(name string) bool {
	return slices.ContainsFunc(p.Policies, func(pol Policy) bool { return pol.Name == name })
}

// Can reports whether the caller may use fn: ADMIN may use every function,
// others when a policy they hold lists it.
func (p *Principal) Can(fn Function) bool {
	if p.IsAdmin() {
		return true
	}
	for _, pol := range p.Policies {
		if slices.Contains(pol.Functions, string(fn)) {
			return true
		}
	}
	return false
}

// Require returns a forbidden error unless the caller may use fn.
func (p *Principal) Require(fn Function) error {
	if p.Can(fn) {
		return nil
	}
	return Errorf(CodeForbidden, "this action needs a policy with function %q", fn)
}

// Holds reports whether a user with these roles holds pol.
func Holds(roles []string, pol Policy) bool {
	for _, r := range pol.Roles {
		if slices.Contains(roles, r) {
			return true
		}
	}
	return false
}
