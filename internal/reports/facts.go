package reports

import (
	"cmp"
	"math/bits"
	"slices"
	"time"

	"wps/internal/engine"
	"wps/internal/wps"
)

// Fact is one count of the aggregates that reports read (docs/reports.md):
// N events of one Kind of a process on one UTC Day, for a step (and a
// seat's policy), whose durations fell in one Bucket (a whole number of
// seconds, the bucket's lower bound; 0 for kinds without a duration),
// SumMillis their exact total. The domain hands every change of a
// measurement to the store in its own transaction (wps.Tx.RecordChanges),
// which adds the change's facts (FactsOf) in one upsert; FactsFromActions
// works the same facts out of the recorded actions.
type Fact struct {
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

// NewFacts are the rows of one event of kind at at (of ms milliseconds
// when the kind is timed): one at level 0, and for a timed kind one at each
// other level too (an approval adds its FactApprovals).
func NewFacts(orgID, processID string, at time.Time, kind int, stepID, policy string, ms int64) []Fact {
	day := FactDay(at)
	fact := Fact{OrgID: orgID, ProcessID: processID, Day: day, Kind: kind, StepID: stepID, Policy: policy, N: 1}
	if !Timed(kind) {
		return []Fact{fact}
	}
	fact.Bucket, fact.SumMillis = Bucket(ms), ms
	out := make([]Fact, 0, FactLevels+1)
	for k := range FactLevels {
		f := fact
		f.Level, f.Day = k, day&^(1<<k-1)
		out = append(out, f)
	}
	if kind == FactApproved {
		out = append(out, Fact{OrgID: orgID, ProcessID: processID, Day: day, Kind: FactApprovals, N: 1})
	}
	return out
}

// FactsOf are the facts of a write's changes of a measurement: the one
// place that says what a change counts for.
func FactsOf(changes []wps.Change) []Fact {
	var out []Fact
	for _, c := range changes {
		out = appendFacts(out, c)
	}
	return out
}

func appendFacts(out []Fact, c wps.Change) []Fact {
	add := func(at time.Time, kind int, stepID, policy string, ms int64) {
		out = append(out, NewFacts(c.M.OrgID, c.M.ProcessID, at, kind, stepID, policy, ms)...)
	}
	if c.Start { // created at its creation, and the steps that opened when the engine started it
		add(c.M.CreatedAt.Time, FactCreated, "", "", 0)
		for _, sd := range c.Def.Steps {
			if st := c.After.Steps[sd.ID]; st != nil && st.Status == engine.Open {
				add(st.OpenedAt, FactReached, sd.ID, "", 0)
			}
		}
		return out
	}
	a := c.Action
	now := a.CreatedAt.Time
	for _, sd := range c.Def.Steps {
		b, x := c.Before.Steps[sd.ID], c.After.Steps[sd.ID]
		if b == nil || x == nil {
			continue
		}
		same := x.Opening == b.Opening
		if b.Status == engine.Open && same {
			for policy := range x.Seats {
				if _, had := b.Seats[policy]; !had {
					add(now, FactFill, sd.ID, policy, now.Sub(b.OpenedAt).Milliseconds())
				}
			}
		}
		if b.Status == engine.Open && (x.Status != engine.Open || !same) { // the opening ended
			if x.Status == engine.Consensed && same {
				add(now, FactConsensed, sd.ID, "", now.Sub(b.OpenedAt).Milliseconds())
			}
			if i := slices.IndexFunc(c.Steps, func(s wps.Step) bool { return s.ID == sd.ID }); i >= 0 {
				if due := wps.DueAt(c.Steps[i], b.OpenedAt, c.Cals); due != nil && due.Before(now) {
					add(due.Time, FactOverdue, sd.ID, "", 0)
				}
			}
		}
		if x.Status == engine.Open && (b.Status != engine.Open || !same) {
			add(x.OpenedAt, FactReached, sd.ID, "", 0)
		}
	}
	if a.Type == engine.Rejection {
		add(now, FactRejection, a.StepID, "", 0)
	}
	if engine.Status(c.Def, c.Before) != engine.StatusApproved && engine.Status(c.Def, c.After) == engine.StatusApproved {
		add(now, FactApproved, "", "", now.Sub(c.M.CreatedAt.Time).Milliseconds())
		if c.FirstPass {
			add(now, FactFirstPass, "", "", 0)
		}
	}
	return out
}

// MergeFacts sums the facts of one key (every field but N and SumMillis)
// and orders them by key: a store writes them in one statement, in one
// order (two writers then lock the rows in the same order).
func MergeFacts(fs []Fact) []Fact {
	key := func(a, b Fact) int {
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

// FactsFromActions works out the report facts of measurement m from its
// recorded actions (in order), replayed through the engine from startedAt
// (wps.ReplayChanges), with steps its version's and cals its org's
// calendars: what the writes added, for a rebuild of the aggregates and
// for checking them. An action the engine refuses ends the replay with the
// facts before it and the error.
func FactsFromActions(m wps.Measurement, steps []wps.Step, actions []wps.Action, startedAt wps.Time, cals []wps.CalendarVersion) ([]Fact, error) {
	var out []Fact
	err := wps.ReplayChanges(m, steps, actions, startedAt, cals, func(c wps.Change) { out = appendFacts(out, c) })
	return out, err
}

// Query selects report facts of an org: of one process (all when
// ProcessID is empty), of Blocks or, without them, of the blocks of Level
// that start from From to To (both included), of Kinds (all when empty).
// They come summed by process, kind, step, policy and bucket (Day 0), or
// with ByDay by process, day and kind.
type Query struct {
	OrgID, ProcessID string
	Blocks           []Block
	Level            int
	From, To         int64
	Kinds            []int
	ByDay            bool
}

// Store is what reports read and write beside wps.Tx; the store's
// transactions implement it.
type Store interface {
	// AddFacts adds facts to the aggregates, summed by key.
	AddFacts(facts []Fact) error
	// Facts sums the facts that q selects.
	Facts(q Query) ([]Fact, error)
	// OverdueOpenSteps counts by process and step (N of FactOverdue facts)
	// the open steps of the org's measurements (of processID's, when not
	// empty) whose deadline is in [from, to).
	OverdueOpenSteps(orgID, processID string, from, to wps.Time) ([]Fact, error)
}

// store is tx's Store.
func store(tx wps.Tx) Store { return tx.(Store) }
