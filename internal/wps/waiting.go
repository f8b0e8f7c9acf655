package wps

import (
	"slices"
)

// KindWorkWaiting is the message to a user when a step starts waiting on
// them (semantics §16: work.waiting).
const KindWorkWaiting = "work.waiting"

// listedFor tells whether the Inbox lists open step o for a user holding
// keys (heldKeys): one of their keys fills one of its seats now, and they
// fill no seat of this opening yet. It is the rule of the actionable index
// (Tx.ListMeasurements with Filler), worked out in memory.
func listedFor(o OpenStep, userID string, keys []heldKey) bool {
	if slices.Contains(o.Fillers, userID) {
		return false
	}
	for _, k := range keys {
		if slices.Contains(o.Seats, k.SeatKey) {
			return true
		}
	}
	return false
}

// mailWaiting queues work.waiting for each active user whom the Inbox
// starts listing an open step for: listed among after (the measurement's
// open steps as saved) and not in before for the same opening (a step
// that opens or re-opens, or whose next ordered seat becomes theirs). It
// runs in the change's transaction; nothing is read when mail is off or
// no step has a seat that was not fillable before.
func (s *Service) mailWaiting(tx Tx, m Measurement, proc Process, before, after []OpenStep) error {
	if !s.mail.Enabled {
		return nil
	}
	type change struct {
		now  OpenStep
		was  *OpenStep
		step *Step
	}
	var changes []change
	for _, o := range after {
		if len(o.Seats) == 0 {
			continue
		}
		var was *OpenStep
		for i := range before {
			if before[i].StepID == o.StepID && before[i].Opening == o.Opening {
				was = &before[i]
			}
		}
		if was != nil && slices.Equal(was.Seats, o.Seats) && slices.Equal(was.Fillers, o.Fillers) {
			continue // the same seats wait on the same people
		}
		if _, st := stepByID(proc.Steps, o.StepID); st != nil {
			changes = append(changes, change{o, was, st})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	policies, err := tx.ListPolicies(m.OrgID)
	if err != nil {
		return err
	}
	for page := 1; ; page++ {
		users, total, err := tx.ListUsers(m.OrgID, Page{Page: page, PerPage: 500})
		if err != nil {
			return err
		}
		for _, u := range users {
			if u.Status != UserActive {
				continue
			}
			keys := heldKeys(u.Roles, policies)
			for _, c := range changes {
				if !listedFor(c.now, u.ID, keys) || c.was != nil && listedFor(*c.was, u.ID, keys) {
					continue
				}
				subject, body := waitingMessage(m.Name, proc.Name, c.step.Label, c.now.DueAt, s.link("/measurements/"+m.ID))
				if err := s.queueMail(tx, m.OrgID, KindWorkWaiting, u.ID, u.Email, subject, body, At(s.Now().Add(notificationWindow))); err != nil {
					return err
				}
			}
		}
		if page*500 >= total {
			return nil
		}
	}
}
