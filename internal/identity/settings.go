package identity

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// An org's single sign-on settings (semantics section 18): GET/PUT/DELETE
// /v1/sso and the console's page. The domain keeps who signs in and with
// which roles (wps.Service.SSOSignIn) and whether a password may be used.

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

var domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// GetSSO returns the caller's org's SSO settings. Errors: CodeNotFound
// when SSO is off.
func GetSSO(ctx context.Context, s *wps.Service, p *wps.Principal) (wps.SSOSettings, error) {
	if err := p.Require(wps.FnOrgUpdate); err != nil {
		return wps.SSOSettings{}, err
	}
	var out wps.SSOSettings
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
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
func PutSSO(ctx context.Context, s *wps.Service, p *wps.Principal, in SSOInput) (wps.SSOSettings, error) {
	if err := p.Require(wps.FnOrgUpdate); err != nil {
		return wps.SSOSettings{}, err
	}
	in.Issuer = strings.TrimSuffix(strings.TrimSpace(in.Issuer), "/")
	if in.PasswordSignIn == "" {
		in.PasswordSignIn = wps.PasswordAllowed
	}
	var v wps.Validator
	v.Check(wps.ValidHTTPURL(in.Issuer), "issuer", "must be an absolute http or https URL")
	v.Check(strings.TrimSpace(in.ClientID) != "" && len(in.ClientID) <= 500, "clientId", "must be 1 to 500 characters")
	if in.ClientSecret != nil {
		v.Check(len(*in.ClientSecret) <= 1000, "clientSecret", "must be at most 1000 characters")
	}
	v.Check(len(in.EmailDomains) <= 50, "emailDomains", "must have at most 50 items")
	domains := make([]string, 0, len(in.EmailDomains))
	for i, d := range in.EmailDomains {
		d = strings.ToLower(strings.TrimSpace(d))
		v.Check(domainRe.MatchString(d) && len(d) <= 253, "emailDomains["+strconv.Itoa(i)+"]", "must be a domain name such as example.com")
		domains = append(domains, d)
	}
	v.Check(len(in.GroupsClaim) <= 100, "groupsClaim", "must be at most 100 characters")
	v.Check(len(in.GroupRoles) <= 200, "groupRoles", "must have at most 200 groups")
	for _, g := range slices.Sorted(maps.Keys(in.GroupRoles)) {
		v.Check(g != "" && len(g) <= 300, "groupRoles", "group names must be 1 to 300 characters")
		wps.ValidRoles(&v, "groupRoles."+g, in.GroupRoles[g])
	}
	v.Check(slices.Contains([]string{wps.PasswordAllowed, wps.PasswordAdminsOnly, wps.PasswordDisabled}, in.PasswordSignIn), "passwordSignIn", "must be allowed, admins-only or disabled")
	if err := v.Err(); err != nil {
		return wps.SSOSettings{}, err
	}
	if err := TestSSOIssuer(ctx, s, p, in.Issuer); err != nil {
		return wps.SSOSettings{}, err
	}
	roles := map[string][]string{}
	for g, rs := range in.GroupRoles {
		roles[g] = wps.Normalize(rs)
	}
	out := wps.SSOSettings{OrgID: p.OrgID, Issuer: in.Issuer, ClientID: strings.TrimSpace(in.ClientID), EmailDomains: wps.Normalize(domains),
		GroupsClaim: strings.TrimSpace(in.GroupsClaim), GroupRoles: roles, AutoCreateUsers: in.AutoCreateUsers, PasswordSignIn: in.PasswordSignIn, UpdatedAt: s.Now()}
	err := s.Store().Write(ctx, func(tx wps.Tx) error {
		cur, err := tx.GetSSO(p.OrgID)
		if err != nil && !wps.IsCode(err, wps.CodeNotFound) {
			return err
		}
		out.ClientSecret = cur.ClientSecret
		if in.ClientSecret != nil {
			out.ClientSecret = *in.ClientSecret
		}
		if out.ClientSecret == "" {
			return wps.Invalid("clientSecret", "is required")
		}
		var before any
		if cur.OrgID != "" {
			cur.ClientSecretSet = cur.ClientSecret != ""
			before = cur
		}
		out.ClientSecretSet = true
		changes := wps.DiffFields(before, out)
		if out.ClientSecret != cur.ClientSecret {
			changes["clientSecret"] = wps.AuditChange{Changed: true}
		}
		if err := s.RecordAudit(tx, wps.AuditEvent{OrgID: p.OrgID, Type: wps.AuditSSOUpdated, Actor: wps.ActorOf(p),
			Target: wps.AuditTarget{Kind: wps.TargetOrg, ID: p.OrgID, Name: "sso"}, Changes: changes}); err != nil {
			return err
		}
		for _, d := range out.EmailDomains {
			if org, err := tx.SSOOrgByDomain(d); err == nil && org != p.OrgID {
				return wps.Errorf(wps.CodeConflict, "the email domain %s belongs to another organization", d)
			} else if err != nil && !wps.IsCode(err, wps.CodeNotFound) {
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
func DeleteSSO(ctx context.Context, s *wps.Service, p *wps.Principal) error {
	if err := p.Require(wps.FnOrgUpdate); err != nil {
		return err
	}
	return s.Store().Write(ctx, func(tx wps.Tx) error {
		cur, err := tx.GetSSO(p.OrgID)
		if err != nil {
			return err
		}
		if err := tx.DeleteSSO(p.OrgID); err != nil {
			return err
		}
		cur.ClientSecretSet = cur.ClientSecret != ""
		changes := wps.DiffFields(cur, nil)
		changes["enabled"] = wps.AuditChange{Before: true, After: false}
		return s.RecordAudit(tx, wps.AuditEvent{OrgID: p.OrgID, Type: wps.AuditSSOUpdated, Actor: wps.ActorOf(p),
			Target: wps.AuditTarget{Kind: wps.TargetOrg, ID: p.OrgID, Name: "sso"}, Changes: changes})
	})
}

// TestSSOIssuer fetches issuer's discovery document, as PutSSO does, and
// saves nothing (the console's "test connection"). Errors: CodeInvalid
// naming issuer.
func TestSSOIssuer(ctx context.Context, s *wps.Service, p *wps.Principal, issuer string) error {
	if err := p.Require(wps.FnOrgUpdate); err != nil {
		return err
	}
	issuer = strings.TrimSuffix(strings.TrimSpace(issuer), "/")
	if !wps.ValidHTTPURL(issuer) {
		return wps.Invalid("issuer", "must be an absolute http or https URL")
	}
	return s.DiscoverSSO(ctx, issuer)
}

// SSOSignIns lists the last sign-in through SSO of the org's users who
// signed in so, by user id (the console's users page). Errors: as ListUsers.
func SSOSignIns(ctx context.Context, s *wps.Service, p *wps.Principal) (map[string]wps.SSOSignInRecord, error) {
	if err := p.Require(wps.FnUsersRead); err != nil {
		return nil, err
	}
	var list []wps.SSOSignInRecord
	err := s.Store().Read(ctx, func(tx wps.Tx) (err error) {
		list, err = tx.ListSSOSignIns(p.OrgID)
		return err
	})
	out := make(map[string]wps.SSOSignInRecord, len(list))
	for _, r := range list {
		out[r.UserID] = r
	}
	return out, err
}
