package wps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	if err := p.Require(FnPoliciesManage); err != nil {
		return Policy{}, err
	}
	if err := in.validate(); err != nil {
		return Policy{}, err
	}
	now := s.Now()
	defer s.keys.forget(p.OrgID)
	pol := Policy{ID: NewID(), OrgID: p.OrgID, Name: in.Name, Roles: normalize(in.Roles),
		Functions: normalize(in.Functions), CreatedAt: now, UpdatedAt: now}
	return pol, s.store.Write(ctx, func(tx Tx) error {
		if err := tx.CreatePolicy(pol); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditPolicyCreated, TargetPolicy, pol.ID, pol.Name, nil, pol)
	})
}

// ListPolicies lists the org's policies by name.
func (s *Service) ListPolicies(ctx context.Context, p *Principal) ([]Policy, error) {
	if err := p.Require(FnUsersRead); err != nil {
		return nil, err
	}
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
	if err := p.Require(FnPoliciesManage); err != nil {
		return Policy{}, err
	}
	if err := in.validate(); err != nil {
		return Policy{}, err
	}
	var pol Policy
	defer s.keys.forget(p.OrgID)
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if pol, err = tx.GetPolicy(p.OrgID, id); err != nil {
			return err
		}
		if in.Name != pol.Name {
			// Actions under way end first; later ones see the new name.
			if err := tx.HoldMeasurementWrites(); err != nil {
				return err
			}
			if pol, err = tx.GetPolicy(p.OrgID, id); err != nil { // as it is once they ended
				return err
			}
		}
		before := pol
		if in.OldName != nil && *in.OldName != pol.Name {
			return Errorf(CodeConflict, "oldPolicyName %q is not the current name %q", *in.OldName, pol.Name)
		}
		if in.Name != pol.Name {
			if err := renamePolicyReferences(tx, p.OrgID, pol.Name, in.Name); err != nil {
				return err
			}
		}
		pol.Name = in.Name
		if in.Roles != nil {
			pol.Roles = normalize(in.Roles)
		}
		if in.Functions != nil {
			pol.Functions = normalize(in.Functions)
		}
		pol.UpdatedAt = s.Now()
		if err := tx.UpdatePolicy(pol); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditPolicyUpdated, TargetPolicy, pol.ID, pol.Name, before, pol)
	})
	return pol, err
}

// DeletePolicy removes a policy. Errors: CodeNotFound; CodeConflict when a
// step of a live process refers to it (the message lists the steps).
func (s *Service) DeletePolicy(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnPoliciesManage); err != nil {
		return err
	}
	defer s.keys.forget(p.OrgID)
	return s.store.Write(ctx, func(tx Tx) error {
		pol, err := tx.GetPolicy(p.OrgID, id)
		if err != nil {
			return err
		}
		versions, err := tx.ProcessVersionsMentioning(p.OrgID, jsonQuoted(pol.Name))
		if err != nil {
			return err
		}
		var users []string
		for _, v := range versions {
			if !v.Live {
				continue
			}
			for _, st := range v.Steps {
				if stepMentionsPolicy(st, pol.Name) {
					users = append(users, fmt.Sprintf("%s / %s", v.ProcessName, st.Label))
				}
			}
		}
		if len(users) > 0 {
			return Errorf(CodeConflict, "policy %q is used by steps: %s", pol.Name, strings.Join(users, "; "))
		}
		if err := tx.DeletePolicy(p.OrgID, id); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditPolicyDeleted, TargetPolicy, pol.ID, pol.Name, pol, nil)
	})
}

func stepMentionsPolicy(st Step, name string) bool {
	return slices.Contains(st.PolicyNames, name) || slices.Contains(st.OrderedPolicies, name) ||
		slices.Contains(st.ViewPolicyNames, name) || slices.ContainsFunc(st.Roles, func(r StepRole) bool { return r.P == name }) ||
		paramsMentionPolicy(st.Parameters, name) ||
		slices.ContainsFunc(st.Escalations, func(e Escalation) bool { return e.PolicyName == name })
}

// paramsMentionPolicy reports whether a hiddenFrom of params names the policy.
func paramsMentionPolicy(params []Parameter, name string) bool {
	found := false
	eachHiddenFrom("", params, func(_ string, names []string) { found = found || slices.Contains(names, name) })
	return found
}

// renamePolicyReferences makes every step (of every version, since running
// measurements keep theirs) and every entity that names the policy follow
// its new name, in the caller's transaction.
func renamePolicyReferences(tx Tx, orgID, old, name string) error {
	rename := func(list []string) {
		for i := range list {
			if list[i] == old {
				list[i] = name
			}
		}
	}
	versions, err := tx.ProcessVersionsMentioning(orgID, jsonQuoted(old))
	if err != nil {
		return err
	}
	for _, v := range versions {
		changed := false
		for i := range v.Steps {
			st := &v.Steps[i]
			if !stepMentionsPolicy(*st, old) {
				continue
			}
			changed = true
			rename(st.PolicyNames)
			rename(st.OrderedPolicies)
			rename(st.ViewPolicyNames)
			eachHiddenFrom("", st.Parameters, func(_ string, names []string) { rename(names) })
			for j := range st.Roles {
				if st.Roles[j].P == old {
					st.Roles[j].P = name
				}
			}
			for j := range st.Escalations {
				if st.Escalations[j].PolicyName == old {
					st.Escalations[j].PolicyName = name
				}
			}
		}
		if changed {
			if err := tx.UpdateProcessVersion(v.ProcessVersion); err != nil {
				return err
			}
		}
	}
	if err := tx.RenameSeatPolicy(orgID, old, name); err != nil {
		return err
	}
	entities, err := tx.EntitiesMentioning(orgID, jsonQuoted(old))
	if err != nil {
		return err
	}
	for _, e := range entities {
		if slices.Contains(e.ViewPolicyNames, old) || paramsMentionPolicy(e.Parameters, old) {
			rename(e.ViewPolicyNames)
			e.ViewPolicyNames = normalize(e.ViewPolicyNames)
			eachHiddenFrom("", e.Parameters, func(_ string, names []string) { rename(names) })
			if err := tx.UpdateEntity(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonQuoted is s as it appears in stored JSON, quotes included.
func jsonQuoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
