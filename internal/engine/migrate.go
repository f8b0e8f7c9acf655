package engine

import (
	"fmt"
	"slices"
	"time"
)

// Change is what moving a measurement to another version of its process
// does to one of its steps.
type Change struct {
	StepID string
	Kind   string // one of the Change kinds
}

// Change kinds.
const (
	StepAdded   = "added"   // the step is new; it waits, or opens (Opened) when its dependencies are done
	StepRemoved = "removed" // a step the measurement had finished or not reached is gone
	StepOpened  = "opened"  // a step opens because of the move
	StepSkipped = "skipped" // a step is skipped because of the move
	SeatsAdded  = "seats"   // an open step has seats it did not have
)

// Migrate moves a measurement's state from one version of its process to
// another: a step of both keeps its state (status, seats, opening), a new
// step waits, then every step whose dependencies are done opens, as after
// an action. It refuses (the reason for the caller to show) a move that
// would lose or invent work: an open step removed, a filled seat whose
// policy the step no longer has, an open step whose every seat would be
// filled without an action, a step open or finished before a dependency
// it would now have, an approval without an action. An approved
// measurement does not move. s is not
// changed.
func Migrate(from, to Def, s State, now time.Time) (State, []Change, []Event, error) {
	if Status(from, s) == StatusApproved {
		return State{}, nil, nil, refuse(Conflict, "", "the measurement is approved")
	}
	out := State{Steps: map[string]*StepState{}, Reproved: s.Reproved, Pending: s.Pending}
	var changes []Change
	for _, sd := range from.Steps {
		if _, kept := to.Step(sd.ID); kept != nil {
			continue
		}
		if s.Steps[sd.ID].Status == Open {
			return State{}, nil, nil, blocked(sd.ID, "step %q is open and the new version removes it", sd.ID)
		}
		changes = append(changes, Change{sd.ID, StepRemoved})
	}
	for _, sd := range to.Steps {
		old := s.Steps[sd.ID]
		if old == nil {
			out.Steps[sd.ID] = &StepState{Status: Waiting}
			changes = append(changes, Change{sd.ID, StepAdded})
			continue
		}
		st := *old
		st.Seats = map[string]Seat{}
		for p, seat := range old.Seats {
			st.Seats[p] = seat
		}
		out.Steps[sd.ID] = &st
		if st.Status != Open {
			continue
		}
		for p := range st.Seats {
			if !slices.Contains(seats(&sd), p) {
				return State{}, nil, nil, blocked(sd.ID, "the %q seat filled at step %q is not in the new version", p, sd.ID)
			}
		}
		if len(st.Seats) > 0 && len(Unfilled(&sd, &st)) == 0 {
			return State{}, nil, nil, blocked(sd.ID, "every seat of step %q would be filled without an action", sd.ID)
		}
		_, was := from.Step(sd.ID)
		if slices.ContainsFunc(seats(&sd), func(p string) bool { return !slices.Contains(seats(was), p) }) {
			changes = append(changes, Change{sd.ID, SeatsAdded})
		}
	}
	var evs []Event
	openReady(to, &out, now, &evs)
	for _, e := range evs {
		switch e.Type {
		case EvStepOpened:
			changes = append(changes, Change{e.StepID, StepOpened})
		case EvStepSkipped:
			changes = append(changes, Change{e.StepID, StepSkipped})
		}
	}
	for _, sd := range to.Steps {
		st := out.Steps[sd.ID]
		if st.Status != Open && st.Status != Consensed {
			continue
		}
		for _, dep := range sd.Deps {
			if d := out.Steps[dep].Status; d != Consensed && d != Skipped {
				return State{}, nil, nil, blocked(sd.ID, "step %q is %s, and the new version makes it wait for step %q, which is %s",
					sd.ID, st.Status, dep, d)
			}
		}
	}
	if Status(to, out) == StatusApproved {
		return State{}, nil, nil, refuse(Conflict, "", "the move would approve the measurement without an action")
	}
	return out, changes, evs, nil
}

func blocked(step, format string, args ...any) *Error {
	e := refuse(Conflict, "", "%s", fmt.Sprintf(format, args...))
	e.Step = step
	return e
}
