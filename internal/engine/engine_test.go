package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// flow: A (ordered Inspector, Supervisor; routes by kind) → B | C (parallel
// branches) → D (join; reproval re-opens A).
func flow() Def {
	return Def{Steps: []StepDef{
		{ID: "A", Policies: []string{"Inspector", "Supervisor"}, Tokens: []string{"tA1", "tA2"}, Ordered: []string{"Inspector", "Supervisor"},
			Routes: []Route{{"repair", "B"}, {"*", "C"}}, Required: []string{"kind"}},
		{ID: "B", Policies: []string{"Inspector"}, Tokens: []string{"tB"}, Deps: []string{"A"}},
		{ID: "C", Policies: []string{"Inspector"}, Tokens: []string{"tC"}, Deps: []string{"A"}},
		{ID: "D", Policies: []string{"Supervisor"}, Tokens: []string{"tD"}, Deps: []string{"B", "C"}, ReprovalDeps: []string{"A"}},
	}}
}

func provided(ok bool) func(string) bool { return func(string) bool { return ok } }

func mustApply(t *testing.T, def Def, s State, a Action) Result {
	t.Helper()
	if a.Now.IsZero() {
		a.Now = t0
	}
	r, err := Apply(def, s, a)
	if err != nil {
		t.Fatalf("%+v: %v", a, err)
	}
	return r
}

func refused(t *testing.T, def Def, s State, a Action, kind ErrorKind) {
	t.Helper()
	_, err := Apply(def, s, a)
	e, ok := err.(*Error)
	if !ok || e.Kind != kind {
		t.Fatalf("%+v: want refusal %d, got %v", a, kind, err)
	}
}

func TestHappyPathWithRoutingAndJoin(t *testing.T) {
	def := flow()
	s, evs := Start(def, t0, false)
	if Status(def, s) != StatusOpen || !slices.Equal(OpenSteps(def, s), []string{"A"}) || len(evs) != 1 {
		t.Fatalf("start: %s %v", Status(def, s), OpenSteps(def, s))
	}
	// The Supervisor must wait for the Inspector (ordered seats).
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}}, Conflict)
	// Someone holding nothing here is forbidden.
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "A", UserID: "eve"}, Forbidden)
	// A later step is not open.
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "D", UserID: "sam", Holds: []string{"Supervisor"}}, Conflict)

	r := mustApply(t, def, s, Action{ID: "a1", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true), RouteValue: "repair"})
	s = r.State
	if r.Seat != "Inspector" || r.Token != "tA1" || r.Consensed || Status(def, s) != StatusInConsensus {
		t.Fatalf("after a1: %+v %s", r, Status(def, s))
	}
	// The same user cannot fill a second seat.
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "A", UserID: "ian", Holds: []string{"Inspector", "Supervisor"}}, Conflict)
	// Consensus needs the required parameters.
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}, Provided: provided(false)}, Conflict)

	r = mustApply(t, def, s, Action{ID: "a2", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}, Provided: provided(true), RouteValue: "repair"})
	s = r.State
	if !r.Consensed || s.Steps["A"].Status != Consensed || s.Steps["B"].Status != Open || s.Steps["C"].Status != Skipped || s.Steps["D"].Status != Waiting {
		t.Fatalf("after routing: %+v", s.Steps)
	}
	if st := Status(def, s); st != StatusStageOpen {
		t.Fatalf("status %s", st)
	}
	s = mustApply(t, def, s, Action{ID: "a3", Type: Approval, StepID: "B", UserID: "ian", Holds: []string{"Inspector"}}).State
	if s.Steps["D"].Status != Open {
		t.Fatalf("join did not open: %+v", s.Steps["D"])
	}
	r = mustApply(t, def, s, Action{ID: "a4", Type: Approval, StepID: "D", UserID: "sam", Holds: []string{"Supervisor"}})
	s = r.State
	if Status(def, s) != StatusApproved || r.Events[len(r.Events)-1].Type != EvMeasurementApproved {
		t.Fatalf("not approved: %s %v", Status(def, s), r.Events)
	}
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "D", UserID: "sam", Holds: []string{"Supervisor"}}, Conflict)
}

func TestRoutingWithoutMatch(t *testing.T) {
	def := flow()
	def.Steps[0].Routes = []Route{{"repair", "B"}}
	def.Steps[0].Ordered = nil
	def.Steps[0].Policies = []string{"Inspector"}
	s, _ := Start(def, t0, false)
	refused(t, def, s, Action{ID: "x", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true), RouteValue: "other"}, Invalid)
}

func TestRejectionAndReprove(t *testing.T) {
	def := flow()
	s, _ := Start(def, t0, false)
	s = mustApply(t, def, s, Action{ID: "a1", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true), RouteValue: "x"}).State
	s = mustApply(t, def, s, Action{ID: "a2", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}, Provided: provided(true), RouteValue: "x"}).State
	s = mustApply(t, def, s, Action{ID: "a3", Type: Approval, StepID: "C", UserID: "ian", Holds: []string{"Inspector"}}).State
	if s.Steps["D"].Status != Open {
		t.Fatalf("D not open")
	}
	// Rejecting at D goes back to A (its reproval dependency) and everything after.
	refused(t, def, s, Action{ID: "x", Type: Rejection, StepID: "D", UserID: "eve"}, Forbidden)
	r := mustApply(t, def, s, Action{ID: "r1", Type: Rejection, StepID: "D", UserID: "sam", Holds: []string{"Supervisor"}})
	s = r.State
	if Status(def, s) != StatusReproved || s.Steps["A"].Status != Open || s.Steps["A"].Opening != 2 || len(s.Steps["A"].Seats) != 0 ||
		s.Steps["C"].Status != Waiting || s.Steps["B"].Status != Waiting || s.Steps["D"].Status != Waiting {
		t.Fatalf("after rejection: %s %+v", Status(def, s), s.Steps)
	}
	if !slices.Contains(r.Reset, "A") || !slices.Contains(r.Reset, "C") || !slices.Contains(r.Reset, "D") {
		t.Fatalf("reset %v", r.Reset)
	}
	// The next non-rejection action ends REPROVED.
	s = mustApply(t, def, s, Action{ID: "a4", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true), RouteValue: "repair"}).State
	if Status(def, s) != StatusInConsensus {
		t.Fatalf("status %s", Status(def, s))
	}
	s = mustApply(t, def, s, Action{ID: "a5", Type: Approval, StepID: "A", UserID: "sam", Holds: []string{"Supervisor"}, Provided: provided(true), RouteValue: "repair"}).State
	// Reproving B's action re-opens B only (no reproval dependencies).
	s = mustApply(t, def, s, Action{ID: "a6", Type: Approval, StepID: "B", UserID: "ian", Holds: []string{"Inspector"}}).State
	r, err := Reprove(def, s, "B", t0)
	if err != nil {
		t.Fatal(err)
	}
	s = r.State
	if s.Steps["B"].Status != Open || s.Steps["A"].Status != Consensed || s.Steps["D"].Status != Waiting || Status(def, s) != StatusReproved {
		t.Fatalf("after reprove: %s %+v", Status(def, s), s.Steps)
	}
}

func TestStepWithoutPolicies(t *testing.T) {
	def := Def{Steps: []StepDef{{ID: "only"}}}
	s, _ := Start(def, t0, false)
	refused(t, def, s, Action{ID: "x", Type: Approval, StepID: "only", UserID: "u"}, Forbidden)
	s = mustApply(t, def, s, Action{ID: "a", Type: Approval, StepID: "only", UserID: "u", Holds: []string{AnySeat}}).State
	if Status(def, s) != StatusApproved {
		t.Fatal("not approved")
	}
}

func TestStatusPrecedence(t *testing.T) {
	def := flow()
	s, _ := Start(def, t0, true)
	if Status(def, s) != StatusPending {
		t.Fatalf("pending: %s", Status(def, s))
	}
	s = mustApply(t, def, s, Action{ID: "a1", Type: WriteData, StepID: "A", UserID: "ian", Holds: []string{"Inspector"}, Provided: provided(true)}).State
	if Status(def, s) != StatusInConsensus {
		t.Fatalf("an action ends PENDING: %s", Status(def, s))
	}
	// Parallel branches without routing: one consensed while the join waits.
	par := Def{Steps: []StepDef{
		{ID: "A", Policies: []string{"P"}},
		{ID: "B", Policies: []string{"P"}, Deps: []string{"A"}},
		{ID: "C", Policies: []string{"P"}, Deps: []string{"A"}},
		{ID: "D", Policies: []string{"P"}, Deps: []string{"B", "C"}},
	}}
	ps, _ := Start(par, t0, false)
	ps = mustApply(t, par, ps, Action{ID: "1", Type: Approval, StepID: "A", UserID: "u", Holds: []string{"P"}}).State
	if Status(par, ps) != StatusStageOpen || len(OpenSteps(par, ps)) != 2 {
		t.Fatalf("parallel open: %s %v", Status(par, ps), OpenSteps(par, ps))
	}
	ps = mustApply(t, par, ps, Action{ID: "2", Type: Approval, StepID: "B", UserID: "u", Holds: []string{"P"}}).State
	if Status(par, ps) != StatusConsensus {
		t.Fatalf("waiting on a branch: %s", Status(par, ps))
	}
}

// Random sequences of actions, valid or not, keep the invariants: a refused
// action changes nothing; a consensed step has every seat filled; no user
// holds two seats of a step; open steps have their dependencies done; and
// the measurement is approved or has an open step.
func TestPropertyRandomActions(t *testing.T) {
	users := []string{"u1", "u2", "u3", "u4"}
	policies := []string{"P1", "P2", "P3"}
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		def := randomDef(rng, policies)
		s, _ := Start(def, t0, rng.IntN(4) == 0)
		for step := 0; step < 80; step++ {
			sd := def.Steps[rng.IntN(len(def.Steps))]
			typ := []string{WriteData, Approval, Approval, Rejection}[rng.IntN(4)]
			if rng.IntN(8) == 0 {
				typ = Rejection
			} else if typ == Rejection {
				typ = Approval
			}
			var holds []string
			for _, p := range append(slices.Clone(policies), AnySeat) {
				if rng.IntN(2) == 0 {
					holds = append(holds, p)
				}
			}
			before := s.Clone()
			r, err := Apply(def, s, Action{ID: "a", Type: typ, StepID: sd.ID, UserID: users[rng.IntN(len(users))], Holds: holds,
				Provided: provided(rng.IntN(5) > 0), RouteValue: []string{"x", "y", "z"}[rng.IntN(3)], Now: t0})
			if err != nil {
				if !sameState(before, s) {
					t.Fatalf("seed %d: a refused action changed the state", seed)
				}
				continue
			}
			s = r.State
			checkInvariants(t, seed, def, s)
			if Status(def, s) == StatusApproved {
				break
			}
		}
	}
}

func randomDef(rng *rand.Rand, policies []string) Def {
	n := 2 + rng.IntN(5)
	def := Def{}
	for i := 0; i < n; i++ {
		sd := StepDef{ID: string(rune('A' + i))}
		for _, p := range policies {
			if rng.IntN(3) == 0 {
				sd.Policies = append(sd.Policies, p)
				sd.Tokens = append(sd.Tokens, sd.ID+p)
			}
		}
		if len(sd.Policies) > 1 && rng.IntN(2) == 0 {
			sd.Ordered = sd.Policies[:2]
		}
		if i > 0 {
			sd.Deps = []string{def.Steps[rng.IntN(i)].ID}
			if i > 1 && rng.IntN(3) == 0 {
				if d := def.Steps[rng.IntN(i)].ID; !slices.Contains(sd.Deps, d) {
					sd.Deps = append(sd.Deps, d)
				}
			}
		}
		if i > 0 && rng.IntN(3) == 0 {
			sd.ReprovalDeps = []string{def.Steps[rng.IntN(i)].ID}
		}
		if rng.IntN(3) == 0 {
			sd.Required = []string{"p"}
		}
		def.Steps = append(def.Steps, sd)
	}
	// Routes lead forward, from a step to later steps that depend on it.
	for i := range def.Steps {
		var targets []string
		for j := i + 1; j < n; j++ {
			if slices.Equal(def.Steps[j].Deps, []string{def.Steps[i].ID}) {
				targets = append(targets, def.Steps[j].ID)
			}
		}
		if len(targets) > 1 && rng.IntN(2) == 0 {
			def.Steps[i].Routes = []Route{{"x", targets[0]}, {"*", targets[1]}}
		}
	}
	return def
}

func sameState(a, b State) bool {
	if a.Reproved != b.Reproved || a.Pending != b.Pending || len(a.Steps) != len(b.Steps) {
		return false
	}
	for id, sa := range a.Steps {
		sb := b.Steps[id]
		if sa.Status != sb.Status || sa.Opening != sb.Opening || sa.Acted != sb.Acted || len(sa.Seats) != len(sb.Seats) {
			return false
		}
	}
	return true
}

func checkInvariants(t *testing.T, seed uint64, def Def, s State) {
	t.Helper()
	anyOpen := false
	for _, sd := range def.Steps {
		st := s.Steps[sd.ID]
		users := map[string]bool{}
		for _, seat := range st.Seats {
			if users[seat.UserID] {
				t.Fatalf("seed %d: a user fills two seats of %s", seed, sd.ID)
			}
			users[seat.UserID] = true
		}
		switch st.Status {
		case Consensed:
			if len(Unfilled(&sd, st)) > 0 {
				t.Fatalf("seed %d: %s consensed with unfilled seats", seed, sd.ID)
			}
		case Open:
			anyOpen = true
			for _, d := range sd.Deps {
				if ds := s.Steps[d].Status; ds != Consensed && ds != Skipped {
					t.Fatalf("seed %d: %s open while %s is %s", seed, sd.ID, d, ds)
				}
			}
		}
	}
	if !anyOpen && Status(def, s) != StatusApproved {
		t.Fatalf("seed %d: stuck: no open step and not approved: %+v", seed, s.Steps)
	}
}

// Routing in a flow with a parallel branch: A routes by value to B ("repair")
// or D ("scrap"); C runs beside B; D joins B and C.
func TestRoutingKeepsParallelBranchesAndJoins(t *testing.T) {
	def := Def{Steps: []StepDef{
		{ID: "A", Policies: []string{"P"}, Routes: []Route{{"repair", "B"}, {"scrap", "D"}}},
		{ID: "B", Policies: []string{"P"}, Deps: []string{"A"}},
		{ID: "C", Policies: []string{"P"}, Deps: []string{"A"}},
		{ID: "D", Policies: []string{"P"}, Deps: []string{"B", "C"}},
	}}
	act := func(s State, step, route string) State {
		return mustApply(t, def, s, Action{ID: step, Type: Approval, StepID: step, UserID: "u", Holds: []string{"P"}, RouteValue: route}).State
	}
	// repair: D is after B, so it is not skipped; B and C run in parallel.
	s, _ := Start(def, t0, false)
	s = act(s, "A", "repair")
	if !slices.Equal(OpenSteps(def, s), []string{"B", "C"}) || s.Steps["D"].Status != Waiting {
		t.Fatalf("repair: open %v, D %s", OpenSteps(def, s), s.Steps["D"].Status)
	}
	s = act(act(s, "C", ""), "B", "")
	s = act(s, "D", "")
	if Status(def, s) != StatusApproved {
		t.Fatal("repair path not approved")
	}
	// scrap: B is skipped; D still waits for C.
	s, _ = Start(def, t0, false)
	s = act(s, "A", "scrap")
	if s.Steps["B"].Status != Skipped || !slices.Equal(OpenSteps(def, s), []string{"C"}) {
		t.Fatalf("scrap: %+v", OpenSteps(def, s))
	}
	s = act(s, "C", "")
	if !slices.Equal(OpenSteps(def, s), []string{"D"}) {
		t.Fatalf("scrap join: %v", OpenSteps(def, s))
	}
	// Sequential default flow: routing past a step opens the target even
	// though its only dependency was skipped.
	seq := Def{Steps: []StepDef{
		{ID: "A", Policies: []string{"P"}, Routes: []Route{{"x", "C"}, {"*", "B"}}},
		{ID: "B", Policies: []string{"P"}, Deps: []string{"A"}},
		{ID: "C", Policies: []string{"P"}, Deps: []string{"B"}},
	}}
	ss, _ := Start(seq, t0, false)
	ss = mustApply(t, seq, ss, Action{ID: "1", Type: Approval, StepID: "A", UserID: "u", Holds: []string{"P"}, RouteValue: "x"}).State
	if ss.Steps["B"].Status != Skipped || ss.Steps["C"].Status != Open {
		t.Fatalf("sequential routing: %+v %+v", ss.Steps["B"], ss.Steps["C"])
	}
}

// Fillable and SeatsFor say what an action may fill, as fillSeat does:
// unfilled seats, of the ordered ones only the next, none for a user who
// fills a seat of the step already.
func TestFillableSeats(t *testing.T) {
	def := Def{Steps: []StepDef{{ID: "A", Policies: []string{"P", "Q", "R"}, Tokens: []string{"tP", "tQ", "tR"}, Ordered: []string{"P", "Q"}}, {ID: "B", Deps: []string{"A"}}}}
	s, _ := Start(def, t0, false)
	a, b := &def.Steps[0], &def.Steps[1]
	if got := Fillable(a, s.Steps["A"]); !slices.Equal(got, []string{"P", "R"}) {
		t.Fatalf("fresh: %v", got)
	}
	if got := Fillable(b, s.Steps["B"]); got != nil {
		t.Fatalf("waiting step: %v", got)
	}
	if got := SeatsFor(a, s.Steps["A"], "u1", []string{"Q", "R"}); !slices.Equal(got, []string{"R"}) {
		t.Fatalf("u1 before: %v", got)
	}
	s = mustApply(t, def, s, Action{ID: "x", Type: Approval, StepID: "A", UserID: "u1", Holds: []string{"P", "Q", "R"}}).State
	if got := Fillable(a, s.Steps["A"]); !slices.Equal(got, []string{"Q", "R"}) || FilledBy(s.Steps["A"], "u1") != "P" {
		t.Fatalf("after P: %v", got)
	}
	if got := SeatsFor(a, s.Steps["A"], "u1", []string{"Q", "R"}); got != nil {
		t.Fatalf("u1 fills P already: %v", got)
	}
	if got := SeatsFor(a, s.Steps["A"], "u2", []string{"Q"}); !slices.Equal(got, []string{"Q"}) || !slices.Equal(Fillers(a, s.Steps["A"]), []string{"u1"}) {
		t.Fatalf("u2: %v", got)
	}
	s = mustApply(t, def, s, Action{ID: "y", Type: Approval, StepID: "A", UserID: "u2", Holds: []string{"R"}}).State
	s = mustApply(t, def, s, Action{ID: "z", Type: Approval, StepID: "A", UserID: "u3", Holds: []string{"Q"}}).State
	if got := Fillable(b, s.Steps["B"]); !slices.Equal(got, []string{AnySeat}) || Fillable(a, s.Steps["A"]) != nil {
		t.Fatalf("after consensus: B %v", got)
	}
}
