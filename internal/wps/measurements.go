package wps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"

	"wps/internal/engine"
)

// paramGroups lists each step's parameters.
func paramGroups(steps []Step) [][]Parameter {
	out := make([][]Parameter, len(steps))
	for i, st := range steps {
		out[i] = st.Parameters
	}
	return out
}

// engineDef is what the engine needs of a process version.
func engineDef(steps []Step) engine.Def {
	def := engine.Def{Steps: make([]engine.StepDef, len(steps))}
	for i, st := range steps {
		sd := engine.StepDef{ID: st.ID, Policies: st.PolicyNames, Tokens: st.TokenIDs, Ordered: st.OrderedPolicies,
			Deps: EffectiveDeps(steps, i), ReprovalDeps: st.StepIDsReprovalDependencies}
		if st.Routing != nil {
			for _, r := range st.Routing.Rules {
				sd.Routes = append(sd.Routes, engine.Route{Value: r.Value, StepID: r.StepID})
			}
		}
		for _, p := range st.Parameters {
			if p.IsRequired && p.Type != TypeFormula && p.ContractTemplateID == "" { // a document comes with the consensus
				sd.Required = append(sd.Required, p.ID)
			}
		}
		def.Steps[i] = sd
	}
	return def
}

func stepByID(steps []Step, id string) (int, *Step) {
	for i := range steps {
		if steps[i].ID == id {
			return i, &steps[i]
		}
	}
	return -1, nil
}

// stepURLs are the webhookUrls of a step of p ("" for none or no such step).
func (p Process) stepURLs(stepID string) string {
	if _, st := stepByID(p.Steps, stepID); st != nil {
		return st.WebhookURLs
	}
	return ""
}

// SeatKey is what filling a seat takes, as the actionable index stores it:
// holding Policy, and when the step narrows the roles that count for it
// (roles[{p, r}]), holding it through Role. A seat whose policy is not
// narrowed has the one key {Policy, ""}; a narrowed one a key per role
// that counts; a step without policies the key {"", ""} (any member who
// may act). Step definitions are fixed once a measurement uses them, so
// the keys of a seat do not change; a policy's roles do, which is why the
// caller's keys are worked out when they ask (heldKeys).
type SeatKey struct {
	Policy string
	Role   string
}

// heldKey is a key a user holds, with the role that counts for it.
type heldKey struct {
	SeatKey
	role string
}

// heldKeys lists the keys a user with roles holds through policies (those
// of the org they hold), policy by policy: {p, ""} and then {p, r} for each
// role r of p they have, in p's role order; and {"", ""}, the seat of a step
// without policies, which any member fills (the action's function is
// checked apart).
func heldKeys(roles []string, policies []Policy) []heldKey {
	first := ""
	if len(roles) > 0 {
		first = roles[0]
	}
	out := []heldKey{{role: first}}
	for _, pol := range policies {
		var mine []heldKey
		for _, r := range pol.Roles {
			if slices.Contains(roles, r) {
				mine = append(mine, heldKey{SeatKey{pol.Name, r}, r})
			}
		}
		if len(mine) > 0 {
			out = append(append(out, heldKey{SeatKey{pol.Name, ""}, mine[0].role}), mine...)
		}
	}
	return out
}

// seatKeys lists the keys any of which fills seat policy (a name of the
// step's policyNames, or engine.AnySeat) at st.
func seatKeys(st Step, policy string) []SeatKey {
	if policy == engine.AnySeat {
		return []SeatKey{{}}
	}
	roles, narrowed := narrowing(st, policy)
	if !narrowed {
		return []SeatKey{{policy, ""}}
	}
	out := make([]SeatKey, len(roles))
	for i, r := range roles {
		out[i] = SeatKey{policy, r}
	}
	return out
}

// narrowing is what the step's roles[{p, r}] leave of the roles that may
// count for policy (every entry for it narrows), and whether any narrows it.
func narrowing(st Step, policy string) (roles []string, narrowed bool) {
	for _, sr := range st.Roles {
		if sr.P != policy {
			continue
		}
		if !narrowed {
			roles, narrowed = slices.Clone(sr.R), true
			continue
		}
		roles = slices.DeleteFunc(roles, func(r string) bool { return !slices.Contains(sr.R, r) })
	}
	return roles, narrowed
}

// seatHolder tells which of a step's policies a user holds there, and the
// role that counts for each: the seats one of whose keys (seatKeys) the
// user holds (heldKeys), that is, a role of the user is a role of the
// policy that the step's roles[{p, r}] leave. A step without policies has
// one seat any actor may fill. This, with engine.SeatsFor, is the one rule
// of who may fill which seat: actions go through it, and so do the
// actionable list and its index, through the same keys.
func seatHolder(st Step, roles []string, policies []Policy) (holds []string, roleFor map[string]string) {
	roleFor = map[string]string{}
	held := heldKeys(roles, policies)
	names := st.PolicyNames
	if len(names) == 0 {
		names = []string{engine.AnySeat}
	}
	for _, name := range names {
		keys := seatKeys(st, name)
		for _, k := range held {
			if slices.Contains(keys, k.SeatKey) {
				holds = append(holds, name)
				roleFor[name] = k.role
				break
			}
		}
	}
	return holds, roleFor
}

// countingRoles are the roles that hold pol's seat at st: the policy's
// roles, narrowed by the step's roles[{p, r}] for that policy.
func countingRoles(st Step, pol Policy) []string {
	allowed, narrowed := narrowing(st, pol.Name)
	if !narrowed {
		return pol.Roles
	}
	return slices.DeleteFunc(slices.Clone(pol.Roles), func(r string) bool { return !slices.Contains(allowed, r) })
}

// engineError maps a refusal of the engine to a domain error, naming a
// step by its label and id, and each missing required parameter by name.
func engineError(err error, steps []Step) error {
	var e *engine.Error
	if !errors.As(err, &e) {
		return err
	}
	code := map[engine.ErrorKind]Code{engine.Conflict: CodeConflict, engine.Forbidden: CodeForbidden, engine.Invalid: CodeInvalid}[e.Kind]
	msg := e.Msg
	_, st := stepByID(steps, e.Step)
	if st != nil {
		msg = strings.Replace(msg, fmt.Sprintf("step %q", st.ID), fmt.Sprintf("step %q (%s)", st.Label, st.ID), 1)
	}
	out := &Error{Code: code, Message: msg}
	if e.Field != "" && code == CodeInvalid {
		out.Fields = []FieldError{{Field: e.Field, Message: msg}}
	}
	if st != nil && len(e.Missing) > 0 {
		var names []string
		for _, id := range e.Missing {
			if _, p := paramByID(st.Parameters, id); p.ID != "" {
				names = append(names, p.Name)
				out.Fields = append(out.Fields, fieldError("parameters."+p.Name, "is required"))
			}
		}
		out.Message = fmt.Sprintf("%s: %s", msg, strings.Join(names, ", "))
	}
	return out
}

// ActInput is the body of POST /v1/measurements/{id}/actions.
type ActInput struct {
	StepID          string
	Type            string
	PolicyName      string
	Parameters      map[string]json.RawMessage
	Observation     string
	TransactionHash string
	// Signature is the signer's credential, needed at a step with a
	// signatureMeaning (ignored elsewhere).
	Signature SignatureInput
}

// run is one measurement loaded for a change, inside a write transaction.
type run struct {
	s       *Service
	tx      Tx
	p       *Principal
	user    User
	m       Measurement
	proc    Process // the measurement's version
	def     engine.Def
	actions []Action
	unsaved []int         // indexes in actions of the ones save must write
	entries []LedgerEntry // the ledger entries of its changes, in order, written by save
	isNew   bool          // the measurement is not written yet
	created bool          // its creation is in an action's entry (LeafCreation)
	// startedAt and startPending are what the engine started a new
	// measurement from (its ledger entry says so).
	startedAt    Time
	startPending bool
	// savedStatus is the status as stored, for the status counters.
	savedStatus string
	events      []Event
	now         Time
	policies    []Policy    // loaded once for views
	dels        []delegator // whose seats the user fills by delegation (delegators), once read
	delsRead    bool
	cals        *[]CalendarVersion   // the org's calendars, once read (calendars)
	reads       []EntityRead         // values this run read from entity records
	writes      []EntityData         // records this run wrote (entityManipulations)
	answers     map[string]apiAnswer // API call answers fetched for this run
	hiddenIDs   map[string]bool      // parameters hidden from the reader (hidden())
	filled      []MeasurementSheet   // workbooks this run recalculated
	docs        []pendingDoc         // documents of steps this run consensed, stored in save
	at          *attempt             // what earlier tries of its write kept (writePrepared), nil outside one
	ids         map[string]string    // the ids this try gave (id)
	// openBefore are the open steps as loaded, when mail is on: save mails
	// work.waiting to whom the Inbox starts listing a step for.
	openBefore []OpenStep
	// returned are the actions this run superseded (a rejection or a
	// reproval re-opened their steps): save mails work.returned to their
	// authors.
	returned []Action
	// changes are the measurement's changes this run made (change),
	// handed to the store by save; cals0 the calendars they were made
	// under.
	changes []Change
	cals0   []CalendarVersion
}

func (s *Service) loadRun(tx Tx, p *Principal, measurementID string) (*run, error) {
	m, proc, actions, err := tx.ReadMeasurement(p.OrgID, measurementID)
	if err != nil {
		return nil, err
	}
	r := &run{s: s, tx: tx, p: p, m: m, proc: proc, actions: actions, now: s.Now(), savedStatus: m.Status}
	r.def = engineDef(r.proc.Steps)
	if r.user, err = actor(tx, p); err != nil {
		return nil, err
	}
	r.openBefore = r.openSteps() // work.waiting: mail and chat channels
	return r, nil
}

// actor is the user acting as p: the one authentication read (its name and
// roles are cached with the key, see keyCache), else read in tx.
func actor(tx Tx, p *Principal) (User, error) {
	switch {
	case p.UserID == SystemUserID:
		return User{ID: SystemUserID, Name: "scheduler"}, nil
	case p.User.ID == p.UserID:
		return p.User, nil
	}
	return tx.GetUser(p.OrgID, p.UserID)
}

// newMeasurement creates a measurement of proc (its latest version) with
// the given id, at now.
func (s *Service) newMeasurement(tx Tx, p *Principal, proc Process, id string, now Time) (*run, error) {
	if !proc.Locked {
		if err := tx.LockProcessVersion(p.OrgID, proc.ID, proc.Version); err != nil {
			return nil, err
		}
	}
	var err error
	r := &run{s: s, tx: tx, p: p, proc: proc, def: engineDef(proc.Steps), now: now}
	if r.user, err = actor(tx, p); err != nil {
		return nil, err
	}
	state, _ := engine.Start(r.def, now.Time, false)
	r.m = Measurement{ID: id, OrgID: p.OrgID, ProcessID: proc.ID, Version: proc.Version,
		State: state, CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now} // named in save
	r.m.Status = engine.Status(r.def, state)
	r.isNew, r.startedAt = true, now
	r.event(EvMeasurementCreated, "", "")
	return r, nil
}

// Event types (semantics section 6).
const (
	EvMeasurementCreated  = "measurement.created"
	EvActionCreated       = "action.created"
	EvActionReproved      = "action.reproved"
	EvStepConsensed       = "step.consensed"
	EvStepOverdue         = "step.overdue"
	EvStepEscalated       = "step.escalated"
	EvMeasurementApproved = "measurement.approved"
	EvMeasurementReproved = "measurement.reproved"
)

// EventTypes lists every event type.
var EventTypes = []string{EvMeasurementCreated, EvActionCreated, EvActionReproved, EvStepConsensed, EvStepOverdue, EvStepEscalated, EvMeasurementApproved, EvMeasurementReproved}

// event queues an outbox event, written when the run is saved.
func (r *run) event(typ, stepID, actionID string) {
	e := Event{ID: NewID(), OrgID: r.m.OrgID, Type: typ, MeasurementID: r.m.ID, StepID: stepID, ActionID: actionID, CreatedAt: r.now}
	e.Payload, _ = gojson.Marshal(eventPayload[measurementEvent]{CreatedAt: r.now, Data: measurementEvent{
		ActionID: actionID, MeasurementID: r.m.ID, ProcessID: r.m.ProcessID, StepID: stepID}, ID: e.ID, OrgID: r.m.OrgID, Type: typ})
	r.events = append(r.events, e)
}

// eventPayload is an event as webhooks receive it (fields in name order).
type eventPayload[D any] struct {
	CreatedAt Time   `json:"createdAt"`
	Data      D      `json:"data"`
	ID        string `json:"id"`
	OrgID     string `json:"orgId"`
	Type      string `json:"type"`
}

// measurementEvent is the data of an event about a measurement.
type measurementEvent struct {
	ActionID      string `json:"actionId,omitempty"`
	MeasurementID string `json:"measurementId"`
	ProcessID     string `json:"processId"`
	StepID        string `json:"stepId,omitempty"`
}

// overdueEvent is the data of step.overdue.
type overdueEvent struct {
	DueAt         *Time  `json:"dueAt"`
	MeasurementID string `json:"measurementId"`
	Opening       int    `json:"opening"`
	ProcessID     string `json:"processId"`
	StepID        string `json:"stepId"`
}

// openSteps are the measurement's open steps, with their deadlines and
// what the actionable index keeps of them.
func (r *run) openSteps() []OpenStep { return openSteps(r.m, r.proc.Steps, r.def, r.calendars()) }

// calendars are the org's calendar versions, read once per run and only
// when one of its steps has a business deadline.
func (r *run) calendars() []CalendarVersion {
	if r.cals == nil && slices.ContainsFunc(r.proc.Steps, businessDeadline) {
		list, err := r.tx.ListCalendars(r.m.OrgID)
		if err == nil {
			r.cals = &list
		}
	}
	if r.cals == nil {
		return nil
	}
	return *r.cals
}

// IndexOpenSteps is what the store keeps of a measurement's open steps
// (Tx.CreateMeasurement, Tx.SetOpenSteps), worked out from its state and
// the steps of its version: for a migration that fills a new column or
// table of them (the store's migration 16 does, before calendars existed).
func IndexOpenSteps(m Measurement, steps []Step) []OpenStep {
	return openSteps(m, steps, engineDef(steps), nil)
}

func openSteps(m Measurement, steps []Step, def engine.Def, cals []CalendarVersion) []OpenStep {
	var open []OpenStep
	for _, id := range engine.OpenSteps(def, m.State) {
		ss := m.State.Steps[id]
		_, st := stepByID(steps, id)
		_, sd := def.Step(id)
		o := OpenStep{MeasurementID: m.ID, OrgID: m.OrgID, StepID: id, Opening: ss.Opening, OpenedAt: At(ss.OpenedAt), ProcessID: m.ProcessID}
		o.DueAt = dueAt(*st, ss.OpenedAt, cals)
		o.EscalateAt = escalateAt(*st, o.DueAt, 0)
		if seatsOpen(m) {
			for _, p := range engine.Fillable(sd, ss) {
				o.Seats = append(o.Seats, seatKeys(*st, p)...)
			}
			o.Fillers = engine.Fillers(sd, ss)
		}
		open = append(open, o)
	}
	return open
}

// seatsOpen reports whether anything of m waits on someone: a PENDING
// measurement's occurrence has not come yet (an APPROVED one has no open
// step).
func seatsOpen(m Measurement) bool { return !m.State.Pending }

// dueAt is when an opening of st becomes overdue, or nil; business
// deadlines count over cals, the org's calendar versions (the one in force
// at the opening).
func dueAt(st Step, opened time.Time, cals []CalendarVersion) *Time {
	n, _ := strconv.Atoi(st.Deadline)
	var due time.Time
	var ok bool
	switch st.DeadlineType {
	case DeadlineHours:
		due = opened.Add(time.Duration(n) * time.Hour)
	case DeadlineDays:
		due = opened.Add(time.Duration(n) * 24 * time.Hour)
	case DeadlineBusinessHours:
		if due, ok = calendarAt(cals, opened).AddWorking(opened, time.Duration(n)*time.Hour); !ok {
			return nil // a calendar without working time has no deadline
		}
	case DeadlineBusinessDays:
		if due, ok = calendarAt(cals, opened).AddDays(opened, n); !ok {
			return nil
		}
	case DeadlineDate:
		t, err := time.Parse(time.RFC3339, st.Deadline)
		if err != nil {
			return nil
		}
		due = t
	default:
		return nil
	}
	d := At(due)
	return &d
}

// current is the latest value of each parameter over the actions that
// count (not superseded, not reproved), with extra laid over it.
func (r *run) current(extra map[string]any) map[string]any {
	vals := map[string]any{}
	for _, a := range r.actions {
		if a.Type != engine.WriteData || a.Superseded || a.Reproved {
			continue
		}
		for k, v := range a.Data {
			vals[k] = v
		}
	}
	for k, v := range extra {
		vals[k] = v
	}
	return vals
}

// act applies one action through the engine and records it.
func (r *run) act(in ActInput) (Action, engine.Result, error) {
	var zero engine.Result
	fn := FnActionWrite
	switch in.Type {
	case engine.WriteData:
	case engine.Approval, engine.Rejection:
		fn = FnActionApprove
	default:
		return Action{}, zero, Invalid("type", "must be WRITE_DATA, APPROVAL or REJECTION")
	}
	onlyDelegated := !r.p.Can(fn) // the function comes from a delegation: the action fills a delegated seat
	if onlyDelegated {
		if dels, err := r.delegators(); err != nil {
			return Action{}, zero, err
		} else if !delegatedCan(dels, fn) {
			return Action{}, zero, r.p.Require(fn)
		}
	}
	if in.Type != engine.WriteData {
		if len(in.Parameters) > 0 {
			return Action{}, zero, Invalid("parameters", "only WRITE_DATA carries parameters")
		}
		if in.Type == engine.Rejection {
			if err := needReason(in.Observation); err != nil {
				return Action{}, zero, err
			}
		}
	}
	_, st := stepByID(r.proc.Steps, in.StepID)
	if st == nil {
		return Action{}, zero, Invalid("stepId", "no step %q in this measurement's process version", in.StepID)
	}
	if r.m.Status == engine.StatusApproved {
		return Action{}, zero, Errorf(CodeConflict, "the measurement is approved; it takes no more actions")
	}
	sig, err := r.sign(*st)
	if err != nil {
		return Action{}, zero, err
	}
	var data map[string]any
	if in.Type == engine.WriteData {
		if err := refuseDocuments(*st, in.Parameters); err != nil {
			return Action{}, zero, err
		}
		var v Validator
		c := &valueCheck{v: &v, refs: txRefs{r.tx, r.p.OrgID}}
		vals, _ := c.values(st.Parameters, in.Parameters, "parameters", true)
		if c.err != nil {
			return Action{}, zero, c.err
		}
		if err := v.Err(); err != nil {
			return Action{}, zero, err
		}
		if err := r.reasonForChange(*st, vals, in.Observation); err != nil {
			return Action{}, zero, err
		}
		data = vals
		if err := r.readFromEntities(*st, data); err != nil {
			return Action{}, zero, err
		}
		if err := r.autoFill(*st, data); err != nil {
			return Action{}, zero, err
		}
		if err := r.readFromOtherMeasurements(*st, data); err != nil {
			return Action{}, zero, err
		}
	}
	cur := r.current(data)
	if in.Type == engine.WriteData {
		computeFormulas(paramGroups(r.proc.Steps), st.Parameters, cur, data, r.now.Time) // fills cur and data
		if filled, err := r.fillFromAPIs(*st, data, cur); err != nil {
			return Action{}, zero, err
		} else if filled {
			computeFormulas(paramGroups(r.proc.Steps), st.Parameters, cur, data, r.now.Time)
		}
		if filled, err := r.fillSheets(*st, cur, data); err != nil {
			return Action{}, zero, err
		} else if filled {
			computeFormulas(paramGroups(r.proc.Steps), st.Parameters, cur, data, r.now.Time)
		}
		if err := r.claimUnique(*st, data); err != nil {
			return Action{}, zero, err
		}
	}
	route, err := r.routeValue(*st, cur)
	if err != nil {
		return Action{}, zero, err
	}
	holds, roleFor := seatHolder(*st, r.user.Roles, r.p.Policies)
	if len(holds) == 0 {
		if fresh, err := r.refreshPolicies(); err != nil {
			return Action{}, zero, err
		} else if fresh {
			holds, roleFor = seatHolder(*st, r.user.Roles, r.p.Policies)
		}
	}
	if onlyDelegated {
		holds = nil
	}
	var pxs []engine.Proxy
	var pxRoles map[string]map[string]string
	if r.mayNeedProxies(st.ID, holds, in.PolicyName) {
		dels, err := r.delegators()
		if err != nil {
			return Action{}, zero, err
		}
		pxs, pxRoles = proxies(dels, *st)
	}
	a := Action{ID: r.id("action"), OrgID: r.m.OrgID, MeasurementID: r.m.ID, StepID: st.ID, Type: in.Type, UserID: r.user.ID,
		Username: displayName(r.user), UserRoles: r.user.Roles, Observation: in.Observation, Data: data, Signature: sig, CreatedAt: r.now}
	res, err := engine.Apply(r.def, r.m.State, engine.Action{ID: a.ID, Type: in.Type, StepID: st.ID, UserID: r.user.ID, Holds: holds,
		Proxies: pxs, Policy: in.PolicyName, Provided: func(id string) bool { return cur[id] != nil }, RouteValue: route, Now: r.now.Time})
	if err != nil {
		return Action{}, zero, engineError(err, r.proc.Steps)
	}
	if res.Consensed {
		if err := r.writeEntities(*st, cur, a.ID); err != nil {
			return Action{}, zero, err
		}
	}
	a.PolicyName, a.TokenID, a.Role = res.Seat, res.Token, roleFor[res.Seat]
	if del := delegatorByID(r.dels, res.OnBehalfOf); del != nil {
		a.OnBehalfOf, a.Role = OnBehalfOf{UserID: del.ID, Name: displayName(del.User)}, pxRoles[del.ID][res.Seat]
	}
	if st.Routing != nil {
		a.Route = route
	}
	for i := range r.filled {
		if r.filled[i].ActionID == "" {
			r.filled[i].ActionID = a.ID
		}
	}
	if a.Data == nil {
		a.Data = map[string]any{}
	}
	if res.Consensed {
		if err := r.prepareDocuments(*st, &a, cur, res.State); err != nil {
			return Action{}, zero, err
		}
	}
	if err := r.record(&a, in.TransactionHash, res); err != nil {
		return Action{}, zero, err
	}
	return a, res, nil
}

// refreshPolicies reads the caller's roles and policies again in the
// transaction, when they differ from those the caller was authenticated
// with: a policy renamed meanwhile gives its seats under its new name,
// which the definitions read in this transaction already use. It reports
// whether anything changed.
func (r *run) refreshPolicies() (bool, error) {
	if r.p.UserID == SystemUserID {
		return false, nil
	}
	fresh, err := principalOf(r.tx, r.p.OrgID, r.p.UserID)
	if err != nil {
		return false, err
	}
	same := slices.EqualFunc(fresh.Policies, r.p.Policies, func(a, b Policy) bool { return a.ID == b.ID && a.Name == b.Name }) &&
		slices.Equal(fresh.Roles, r.user.Roles)
	if same {
		return false, nil
	}
	p := *r.p // the principal may be shared (a cached key): this run gets its own
	p.Policies, p.OrgPolicies, p.Roles = fresh.Policies, fresh.OrgPolicies, fresh.Roles
	r.p, r.user.Roles = &p, fresh.Roles
	r.policies = nil
	return true, nil
}

// refreshed is check(arg) again after refreshPolicies, when they changed.
func (r *run) refreshed(check func(string) bool, arg string) bool {
	fresh, err := r.refreshPolicies()
	return err == nil && fresh && check(arg)
}

// mayReprove is the seat rule of Reprove: the caller holds a policy of the
// action's step or of a later one (ADMIN: of a step without policies too).
func (r *run) mayReprove(stepID string) bool {
	pos, _ := stepByID(r.proc.Steps, stepID)
	for _, st := range r.proc.Steps[max(pos, 0):] {
		if holds, _ := seatHolder(st, r.user.Roles, r.p.Policies); len(holds) > 0 && (len(st.PolicyNames) > 0 || r.p.IsAdmin()) {
			return true
		}
	}
	return false
}

// reasonForChange refuses a WRITE_DATA that changes a value the step
// holds (written by an action that counts: not superseded, not reproved)
// without a reason: a blank observation (semantics section 19). A first
// value, or the same value again, needs none. Error: CodeInvalid naming
// observation.
func (r *run) reasonForChange(st Step, vals map[string]any, observation string) error {
	if strings.TrimSpace(observation) != "" {
		return nil
	}
	held := map[string]any{}
	for _, a := range r.actions {
		if a.StepID == st.ID && a.Type == engine.WriteData && !a.Superseded && !a.Reproved {
			maps.Copy(held, a.Data)
		}
	}
	var changed []string
	for _, p := range st.Parameters {
		old, ok := held[p.ID]
		v, sent := vals[p.ID]
		if !ok || !sent || old == nil || sameValue(old, v) {
			continue
		}
		changed = append(changed, p.Name)
	}
	if len(changed) == 0 {
		return nil
	}
	return Invalid("observation", "a change of a value the step holds needs a reason: say why in observation (changed: %s)", strings.Join(changed, ", "))
}

// sameValue reports whether two canonical values are equal (as JSON: a
// value read back holds the same json.Number as the one written).
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// needReason refuses a rejection without a reason: a blank observation
// (semantics §14). Error: CodeInvalid naming observation.
func needReason(observation string) error {
	if strings.TrimSpace(observation) == "" {
		return Invalid("observation", "a rejection needs a reason: say why in observation")
	}
	return nil
}

// EntityRead says which record filled a parameter.
type EntityRead struct {
	ParameterID string `json:"parameterId"`
	EntityID    string `json:"entityId"`
	RecordID    string `json:"recordId"`
}

// readFromEntities fills the targets of each readFromEntity whose origin
// gets a value in this action, from the entity record whose read parameter
// equals it. A value the caller sent wins. Errors: CodeInvalid when no
// record matches.
func (r *run) readFromEntities(st Step, data map[string]any) error {
	for _, p := range st.Parameters {
		rf := p.ReadFromEntity
		if rf == nil || data[rf.OriginParameterID] == nil {
			continue
		}
		e, err := r.tx.GetEntity(r.m.OrgID, rf.EntityID)
		if err != nil {
			return err
		}
		rp, ok := e.Param(rf.ReadParameterID)
		if !ok {
			continue
		}
		origin := firstItem(data[rf.OriginParameterID])
		rec, err := findRecord(r.tx, e, rp, origin)
		if err != nil {
			return err
		}
		if rec == nil && (!canReadRecords(r.p, e) || hiddenInRecords(r.p, e)[rp.ID]) {
			continue // a reader who may not read the records, or the field they are found by, learns nothing of them, not even that none matches
		}
		if rec == nil {
			_, op := paramByID(st.Parameters, rf.OriginParameterID)
			return Invalid("parameters."+op.Name, "no %s record whose %s is %q", e.Name, rp.Name, origin)
		}
		for _, t := range rf.TargetParameterIDs {
			_, tp := paramByID(st.Parameters, t)
			if _, given := data[t]; given || tp.ID == "" {
				continue
			}
			ep, ok := e.ParamByName(tp.Name)
			if !ok || rec.Values[ep.ID] == nil {
				continue
			}
			if v, ok := convertValue(tp, rec.Values[ep.ID]); ok {
				data[t] = v
				r.reads = append(r.reads, EntityRead{ParameterID: t, EntityID: e.ID, RecordID: rec.ID})
			}
		}
	}
	return nil
}

// autoFill fills each parameter with an autoFillEntityRelation whose ENTITY
// link gets a value in this action, from the linked record's field of the
// same name, or the one its advancedOptions.entityParameterId names (a
// value the caller sends wins; with several records linked, the first).
func (r *run) autoFill(st Step, data map[string]any) error {
	for _, p := range st.Parameters {
		if p.AutoFillEntityRelation == "" || data[p.AutoFillEntityRelation] == nil {
			continue
		}
		if _, given := data[p.ID]; given {
			continue
		}
		_, link := paramByID(st.Parameters, p.AutoFillEntityRelation)
		e, err := r.tx.GetEntity(r.m.OrgID, link.EntityID)
		if err != nil {
			return err
		}
		rec, err := r.tx.GetRecord(r.m.OrgID, e.ID, firstItem(data[link.ID]))
		if err != nil {
			return err // the link's value was checked to be a record
		}
		ep, ok := e.ParamByName(p.Name)
		if a := p.AdvancedOptions; a != nil && a.EntityParameterID != "" {
			ep, ok = e.Param(a.EntityParameterID)
		}
		if !ok || rec.Values[ep.ID] == nil {
			continue
		}
		if v, ok := convertValue(p, rec.Values[ep.ID]); ok {
			data[p.ID] = v
			r.reads = append(r.reads, EntityRead{ParameterID: p.ID, EntityID: e.ID, RecordID: rec.ID})
		}
	}
	return nil
}

// readFromOtherMeasurements fills, for each readFromOtherMeasurementData
// whose parameter gets a value in this action, the selected fields from
// the latest measurement of the other process whose search field holds
// that value (a value the caller sends wins). Errors: CodeInvalid when no
// measurement matches.
func (r *run) readFromOtherMeasurements(st Step, data map[string]any) error {
	for _, p := range st.Parameters {
		rf := p.ReadFromOtherMeasurementData
		if rf == nil || data[p.ID] == nil {
			continue
		}
		mid, err := r.tx.LatestWithValue(r.m.OrgID, rf.ProcessID, rf.SearchFieldID, data[p.ID])
		if IsCode(err, CodeNotFound) && !r.sees(rf.ProcessID, rf.SearchFieldID) {
			continue // a writer who could not see the searched field learns nothing of it, not even that no value matches
		}
		if IsCode(err, CodeNotFound) {
			return Invalid("parameters."+p.Name, "no measurement of the linked process has %q", firstItem(data[p.ID]))
		}
		if err != nil {
			return err
		}
		actions, err := r.tx.ListActions(r.m.OrgID, mid)
		if err != nil {
			return err
		}
		other := &run{actions: actions}
		vals := other.current(nil)
		for _, sf := range rf.SelectedFields {
			_, wp := paramByID(st.Parameters, sf.WriteParameterID)
			if _, given := data[sf.WriteParameterID]; given || wp.ID == "" || vals[sf.ReadParameterID] == nil {
				continue
			}
			if v, ok := convertValue(wp, vals[sf.ReadParameterID]); ok {
				data[wp.ID] = v
			}
		}
	}
	return nil
}

func paramByID(params []Parameter, id string) (int, Parameter) {
	for i, p := range params {
		if p.ID == id {
			return i, p
		}
	}
	return -1, Parameter{}
}

// writeEntities writes a consensed step's data as a record of each entity
// its parameters name in advancedOptions.insertOnEntity (or link to with
// entityOperation WRITE): every step parameter whose name the entity has.
// A value the entity refuses refuses the action (nothing is half written).
func (r *run) writeEntities(st Step, cur map[string]any, actionID string) error {
	var targets []string
	for _, p := range st.Parameters {
		a := p.AdvancedOptions
		switch {
		case a != nil && a.InsertOnEntity != "":
			targets = append(targets, a.InsertOnEntity)
		case p.Type == TypeEntity && (slices.Contains(p.EntityOperation, "WRITE") || a != nil && slices.Contains(a.EntityOperation, "WRITE")):
			targets = append(targets, p.EntityID)
		}
	}
	slices.Sort(targets)
	for _, id := range slices.Compact(targets) {
		e, err := r.tx.GetEntity(r.m.OrgID, id)
		if err != nil {
			return err
		}
		values := map[string]json.RawMessage{}
		for _, p := range st.Parameters {
			ep, ok := e.ParamByName(p.Name)
			if v := cur[p.ID]; ok && v != nil && ep.Type != TypeFormula && p.Type != TypeTable {
				values[p.Name], _ = json.Marshal(v)
			}
		}
		r.addMetadata(st, actionID, cur, e, values)
		rec, err := r.s.createRecord(r.tx, e, values, "parameters")
		if err != nil {
			return err
		}
		r.writes = append(r.writes, EntityData{EntityID: e.ID, Data: []any{present(e, rec)}})
	}
	return nil
}

// claimUnique holds the values of the step's unique parameters for this
// measurement; the database refuses a value another measurement holds.
func (r *run) claimUnique(st Step, data map[string]any) error {
	for _, p := range st.Parameters {
		v, ok := data[p.ID]
		if !p.IsUnique || !ok || v == nil {
			continue
		}
		item := firstItem(v)
		err := r.tx.ClaimUniqueValue(r.m.OrgID, r.m.ProcessID, p.ID, indexKey(item), r.m.ID)
		if IsCode(err, CodeConflict) {
			return &Error{Code: CodeConflict, Message: fmt.Sprintf("%s: %q is already used by another measurement of this process", p.Name, item),
				Fields: []FieldError{fieldError("parameters."+p.Name, "must be unique")}, Err: err}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// record applies the engine's result to the measurement, queues the
// action and the actions it supersedes as the run's next ledger entries and
// queues its events. Nothing is written before save but the superseded
// marks.
func (r *run) record(a *Action, clientHash string, res engine.Result) error {
	if err := r.tx.MarkSuperseded(r.m.OrgID, r.m.ID, res.Reset); err != nil {
		return err
	}
	if err := r.tx.SupersedeDocuments(r.m.OrgID, r.m.ID, res.Reset); err != nil {
		return err
	}
	var superseded []string
	for i := range r.actions {
		if slices.Contains(res.Reset, r.actions[i].StepID) && r.actions[i].Type != engine.Rejection {
			if !r.actions[i].Superseded {
				superseded = append(superseded, r.actions[i].ID)
				r.returned = append(r.returned, r.actions[i])
			}
			r.actions[i].Superseded = true
		}
	}
	firstPass := a.Type != engine.Rejection && !slices.ContainsFunc(r.actions, func(x Action) bool { return x.Type == engine.Rejection })
	r.change(Change{Before: r.m.State, After: res.State, Action: *a, FirstPass: firstPass})
	r.m.State = res.State
	r.m.Status = engine.Status(r.def, res.State)
	r.m.UpdatedAt = r.now
	a.Opening = res.State.Steps[a.StepID].Opening
	var creation []byte
	if r.isNew && !r.created && !r.startPending { // the measurement's first action holds its creation: one leaf, not two
		creation, r.created = creationJSON(r.m, r.startedAt, false), true
	}
	r.entries = append(r.entries, sealAction(a, clientHash, creation)) // the leaf hash in hex stands in for a missing transactionHash
	if len(superseded) > 0 {
		r.entries = append(r.entries, MarkEntry(LeafSuperseded, r.m.OrgID, r.m.ID, superseded, a.ID, r.now))
	}
	r.actions = append(r.actions, *a)
	r.unsaved = append(r.unsaved, len(r.actions)-1)
	if a.Type == engine.Rejection && a.ReprovesActionID != "" {
		r.event(EvActionReproved, a.StepID, a.ReprovesActionID)
	}
	r.event(EvActionCreated, a.StepID, a.ID)
	for _, ev := range res.Events {
		switch ev.Type {
		case engine.EvStepConsensed:
			r.event(EvStepConsensed, ev.StepID, a.ID)
		case engine.EvMeasurementApproved:
			r.event(EvMeasurementApproved, "", a.ID)
		case engine.EvMeasurementReproved:
			r.event(EvMeasurementReproved, ev.StepID, a.ID)
		}
	}
	return nil
}

// save writes what the run changed, in its transaction: the events (the
// outbox) with their deliveries, the measurement and its open steps, its
// new actions and its ledger entries. The rows that every writer of a
// process waits for (the measurement sequence, the status counters) are
// written last, so that they are held for as short a time as possible
// before the commit. The ledger entries lock nothing another write waits
// for: the log integrates them after the commit.
func (r *run) save() error {
	r.m.ActionCount = len(r.actions)
	if len(r.events) > 0 {
		hooks, err := r.tx.ListWebhooks(r.m.OrgID)
		if err != nil {
			return err
		}
		if err := fanOut(r.tx, r.events, r.proc.stepURLs, hooks); err != nil {
			return err
		}
		r.events = nil
	}
	created := r.isNew
	open := r.openSteps()
	// Before the measurement's rows: its reads (users, policies) must not
	// come between the contended writes and the commit.
	if err := r.s.mailWaiting(r.tx, r.m, r.proc, r.openBefore, open); err != nil {
		return err
	}
	r.openBefore = open
	if err := r.s.mailReturned(r.tx, r.m, r.proc, r.user.ID, r.returned); err != nil {
		return err
	}
	r.returned = nil
	if r.isNew {
		start, _ := engine.Start(r.def, r.startedAt.Time, r.startPending)
		r.change(Change{Start: true, After: start})
		if err := r.tx.CreateMeasurement(&r.m, r.proc.Code, open); err != nil {
			return err
		}
		if !r.created {
			r.entries = append([]LedgerEntry{MeasurementEntry(r.m, r.startedAt, r.startPending)}, r.entries...)
		}
		r.isNew, r.savedStatus = false, r.m.Status
	}
	// Before the status counters: a try that gives up to render its
	// documents has not locked them.
	if err := r.renderDocuments(created); err != nil {
		return err
	}
	if !created {
		if err := r.tx.SetOpenSteps(r.m.OrgID, r.m.ID, open); err != nil {
			return err
		}
		if len(r.unsaved) > 0 { // its status counters are contended: late
			if err := r.tx.UpdateMeasurement(r.m, r.savedStatus); err != nil {
				return err
			}
			r.savedStatus = r.m.Status
		}
	}
	for _, ms := range r.filled {
		if err := r.tx.PutMeasurementSheet(ms); err != nil {
			return err
		}
	}
	r.filled = nil
	actions := make([]Action, len(r.unsaved))
	var refs []AttachmentRef
	for k, i := range r.unsaved {
		a := r.actions[i]
		actions[k] = a
		if _, st := stepByID(r.proc.Steps, a.StepID); st != nil && len(a.Data) > 0 {
			refs = append(refs, attachmentRefs(st.Parameters, a.Data, AttachmentRef{OrgID: r.m.OrgID, MeasurementID: r.m.ID})...)
		}
	}
	entries := r.entries // the documents' too, rendered above
	r.unsaved, r.entries = nil, nil
	if len(refs) > 0 {
		if err := r.tx.AddAttachmentRefs(refs); err != nil {
			return err
		}
	}
	if len(actions) > 0 {
		if err := r.tx.InsertActions(actions); err != nil {
			return err
		}
	}
	if len(entries) > 0 {
		if err := r.tx.AppendLedger(entries); err != nil {
			return err
		}
	}
	// Last: other writers of the process may wait for these rows.
	if len(r.changes) > 0 {
		changes := r.changes
		r.changes = nil
		return r.tx.RecordChanges(changes)
	}
	return nil
}

// action returns the run's copy of an action (with its ledger hashes once recorded).
func (r *run) action(id string) Action {
	for _, a := range r.actions {
		if a.ID == id {
			return a
		}
	}
	return Action{ID: id}
}

func displayName(u User) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

// routeValue is the value that routes st: its own parameter's current
// value, or the named parameter of the record the step links to.
func (r *run) routeValue(st Step, cur map[string]any) (string, error) {
	rt := st.Routing
	if rt == nil {
		return "", nil
	}
	if rt.EntityID == "" {
		for _, p := range st.Parameters {
			if p.Name == rt.EntityParamName {
				return firstItem(cur[p.ID]), nil
			}
		}
		return "", nil
	}
	for _, p := range st.Parameters {
		if p.Type != TypeEntity || p.EntityID != rt.EntityID || cur[p.ID] == nil {
			continue
		}
		e, err := r.tx.GetEntity(r.p.OrgID, rt.EntityID)
		if err != nil {
			return "", err
		}
		rec, err := r.tx.GetRecord(r.p.OrgID, e.ID, firstItem(cur[p.ID]))
		if IsCode(err, CodeNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if ep, ok := e.ParamByName(rt.EntityParamName); ok {
			return firstItem(rec.Values[ep.ID]), nil
		}
	}
	return "", nil
}

func firstItem(v any) string {
	if items := itemStrings(v); len(items) > 0 {
		return items[0]
	}
	return ""
}

// CreateMeasurement starts a measurement of a process (its latest version)
// without data. Errors: CodeNotFound, CodeForbidden.
func (s *Service) CreateMeasurement(ctx context.Context, p *Principal, processID string) (MeasurementView, error) {
	if err := p.Require(FnMeasurementCreate); err != nil {
		return MeasurementView{}, err
	}
	var r *run
	err := s.store.Write(ctx, func(tx Tx) error {
		proc, err := tx.GetProcess(p.OrgID, processID, 0)
		if err != nil {
			return err
		}
		if r, err = s.newMeasurement(tx, p, proc, NewID(), s.Now()); err != nil {
			return err
		}
		return r.save()
	})
	if err != nil {
		return MeasurementView{}, err
	}
	var out MeasurementView
	return out, s.present(ctx, r, func() { out = r.view() })
}

// present builds a response from a committed run outside the write
// transaction, so that the single writer (on SQLite) never spends time on
// views. It reads only what the view embeds (records, policies), each in
// one statement: a View, which on PostgreSQL costs no BEGIN and ROLLBACK.
func (s *Service) present(ctx context.Context, r *run, build func()) error {
	return s.store.View(ctx, func(tx Tx) error {
		r.tx = tx
		r.policies = nil
		build()
		return nil
	})
}

// SimplifiedInput is the body of POST /v1/measurements/simplified.
type SimplifiedInput struct {
	ProcessUUID  string
	ProcessLabel string
	StepID       string
	StepUUID     string
	StepLabel    string
	Parameters   map[string]json.RawMessage
	Signature    SignatureInput // at a step with a signatureMeaning
}

// CreateSimplified creates a measurement and records the caller's WRITE_DATA
// on one of its steps (the first by default), atomically. Errors:
// CodeInvalid (missing or mismatched process, unknown step or parameter,
// bad value), CodeNotFound, CodeForbidden, CodeConflict.
func (s *Service) CreateSimplified(ctx context.Context, p *Principal, in SimplifiedInput) (SimplifiedView, error) {
	if err := p.Require(FnMeasurementCreate); err != nil {
		return SimplifiedView{}, err
	}
	var out SimplifiedView
	var r *run
	var a Action
	var consensed bool
	if in.ProcessUUID == "" && in.ProcessLabel == "" {
		return out, Invalid("processUuid", "processUuid or processLabel is required")
	}
	if in.StepID != "" && in.StepUUID != "" && in.StepID != in.StepUUID {
		return out, Invalid("stepUuid", "stepId and stepUuid name different steps")
	}
	if err := p.Require(FnActionWrite); err != nil {
		return out, err
	}
	id := NewID() // the same in every try: API calls are told it
	err := s.writeSigned(ctx, in.Signature, func(tx Tx, at *attempt) error {
		proc, err := findProcess(tx, p.OrgID, in.ProcessUUID, in.ProcessLabel)
		if err != nil {
			return err
		}
		stepID := in.StepID
		if stepID == "" {
			stepID = in.StepUUID
		}
		var st *Step
		switch {
		case stepID != "":
			_, st = stepByID(proc.Steps, stepID)
		case in.StepLabel != "":
			st = &proc.Steps[max(0, slices.IndexFunc(proc.Steps, func(x Step) bool { return x.Label == in.StepLabel }))]
			if st.Label != in.StepLabel {
				st = nil
			}
		default:
			st = &proc.Steps[0]
		}
		if st == nil {
			return Invalid("stepId", "no such step in process %q", proc.Label)
		}
		now := at.now // its documents' time, once rendered
		if now.IsZero() {
			now = s.Now()
		}
		if r, err = s.newMeasurement(tx, p, proc, id, now); err != nil {
			return err
		}
		r.resume(at)
		var res engine.Result
		if a, res, err = r.act(ActInput{StepID: st.ID, Type: engine.WriteData, Parameters: in.Parameters, Signature: in.Signature}); err != nil {
			return err
		}
		consensed = res.Consensed
		return r.save()
	})
	if err != nil {
		return out, err
	}
	return out, s.present(ctx, r, func() { out = r.simplifiedView(r.action(a.ID), consensed) })
}

// findProcess resolves a process by id and/or exact label; both must agree.
func findProcess(tx Tx, orgID, id, label string) (Process, error) {
	if id == "" {
		p, err := tx.FindProcessByLabel(orgID, label)
		if IsCode(err, CodeNotFound) {
			return p, Invalid("processLabel", "no process labelled %q", label)
		}
		return p, err
	}
	p, err := tx.GetProcess(orgID, id, 0)
	if IsCode(err, CodeNotFound) {
		return p, Invalid("processUuid", "no process %q", id)
	}
	if err == nil && label != "" && p.Label != label {
		return p, Invalid("processLabel", "processUuid and processLabel name different processes")
	}
	return p, err
}

// Act records an action on a measurement, signed at a step with a
// signatureMeaning (verifySignature). Errors: CodeNotFound, CodeInvalid
// (unknown step, bad value, no route, a changed value without a reason in
// observation, a missing or wrong signature.password), CodeRateLimited
// (failed signatures throttled), CodeForbidden (no seat),
// CodeConflict (step not open, seat taken, approved measurement, required
// values missing at consensus).
func (s *Service) Act(ctx context.Context, p *Principal, measurementID string, in ActInput) (ActionView, error) {
	var out ActionView
	var r *run
	var a Action
	err := s.writeSigned(ctx, in.Signature, func(tx Tx, at *attempt) (err error) {
		if r, err = s.loadRun(tx, p, measurementID); err != nil {
			return err
		}
		r.resume(at)
		if a, _, err = r.act(in); err != nil {
			return err
		}
		return r.save()
	})
	if err != nil {
		return out, err
	}
	return out, s.present(ctx, r, func() { out = r.actionView(r.action(a.ID), nil) })
}

// Reprove rejects an earlier action: it is marked reproved, its step and
// that step's reproval dependencies (and the steps after them) re-open, and
// a REJECTION is recorded, signed with sig when the step has a
// signatureMeaning. Errors: CodeNotFound; CodeConflict for a rejection, an
// action already reproved or superseded, or an approved measurement;
// CodeForbidden without a policy of a step at or after it; CodeInvalid
// naming observation, or signature.password (missing or wrong), and
// CodeRateLimited, as verifySignature.
func (s *Service) Reprove(ctx context.Context, p *Principal, actionID, observation, txHash string, sig SignatureInput) (ActionView, error) {
	var out ActionView
	if err := p.Require(FnActionReprove); err != nil {
		return out, err
	}
	if err := needReason(observation); err != nil {
		return out, err
	}
	var r *run
	var a, target Action
	err := s.writeSigned(ctx, sig, func(tx Tx, at *attempt) (err error) {
		target, err = tx.GetAction(p.OrgID, actionID)
		if err != nil {
			return err
		}
		if r, err = s.loadRun(tx, p, target.MeasurementID); err != nil {
			return err
		}
		r.resume(at)
		switch {
		case r.m.Status == engine.StatusApproved:
			return Errorf(CodeConflict, "the measurement is approved; its actions cannot be reproved")
		case target.Type == engine.Rejection:
			return Errorf(CodeConflict, "a rejection cannot be reproved")
		case target.Reproved:
			return Errorf(CodeConflict, "the action was reproved already")
		case target.Superseded:
			return Errorf(CodeConflict, "the action was superseded by a rejection")
		}
		if !r.mayReprove(target.StepID) && !r.refreshed(r.mayReprove, target.StepID) {
			return Errorf(CodeForbidden, "only a holder of a policy of this step or a later one can reprove the action")
		}
		res, err := engine.Reprove(r.def, r.m.State, target.StepID, r.now.Time)
		if err != nil {
			return engineError(err, r.proc.Steps)
		}
		_, st := stepByID(r.proc.Steps, target.StepID)
		var signed *ActionSignature
		if st != nil {
			if signed, err = r.sign(*st); err != nil {
				return err
			}
		}
		if err := tx.MarkReproved(p.OrgID, target.ID); err != nil {
			return err
		}
		for i := range r.actions {
			if r.actions[i].ID == target.ID {
				r.actions[i].Reproved = true
			}
		}
		a = Action{ID: NewID(), OrgID: p.OrgID, MeasurementID: r.m.ID, StepID: target.StepID, Type: engine.Rejection,
			UserID: r.user.ID, Username: displayName(r.user), UserRoles: r.user.Roles, Observation: observation,
			Data: map[string]any{}, ReprovesActionID: target.ID, Signature: signed, CreatedAt: r.now}
		if err := r.record(&a, txHash, res); err != nil {
			return err
		}
		r.entries = append(r.entries, MarkEntry(LeafReproved, p.OrgID, r.m.ID, []string{target.ID}, a.ID, r.now))
		return r.save()
	})
	if err != nil {
		return out, err
	}
	target.Reproved = true
	return out, s.present(ctx, r, func() { out = r.actionView(r.action(a.ID), &target) })
}

// MetadataFields are what advancedOptions.insertOnEntityMetadata may list:
// facts of the consensus written with a record, into the entity's
// parameters of the same names.
var MetadataFields = []string{"measurementId", "processId", "stepId", "actionId", "userId", "username", "consensedAt"}

// addMetadata adds to values (by name) of a record that step st writes to
// entity e, at the consensus its action actionID reaches,
// what its parameters ask for: the facts that the parameter naming
// the entity lists in insertOnEntityMetadata, and with hasMetadata on a
// SELECT or MULTI_SELECT parameter, the meta of its chosen options (by key).
// Only fields the entity has are written; step values win.
func (r *run) addMetadata(st Step, actionID string, cur map[string]any, e Entity, values map[string]json.RawMessage) {
	set := func(name string, v any) {
		if _, ok := e.ParamByName(name); !ok {
			return
		}
		if _, taken := values[name]; !taken {
			values[name], _ = json.Marshal(v)
		}
	}
	for _, p := range st.Parameters {
		a := p.AdvancedOptions
		if a == nil {
			continue
		}
		names := a.InsertOnEntity == e.ID || p.Type == TypeEntity && p.EntityID == e.ID
		for _, f := range a.InsertOnEntityMetadata {
			if !names {
				break
			}
			facts := map[string]any{"measurementId": r.m.ID, "measurementName": r.m.Name, "processId": r.m.ProcessID,
				"stepId": st.ID, "actionId": actionID, "userId": r.user.ID, "username": displayName(r.user), "consensedAt": r.now}
			set(f, facts[f])
		}
		if a.HasMetadata && (p.Type == TypeSelect || p.Type == TypeMultiSelect) {
			for _, v := range itemStrings(cur[p.ID]) {
				for _, o := range p.OptionItems {
					if o.Value != v {
						continue
					}
					for k, mv := range o.Meta {
						set(k, mv)
					}
				}
			}
		}
	}
}
