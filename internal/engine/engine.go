// Package engine is the workflow state machine: given a process version, a
// measurement's state and a new action, it decides whether the action is
// valid, which seat it fills, which steps reach consensus, open, are skipped
// or re-open, the measurement's status and the events to emit. It does no
// I/O: the caller loads what it needs and persists the result.
package engine

import (
	"fmt"
	"slices"
	"time"
)

// Step statuses.
const (
	Waiting   = "WAITING"
	Open      = "OPEN"
	Consensed = "CONSENSED"
	Skipped   = "SKIPPED"
)

// Measurement statuses, in the order in which they win.
const (
	StatusApproved    = "APPROVED"
	StatusPending     = "PENDING"
	StatusReproved    = "REPROVED"
	StatusInConsensus = "IN_CONSENSUS"
	StatusConsensus   = "CONSENSUS"
	StatusStageOpen   = "STAGE_OPEN"
	StatusOpen        = "OPEN"
)

// Action types.
const (
	WriteData = "WRITE_DATA"
	Approval  = "APPROVAL"
	Rejection = "REJECTION"
)

// AnySeat is the one seat of a step without policies: any member allowed
// to act fills it.
const AnySeat = "*"

// Def is the part of a process version the engine needs.
type Def struct {
	Steps []StepDef
}

// StepDef is one step: its seats, what it waits for, where it routes.
type StepDef struct {
	ID           string
	Policies     []string // one seat each
	Tokens       []string // seat ids, aligned with Policies
	Ordered      []string // seats that fill in this order
	Deps         []string // effective dependencies (the previous step by default)
	ReprovalDeps []string // re-opened by a rejection here; default Deps
	Routes       []Route  // empty: no routing
	Required     []string // required parameter ids
}

// Route sends the flow to StepID when the routing value equals Value ("*": default).
type Route struct {
	Value  string
	StepID string
}

// Seat is a filled seat.
type Seat struct {
	ActionID string `json:"actionId"`
	UserID   string `json:"userId"`
	Token    string `json:"tokenId"`
	// OnBehalfOf is the user whose seat UserID filled by a delegation:
	// the seat counts as filled by both.
	OnBehalfOf string `json:"onBehalfOf,omitempty"`
}

// StepState is where one step stands.
type StepState struct {
	Status   string          `json:"status"`
	Seats    map[string]Seat `json:"seats,omitempty"`  // by policy name
	Opening  int             `json:"opening"`          // how many times it opened
	Acted    bool            `json:"acted,omitempty"`  // an action since it opened
	Routed   bool            `json:"routed,omitempty"` // chosen by a routing rule: opens even if its dependencies were all skipped
	OpenedAt time.Time       `json:"openedAt,omitzero"`
}

// State is where a measurement stands.
type State struct {
	Steps    map[string]*StepState `json:"steps"`
	Reproved bool                  `json:"reproved,omitempty"`
	Pending  bool                  `json:"pending,omitempty"`
}

// ErrorKind classifies a refused action.
type ErrorKind int

// The kinds of refusal.
const (
	Conflict  ErrorKind = iota // the state does not allow it (409)
	Forbidden                  // the user holds no seat for it (403)
	Invalid                    // the request names something wrong (422)
)

// Error is a refused action.
type Error struct {
	Kind  ErrorKind
	Field string
	Msg   string
	// Step is the step the message names as step "ID", so that the caller
	// can name it better (by its label).
	Step string
	// Missing lists the required parameters without a value, when those
	// keep the step from consensus.
	Missing []string
}

func (e *Error) Error() string { return e.Msg }

func refuse(kind ErrorKind, field, format string, args ...any) *Error {
	return &Error{Kind: kind, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Event is something the action caused.
type Event struct {
	Type   string // step.opened, step.consensed, step.skipped, step.reset, measurement.approved, measurement.reproved
	StepID string
}

// Event types.
const (
	EvStepOpened          = "step.opened"
	EvStepConsensed       = "step.consensed"
	EvStepSkipped         = "step.skipped"
	EvStepReset           = "step.reset"
	EvMeasurementApproved = "measurement.approved"
	EvMeasurementReproved = "measurement.reproved"
)

// Step finds a step by id: its position and definition, or -1 and nil.
func (d *Def) Step(id string) (int, *StepDef) {
	for i := range d.Steps {
		if d.Steps[i].ID == id {
			return i, &d.Steps[i]
		}
	}
	return -1, nil
}

// Clone deep-copies a state, so a refused action leaves the original intact.
func (s State) Clone() State {
	out := State{Steps: make(map[string]*StepState, len(s.Steps)), Reproved: s.Reproved, Pending: s.Pending}
	for id, st := range s.Steps {
		c := *st
		c.Seats = make(map[string]Seat, len(st.Seats))
		for k, v := range st.Seats {
			c.Seats[k] = v
		}
		out.Steps[id] = &c
	}
	return out
}

// Start is the state of a new measurement: the steps without dependencies open.
func Start(def Def, now time.Time, pending bool) (State, []Event) {
	s := State{Steps: map[string]*StepState{}, Pending: pending}
	for _, st := range def.Steps {
		s.Steps[st.ID] = &StepState{Status: Waiting}
	}
	var evs []Event
	openReady(def, &s, now, &evs)
	return s, evs
}

// openReady opens every waiting step whose dependencies are all consensed
// or skipped, and skips every waiting step whose dependencies are all
// skipped; it repeats until nothing changes.
func openReady(def Def, s *State, now time.Time, evs *[]Event) {
	for changed := true; changed; {
		changed = false
		for _, sd := range def.Steps {
			st := s.Steps[sd.ID]
			if st.Status != Waiting {
				continue
			}
			done, skipped := 0, 0
			for _, dep := range sd.Deps {
				switch s.Steps[dep].Status {
				case Consensed:
					done++
				case Skipped:
					done++
					skipped++
				}
			}
			switch {
			case done < len(sd.Deps):
			case len(sd.Deps) > 0 && skipped == len(sd.Deps) && !st.Routed:
				st.Status = Skipped
				*evs = append(*evs, Event{EvStepSkipped, sd.ID})
				changed = true
			default:
				open(st, now)
				*evs = append(*evs, Event{EvStepOpened, sd.ID})
				changed = true
			}
		}
	}
}

func open(st *StepState, now time.Time) {
	st.Status, st.Seats, st.Acted, st.OpenedAt = Open, map[string]Seat{}, false, now
	st.Opening++
}

// Action is one user's act on a step.
type Action struct {
	ID     string
	Type   string
	StepID string
	UserID string
	// Holds lists the step's policies the user holds here (after the
	// step's role narrowing). A step without policies has AnySeat.
	Holds []string
	// Proxies are the users whose seats the user may fill by a delegation,
	// each with the step's policies they hold here; used only when the
	// user's own Holds fill no seat.
	Proxies []Proxy
	// Policy picks the seat when the user holds several; may be empty.
	Policy string
	// Provided reports whether a required parameter has a current value
	// once this action's data is counted.
	Provided func(paramID string) bool
	// RouteValue is the routing parameter's value once this action's data
	// is counted (only read when the step routes).
	RouteValue string
	Now        time.Time
}

// Proxy is a user whose seats another may fill by a delegation, with the
// step's policies they hold there.
type Proxy struct {
	UserID string
	Holds  []string
}

// Result is what an action did.
type Result struct {
	State State
	Seat  string // the policy whose seat the action filled ("" when none)
	Token string
	// OnBehalfOf is the proxy whose seat the action filled, or whose
	// policy let it reject ("" for the user's own).
	OnBehalfOf string
	Consensed  bool // the action's step reached consensus
	Reset      []string
	Events     []Event
}

// Apply validates act against s and returns the new state. s is not changed.
func Apply(def Def, s State, act Action) (Result, error) {
	if Status(def, s) == StatusApproved {
		return Result{}, refuse(Conflict, "", "the measurement is approved; it takes no more actions")
	}
	i, sd := def.Step(act.StepID)
	if sd == nil {
		return Result{}, refuse(Invalid, "stepId", "no step %q in this process version", act.StepID)
	}
	s = s.Clone()
	st := s.Steps[sd.ID]
	if st.Status != Open {
		e := refuse(Conflict, "stepId", "step %q is %s, not open", sd.ID, st.Status)
		e.Step = sd.ID
		return Result{}, e
	}
	res := Result{}
	switch act.Type {
	case WriteData, Approval:
		if err := fillSeat(sd, st, act, &res); err != nil {
			return Result{}, err
		}
		s.Pending = false
		s.Reproved = false
		st.Acted = true
		if err := consensus(def, &s, i, act, &res); err != nil {
			return Result{}, err
		}
	case Rejection:
		if len(act.Holds) == 0 {
			i := slices.IndexFunc(act.Proxies, func(p Proxy) bool { return len(p.Holds) > 0 })
			if i < 0 {
				return Result{}, refuse(Forbidden, "", "only a holder of a policy of this step can reject it")
			}
			res.OnBehalfOf = act.Proxies[i].UserID
		}
		targets := sd.ReprovalDeps
		if len(targets) == 0 {
			targets = sd.Deps
		}
		if len(targets) == 0 {
			targets = []string{sd.ID}
		}
		res.Reset = reset(def, &s, between(def, targets, sd.ID), act.Now, &res.Events)
		s.Reproved = true
		res.Events = append(res.Events, Event{EvMeasurementReproved, sd.ID})
	default:
		return Result{}, refuse(Invalid, "type", "type must be WRITE_DATA, APPROVAL or REJECTION")
	}
	res.State = s
	return res, nil
}

// fillSeat picks and fills the seat act takes, if any.
func fillSeat(sd *StepDef, st *StepState, act Action, res *Result) error {
	policies := seats(sd)
	if p := FilledBy(st, act.UserID); p != "" {
		if act.Type == WriteData && (act.Policy == "" || act.Policy == p) {
			return nil // a seat holder corrects their data
		}
		return refuse(Conflict, "", "you already fill the %q seat of this step; several parties must agree", p)
	}
	if act.Policy != "" && !slices.Contains(policies, act.Policy) {
		return refuse(Invalid, "policyName", "%q is not a policy of this step", act.Policy)
	}
	mine := func(holds []string) []string {
		var held []string
		for _, p := range policies {
			if slices.Contains(holds, p) && (act.Policy == "" || act.Policy == p) {
				held = append(held, p)
			}
		}
		return held
	}
	held := mine(act.Holds)
	var proxies []Proxy
	for _, px := range act.Proxies {
		if h := mine(px.Holds); len(h) > 0 {
			proxies = append(proxies, Proxy{px.UserID, h})
		}
	}
	if len(held) == 0 && len(proxies) == 0 {
		if act.Policy != "" {
			return refuse(Forbidden, "policyName", "you do not hold policy %q at this step", act.Policy)
		}
		return refuse(Forbidden, "", "you hold none of this step's policies (%v)", policies)
	}
	if can, onBehalfOf := SeatsOf(sd, st, act.UserID, held, proxies); len(can) > 0 {
		p := can[0]
		st.Seats[p] = Seat{ActionID: act.ID, UserID: act.UserID, Token: tokenOf(sd, p), OnBehalfOf: onBehalfOf}
		res.Seat, res.Token, res.OnBehalfOf = p, st.Seats[p].Token, onBehalfOf
		return nil
	}
	if len(held) == 0 {
		for _, px := range proxies {
			if p := FilledBy(st, px.UserID); p != "" {
				return refuse(Conflict, "", "the user you act for already fills the %q seat of this step; several parties must agree", p)
			}
		}
	}
	for _, px := range proxies {
		held = append(held, px.Holds...)
	}
	for _, p := range held {
		if _, filled := st.Seats[p]; !filled {
			return refuse(Conflict, "", "seats fill in order; the next is %q", NextOrdered(sd, st))
		}
	}
	return refuse(Conflict, "", "your seats at this step (%v) are filled", held)
}

// seats are the step's seats: one per policy, or AnySeat.
func seats(sd *StepDef) []string {
	if len(sd.Policies) == 0 {
		return []string{AnySeat}
	}
	return sd.Policies
}

// Fillable lists the seats of an open step that an action can fill now,
// in policy order: the unfilled ones, and of the ordered policies only the
// next (NextOrdered). None when the step is not open.
func Fillable(sd *StepDef, st *StepState) []string {
	if st == nil || st.Status != Open {
		return nil
	}
	next := NextOrdered(sd, st)
	var out []string
	for _, p := range seats(sd) {
		if _, filled := st.Seats[p]; filled || slices.Contains(sd.Ordered, p) && p != next {
			continue
		}
		out = append(out, p)
	}
	return out
}

// FilledBy is the seat that user fills at the step in its current opening,
// themselves or through a delegate on their behalf, or "": one user fills
// at most one seat of a step.
func FilledBy(st *StepState, userID string) string {
	for p, seat := range st.Seats {
		if seat.UserID == userID || seat.OnBehalfOf == userID {
			return p
		}
	}
	return ""
}

// Fillers lists the users who fill the step's seats in its current
// opening, in policy order: a seat filled on behalf of another user names
// both.
func Fillers(sd *StepDef, st *StepState) []string {
	var out []string
	for _, p := range seats(sd) {
		seat, ok := st.Seats[p]
		if !ok {
			continue
		}
		for _, u := range []string{seat.UserID, seat.OnBehalfOf} {
			if u != "" && !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// SeatsFor lists the seats that a user holding holds (the step's policies
// they hold there) could fill at the step now, in policy order: what
// an action of theirs may fill. None when they fill one of its seats
// already.
func SeatsFor(sd *StepDef, st *StepState, userID string, holds []string) []string {
	if st == nil || FilledBy(st, userID) != "" {
		return nil
	}
	var out []string
	for _, p := range Fillable(sd, st) {
		if slices.Contains(holds, p) {
			out = append(out, p)
		}
	}
	return out
}

// SeatsOf lists the seats a user could fill at the step now and for whom:
// their own (SeatsFor with holds, onBehalfOf ""), or when those are none,
// the seats of the first proxy who fills no seat of the step yet (a seat
// filled on someone's behalf is theirs too). This is the one rule of who
// may fill which seat, delegations included.
func SeatsOf(sd *StepDef, st *StepState, userID string, holds []string, proxies []Proxy) (seats []string, onBehalfOf string) {
	if out := SeatsFor(sd, st, userID, holds); len(out) > 0 {
		return out, ""
	}
	for _, px := range proxies {
		if px.UserID == userID || FilledBy(st, px.UserID) != "" {
			continue
		}
		if out := SeatsFor(sd, st, userID, px.Holds); len(out) > 0 {
			return out, px.UserID
		}
	}
	return nil, ""
}

func tokenOf(sd *StepDef, policy string) string {
	if i := slices.Index(sd.Policies, policy); i >= 0 && i < len(sd.Tokens) {
		return sd.Tokens[i]
	}
	return ""
}

// NextOrdered is the first unfilled seat of the step's ordered policies.
func NextOrdered(sd *StepDef, st *StepState) string {
	for _, p := range sd.Ordered {
		if _, filled := st.Seats[p]; !filled {
			return p
		}
	}
	return ""
}

// Unfilled lists a step's unfilled seats in order (ordered ones first).
func Unfilled(sd *StepDef, st *StepState) []string {
	var out []string
	for _, p := range append(slices.Clone(sd.Ordered), seats(sd)...) {
		if _, filled := st.Seats[p]; !filled && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// consensus closes the step when every seat is filled, routes, and opens
// what comes next.
func consensus(def Def, s *State, i int, act Action, res *Result) error {
	sd := &def.Steps[i]
	st := s.Steps[sd.ID]
	if len(Unfilled(sd, st)) > 0 {
		return nil
	}
	var missing []string
	for _, p := range sd.Required {
		if act.Provided == nil || !act.Provided(p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		e := refuse(Conflict, "parameters", "step %q cannot reach consensus before every required parameter has a value", sd.ID)
		e.Step, e.Missing = sd.ID, missing
		return e
	}
	st.Status = Consensed
	res.Consensed = true
	res.Events = append(res.Events, Event{EvStepConsensed, sd.ID})
	if len(sd.Routes) > 0 {
		chosen := ""
		for _, r := range sd.Routes {
			if r.Value == act.RouteValue {
				chosen = r.StepID
			}
		}
		if chosen == "" {
			for _, r := range sd.Routes {
				if r.Value == "*" {
					chosen = r.StepID
				}
			}
		}
		if chosen == "" {
			return refuse(Invalid, "parameters", "no routing rule matches %q and there is no default", act.RouteValue)
		}
		// The other targets are skipped, unless the chosen branch leads
		// to them too; the chosen one opens when its dependencies are done.
		for _, r := range sd.Routes {
			if t := s.Steps[r.StepID]; r.StepID != chosen && t.Status == Waiting && !reaches(def, chosen, r.StepID) {
				t.Status = Skipped
				res.Events = append(res.Events, Event{EvStepSkipped, r.StepID})
			}
		}
		s.Steps[chosen].Routed = true
	}
	openReady(def, s, act.Now, &res.Events)
	if Status(def, *s) == StatusApproved {
		res.Events = append(res.Events, Event{EvMeasurementApproved, ""})
	}
	return nil
}

// between returns the targets, the step `to`, and every step on a
// dependency path from a target to `to`.
func between(def Def, targets []string, to string) []string {
	out := slices.Clone(targets)
	if !slices.Contains(out, to) {
		out = append(out, to)
	}
	for _, sd := range def.Steps {
		if slices.Contains(out, sd.ID) {
			continue
		}
		from := slices.ContainsFunc(targets, func(t string) bool { return reaches(def, t, sd.ID) })
		if from && reaches(def, sd.ID, to) {
			out = append(out, sd.ID)
		}
	}
	return out
}

// reaches reports whether `to` depends, directly or not, on `from`.
func reaches(def Def, from, to string) bool {
	seen := map[string]bool{}
	var walk func(id string) bool
	walk = func(id string) bool {
		if id == from {
			return true
		}
		if seen[id] {
			return false
		}
		seen[id] = true
		_, sd := def.Step(id)
		return sd != nil && slices.ContainsFunc(sd.Deps, walk)
	}
	return from != to && walk(to)
}

// reset sends steps (and every step after them) back to waiting with empty
// seats, then opens those that are ready. It returns the steps reset.
func reset(def Def, s *State, steps []string, now time.Time, evs *[]Event) []string {
	var out []string
	for _, sd := range def.Steps {
		hit := slices.Contains(steps, sd.ID) || slices.ContainsFunc(steps, func(r string) bool { return reaches(def, r, sd.ID) })
		st := s.Steps[sd.ID]
		if !hit || st.Status == Waiting {
			continue
		}
		st.Status, st.Seats, st.Acted, st.Routed = Waiting, map[string]Seat{}, false, false
		out = append(out, sd.ID)
		*evs = append(*evs, Event{EvStepReset, sd.ID})
	}
	openReady(def, s, now, evs)
	return out
}

// Reprove re-opens the step of an earlier action and that step's reproval
// dependencies (and every step after them), as a rejection would.
func Reprove(def Def, s State, stepID string, now time.Time) (Result, error) {
	if Status(def, s) == StatusApproved {
		return Result{}, refuse(Conflict, "", "the measurement is approved; its actions cannot be reproved")
	}
	_, sd := def.Step(stepID)
	if sd == nil {
		return Result{}, refuse(Conflict, "", "the action's step is not in this process version")
	}
	s = s.Clone()
	res := Result{}
	res.Reset = reset(def, &s, between(def, sd.ReprovalDeps, sd.ID), now, &res.Events)
	s.Reproved = true
	res.Events = append(res.Events, Event{EvMeasurementReproved, sd.ID})
	res.State = s
	return res, nil
}

// Status derives the measurement's status from its state; the first that
// holds wins: APPROVED, PENDING, REPROVED, IN_CONSENSUS, CONSENSUS,
// STAGE_OPEN, OPEN.
func Status(def Def, s State) string {
	all := true
	for _, st := range s.Steps {
		if st.Status != Consensed && st.Status != Skipped {
			all = false
		}
	}
	if all && len(s.Steps) > 0 {
		return StatusApproved
	}
	if s.Pending {
		return StatusPending
	}
	if s.Reproved {
		return StatusReproved
	}
	for _, sd := range def.Steps {
		if st := s.Steps[sd.ID]; st.Status == Open && len(st.Seats) > 0 && len(Unfilled(&sd, st)) > 0 {
			return StatusInConsensus
		}
	}
	for _, sd := range def.Steps {
		st := s.Steps[sd.ID]
		if st.Status != Waiting {
			continue
		}
		for _, dep := range sd.Deps {
			if s.Steps[dep].Status == Consensed {
				return StatusConsensus
			}
		}
	}
	for i, sd := range def.Steps {
		if st := s.Steps[sd.ID]; i > 0 && st.Status == Open && !st.Acted {
			return StatusStageOpen
		}
	}
	return StatusOpen
}

// OpenSteps lists the open steps in position order.
func OpenSteps(def Def, s State) []string {
	var out []string
	for _, sd := range def.Steps {
		if s.Steps[sd.ID].Status == Open {
			out = append(out, sd.ID)
		}
	}
	return out
}
