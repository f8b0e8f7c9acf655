package wps

import (
	"context"
	"strings"
	"unicode"
)

// PolicyInput is the body of a policy create or update. On update, nil Roles
// or Functions stay as they are, and OldName, when set, must be the current name.
type PolicyInput struct {
	Name      string
	OldName   *string
	Roles     []string
	Functions []string
}

func (in *PolicyInput) validate() error {
	in.Name = strings.TrimSpace(in.Name)
	var v Validator
	v.Check(validName(in.Name, 100), "name", "must be 1 to 100 printable characters")
	validRoles(&v, "roles", in.Roles)
	for i, f := range in.Functions {
		v.Check(IsFunction(f), fieldIndex("functions", i), "unknown function %q", f)
	}
	return v.Err()
}

// validName reports whether s is 1 to max printable characters.
func validName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// CreatePolicy adds a policy. Errors: CodeInvalid; CodeConflict for a name in use.
func (s *Service) CreatePolicy(ctx context.Context, p *Principal, in PolicyInput) (Policy, error) {
	if err := in.validate(); err != nil {
		return Policy{}, err
	}
	now := s.Now()
	pol := Policy{ID: NewID(), OrgID: p.OrgID, Name: in.Name, Roles: normalize(in.Roles),
		Functions: normalize(in.Functions), CreatedAt: now, UpdatedAt: now}
	return pol, s.store.Write(ctx, func(tx Tx) error { return tx.CreatePolicy(pol) })
}

// ListPolicies lists the org's policies by name.
func (s *Service) ListPolicies(ctx context.Context, p *Principal) ([]Policy, error) {
	var list []Policy
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, err = tx.ListPolicies(p.OrgID)
		return err
	})
	return list, err
}

// UpdatePolicy changes a policy; a new name renames it, and every reference
// by name follows in the same transaction. Errors: CodeInvalid, CodeNotFound,
// CodeConflict for a stale OldName or a name in use.
func (s *Service) UpdatePolicy(ctx context.Context, p *Principal, id string, in PolicyInput) (Policy, error) {
	if err := in.validate(); err != nil {
		return Policy{}, err
	}
	var pol Policy
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if pol, err = tx.GetPolicy(p.OrgID, id); err != nil {
			return err
		}
		if in.OldName != nil && *in.OldName != pol.Name {
			return Errorf(CodeConflict, "oldPolicyName %q is not the current name %q", *in.OldName, pol.Name)
		}
		pol.Name = in.Name
		if in.Roles != nil {
			pol.Roles = normalize(in.Roles)
		}
		if in.Functions != nil {
			pol.Functions = normalize(in.Functions)
		}
		pol.UpdatedAt = s.Now()
		return tx.UpdatePolicy(pol)
	})
	return pol, err
}

// DeletePolicy removes a policy. Errors: CodeNotFound.
func (s *Service) DeletePolicy(ctx context.Context, p *Principal, id string) error {
	return s.store.Write(ctx, func(tx Tx) error { return tx.DeletePolicy(p.OrgID, id) })
}
