package engine

import (
	"slices"
	"strings"
	"testing"
)

// line is A → B → C, one seat each.
func line(ids ...string) Def {
	var d Def
	for i, id := range ids {
		sd := StepDef{ID: id, Policies: []string{"P"}, Tokens: []string{"t" + id}}
		if i > 0 {
			sd.Deps = []string{ids[i-1]}
		}
		d.Steps = append(d.Steps, sd)
	}
	return d
}

func TestMigrate(t *testing.T) {
	from := line("A", "B", "C")
	s, _ := Start(from, t0, false)
	s = mustApply(t, from, s, Action{ID: "a1", Type: Approval, StepID: "A", UserID: "u", Holds: []string{"P"}, Provided: provided(true)}).State
	// Now A is consensed and B open.

	t.Run("a step added after the open one waits", func(t *testing.T) {
		to := line("A", "B", "C", "D")
		got, changes, _, err := Migrate(from, to, s, t0)
		if err != nil || got.Steps["D"].Status != Waiting || got.Steps["B"].Status != Open || !slices.Equal(changes, []Change{{"D", StepAdded}}) {
			t.Fatalf("%v %+v %v", err, got.Steps, changes)
		}
		if s.Steps["D"] != nil {
			t.Fatal("Migrate changed its argument")
		}
	})
	t.Run("a parallel step after a finished one opens", func(t *testing.T) {
		to := line("A", "B", "C")
		to.Steps = append(to.Steps, StepDef{ID: "X", Policies: []string{"Q"}, Tokens: []string{"tX"}, Deps: []string{"A"}})
		got, changes, evs, err := Migrate(from, to, s, t0)
		if err != nil || got.Steps["X"].Status != Open || got.Steps["X"].Opening != 1 ||
			!slices.Equal(changes, []Change{{"X", StepAdded}, {"X", StepOpened}}) || len(evs) != 1 {
			t.Fatalf("%v %+v %v %v", err, got.Steps["X"], changes, evs)
		}
	})
	t.Run("a waiting step removed", func(t *testing.T) {
		got, changes, _, err := Migrate(from, line("A", "B"), s, t0)
		if err != nil || got.Steps["C"] != nil || !slices.Equal(changes, []Change{{"C", StepRemoved}}) {
			t.Fatalf("%v %v", err, changes)
		}
	})
	t.Run("an open step removed is blocked", func(t *testing.T) {
		to := line("A", "C")
		_, _, _, err := Migrate(from, to, s, t0)
		if e, ok := err.(*Error); !ok || e.Step != "B" || !strings.Contains(e.Msg, "open") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a step inserted before the open one is blocked", func(t *testing.T) {
		to := line("A", "N", "B", "C")
		_, _, _, err := Migrate(from, to, s, t0)
		if e, ok := err.(*Error); !ok || e.Step != "B" || !strings.Contains(e.Msg, `wait for step "N"`) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("seats added to the open step", func(t *testing.T) {
		to := line("A", "B", "C")
		to.Steps[1].Policies, to.Steps[1].Tokens = []string{"P", "Q"}, []string{"tB", "tB2"}
		got, changes, _, err := Migrate(from, to, s, t0)
		if err != nil || !slices.Equal(changes, []Change{{"B", SeatsAdded}}) || got.Steps["B"].Status != Open {
			t.Fatalf("%v %v", err, changes)
		}
	})
	t.Run("a filled seat removed is blocked, and so is a step left with every seat filled", func(t *testing.T) {
		two := line("A", "B")
		two.Steps[1].Policies, two.Steps[1].Tokens = []string{"P", "Q"}, []string{"tB", "tB2"}
		s2, _ := Start(two, t0, false)
		s2 = mustApply(t, two, s2, Action{ID: "a1", Type: Approval, StepID: "A", UserID: "u", Holds: []string{"P"}, Provided: provided(true)}).State
		s2 = mustApply(t, two, s2, Action{ID: "a2", Type: Approval, StepID: "B", UserID: "u", Holds: []string{"P"}, Provided: provided(true)}).State
		onlyQ := line("A", "B")
		onlyQ.Steps[1].Policies = []string{"Q"}
		if _, _, _, err := Migrate(two, onlyQ, s2, t0); err == nil || !strings.Contains(err.Error(), `"P" seat`) {
			t.Fatalf("%v", err)
		}
		if _, _, _, err := Migrate(two, line("A", "B"), s2, t0); err == nil || !strings.Contains(err.Error(), "without an action") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("an approved measurement does not move", func(t *testing.T) {
		one := line("A")
		s1, _ := Start(one, t0, false)
		s1 = mustApply(t, one, s1, Action{ID: "a1", Type: Approval, StepID: "A", UserID: "u", Holds: []string{"P"}, Provided: provided(true)}).State
		if _, _, _, err := Migrate(one, line("A", "B"), s1, t0); err == nil {
			t.Fatal("moved an approved measurement")
		}
	})
}
