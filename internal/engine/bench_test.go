package engine

import "testing"

// BenchmarkApply is one approval that completes a step, routes and opens
// the next steps: the engine's share of an action request.
func BenchmarkApply(b *testing.B) {
	def := flow()
	s, _ := Start(def, t0, false)
	s = mustApplyB(b, def, s, Action{ID: "a1", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true), RouteValue: "repair"})
	act := Action{ID: "a2", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}, Provided: provided(true), RouteValue: "repair", Now: t0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply(def, s, act); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStatus(b *testing.B) {
	def := flow()
	s, _ := Start(def, t0, false)
	b.ReportAllocs()
	for b.Loop() {
		_ = Status(def, s)
	}
}

func mustApplyB(b *testing.B, def Def, s State, a Action) State {
	a.Now = t0
	r, err := Apply(def, s, a)
	if err != nil {
		b.Fatal(err)
	}
	return r.State
}
