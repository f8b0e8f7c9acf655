package wps

import (
	"context"
	"slices"
	"strings"
	"time"

	"wps/internal/engine"
)

// Delegation lets a delegate (To) fill the seats its delegator (From) could
// fill, limited to PolicyNames when given, while it is active: from
// StartsAt until EndsAt, not revoked, and both users active (semantics §17).
// Seats received by delegation are not passed on: a delegate fills its
// delegators' seats through their own policies only.
type Delegation struct {
	ID          string   `json:"id"`
	FromUserID  string   `json:"fromUserId" doc:"The delegator: the user who is away"`
	ToUserID    string   `json:"toUserId" doc:"The delegate: who fills the delegator's seats meanwhile"`
	StartsAt    Time     `json:"startsAt" doc:"When the delegate may start filling the seats"`
	EndsAt      Time     `json:"endsAt" doc:"When it ends (the delegate may act before this instant)"`
	PolicyNames []string `json:"policyNames" doc:"The delegator's policies whose seats the delegate may fill; empty: all"`
	Reason      string   `json:"reason" doc:"Why: who is away, for what"`
	CreatedAt   Time     `json:"createdAt"`
	OrgID       string   `json:"-"`
	CreatedBy   string   `json:"-"`
	RevokedAt   Time     `json:"-"` // zero while not revoked
}

// activeAt reports whether d lets its delegate act at now (the users'
// being active is checked apart).
func (d Delegation) activeAt(now time.Time) bool {
	return d.RevokedAt.IsZero() && !now.Before(d.StartsAt.Time) && now.Before(d.EndsAt.Time)
}

// covers reports whether d delegates the seats of policy.
func (d Delegation) covers(policy string) bool {
	return len(d.PolicyNames) == 0 || slices.Contains(d.PolicyNames, policy)
}

// Delegations are the delegations a user gave and received that have not
// ended nor been revoked, each list by start.
type Delegations struct {
	Given    []Delegation `json:"given" doc:"The caller's delegations to others, current and upcoming"`
	Received []Delegation `json:"received" doc:"Others' delegations to the caller, current and upcoming"`
}

// DelegationInput is the body of POST /v1/users/me/delegations.
type DelegationInput struct {
	ToUserID    string
	StartsAt    string // RFC 3339; "" for now
	EndsAt      string // RFC 3339
	PolicyNames []string
	Reason      string
}

// OnBehalfOf names the user whose seat an action filled by a delegation.
type OnBehalfOf struct {
	UserID string `json:"userId"`
	Name   string `json:"name"`
}

// CreateDelegation records that the caller delegates their seats
// (CreateDelegationFor the caller).
func (s *Service) CreateDelegation(ctx context.Context, p *Principal, in DelegationInput) (Delegation, error) {
	return s.createDelegation(ctx, p, p.UserID, in)
}

// CreateDelegationFor records a delegation of user fromID's seats, for
// someone who is away (users:manage). Errors: CodeForbidden, CodeNotFound
// (no such user), CodeInvalid naming the field (see createDelegation).
func (s *Service) CreateDelegationFor(ctx context.Context, p *Principal, fromID string, in DelegationInput) (Delegation, error) {
	if err := p.Require(FnUsersManage); err != nil {
		return Delegation{}, err
	}
	return s.createDelegation(ctx, p, fromID, in)
}

// createDelegation checks and writes a delegation of from's seats. Errors:
// CodeInvalid naming toUserId (oneself, unknown, of another org or
// deactivated), startsAt or endsAt (not RFC 3339, ending in the past or
// not after its start), policyNames (unknown, not held by the delegator,
// or held only through a received delegation: those are not delegated
// again), reason (blank) or startsAt (it overlaps another delegation of
// the same seats); nothing is written then.
func (s *Service) createDelegation(ctx context.Context, p *Principal, fromID string, in DelegationInput) (Delegation, error) {
	now := s.Now()
	var v Validator
	starts, ends := now, Time{}
	if in.StartsAt != "" {
		t, err := time.Parse(time.RFC3339, in.StartsAt)
		v.Check(err == nil, "startsAt", "must be an RFC 3339 instant, like 2026-07-01T08:00:00Z")
		if err == nil && t.After(now.Time) {
			starts = At(t) // one that starts earlier starts now
		}
	}
	t, err := time.Parse(time.RFC3339, in.EndsAt)
	switch {
	case err != nil:
		v.Add("endsAt", "must be an RFC 3339 instant, like 2026-07-15T18:00:00Z")
	case !t.After(now.Time):
		v.Add("endsAt", "must be in the future")
	case !t.After(starts.Time):
		v.Add("endsAt", "must be after startsAt")
	default:
		ends = At(t)
	}
	v.Check(strings.TrimSpace(in.Reason) != "", "reason", "say why (who is away, for what)")
	v.Check(in.ToUserID != fromID, "toUserId", "one cannot delegate to oneself")
	d := Delegation{ID: NewID(), OrgID: p.OrgID, FromUserID: fromID, ToUserID: in.ToUserID, StartsAt: starts, EndsAt: ends,
		PolicyNames: normalize(in.PolicyNames), Reason: strings.TrimSpace(in.Reason), CreatedBy: p.UserID, CreatedAt: now}
	toName := ""
	err = s.store.Write(ctx, func(tx Tx) error {
		from, err := tx.GetUser(p.OrgID, fromID)
		if err != nil {
			return err
		}
		if in.ToUserID != "" && in.ToUserID != fromID {
			to, err := tx.GetUser(p.OrgID, in.ToUserID)
			toName = displayName(to)
			switch {
			case IsCode(err, CodeNotFound):
				v.Add("toUserId", "no user %q in this organization", in.ToUserID)
			case err != nil:
				return err
			case to.Status != UserActive:
				v.Add("toUserId", "%s is deactivated", displayName(to))
			}
		} else if in.ToUserID == "" {
			v.Add("toUserId", "is required")
		}
		policies, err := tx.ListPolicies(p.OrgID)
		if err != nil {
			return err
		}
		given, err := tx.ListDelegations(p.OrgID, fromID, now)
		if err != nil {
			return err
		}
		for i, name := range in.PolicyNames { // named by their place in the request
			j := slices.IndexFunc(policies, func(pol Policy) bool { return pol.Name == name })
			switch {
			case j < 0:
				v.Add(fieldIndex("policyNames", i), "no policy %q", name)
			case !Holds(from.Roles, policies[j]) && slices.ContainsFunc(given, func(g Delegation) bool { return g.ToUserID == fromID && g.covers(name) }):
				v.Add(fieldIndex("policyNames", i), "%s holds %q only by a delegation received: received seats are not delegated again", displayName(from), name)
			case !Holds(from.Roles, policies[j]):
				v.Add(fieldIndex("policyNames", i), "%s does not hold %q", displayName(from), name)
			}
		}
		if err := v.Err(); err != nil {
			return err
		}
		for _, g := range given {
			if g.FromUserID == fromID && g.StartsAt.Before(d.EndsAt.Time) && d.StartsAt.Before(g.EndsAt.Time) && overlapping(g.PolicyNames, d.PolicyNames) {
				return Invalid("startsAt", "overlaps delegation %s (%s to %s) of the same seats: revoke it first", g.ID,
					g.StartsAt.Format(time.RFC3339), g.EndsAt.Format(time.RFC3339))
			}
		}
		if err := tx.CreateDelegation(d); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditDelegationCreated, Actor: actorOf(p), Reason: d.Reason,
			Target: AuditTarget{Kind: TargetDelegation, ID: d.ID, Name: delegationName(from, toName)}, Changes: diffFields(nil, d)})
	})
	if err != nil {
		return Delegation{}, err
	}
	return d, nil
}

// overlapping reports whether two delegations' policies share a seat
// (none given: all).
func overlapping(a, b []string) bool {
	return len(a) == 0 || len(b) == 0 || slices.ContainsFunc(a, func(n string) bool { return slices.Contains(b, n) })
}

// ListDelegations lists the caller's delegations, given and received,
// that have not ended nor been revoked.
func (s *Service) ListDelegations(ctx context.Context, p *Principal) (Delegations, error) {
	out := Delegations{Given: []Delegation{}, Received: []Delegation{}}
	err := s.store.Read(ctx, func(tx Tx) error {
		list, err := tx.ListDelegations(p.OrgID, p.UserID, s.Now())
		for _, d := range list {
			if d.FromUserID == p.UserID {
				out.Given = append(out.Given, d)
			} else {
				out.Received = append(out.Received, d)
			}
		}
		return err
	})
	return out, err
}

// RevokeDelegation ends a delegation at once; its delegator, its delegate
// or a holder of users:manage may. Errors: CodeNotFound (none, already
// ended or revoked, or not the caller's to see), CodeForbidden.
func (s *Service) RevokeDelegation(ctx context.Context, p *Principal, id string) error {
	now := s.Now()
	return s.store.Write(ctx, func(tx Tx) error {
		d, err := tx.GetDelegation(p.OrgID, id)
		if err != nil {
			return err
		}
		mine := d.FromUserID == p.UserID || d.ToUserID == p.UserID
		if !mine && !p.Can(FnUsersManage) {
			return Errorf(CodeNotFound, "delegation not found")
		}
		if !d.RevokedAt.IsZero() || !now.Before(d.EndsAt.Time) {
			return Errorf(CodeNotFound, "delegation not found: it has ended")
		}
		if err := tx.RevokeDelegation(p.OrgID, id, now); err != nil {
			return err
		}
		from, err := tx.GetUser(p.OrgID, d.FromUserID)
		if err != nil && !IsCode(err, CodeNotFound) {
			return err
		}
		to, err := tx.GetUser(p.OrgID, d.ToUserID)
		if err != nil && !IsCode(err, CodeNotFound) {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditDelegationRevoked, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetDelegation, ID: d.ID, Name: delegationName(from, displayName(to))},
			Changes: map[string]AuditChange{"endsAt": {Before: d.EndsAt, After: now}}})
	})
}

// delegationName names a delegation in the audit trail: "Bruno → Ana".
func delegationName(from User, to string) string { return displayName(from) + " → " + to }

// delegator is a user whose seats someone fills by an active delegation:
// the user, the policies of theirs it delegates, and the delegation.
type delegator struct {
	User
	policies []Policy
	d        Delegation
}

// proxy is what the engine needs of del at st: the step's policies the
// delegator holds there, and the role that counts for each.
func (del delegator) proxy(st Step) (engine.Proxy, map[string]string) {
	holds, roleFor := seatHolder(st, del.Roles, del.policies)
	if len(holds) == 1 && holds[0] == engine.AnySeat && len(del.d.PolicyNames) > 0 {
		holds = nil // a delegation of some policies gives no seat of a step without policies
	}
	return engine.Proxy{UserID: del.ID, Holds: holds}, roleFor
}

// delegatedCan reports whether any delegated policy grants fn.
func delegatedCan(dels []delegator, fn Function) bool {
	return slices.ContainsFunc(dels, func(del delegator) bool {
		return (&Principal{Roles: del.Roles, Policies: del.policies}).Can(fn)
	})
}

// delegatorsOf lists whose seats userID fills now by delegation, in the
// order the delegations start: active delegations to them from active
// users, each with the delegator's policies it covers. Delegations
// received by the delegator are not followed.
func delegatorsOf(tx Tx, orgID, userID string, now Time) ([]delegator, error) {
	list, err := tx.ListDelegations(orgID, userID, now)
	if err != nil || !slices.ContainsFunc(list, func(d Delegation) bool { return d.ToUserID == userID && d.activeAt(now.Time) }) {
		return nil, err
	}
	policies, err := tx.ListPolicies(orgID)
	if err != nil {
		return nil, err
	}
	var out []delegator
	for _, d := range list {
		if d.ToUserID != userID || !d.activeAt(now.Time) {
			continue
		}
		u, err := tx.GetUser(orgID, d.FromUserID)
		if IsCode(err, CodeNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if del, ok := delegatorFrom(u, d, policies); ok {
			out = append(out, del)
		}
	}
	return out, nil
}

// delegatorFrom is u as the delegator of d, unless u is not active (a
// deactivated delegator ends the delegation).
func delegatorFrom(u User, d Delegation, policies []Policy) (delegator, bool) {
	if u.Status != UserActive {
		return delegator{}, false
	}
	del := delegator{User: u, d: d}
	for _, pol := range policies {
		if Holds(u.Roles, pol) && d.covers(pol.Name) {
			del.policies = append(del.policies, pol)
		}
	}
	return del, true
}

// proxies are the engine's proxies of dels at st, and the role that
// counts for each seat, by delegator.
func proxies(dels []delegator, st Step) ([]engine.Proxy, map[string]map[string]string) {
	var out []engine.Proxy
	roles := map[string]map[string]string{}
	for _, del := range dels {
		px, roleFor := del.proxy(st)
		out = append(out, px)
		roles[del.ID] = roleFor
	}
	return out, roles
}

// delegatorByID finds a delegator in dels.
func delegatorByID(dels []delegator, id string) *delegator {
	for i := range dels {
		if dels[i].ID == id {
			return &dels[i]
		}
	}
	return nil
}

// onBehalfOf is whom a filled a seat for, or nil.
func (a Action) onBehalfOf() *OnBehalfOf {
	if a.OnBehalfOf.UserID == "" {
		return nil
	}
	o := a.OnBehalfOf
	return &o
}

// delegators are whose seats the run's user fills by delegation now, read
// once per run (delegatorsOf).
func (r *run) delegators() ([]delegator, error) {
	if r.delsRead {
		return r.dels, nil
	}
	dels, err := delegatorsOf(r.tx, r.m.OrgID, r.user.ID, r.now)
	if err != nil {
		return nil, err
	}
	r.dels, r.delsRead = dels, true
	return dels, nil
}

// mayNeedProxies reports whether an action of the run's user at step
// stepID might fill a delegated seat: their own holds (narrowed to policy
// when named) fill none now and they fill no seat of it yet, or they hold
// none of its policies (a rejection). Otherwise no delegation is read.
func (r *run) mayNeedProxies(stepID string, holds []string, policy string) bool {
	if r.user.ID == SystemUserID {
		return false
	}
	if len(holds) == 0 {
		return true
	}
	_, sd := r.def.Step(stepID)
	ss := r.m.State.Steps[stepID]
	if sd == nil || ss == nil || engine.FilledBy(ss, r.user.ID) != "" {
		return false
	}
	if policy != "" {
		holds = slices.DeleteFunc(slices.Clone(holds), func(p string) bool { return p != policy })
	}
	return len(engine.SeatsFor(sd, ss, r.user.ID, holds)) == 0
}

// mayActFor tells whether a delegation from del lets its delegate act at
// all (a delegated policy grants action:write or action:approve).
func mayActFor(del delegator) bool {
	return delegatedCan([]delegator{del}, FnActionWrite) || delegatedCan([]delegator{del}, FnActionApprove)
}

// Colleague is a user of the caller's org as a delegation form names them.
type Colleague struct {
	ID     string
	Name   string
	Active bool
}

// Colleagues lists the org's users by name, for choosing a delegate and
// naming the users of delegations (any member may: delegating needs it).
func (s *Service) Colleagues(ctx context.Context, p *Principal) ([]Colleague, error) {
	var out []Colleague
	err := s.store.Read(ctx, func(tx Tx) error {
		for page := 1; ; page++ {
			users, total, err := tx.ListUsers(p.OrgID, Page{Page: page, PerPage: 500})
			if err != nil {
				return err
			}
			for _, u := range users {
				out = append(out, Colleague{ID: u.ID, Name: displayName(u), Active: u.Status == UserActive})
			}
			if page*500 >= total {
				return nil
			}
		}
	})
	slices.SortFunc(out, func(a, b Colleague) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, err
}
