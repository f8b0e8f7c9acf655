package wps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"wps/internal/engine"
)

// Moving running measurements to a process's latest version (semantics
// section 15). A measurement keeps its steps' state and its actions' data
// by step and parameter id; engine.Migrate says what changes and refuses
// a move that would lose or invent work (the measurement is then listed
// as blocked, with the reason). Each move is a ledger entry (LeafMigrated)
// that the verifier replays.

// MigrationInput is the body of POST /v1/process/{id}/migrations.
type MigrationInput struct {
	FromVersion int  `json:"fromVersion" doc:"The version whose live (not APPROVED) measurements move to the latest"`
	DryRun      bool `json:"dryRun" doc:"true: say what would happen, change nothing"`
}

// Migration is what a move did, or would do with dryRun.
type Migration struct {
	ProcessID   string          `json:"processId"`
	FromVersion int             `json:"fromVersion" doc:"The version whose measurements were asked to move"`
	ToVersion   int             `json:"toVersion" doc:"The process's latest version"`
	DryRun      bool            `json:"dryRun" doc:"true: nothing was changed"`
	Moved       int             `json:"moved" doc:"Measurements moved (with dryRun: that would move)"`
	Blocked     int             `json:"blocked" doc:"Measurements that cannot move (each item says why)"`
	Items       []MigrationItem `json:"items" doc:"Each live measurement of fromVersion, oldest first"`
}

// MigrationItem is one measurement of a migration.
type MigrationItem struct {
	MeasurementID string       `json:"measurementId"`
	Name          string       `json:"name"`
	Status        string       `json:"status" doc:"Its status, after the move when it moves"`
	Changes       []StepChange `json:"changes" doc:"What the move does to its steps"`
	BlockedReason string       `json:"blocked,omitempty" doc:"Why it cannot move (absent when it can)"`
}

// StepChange is what a move does to one step of a measurement.
type StepChange struct {
	StepID string `json:"stepId"`
	Label  string `json:"label"`
	Change string `json:"change" doc:"added (a new step; it waits), removed (a step it finished or had not reached), opened, skipped, seats (an open step gains seats)"`
}

// migrationLeaf records a measurement moved to another version.
type migrationLeaf struct {
	Kind          string `json:"kind"`
	OrgID         string `json:"orgId"`
	MeasurementID string `json:"measurementId"`
	ProcessID     string `json:"processId"`
	FromVersion   int    `json:"fromVersion"`
	ToVersion     int    `json:"toVersion"`
	By            string `json:"by"`
	At            Time   `json:"at"`
}

// migrationBatch is how many measurements one transaction moves.
const migrationBatch = 100

// MigrateMeasurements moves the live measurements of a process's version
// in.FromVersion to its latest version, or with in.DryRun says what would
// happen. Measurements that cannot move are listed with the reason and
// left as they are. Each batch of moves commits on its own, so a large
// process does not hold its writers for long. Errors: CodeForbidden,
// CodeNotFound, CodeInvalid (fromVersion unknown or the latest).
func (s *Service) MigrateMeasurements(ctx context.Context, p *Principal, processID string, in MigrationInput) (Migration, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Migration{}, err
	}
	out := Migration{ProcessID: processID, FromVersion: in.FromVersion, DryRun: in.DryRun, Items: []MigrationItem{}}
	var from, to Process
	var ids []string
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		if to, err = tx.GetProcess(p.OrgID, processID, 0); err != nil {
			return err
		}
		var v Validator
		v.Check(in.FromVersion >= 1 && in.FromVersion <= to.Version, "fromVersion", "the process has versions 1 to %d", to.Version)
		v.Check(in.FromVersion != to.Version, "fromVersion", "version %d is the latest; its measurements have nowhere to move", to.Version)
		if err := v.Err(); err != nil {
			return err
		}
		if from, err = tx.GetProcessVersion(p.OrgID, processID, in.FromVersion); err != nil {
			return err
		}
		from.Version = in.FromVersion // its Version is the process's latest
		ids, err = tx.LiveMeasurementsOf(p.OrgID, processID, in.FromVersion)
		return err
	})
	if err != nil {
		return out, err
	}
	out.ToVersion = to.Version
	for len(ids) > 0 {
		batch := ids[:min(migrationBatch, len(ids))]
		ids = ids[len(batch):]
		var items []MigrationItem
		move := func(tx Tx) error {
			items = items[:0]
			var moved []string
			for _, id := range batch {
				item, err := s.migrate(tx, p, from, to, id, in.DryRun)
				if errors.Is(err, errNotLive) {
					continue // approved or moved meanwhile
				}
				if err != nil {
					return err
				}
				items = append(items, item)
				if item.BlockedReason == "" {
					moved = append(moved, item.Name)
				}
			}
			if in.DryRun || len(moved) == 0 {
				return nil
			}
			return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditProcessMigrated, Actor: actorOf(p),
				Target:  AuditTarget{Kind: TargetProcess, ID: to.ID, Name: to.Label},
				Changes: map[string]AuditChange{"version": {Before: from.Version, After: to.Version}, "measurements": {Added: moved}}})
		}
		if in.DryRun {
			err = s.store.View(ctx, move)
		} else {
			err = s.store.Write(ctx, move)
		}
		if err != nil {
			return out, err
		}
		out.Items = append(out.Items, items...)
	}
	out.count()
	return out, nil
}

// count sets Moved and Blocked from the items.
func (m *Migration) count() {
	for _, it := range m.Items {
		if it.BlockedReason != "" {
			m.Blocked++
		} else {
			m.Moved++
		}
	}
}

var errNotLive = errors.New("not a live measurement of the version")

// migrate moves one measurement (or says what moving it would do).
func (s *Service) migrate(tx Tx, p *Principal, from, to Process, id string, dryRun bool) (MigrationItem, error) {
	m, err := tx.GetMeasurement(p.OrgID, id)
	if err != nil || m.Version != from.Version || m.Status == engine.StatusApproved {
		return MigrationItem{}, errors.Join(err, errNotLive)
	}
	item := MigrationItem{MeasurementID: m.ID, Name: m.Name, Status: m.Status, Changes: []StepChange{}}
	now := s.Now()
	fromDef, toDef := engineDef(from.Steps), engineDef(to.Steps)
	state, changes, _, err := engine.Migrate(fromDef, toDef, m.State, now.Time)
	if e, ok := err.(*engine.Error); ok {
		item.BlockedReason = e.Msg
		for _, st := range append(slices.Clone(to.Steps), from.Steps...) { // by label, as people know them
			item.BlockedReason = strings.ReplaceAll(item.BlockedReason, fmt.Sprintf("step %q", st.ID), fmt.Sprintf("step %q", st.Label))
		}
		return item, nil
	} else if err != nil {
		return item, err
	}
	for _, c := range changes {
		label := c.StepID
		if _, st := stepByID(to.Steps, c.StepID); st != nil {
			label = st.Label
		} else if _, st := stepByID(from.Steps, c.StepID); st != nil {
			label = st.Label
		}
		item.Changes = append(item.Changes, StepChange{StepID: c.StepID, Label: label, Change: c.Kind})
	}
	old := m.Status
	m.Status = engine.Status(toDef, state)
	item.Status = m.Status
	if dryRun {
		return item, nil
	}
	if !to.Locked {
		if err := tx.LockProcessVersion(p.OrgID, to.ID, to.Version); err != nil {
			return item, err
		}
		to.Locked = true
	}
	var cals []CalendarVersion
	if slices.ContainsFunc(to.Steps, businessDeadline) {
		if cals, err = tx.ListCalendars(m.OrgID); err != nil {
			return item, err
		}
	}
	before := openSteps(m, from.Steps, fromDef, cals)
	m.Version, m.State, m.UpdatedAt = to.Version, state, now
	open := openSteps(m, to.Steps, toDef, cals)
	if err := s.mailWaiting(tx, m, to, before, open); err != nil {
		return item, err
	}
	if err := tx.SetOpenSteps(m.OrgID, m.ID, open); err != nil {
		return item, err
	}
	if err := tx.UpdateMeasurement(m, old); err != nil {
		return item, err
	}
	data := leafJSON(migrationLeaf{Kind: LeafMigrated, OrgID: m.OrgID, MeasurementID: m.ID, ProcessID: m.ProcessID,
		FromVersion: from.Version, ToVersion: to.Version, By: p.UserID, At: now})
	return item, tx.AppendLedger([]LedgerEntry{newEntry(m.OrgID, LeafMigrated, m.ID, data, now)})
}
