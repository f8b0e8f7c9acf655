package wps

import (
	"cmp"
	"math/bits"
	"slices"
	"time"

	"wps/internal/engine"
)

// ReportFact is one count of the aggregates that reports read
// (internal/reports, docs/reports.md): N events of one Kind of a process on
// one UTC Day, for a step (and a seat's policy), whose durations fell in
// one Bucket (a whole number of seconds, the bucket's lower bound; 0 for
// kinds without a duration), SumMillis their exact total. Every change of a
// measurement adds its facts in its own transaction (Tx.AddReportFacts),
// one upsert; ReportFactsFromActions works the same facts out of the
// recorded actions.
type ReportFact struct {
	OrgID, ProcessID string
	// Level and Day name the fact's block of days: the 2^Level days from
	// Day (days since 1970-01-01, UTC, a multiple of 2^Level). A fact with
	// a duration is counted at every level (FactLevels rows), so a range of
	// days sums a few blocks (Blocks) rather than every day; the others at
	// level 0 only.
	Level          int
	Day            int64
	Kind           int
	StepID, Policy string
	Bucket         int64
	N, SumMillis   int64
}

// The kinds of report facts.
const (
	FactCreated   = 1 // a measurement created (by its creation day)
	FactApproved  = 2 // a measurement approved; Bucket: its cycle time
	FactFirstPass = 3 // a measurement approved without any REJECTION
	FactReached   = 4 // a step opened
	FactConsensed = 5 // a step consensed; Bucket: its wait since it opened
	FactRejection = 6 // a REJECTION recorded on a step (a reproval included)
	FactOverdue   = 7 // an opening ended after its deadline (by the deadline's day)
	FactFill      = 8 // a seat filled; Bucket: the time since its step opened
	FactApprovals = 9 // a measurement approved (level 0 only: throughput by day)
)

// FactLevels is how many block sizes facts with a duration are counted in:
// 1, 2, 4 … 256 days.
const FactLevels = 9

// Timed reports whether facts of kind carry a duration.
func Timed(kind int) bool { return kind == FactApproved || kind == FactConsensed || kind == FactFill }

// Block is 2^Level days from Day.
type Block struct {
	Level int
	Day   int64
}

// Blocks covers the days from to to (both included) with the fewest
// blocks: at most two of each level.
func Blocks(from, to int64) []Block {
	var out []Block
	for d := from; d <= to; {
		k := 0
		for k < FactLevels-1 && d%(1<<(k+1)) == 0 && d+(1<<(k+1))-1 <= to {
			k++
		}
		out = append(out, Block{k, d})
		d += 1 << k
	}
	return out
}

// BucketBits is the resolution of durations: whole seconds below
// 2^BucketBits, then 2^(BucketBits-1) buckets per doubling, so a bucket's
// width is at most 1/2^(BucketBits-1) of its lower bound.
const BucketBits = 5

// Bucket is the bucket of a duration of ms milliseconds: its whole seconds
// when fewer than 2^BucketBits, else those seconds with all but their
// BucketBits leading bits cleared. Negative durations count as 0.
func Bucket(ms int64) int64 {
	s := max(ms, 0) / 1000
	if n := bits.Len64(uint64(s)); n > BucketBits {
		e := n - BucketBits
		return s >> e << e
	}
	return s
}

// FactDay is the UTC day of t, in days since 1970-01-01.
func FactDay(t time.Time) int64 {
	ms := t.UnixMilli()
	d := ms / 86_400_000
	if ms < 0 && ms%86_400_000 != 0 {
		d--
	}
	return d
}

// factsOf collects the facts of one measurement's changes.
type factsOf struct {
	m     Measurement
	steps []Step
	def   engine.Def
	cals  []CalendarVersion
	out   []ReportFact
}

func (f *factsOf) add(at time.Time, kind int, stepID, policy string, ms int64) {
	f.out = append(f.out, NewFacts(f.m.OrgID, f.m.ProcessID, at, kind, stepID, policy, ms)...)
}

// NewFacts are the rows of one event of kind at at (of ms milliseconds
// when the kind is timed): one at level 0, and for a timed kind one at each
// other level too (an approval adds its FactApprovals).
func NewFacts(orgID, processID string, at time.Time, kind int, stepID, policy string, ms int64) []ReportFact {
	day := FactDay(at)
	fact := ReportFact{OrgID: orgID, ProcessID: processID, Day: day, Kind: kind, StepID: stepID, Policy: policy, N: 1}
	if !Timed(kind) {
		return []ReportFact{fact}
	}
	fact.Bucket, fact.SumMillis = Bucket(ms), ms
	out := make([]ReportFact, 0, FactLevels+1)
	for k := range FactLevels {
		f := fact
		f.Level, f.Day = k, day&^(1<<k-1)
		out = append(out, f)
	}
	if kind == FactApproved {
		out = append(out, ReportFact{OrgID: orgID, ProcessID: processID, Day: day, Kind: FactApprovals, N: 1})
	}
	return out
}

// start adds the facts of a measurement's creation: created at its
// creation, and the steps that opened when the engine started it.
func (f *factsOf) start(state engine.State) {
	f.add(f.m.CreatedAt.Time, FactCreated, "", "", 0)
	for _, sd := range f.def.Steps {
		if st := state.Steps[sd.ID]; st != nil && st.Status == engine.Open {
			f.add(st.OpenedAt, FactReached, sd.ID, "", 0)
		}
	}
}

// change adds the facts of one action a, which took the measurement from
// before to after; firstPass says that no REJECTION came before it.
func (f *factsOf) change(before, after engine.State, a Action, firstPass bool) {
	now := a.CreatedAt.Time
	for _, sd := range f.def.Steps {
		b, x := before.Steps[sd.ID], after.Steps[sd.ID]
		if b == nil || x == nil {
			continue
		}
		same := x.Opening == b.Opening
		if b.Status == engine.Open && same {
			for policy := range x.Seats {
				if _, had := b.Seats[policy]; !had {
					f.add(now, FactFill, sd.ID, policy, now.Sub(b.OpenedAt).Milliseconds())
				}
			}
		}
		if b.Status == engine.Open && (x.Status != engine.Open || !same) { // the opening ended
			if x.Status == engine.Consensed && same {
				f.add(now, FactConsensed, sd.ID, "", now.Sub(b.OpenedAt).Milliseconds())
			}
			if _, st := stepByID(f.steps, sd.ID); st != nil {
				if due := dueAt(*st, b.OpenedAt, f.cals); due != nil && due.Before(now) {
					f.add(due.Time, FactOverdue, sd.ID, "", 0)
				}
			}
		}
		if x.Status == engine.Open && (b.Status != engine.Open || !same) {
			f.add(x.OpenedAt, FactReached, sd.ID, "", 0)
		}
	}
	if a.Type == engine.Rejection {
		f.add(now, FactRejection, a.StepID, "", 0)
	}
	if engine.Status(f.def, before) != engine.StatusApproved && engine.Status(f.def, after) == engine.StatusApproved {
		f.add(now, FactApproved, "", "", now.Sub(f.m.CreatedAt.Time).Milliseconds())
		if firstPass {
			f.add(now, FactFirstPass, "", "", 0)
		}
	}
}

// MergeFacts sums the facts of one key (every field but N and SumMillis)
// and orders them by key: a store writes them in one statement, in one
// order (two writers then lock the rows in the same order).
func MergeFacts(fs []ReportFact) []ReportFact {
	key := func(a, b ReportFact) int {
		return cmp.Or(cmp.Compare(a.OrgID, b.OrgID), cmp.Compare(a.ProcessID, b.ProcessID), cmp.Compare(a.Level, b.Level), cmp.Compare(a.Day, b.Day),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.StepID, b.StepID), cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Bucket, b.Bucket))
	}
	out := slices.Clone(fs)
	slices.SortFunc(out, key)
	merged := out[:0]
	for _, f := range out {
		if n := len(merged); n > 0 && key(merged[n-1], f) == 0 {
			merged[n-1].N += f.N
			merged[n-1].SumMillis += f.SumMillis
			continue
		}
		merged = append(merged, f)
	}
	return merged
}

// ReportFactsFromActions works out the report facts of measurement m from
// its recorded actions (in order), replayed through the engine from
// startedAt (its creation, or the occurrence a PENDING one was made ahead
// for), with steps its version's and cals its org's calendars: what the
// writes added, for a rebuild of the aggregates and for checking them. An
// action the engine refuses ends the replay with the facts before it and
// the error.
func ReportFactsFromActions(m Measurement, steps []Step, actions []Action, startedAt Time, cals []CalendarVersion) ([]ReportFact, error) {
	r := &run{m: m, proc: Process{ID: m.ProcessID, OrgID: m.OrgID, Steps: steps}, def: engineDef(steps)}
	f := &factsOf{m: m, steps: steps, def: r.def, cals: cals}
	state, _ := engine.Start(r.def, startedAt.Time, false)
	f.start(state)
	firstPass := true
	for _, a := range actions {
		kind := LeafAction
		if a.Route == "" {
			kind = LeafChainedAction // recorded before routes were: worked out from the data
		}
		res, err := r.replayAction(state, a, kind)
		if err != nil {
			return f.out, err
		}
		for i := range r.actions {
			if slices.Contains(res.Reset, r.actions[i].StepID) && r.actions[i].Type != engine.Rejection {
				r.actions[i].Superseded = true
			}
		}
		if a.Type == engine.Rejection {
			firstPass = false
		}
		f.change(state, res.State, a, firstPass)
		state = res.State
		a.Superseded, a.Reproved = false, false
		r.actions = append(r.actions, a)
	}
	return f.out, nil
}

// ReportQuery selects report facts of an org: of one process (all when
// ProcessID is empty), of Blocks or, without them, of the blocks of Level
// that start from From to To (both included), of Kinds (all when empty).
// They come summed by process, kind, step, policy and bucket (Day 0), or
// with ByDay by process, day and kind.
type ReportQuery struct {
	OrgID, ProcessID string
	Blocks           []Block
	Level            int
	From, To         int64
	Kinds            []int
	ByDay            bool
}
