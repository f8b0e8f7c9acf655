package wps

import (
	"context"
	"errors"
	"slices"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/teambition/rrule-go"

	"wps/internal/engine"
)

// SystemUserID is the author of what the scheduler creates.
const SystemUserID = "system"

// NotifyOverdue emits one step.overdue event for each step opening past
// its deadline (each opening once, even with several replicas). It returns
// how many it emitted.
func (s *Service) NotifyOverdue(ctx context.Context) (int, error) {
	holders := map[string][]holder{} // each org's users, read once per pass for mailOverdue
	claim := func(tx Tx, now Time) ([]OpenStep, error) {
		clear(holders) // a retried transaction reads them again
		return tx.ClaimOverdue(now, 100)
	}
	return s.scheduledPass(ctx, claim, func(tx Tx, now Time, o OpenStep, m Measurement, proc Process) ([]Event, error) {
		e := Event{ID: NewID(), OrgID: o.OrgID, Type: EvStepOverdue, MeasurementID: m.ID, StepID: o.StepID, CreatedAt: now}
		e.Payload, _ = gojson.Marshal(eventPayload[overdueEvent]{CreatedAt: now, Data: overdueEvent{
			DueAt: o.DueAt, MeasurementID: m.ID, Opening: o.Opening, ProcessID: m.ProcessID, StepID: o.StepID}, ID: e.ID, OrgID: o.OrgID, Type: e.Type})
		return []Event{e}, s.mailOverdue(tx, m, proc, o, holders)
	})
}

// scheduledPass is the loop NotifyOverdue and NotifyEscalations share: in
// one transaction it claims the open steps that are due (claim), reads
// each one's measurement for the change, and fans out the events each
// returns (each, which writes the rest of its change in tx) to the org's
// webhooks, read once per org. It returns how many events it emitted.
func (s *Service) scheduledPass(ctx context.Context, claim func(tx Tx, now Time) ([]OpenStep, error),
	each func(tx Tx, now Time, o OpenStep, m Measurement, proc Process) ([]Event, error)) (int, error) {
	n := 0
	err := s.store.Write(ctx, func(tx Tx) error {
		n = 0
		now := s.Now()
		due, err := claim(tx, now)
		if err != nil {
			return err
		}
		hooks := map[string][]Webhook{}
		for _, o := range due {
			m, proc, err := lockedMeasurement(tx, o.OrgID, o.MeasurementID)
			if err != nil {
				return err
			}
			if _, ok := hooks[o.OrgID]; !ok {
				if hooks[o.OrgID], err = tx.ListWebhooks(o.OrgID); err != nil {
					return err
				}
			}
			events, err := each(tx, now, o, m, proc)
			if err != nil {
				return err
			}
			if err := fanOut(tx, events, proc.stepURLs, hooks[o.OrgID]); err != nil {
				return err
			}
			n += len(events)
		}
		return nil
	})
	return n, err
}

// lockedMeasurement reads a measurement for a change, with its process version.
func lockedMeasurement(tx Tx, orgID, id string) (Measurement, Process, error) {
	m, err := tx.GetMeasurement(orgID, id)
	if err != nil {
		return m, Process{}, err
	}
	proc, err := tx.GetProcessVersion(orgID, m.ProcessID, m.Version)
	return m, proc, err
}

// errOccurrenceTaken rolls back a measurement another replica made first.
var errOccurrenceTaken = errors.New("occurrence taken")

// MaxCatchUp bounds how many missed occurrences of one process one run creates.
const MaxCatchUp = 100

// Occurrence is a measurement the scheduler made for one occurrence.
type Occurrence struct {
	OrgID         string
	MeasurementID string
	At            Time
}

// RunRecurrences creates one measurement per due occurrence of every
// recurring process, from its frequencyDate (or creation) on: missed ones
// too, after downtime, each exactly once across replicas and restarts. The
// next occurrence is made ahead, PENDING, so that it can be seen and
// prepared; it opens (OPEN) when its time comes, or earlier if someone acts
// on it. It returns how many measurements it created.
func (s *Service) RunRecurrences(ctx context.Context) (int, error) {
	var procs []Process
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		procs, err = tx.RecurringProcesses()
		return err
	}); err != nil {
		return 0, err
	}
	created := 0
	now := s.Now()
	for _, proc := range procs {
		due, next, err := s.occurrences(ctx, proc, now.Time)
		if err != nil {
			return created, err
		}
		for i, at := range append(due, next...) {
			made, err := s.createOccurrence(ctx, proc, at, i >= len(due))
			if err != nil {
				return created, err
			}
			if made {
				created++
			}
		}
	}
	return created, s.openDuePending(ctx, now)
}

// createOccurrence makes the measurement of one occurrence unless another
// replica did; pending ones open at the occurrence, not now.
func (s *Service) createOccurrence(ctx context.Context, proc Process, at time.Time, pending bool) (bool, error) {
	err := s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.GetProcess(proc.OrgID, proc.ID, 0)
		if err != nil {
			return err
		}
		sys := &Principal{OrgID: proc.OrgID, UserID: SystemUserID, Roles: []string{RoleAdmin}}
		r, err := s.newMeasurement(tx, sys, cur, NewID(), s.Now())
		if err != nil {
			return err
		}
		if pending {
			r.startedAt, r.startPending = At(at), true
			r.m.State, _ = engine.Start(r.def, r.startedAt.Time, true)
			r.m.Status = engine.Status(r.def, r.m.State)
		}
		ok, err := tx.ClaimOccurrence(proc.OrgID, proc.ID, At(at), r.m.ID)
		if err != nil {
			return err
		}
		if !ok {
			return errOccurrenceTaken
		}
		return r.save()
	})
	if errors.Is(err, errOccurrenceTaken) {
		return false, nil
	}
	return err == nil, err
}

// openDuePending ends PENDING for the measurements whose occurrence has come,
// each in a write of its own: a write that changed one measurement's status
// holds its org's contended rows (on PostgreSQL, its place in the store's
// queue for them too), and must not then wait for another measurement's
// lock, which a writer waiting for that place may hold.
func (s *Service) openDuePending(ctx context.Context, now Time) error {
	var due []Occurrence
	if err := s.store.View(ctx, func(tx Tx) (err error) {
		due, err = tx.DuePending(now, 100)
		return err
	}); err != nil {
		return err
	}
	for _, o := range due {
		err := s.store.Write(ctx, func(tx Tx) error {
			m, proc, err := lockedMeasurement(tx, o.OrgID, o.MeasurementID)
			if err != nil || !m.State.Pending { // opened meanwhile, by another replica
				return err
			}
			old := m.Status
			def := engineDef(proc.Steps)
			before := openSteps(m, proc.Steps, def, nil) // its seats (before it opens, none are fillable)
			m.State.Pending = false
			m.Status, m.UpdatedAt = engine.Status(def, m.State), now
			var cals []CalendarVersion
			if slices.ContainsFunc(proc.Steps, businessDeadline) {
				if cals, err = tx.ListCalendars(m.OrgID); err != nil {
					return err
				}
			}
			open := openSteps(m, proc.Steps, def, cals)
			if err := s.mailWaiting(tx, m, proc, before, open); err != nil {
				return err
			}
			if err := tx.SetOpenSteps(m.OrgID, m.ID, open); err != nil { // its seats wait on people now
				return err
			}
			if err := tx.UpdateMeasurement(m, old); err != nil {
				return err
			}
			return tx.AppendLedger([]LedgerEntry{MarkEntry(LeafOpened, m.OrgID, m.ID, nil, "", now)})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// between lists the first MaxCatchUp occurrences of rule between after and
// before (both included if inc), as rrule's Between, which lists them all.
func between(rule *rrule.RRule, after, before time.Time, inc bool) []time.Time {
	var out []time.Time
	next := rule.Iterator()
	for len(out) < MaxCatchUp {
		t, ok := next()
		if !ok || t.After(before) || !inc && t.Equal(before) {
			break
		}
		if t.After(after) || inc && t.Equal(after) {
			out = append(out, t)
		}
	}
	return out
}

// occurrences lists the occurrences of proc after its last recorded one
// (from its start when none) up to now, and the one after now unless it is
// recorded already.
func (s *Service) occurrences(ctx context.Context, proc Process, now time.Time) (due, next []time.Time, err error) {
	first := proc.Steps[0]
	start := proc.CreatedAt.Time
	if first.FrequencyDate != "" {
		if t, err := time.Parse(time.RFC3339, first.FrequencyDate); err == nil {
			start = t
		}
	}
	rule, err := ParseFrequency(first.Frequency, start)
	if err != nil {
		return nil, nil, nil // checked when saved; a rule that no longer parses is skipped
	}
	var last *Time
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		last, err = tx.LastOccurrence(proc.OrgID, proc.ID)
		return err
	}); err != nil {
		return nil, nil, err
	}
	if last == nil {
		due = between(rule, start, now, true)
	} else {
		due = between(rule, last.Time, now, false)
	}
	if len(due) == MaxCatchUp {
		return due, nil, nil // the rest next time
	}
	if n := rule.After(now, false); !n.IsZero() && (last == nil || n.After(last.Time)) {
		next = []time.Time{n}
	}
	return due, next, nil
}
