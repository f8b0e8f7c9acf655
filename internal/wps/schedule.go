package wps

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// SystemUserID is the author of what the scheduler creates.
const SystemUserID = "system"

// NotifyOverdue emits one step.overdue event for each step opening past
// its deadline (each opening once, even with several replicas). It returns
// how many it emitted.
func (s *Service) NotifyOverdue(ctx context.Context) (int, error) {
	n := 0
	err := s.store.Write(ctx, func(tx Tx) error {
		n = 0
		now := s.Now()
		due, err := tx.ClaimOverdue(now, 100)
		if err != nil {
			return err
		}
		hooks := map[string][]Webhook{}
		for _, o := range due {
			m, err := tx.GetMeasurement(o.OrgID, o.MeasurementID)
			if err != nil {
				return err
			}
			proc, err := tx.GetProcessVersion(o.OrgID, m.ProcessID, m.Version)
			if err != nil {
				return err
			}
			if _, ok := hooks[o.OrgID]; !ok {
				if hooks[o.OrgID], err = tx.ListWebhooks(o.OrgID); err != nil {
					return err
				}
			}
			urls := ""
			if _, st := stepByID(proc.Steps, o.StepID); st != nil {
				urls = st.WebhookURLs
			}
			e := Event{ID: NewID(), OrgID: o.OrgID, Type: EvStepOverdue, MeasurementID: m.ID, StepID: o.StepID, CreatedAt: now}
			e.Payload, _ = json.Marshal(map[string]any{"id": e.ID, "type": e.Type, "createdAt": now, "orgId": o.OrgID,
				"data": map[string]any{"measurementId": m.ID, "processId": m.ProcessID, "stepId": o.StepID, "dueAt": o.DueAt, "opening": o.Opening}})
			if err := fanOut(tx, e, urls, hooks[o.OrgID]); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// errOccurrenceTaken rolls back a measurement another replica made first.
var errOccurrenceTaken = errors.New("occurrence taken")

// MaxCatchUp bounds how many missed occurrences of one process one run creates.
const MaxCatchUp = 100

// RunRecurrences creates one measurement per due occurrence of every
// recurring process, from its frequencyDate (or creation) on: missed ones
// too, after downtime, each exactly once across replicas and restarts. It
// returns how many it created.
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
		due, err := s.dueOccurrences(ctx, proc, now.Time)
		if err != nil {
			return created, err
		}
		for _, at := range due {
			err := s.store.Write(ctx, func(tx Tx) error {
				cur, err := tx.GetProcess(proc.OrgID, proc.ID, 0)
				if err != nil {
					return err
				}
				sys := &Principal{OrgID: proc.OrgID, UserID: SystemUserID, Roles: []string{RoleAdmin}}
				r, err := s.newMeasurement(tx, sys, cur, NewID())
				if err != nil {
					return err
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
			switch {
			case errors.Is(err, errOccurrenceTaken):
			case err != nil:
				return created, err
			default:
				created++
			}
		}
	}
	return created, nil
}

// dueOccurrences lists the occurrences of proc after its last recorded one
// (from its start when none) up to now.
func (s *Service) dueOccurrences(ctx context.Context, proc Process, now time.Time) ([]time.Time, error) {
	first := proc.Steps[0]
	start := proc.CreatedAt.Time
	if first.FrequencyDate != "" {
		if t, err := time.Parse(time.RFC3339, first.FrequencyDate); err == nil {
			start = t
		}
	}
	rule, err := ParseFrequency(first.Frequency, start)
	if err != nil {
		return nil, nil // checked when saved; a rule that no longer parses is skipped
	}
	var last *Time
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		last, err = tx.LastOccurrence(proc.OrgID, proc.ID)
		return err
	}); err != nil {
		return nil, err
	}
	var times []time.Time
	if last == nil {
		times = rule.Between(start, now, true)
	} else {
		times = rule.Between(last.Time, now, false)
	}
	if len(times) > MaxCatchUp {
		times = times[:MaxCatchUp]
	}
	return times, nil
}
