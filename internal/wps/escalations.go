package wps

import (
	"context"
	"slices"
	"strings"

	gojson "github.com/goccy/go-json"

	"wps/internal/calendar"
)

// escalateAt is when escalation i of st falls due for an opening due at
// due: due + its after; nil when the step has no such escalation or no
// deadline (or the after no longer parses: checked when saved).
func escalateAt(st Step, due *Time, i int) *Time {
	if due == nil || i >= len(st.Escalations) {
		return nil
	}
	d, err := calendar.ParseDuration(st.Escalations[i].After)
	if err != nil {
		return nil
	}
	t := At(due.Add(d))
	return &t
}

// escalatedEvent is the data of step.escalated.
type escalatedEvent struct {
	After         string `json:"after"`
	DueAt         *Time  `json:"dueAt"`
	Escalation    int    `json:"escalation"`
	MeasurementID string `json:"measurementId"`
	Opening       int    `json:"opening"`
	PolicyName    string `json:"policyName"`
	ProcessID     string `json:"processId"`
	StepID        string `json:"stepId"`
}

// Escalated is one escalation emitted: step.escalated for the opening of
// a step still open Escalation.After past its DueAt. Its recipients are
// the holders of Escalation.PolicyName and their delegates
// (EscalationRecipients), for the
// work.escalated mail (mailEscalated, with mail on).
type Escalated struct {
	OrgID         string
	MeasurementID string
	ProcessID     string
	StepID        string
	Opening       int
	DueAt         Time
	Index         int
	Escalation    Escalation
}

// NotifyEscalations emits step.escalated for each escalation of an open
// step that has fallen due: in the order of the step's escalations, each
// once per opening, across replicas (the open step's row is claimed and
// its count of escalations emitted moved in the same transaction). It
// returns how many it emitted.
func (s *Service) NotifyEscalations(ctx context.Context) (int, error) {
	claim := func(tx Tx, now Time) ([]OpenStep, error) { return tx.ClaimEscalations(now, 100) }
	return s.scheduledPass(ctx, claim, func(tx Tx, now Time, o OpenStep, m Measurement, proc Process) ([]Event, error) {
		var events []Event
		_, st := stepByID(proc.Steps, o.StepID)
		for st != nil && o.DueAt != nil && o.EscalateAt != nil && !o.EscalateAt.After(now.Time) && o.Escalated < len(st.Escalations) {
			esc := Escalated{OrgID: o.OrgID, MeasurementID: m.ID, ProcessID: m.ProcessID, StepID: o.StepID, Opening: o.Opening,
				DueAt: *o.DueAt, Index: o.Escalated, Escalation: st.Escalations[o.Escalated]}
			events = append(events, escalatedEventOf(esc, now))
			var to []User // read only for mail or the hook; the chat channels are told either way
			if s.escalated != nil || s.mail.Enabled {
				var err error
				if to, err = EscalationRecipients(tx, esc.OrgID, esc.Escalation.PolicyName, now); err != nil {
					return nil, err
				}
			}
			if err := s.mailEscalated(tx, m, proc, esc, to); err != nil {
				return nil, err
			}
			if s.escalated != nil {
				if err := s.escalated(tx, esc, to); err != nil {
					return nil, err
				}
			}
			o.Escalated++
			o.EscalateAt = escalateAt(*st, o.DueAt, o.Escalated)
		}
		if st == nil || o.DueAt == nil || o.Escalated >= len(st.Escalations) {
			o.EscalateAt = nil // nothing (left) to escalate
		}
		return events, tx.MarkEscalated(o)
	})
}

// escalatedEventOf is the outbox event of esc.
func escalatedEventOf(esc Escalated, now Time) Event {
	e := Event{ID: NewID(), OrgID: esc.OrgID, Type: EvStepEscalated, MeasurementID: esc.MeasurementID, StepID: esc.StepID, CreatedAt: now}
	due := esc.DueAt
	e.Payload, _ = gojson.Marshal(eventPayload[escalatedEvent]{CreatedAt: now, Data: escalatedEvent{
		After: esc.Escalation.After, DueAt: &due, Escalation: esc.Index, MeasurementID: esc.MeasurementID, Opening: esc.Opening,
		PolicyName: esc.Escalation.PolicyName, ProcessID: esc.ProcessID, StepID: esc.StepID}, ID: e.ID, OrgID: esc.OrgID, Type: e.Type})
	return e
}

// EscalationRecipients are the people an escalation to policyName is for:
// the org's active users who hold the policy (a role it lists), and the
// active delegates of each of them whose delegation is active at now and
// covers the policy (semantics §17: a delegate's notifications include
// the work of the seats they fill), by id. None when the policy is gone
// (renames follow, deletes are refused while an escalation names it).
func EscalationRecipients(tx Tx, orgID, policyName string, now Time) ([]User, error) {
	pols, err := tx.ListPolicies(orgID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(pols, func(p Policy) bool { return p.Name == policyName })
	if i < 0 {
		return nil, nil
	}
	var out []User
	active := map[string]User{}
	for pg := (Page{Page: 1, PerPage: 500}); ; pg.Page++ {
		users, _, err := tx.ListUsers(orgID, pg)
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			if u.Status != UserActive {
				continue
			}
			active[u.ID] = u
			if Holds(u.Roles, pols[i]) {
				out = append(out, u)
			}
		}
		if len(users) < pg.PerPage {
			break
		}
	}
	delegations, err := tx.ListDelegations(orgID, "", now)
	if err != nil {
		return nil, err
	}
	for _, d := range delegations {
		from, ok := active[d.FromUserID]
		to, toOK := active[d.ToUserID]
		if !ok || !toOK || !d.activeAt(now.Time) || !d.covers(policyName) || !Holds(from.Roles, pols[i]) ||
			slices.ContainsFunc(out, func(u User) bool { return u.ID == to.ID }) {
			continue
		}
		out = append(out, to)
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
