// Package reports computes the figures of where work waits (docs/reports.md)
// from the aggregates that every change of a measurement keeps
// (Fact): counts, cycle times, step waits, seat fill times,
// first-pass yield and throughput by day. Counts and times only, never
// values. The domain decides who may read them (wps.Service.ReadReport);
// this package only computes.
package reports

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"wps/internal/engine"
	"wps/internal/wps"
)

// DefaultMaxDays is the longest range a report covers unless configured.
const DefaultMaxDays = 366

// DefaultDays is the range of a report without from: the 30 days to `to`.
const DefaultDays = 30

// Reports computes reports over ranges of at most MaxDays days.
type Reports struct {
	MaxDays int
	Now     func() time.Time
}

// New returns Reports with ranges of at most maxDays (DefaultMaxDays when 0).
func New(maxDays int, now func() time.Time) *Reports {
	if maxDays <= 0 {
		maxDays = DefaultMaxDays
	}
	if now == nil {
		now = time.Now
	}
	return &Reports{MaxDays: maxDays, Now: now}
}

// Times are percentiles of durations, in whole seconds (null without any).
type Times struct {
	P50 *int64 `json:"p50" nullable:"true" doc:"Median, in seconds (nearest rank; the lower bound of its bucket, see docs/reports.md); null when none"`
	P90 *int64 `json:"p90" nullable:"true" doc:"90th percentile, in seconds (nearest rank, as p50); null when none"`
}

// CycleTime is the time from creation to approval.
type CycleTime struct {
	Times
	Mean *float64 `json:"mean" nullable:"true" doc:"Exact mean in seconds (to the millisecond); null when none was approved"`
}

// StepFigures are one step's figures.
type StepFigures struct {
	StepID     string `json:"stepId"`
	Label      string `json:"label" doc:"The step's label in the process's latest version (empty for a step it no longer has)"`
	Reached    int64  `json:"reached" doc:"Times the step opened in the range"`
	Consensed  int64  `json:"consensed" doc:"Times the step reached consensus in the range"`
	Overdue    int64  `json:"overdue" doc:"Openings whose deadline fell in the range (and before now) while still open"`
	Rejections int64  `json:"rejections" doc:"REJECTION actions (reprovals included) on the step in the range"`
	WaitTime   Times  `json:"waitTime" doc:"From an opening to its consensus, of the consensuses in the range"`
}

// SeatFigures are one seat's figures.
type SeatFigures struct {
	StepID     string `json:"stepId"`
	PolicyName string `json:"policyName" doc:"The seat's policy (* for the one seat of a step without policies)"`
	FillTime   Times  `json:"fillTime" doc:"From the step's opening to the action that filled this seat, of the fills in the range"`
}

// Day is one day's throughput.
type Day struct {
	Day      string `json:"day" doc:"A UTC day, YYYY-MM-DD"`
	Created  int64  `json:"created" doc:"Measurements created that day"`
	Approved int64  `json:"approved" doc:"Measurements approved that day"`
}

// ProcessReport is where a process's work waits, over a range of UTC days.
type ProcessReport struct {
	ProcessID      string        `json:"processId"`
	From           string        `json:"from" doc:"First UTC day of the range, YYYY-MM-DD"`
	To             string        `json:"to" doc:"Last UTC day of the range (included), YYYY-MM-DD"`
	Created        int64         `json:"created" doc:"Measurements created in the range"`
	Approved       int64         `json:"approved" doc:"Measurements approved in the range"`
	Rejected       int64         `json:"rejected" doc:"REJECTION actions (work sent back, reprovals included) in the range"`
	Open           int64         `json:"open" doc:"Measurements of the process not APPROVED now (whatever the range)"`
	CycleTime      CycleTime     `json:"cycleTime" doc:"From creation to APPROVED, of the measurements approved in the range"`
	FirstPassYield *float64      `json:"firstPassYield" nullable:"true" doc:"Of the measurements approved in the range, the share approved without any REJECTION; null when none"`
	Steps          []StepFigures `json:"steps" doc:"The steps of the latest version in order, then any other step with figures"`
	Seats          []SeatFigures `json:"seats" doc:"Each step's seats, in step order"`
	Throughput     []Day         `json:"throughput" doc:"Every day of the range"`
}

// Range is a report's range of UTC days, both included.
type Range struct{ From, To int64 }

// ParseRange reads from and to (YYYY-MM-DD, UTC days, both included): to
// defaults to today, from to DefaultDays days before to. Errors: 422
// naming the field, for a malformed date, from after to, or more than
// MaxDays days.
func (r *Reports) ParseRange(from, to string) (Range, error) {
	day := func(field, s string) (int64, error) {
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return 0, wps.Invalid(field, "must be a date YYYY-MM-DD")
		}
		return FactDay(t), nil
	}
	rg := Range{To: FactDay(r.Now())}
	var err error
	if to != "" {
		if rg.To, err = day("to", to); err != nil {
			return rg, err
		}
	}
	rg.From = rg.To - DefaultDays + 1
	if from != "" {
		if rg.From, err = day("from", from); err != nil {
			return rg, err
		}
	}
	switch {
	case rg.From > rg.To:
		return rg, wps.Invalid("from", "must not be after to")
	case rg.To-rg.From+1 > int64(r.MaxDays):
		return rg, wps.Invalid("to", "a report covers at most %d days", r.MaxDays)
	}
	return rg, nil
}

// DayString is a fact day as YYYY-MM-DD.
func DayString(d int64) string { return time.UnixMilli(d * 86_400_000).UTC().Format(time.DateOnly) }

func dayStart(d int64) wps.Time { return wps.FromMillis(d * 86_400_000) }

// Process computes proc's report over rg in tx.
func (r *Reports) Process(tx wps.Tx, proc wps.Process, rg Range) (ProcessReport, error) {
	base := Query{OrgID: proc.OrgID, ProcessID: proc.ID}
	q := base
	q.Blocks, q.Kinds = Blocks(rg.From, rg.To), []int{FactApproved, FactConsensed, FactFill}
	facts, err := store(tx).Facts(q)
	if err != nil {
		return ProcessReport{}, err
	}
	q = base
	q.From, q.To, q.Kinds = rg.From, rg.To, []int{FactCreated, FactFirstPass, FactReached, FactRejection, FactOverdue}
	counts, err := store(tx).Facts(q)
	if err != nil {
		return ProcessReport{}, err
	}
	facts = append(facts, counts...)
	q.ByDay, q.Kinds = true, []int{FactCreated, FactApprovals}
	days, err := store(tx).Facts(q)
	if err != nil {
		return ProcessReport{}, err
	}
	open, err := tx.OpenMeasurements(proc.OrgID)
	if err != nil {
		return ProcessReport{}, err
	}
	now := wps.At(r.Now())
	until := dayStart(rg.To + 1)
	if now.Before(until.Time) {
		until = now
	}
	var live []Fact
	if until.After(dayStart(rg.From).Time) {
		if live, err = store(tx).OverdueOpenSteps(proc.OrgID, proc.ID, dayStart(rg.From), until); err != nil {
			return ProcessReport{}, err
		}
	}
	for i := range live {
		live[i].Day = rg.From
	}
	rep := Figures(proc, rg, append(facts, live...), days)
	rep.Open = open[proc.ID]
	return rep, nil
}

// histogram is a bucketed distribution: count by bucket, and exact sums.
type histogram struct {
	n, sum  int64
	buckets map[int64]int64
}

func (h *histogram) add(f Fact) {
	if h.buckets == nil {
		h.buckets = map[int64]int64{}
	}
	h.n += f.N
	h.sum += f.SumMillis
	h.buckets[f.Bucket] += f.N
}

// percentile is the nearest-rank p-th percentile (the bucket of the
// smallest value with at least p% of the values at or below it), nil when
// empty.
func (h *histogram) percentile(p int64) *int64 {
	if h.n == 0 {
		return nil
	}
	rank := (p*h.n + 99) / 100
	keys := make([]int64, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var seen int64
	for _, k := range keys {
		if seen += h.buckets[k]; seen >= rank {
			return &k
		}
	}
	return &keys[len(keys)-1]
}

func (h *histogram) times() Times { return Times{P50: h.percentile(50), P90: h.percentile(90)} }

// Figures computes a report from facts summed over the range (any Day,
// each event counted once: one level; FactOverdue of open steps included)
// and days, the FactCreated and FactApprovals facts by day. It is the whole computation, pure: the tests give it facts
// worked out from the actions.
func Figures(proc wps.Process, rg Range, facts, days []Fact) ProcessReport {
	rep := ProcessReport{ProcessID: proc.ID, From: DayString(rg.From), To: DayString(rg.To), Steps: []StepFigures{}, Seats: []SeatFigures{}}
	var cycle histogram
	var firstPass int64
	steps := map[string]*StepFigures{}
	waits := map[string]*histogram{}
	type seatKey struct{ step, policy string }
	fills := map[seatKey]*histogram{}
	step := func(id string) *StepFigures {
		if steps[id] == nil {
			steps[id] = &StepFigures{StepID: id}
			waits[id] = &histogram{}
		}
		return steps[id]
	}
	for _, f := range facts {
		switch f.Kind {
		case FactCreated:
			rep.Created += f.N
		case FactApproved:
			rep.Approved += f.N
			cycle.add(f)
		case FactFirstPass:
			firstPass += f.N
		case FactReached:
			step(f.StepID).Reached += f.N
		case FactConsensed:
			step(f.StepID).Consensed += f.N
			waits[f.StepID].add(f)
		case FactRejection:
			step(f.StepID).Rejections += f.N
			rep.Rejected += f.N
		case FactOverdue:
			step(f.StepID).Overdue += f.N
		case FactFill:
			k := seatKey{f.StepID, f.Policy}
			if fills[k] == nil {
				fills[k] = &histogram{}
			}
			fills[k].add(f)
		}
	}
	rep.CycleTime = CycleTime{Times: cycle.times()}
	if cycle.n > 0 {
		mean := math.Round(float64(cycle.sum)/float64(cycle.n)) / 1000
		rep.CycleTime.Mean = &mean
		fpy := float64(firstPass) / float64(cycle.n)
		rep.FirstPassYield = &fpy
	}
	// Steps and seats: the latest version's in order, then the others.
	var order []string
	policies := map[string][]string{}
	for _, st := range proc.Steps {
		order = append(order, st.ID)
		step(st.ID).Label = st.Label
		ps := slices.Clone(st.PolicyNames)
		if len(ps) == 0 {
			ps = []string{engine.AnySeat}
		}
		policies[st.ID] = ps
	}
	var extra []string
	for id := range steps {
		if !slices.Contains(order, id) {
			extra = append(extra, id)
		}
	}
	slices.Sort(extra)
	order = append(order, extra...)
	var extraSeats []seatKey
	for k := range fills {
		if !slices.Contains(policies[k.step], k.policy) {
			extraSeats = append(extraSeats, k)
		}
	}
	slices.SortFunc(extraSeats, func(a, b seatKey) int {
		return cmp.Or(strings.Compare(a.step, b.step), strings.Compare(a.policy, b.policy))
	})
	for _, id := range order {
		st := steps[id]
		st.WaitTime = waits[id].times()
		rep.Steps = append(rep.Steps, *st)
		for _, pol := range policies[id] {
			h := fills[seatKey{id, pol}]
			if h == nil {
				h = &histogram{}
			}
			rep.Seats = append(rep.Seats, SeatFigures{StepID: id, PolicyName: pol, FillTime: h.times()})
		}
	}
	for _, k := range extraSeats {
		rep.Seats = append(rep.Seats, SeatFigures{StepID: k.step, PolicyName: k.policy, FillTime: fills[k].times()})
	}
	byDay := map[int64]*Day{}
	for d := rg.From; d <= rg.To; d++ {
		rep.Throughput = append(rep.Throughput, Day{Day: DayString(d)})
	}
	for i := range rep.Throughput {
		byDay[rg.From+int64(i)] = &rep.Throughput[i]
	}
	for _, f := range days {
		d := byDay[f.Day]
		if d == nil {
			continue
		}
		switch f.Kind {
		case FactCreated:
			d.Created += f.N
		case FactApprovals:
			d.Approved += f.N
		}
	}
	return rep
}

// ProcessSummary is one process in the org's overview.
type ProcessSummary struct {
	ProcessID    string `json:"processId"`
	Name         string `json:"name" doc:"The process's name"`
	Open         int64  `json:"open" doc:"Measurements not APPROVED now"`
	Overdue      int64  `json:"overdue" doc:"Open steps past their deadline now"`
	CycleTimeP50 *int64 `json:"cycleTimeP50" nullable:"true" doc:"Median cycle time in seconds of the measurements approved in the range; null when none"`
}

// Overview is every process of an org at a glance.
type Overview struct {
	From      string           `json:"from" doc:"First UTC day, YYYY-MM-DD"`
	To        string           `json:"to" doc:"Last UTC day (included), YYYY-MM-DD"`
	Processes []ProcessSummary `json:"processes" doc:"The org's live processes"`
}

// Overview summarizes procs, the org's processes, over rg in tx.
func (r *Reports) Overview(tx wps.Tx, orgID string, procs []wps.Process, rg Range) (Overview, error) {
	out := Overview{From: DayString(rg.From), To: DayString(rg.To), Processes: []ProcessSummary{}}
	open, err := tx.OpenMeasurements(orgID)
	if err != nil {
		return out, err
	}
	overdue, err := store(tx).OverdueOpenSteps(orgID, "", wps.FromMillis(0), wps.At(r.Now()))
	if err != nil {
		return out, err
	}
	late := map[string]int64{}
	for _, f := range overdue {
		late[f.ProcessID] += f.N
	}
	hist := map[string]*histogram{}
	blocks := Blocks(rg.From, rg.To)
	for _, p := range procs { // one process at a time: each reads its own rows of the key
		cycles, err := store(tx).Facts(Query{OrgID: orgID, ProcessID: p.ID, Blocks: blocks, Kinds: []int{FactApproved}})
		if err != nil {
			return out, err
		}
		for _, f := range cycles {
			if hist[f.ProcessID] == nil {
				hist[f.ProcessID] = &histogram{}
			}
			hist[f.ProcessID].add(f)
		}
	}
	for _, p := range procs {
		s := ProcessSummary{ProcessID: p.ID, Name: p.Name, Open: open[p.ID], Overdue: late[p.ID]}
		if h := hist[p.ID]; h != nil {
			s.CycleTimeP50 = h.percentile(50)
		}
		out.Processes = append(out.Processes, s)
	}
	return out, nil
}
