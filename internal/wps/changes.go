package wps

import (
	"slices"
	"time"

	"wps/internal/engine"
)

// Change is one change of a measurement as the domain hands it over, in
// the change's own transaction, to what keeps aggregates of them (the
// store's Tx.RecordChanges, which internal/reports turns into report
// facts): the engine's state before and after an action or, at creation,
// the state the measurement started in. The domain says what happened;
// what it counts for is the reports package's rule.
type Change struct {
	M     Measurement // the measurement (its org, process and creation time)
	Steps []Step      // the steps of its version
	Cals  []CalendarVersion
	// Start is the measurement's creation: After is the state it started
	// in, Before and Action are zero.
	Start         bool
	Before, After engine.State
	Action        Action
	// FirstPass: no REJECTION came before the action, nor is it one.
	FirstPass bool
	// Def is the engine's definition of Steps.
	Def engine.Def
}

// DueAt is when an opening of st at opened becomes overdue, or nil (see
// dueAt); cals are the org's calendar versions.
func DueAt(st Step, opened time.Time, cals []CalendarVersion) *Time { return dueAt(st, opened, cals) }

// change collects the run's changes, handed to the store by save.
func (r *run) change(c Change) {
	if r.changes == nil {
		r.cals0 = r.calendars()
	}
	c.M, c.Steps, c.Def, c.Cals = r.m, r.proc.Steps, r.def, r.cals0
	r.changes = append(r.changes, c)
}

// ReplayChanges replays measurement m's recorded actions (in order)
// through the engine from startedAt (its creation, or the occurrence a
// PENDING one was made ahead for), with steps its version's and cals its
// org's calendars, and hands fn each change as the writes did: the
// creation, then one per action. An action the engine refuses ends the
// replay with its error (fn has had the changes before it).
func ReplayChanges(m Measurement, steps []Step, actions []Action, startedAt Time, cals []CalendarVersion, fn func(Change)) error {
	r := &run{m: m, proc: Process{ID: m.ProcessID, OrgID: m.OrgID, Steps: steps}, def: engineDef(steps)}
	base := Change{M: m, Steps: steps, Def: r.def, Cals: cals}
	state, _ := engine.Start(r.def, startedAt.Time, false)
	c := base
	c.Start, c.After = true, state
	fn(c)
	firstPass := true
	for _, a := range actions {
		kind := LeafAction
		if a.Route == "" {
			kind = LeafChainedAction // recorded before routes were: worked out from the data
		}
		res, err := r.replayAction(state, a, kind)
		if err != nil {
			return err
		}
		for i := range r.actions {
			if slices.Contains(res.Reset, r.actions[i].StepID) && r.actions[i].Type != engine.Rejection {
				r.actions[i].Superseded = true
			}
		}
		if a.Type == engine.Rejection {
			firstPass = false
		}
		c := base
		c.Before, c.After, c.Action, c.FirstPass = state, res.State, a, firstPass
		fn(c)
		state = res.State
		a.Superseded, a.Reproved = false, false
		r.actions = append(r.actions, a)
	}
	return nil
}
