package wps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/teambition/rrule-go"

	"wps/internal/calendar"
	"wps/internal/formula"
	"wps/internal/outbound"
)

// StepRole narrows, at one step, which roles count as holding policy P.
type StepRole struct {
	P string   `json:"p"`
	R []string `json:"r"`
}

// RoutingRule sends the flow to StepID when the routing parameter equals
// Value; Value "*" is the default.
type RoutingRule struct {
	Value  string `json:"value"`
	StepID string `json:"stepId"`
}

// Routing picks the next step by the value of a parameter, of this step or
// of the linked entity record.
type Routing struct {
	EntityParamName string        `json:"entityParamName"`
	EntityID        string        `json:"entityId,omitempty"`
	Rules           []RoutingRule `json:"rules"`
}

// Step is one stage of a process: who must agree (policies, seats), what
// they enter (parameters), where the flow goes next, and when.
type Step struct {
	ID                          string       `json:"id"`
	Label                       string       `json:"label"`
	Description                 string       `json:"description"`
	Prompt                      string       `json:"prompt"`
	ProcessID                   string       `json:"processId"`
	TokenIDs                    []string     `json:"tokenIds" doc:"One seat id per policy, assigned by the service"`
	PolicyNames                 []string     `json:"policyNames"`
	Roles                       []StepRole   `json:"roles"`
	OrderedPolicies             []string     `json:"orderedPolicies"`
	ViewPolicyNames             []string     `json:"viewPolicyNames"`
	Routing                     *Routing     `json:"routing,omitempty"`
	WebhookURLs                 string       `json:"webhookUrls" doc:"Comma-separated http(s) URLs"`
	LegalContractID             string       `json:"legalContractId"`
	Frequency                   string       `json:"frequency" doc:"First step only: DAILY, WEEKLY, MONTHLY, YEARLY or an RFC 5545 RRULE"`
	Deadline                    string       `json:"deadline" doc:"A count of deadlineType units, or an RFC 3339 instant for DATE"`
	DeadlineType                string       `json:"deadlineType" doc:"HOURS, DAYS, BUSINESS_HOURS, BUSINESS_DAYS (working time over the org's calendar) or DATE"`
	FrequencyDate               string       `json:"frequencyDate" doc:"RFC 3339 start of the recurrence"`
	StepIDsDependencies         []string     `json:"stepIdsDependencies" doc:"Steps that must be consensed or skipped first (ids or labels); empty: the previous step"`
	StepIDsReprovalDependencies []string     `json:"stepIdsReprovalDependencies" doc:"Steps re-opened with this one on a rejection (ids or labels)"`
	Parameters                  []Parameter  `json:"parameters,omitempty"`
	Escalations                 []Escalation `json:"escalations,omitempty" doc:"What happens while a seat of the step is still open after its dueAt (needs a deadline): step.escalated, in order, once per escalation per opening"`
	SignatureMeaning            string       `json:"signatureMeaning,omitempty" maxLength:"100" doc:"When set (e.g. Approved, Reviewed, Performed by), every action at the step and every reprove of one is an electronic signature with this meaning: the request carries signature {password} or {sso: true}"`
	CreatedAt                   Time         `json:"createdAt"`
	UpdatedAt                   Time         `json:"updatedAt"`
	DeletedAt                   *Time        `json:"deletedAt" nullable:"true"`
}

// Escalation is one rung of a step's escalations: after After (an ISO
// 8601 duration, calendar.ParseDuration) past the step's dueAt with a seat
// still open, step.escalated is emitted for PolicyName's holders.
type Escalation struct {
	After      string `json:"after" doc:"ISO 8601 duration past dueAt (PnDTnHnMnS: PT0S, PT4H, P1D, P1DT2H30M); years, months and weeks are refused"`
	PolicyName string `json:"policyName" doc:"The policy whose holders the escalation is for"`
}

// MaxEscalations bounds a step's escalations.
const MaxEscalations = 10

// Process is a flow of steps. Its steps are versioned: once a measurement
// uses a version, edits make a new one.
type Process struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Label     string `json:"label"`
	IconName  string `json:"iconName"`
	OrgID     string `json:"orgId"`
	Code      string `json:"code"`
	Version   int    `json:"version"`
	Steps     []Step `json:"steps"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
	DeletedAt *Time  `json:"deletedAt" nullable:"true"`
	// Locked is true once a measurement uses this version.
	Locked bool `json:"-"`
}

// ProcessVersion is one stored version of a process's steps.
type ProcessVersion struct {
	ProcessID string `json:"processId"`
	Version   int    `json:"version"`
	Locked    bool   `json:"inUse" doc:"A measurement uses this version, so it never changes"`
	StepCount int    `json:"stepCount"`
	CreatedAt Time   `json:"createdAt"`
	ChangedBy string `json:"changedBy" doc:"The id of the user who last changed its steps ('' for versions made before this was recorded)"`
	ChangedAt Time   `json:"changedAt" doc:"When its steps last changed"`
	// ChangedByName is that user's name, as ListProcessVersions reads it.
	ChangedByName string `json:"changedByName" doc:"That user's name"`
	Steps         []Step `json:"-"`
	OrgID         string `json:"-"`
}

// ProcessInput is the body of a process create or import.
type ProcessInput struct {
	Name     string
	Label    string
	IconName string
	Code     string
	Steps    []Step
}

// Deadline types.
const (
	DeadlineHours = "HOURS"
	DeadlineDays  = "DAYS"
	DeadlineDate  = "DATE"
)

// Limits of a definition.
const MaxStepsPerProcess = 100

var codeRe = regexp.MustCompile(`^[A-Z0-9][A-Z0-9_-]{0,15}$`)

// checkProcessMeta validates the process's own fields; iconBefore is the
// icon the process had (empty for a new one).
func checkProcessMeta(v *Validator, in *ProcessInput, iconBefore string) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Label == "" {
		in.Label = in.Name
	}
	v.Check(validName(in.Name, 200), "name", "must be 1 to 200 printable characters")
	v.Check(validName(in.Label, 200), "label", "must be 1 to 200 printable characters")
	checkIcon(v, in.IconName, iconBefore)
	v.Check(in.Code == "" || codeRe.MatchString(in.Code), "code", "must match ^[A-Z0-9][A-Z0-9_-]{0,15}$")
}

// defaultCode derives a code from a name: its first letters and digits, upper-cased.
func defaultCode(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) && b.Len() < 6 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "P"
	}
	return b.String()
}

// stepCheck validates and normalizes a list of steps in one transaction.
type stepCheck struct {
	tx    Tx
	orgID string
	v     *Validator
	steps []Step
	old   map[string]Step // the current steps, by id (edits)
	// past reads the steps of the process's versions, newest first, for
	// the ids of parameters removed (nil for a new process).
	past     func() ([]Step, error)
	policies map[string]bool
	now      Time
	calls    APICaller
	// allowPrivate lets webhookUrls name loopback and private addresses.
	allowPrivate bool
}

// checkSteps validates steps, resolves every reference to an id, keeps the
// ids (steps, parameters, seats) that old already had, and assigns the rest
// (a parameter takes back the id of one of the same name that the process
// had, now or in a past version: paramIDs).
func (s *Service) checkSteps(tx Tx, orgID, processID string, steps []Step, old []Step, past func() ([]Step, error)) ([]Step, error) {
	var v Validator
	c := &stepCheck{tx: tx, orgID: orgID, v: &v, steps: cloneSteps(steps), old: map[string]Step{}, past: past, now: s.Now(), calls: s.calls,
		allowPrivate: s.allowPrivate}
	for _, st := range old {
		c.old[st.ID] = st
	}
	if len(c.steps) == 0 || len(c.steps) > MaxStepsPerProcess {
		v.Add("steps", "must have 1 to %d steps", MaxStepsPerProcess)
		return nil, v.Err()
	}
	pols, err := tx.ListPolicies(orgID)
	if err != nil {
		return nil, err
	}
	c.policies = map[string]bool{}
	for _, p := range pols {
		c.policies[p.Name] = true
	}
	refs := c.assignIDs(processID)
	for i := range c.steps {
		c.checkStep(i, refs)
	}
	if err := c.checkParams(); err != nil {
		return nil, err
	}
	if err := c.checkContracts(); err != nil {
		return nil, err
	}
	if v.Err() == nil {
		c.checkFlow()
		c.checkFormulas()
	}
	if v.Err() == nil {
		if err := s.checkSheetLinks(tx, orgID, &v, paramGroups(c.steps), func(i, j int) string {
			return fmt.Sprintf("steps[%d].parameters[%d]", i, j)
		}); err != nil {
			return nil, err
		}
	}
	if err := c.checkRouting(); err != nil {
		return nil, err
	}
	if v.Err() == nil {
		for i := range c.steps {
			sortParams(c.steps[i].Parameters)
		}
	}
	return c.steps, v.Err()
}

func cloneSteps(steps []Step) []Step {
	b, _ := json.Marshal(steps)
	var out []Step
	_ = json.Unmarshal(b, &out)
	return out
}

// assignIDs gives every step its id and returns how each step may be
// referred to in this body: by its label, its new id, or the id it was sent with.
func (c *stepCheck) assignIDs(processID string) map[string]string {
	refs := map[string]string{}
	labels := map[string]bool{}
	for i := range c.steps {
		st := &c.steps[i]
		f := fieldIndex("steps", i)
		st.Label = strings.TrimSpace(st.Label)
		if !validName(st.Label, 200) {
			c.v.Add(f+".label", "must be 1 to 200 printable characters")
		} else if labels[st.Label] {
			c.v.Add(f+".label", "%q is the label of another step", st.Label)
		}
		labels[st.Label] = true
		sent := st.ID
		if prev, ok := c.old[sent]; ok {
			st.CreatedAt = prev.CreatedAt
		} else {
			st.ID = NewID()
			st.CreatedAt = c.now
		}
		st.UpdatedAt = c.now
		st.DeletedAt = nil
		st.ProcessID = processID
		if sent != "" {
			refs[sent] = st.ID
		}
		refs[st.ID] = st.ID
	}
	for _, st := range c.steps {
		if _, taken := refs[st.Label]; !taken {
			refs[st.Label] = st.ID
		}
	}
	return refs
}

func (c *stepCheck) checkStep(i int, refs map[string]string) {
	st := &c.steps[i]
	f := fieldIndex("steps", i)
	v := c.v
	v.Check(len(st.Description) <= 10000, f+".description", "must be at most 10000 characters")
	v.Check(len(st.Prompt) <= 10000, f+".prompt", "must be at most 10000 characters")
	checkMeaning(v, f+".signatureMeaning", &st.SignatureMeaning)

	// Policies and seats.
	seen := map[string]bool{}
	for j, name := range st.PolicyNames {
		ff := fieldIndex(f+".policyNames", j)
		if !c.policies[name] {
			v.Add(ff, "no policy named %q", name)
		} else if seen[name] {
			v.Add(ff, "%q is listed twice", name)
		}
		seen[name] = true
	}
	for j, name := range st.OrderedPolicies {
		ff := fieldIndex(f+".orderedPolicies", j)
		switch {
		case !c.policies[name]:
			v.Add(ff, "no policy named %q", name)
		case !slices.Contains(st.PolicyNames, name):
			v.Add(ff, "%q is not in policyNames", name)
		case slices.Index(st.OrderedPolicies, name) != j:
			v.Add(ff, "%q is listed twice", name)
		}
	}
	for j, name := range st.ViewPolicyNames {
		v.Check(c.policies[name], fieldIndex(f+".viewPolicyNames", j), "no policy named %q", name)
	}
	eachHiddenFrom(f+".parameters", st.Parameters, func(field string, names []string) {
		for j, name := range names {
			v.Check(c.policies[name], fieldIndex(field, j), "no policy named %q", name)
		}
	})
	for j, r := range st.Roles {
		ff := fieldIndex(f+".roles", j)
		switch {
		case !c.policies[r.P]:
			v.Add(ff+".p", "no policy named %q", r.P)
		case !slices.Contains(st.PolicyNames, r.P):
			v.Add(ff+".p", "%q is not in policyNames", r.P)
		}
		validRoles(v, ff+".r", r.R)
	}
	st.TokenIDs = c.tokens(*st)

	// References to other steps.
	resolve := func(field string, list []string) []string {
		out := make([]string, 0, len(list))
		for j, ref := range list {
			id, ok := refs[ref]
			if !ok {
				v.Add(fieldIndex(field, j), "no step with id or label %q", ref)
				continue
			}
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	st.StepIDsDependencies = resolve(f+".stepIdsDependencies", st.StepIDsDependencies)
	st.StepIDsReprovalDependencies = resolve(f+".stepIdsReprovalDependencies", st.StepIDsReprovalDependencies)
	if st.Routing != nil {
		for j := range st.Routing.Rules {
			r := &st.Routing.Rules[j]
			ff := fieldIndex(f+".routing.rules", j)
			id, ok := refs[r.StepID]
			if !ok {
				v.Add(ff+".stepId", "no step with id or label %q", r.StepID)
				continue
			}
			r.StepID = id
		}
	}

	// Deadline.
	switch st.DeadlineType {
	case "":
		v.Check(st.Deadline == "", f+".deadlineType", "is required with a deadline: HOURS, DAYS, BUSINESS_HOURS, BUSINESS_DAYS or DATE")
	case DeadlineHours, DeadlineDays, DeadlineBusinessHours, DeadlineBusinessDays:
		n, err := strconv.Atoi(st.Deadline)
		v.Check(err == nil && n > 0 && n <= 100000, f+".deadline", "must be a whole number of %s from 1 to 100000",
			strings.ToLower(strings.ReplaceAll(st.DeadlineType, "_", " ")))
	case DeadlineDate:
		_, err := time.Parse(time.RFC3339, st.Deadline)
		v.Check(err == nil, f+".deadline", "must be an RFC 3339 instant for DATE")
	default:
		v.Add(f+".deadlineType", "must be HOURS, DAYS, BUSINESS_HOURS, BUSINESS_DAYS or DATE")
	}

	c.checkEscalations(f, st)

	// Frequency: first step only.
	if st.Frequency != "" {
		if i != 0 {
			v.Add(f+".frequency", "only the first step can recur")
		} else if _, err := ParseFrequency(st.Frequency, time.Unix(0, 0)); err != nil {
			v.Add(f+".frequency", "must be DAILY, WEEKLY, MONTHLY, YEARLY or an RRULE: %v", err)
		}
	}
	if st.FrequencyDate != "" {
		_, err := time.Parse(time.RFC3339, st.FrequencyDate)
		v.Check(err == nil, f+".frequencyDate", "must be an RFC 3339 instant")
		v.Check(st.Frequency != "", f+".frequencyDate", "needs a frequency")
	}

	// Webhooks.
	if st.WebhookURLs != "" {
		urls := SplitList(st.WebhookURLs)
		v.Check(len(urls) <= 10, f+".webhookUrls", "at most 10 URLs")
		for _, u := range urls {
			if !validHTTPURL(u) {
				v.Add(f+".webhookUrls", "%q is not an absolute http or https URL", u)
			} else if !c.allowPrivate && outbound.PrivateHost(u) {
				v.Add(f+".webhookUrls", "%q must not point to a loopback, private or link-local address", u)
			}
		}
		st.WebhookURLs = strings.Join(urls, ",")
	}
	for _, list := range []*[]string{&st.PolicyNames, &st.OrderedPolicies, &st.ViewPolicyNames, &st.StepIDsDependencies, &st.StepIDsReprovalDependencies} {
		if *list == nil {
			*list = []string{}
		}
	}
	if st.Roles == nil {
		st.Roles = []StepRole{}
	}
}

// checkEscalations checks a step's escalations: each after a valid
// duration, not earlier than the one before (they fire in order), each
// policy known, and a deadline to count from.
func (c *stepCheck) checkEscalations(f string, st *Step) {
	v := c.v
	if len(st.Escalations) == 0 {
		st.Escalations = nil
		return
	}
	v.Check(st.DeadlineType != "", f+".escalations", "need a deadline: escalations count from the step's dueAt, so set deadline and deadlineType")
	v.Check(len(st.Escalations) <= MaxEscalations, f+".escalations", "at most %d escalations", MaxEscalations)
	var prev time.Duration
	for j, e := range st.Escalations {
		ff := fieldIndex(f+".escalations", j)
		d, err := calendar.ParseDuration(e.After)
		if err != nil {
			v.Add(ff+".after", "%v", err)
		} else {
			v.Check(d >= prev, ff+".after", "must not be shorter than escalations[%d].after: escalations fire in order", j-1)
			prev = d
		}
		v.Check(c.policies[e.PolicyName], ff+".policyName", "no policy named %q", e.PolicyName)
	}
}

// tokens keeps each policy's seat id from the step's previous definition.
func (c *stepCheck) tokens(st Step) []string {
	prev := c.old[st.ID]
	out := make([]string, len(st.PolicyNames))
	for i, name := range st.PolicyNames {
		if j := slices.Index(prev.PolicyNames, name); j >= 0 && j < len(prev.TokenIDs) {
			out[i] = prev.TokenIDs[j]
		} else {
			out[i] = NewID()
		}
	}
	return out
}

// SplitList splits a comma-separated list (URLs, host names), trimming
// each item and dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// ParseFrequency reads a step's frequency as a recurrence rule from start.
// A rule repeats at most hourly: the scheduler makes a measurement per
// occurrence, and walks a rule from its start to find the ones due.
func ParseFrequency(freq string, start time.Time) (*rrule.RRule, error) {
	opt := rrule.ROption{Dtstart: start}
	switch freq {
	case "DAILY":
		opt.Freq = rrule.DAILY
	case "WEEKLY":
		opt.Freq = rrule.WEEKLY
	case "MONTHLY":
		opt.Freq = rrule.MONTHLY
	case "YEARLY":
		opt.Freq = rrule.YEARLY
	default:
		o, err := rrule.StrToROption(strings.TrimPrefix(freq, "RRULE:"))
		if err != nil {
			return nil, err
		}
		if o.Freq == rrule.MINUTELY || o.Freq == rrule.SECONDLY {
			return nil, errors.New("it must repeat at most hourly")
		}
		o.Dtstart = start
		return rrule.NewRRule(*o)
	}
	return rrule.NewRRule(opt)
}

// effectiveDeps is what a step waits for: its listed dependencies, or the previous step.
func EffectiveDeps(steps []Step, i int) []string {
	if len(steps[i].StepIDsDependencies) > 0 || i == 0 {
		return steps[i].StepIDsDependencies
	}
	return []string{steps[i-1].ID}
}

// checkFlow rejects dependency cycles.
func (c *stepCheck) checkFlow() {
	deps := map[string][]string{}
	index := map[string]int{}
	for i, st := range c.steps {
		deps[st.ID] = EffectiveDeps(c.steps, i)
		index[st.ID] = i
	}
	if cyc := formula.Cycle(deps); cyc != nil {
		labels := make([]string, len(cyc))
		for i, id := range cyc {
			labels[i] = c.steps[index[id]].Label
		}
		c.v.Add(fieldIndex("steps", index[cyc[0]])+".stepIdsDependencies", "dependency cycle: %s", strings.Join(labels, " → "))
	}
}

// checkRouting checks each routing's parameter and that rules lead forward.
func (c *stepCheck) checkRouting() error {
	pos := map[string]int{}
	for i, st := range c.steps {
		pos[st.ID] = i
	}
	for i := range c.steps {
		st := &c.steps[i]
		r := st.Routing
		if r == nil {
			continue
		}
		f := fieldIndex("steps", i) + ".routing"
		if len(r.Rules) == 0 {
			c.v.Add(f+".rules", "must have at least one rule")
		}
		values := map[string]bool{}
		for j, rule := range r.Rules {
			ff := fieldIndex(f+".rules", j)
			if rule.Value == "" {
				c.v.Add(ff+".value", "must not be empty (use * for the default)")
			} else if values[rule.Value] {
				c.v.Add(ff+".value", "%q has two rules", rule.Value)
			}
			values[rule.Value] = true
			if p, ok := pos[rule.StepID]; ok && p <= i {
				c.v.Add(ff+".stepId", "must be a later step than %q", st.Label)
			}
		}
		if r.EntityID == "" {
			if !slices.ContainsFunc(st.Parameters, func(p Parameter) bool { return p.Name == r.EntityParamName }) {
				c.v.Add(f+".entityParamName", "no parameter %q in this step", r.EntityParamName)
			}
			continue
		}
		e, err := findEntity(c.tx, c.orgID, r.EntityID)
		if IsCode(err, CodeNotFound) {
			c.v.Add(f+".entityId", "no entity named or with id %q", r.EntityID)
			continue
		}
		if err != nil {
			return err
		}
		r.EntityID = e.ID
		if _, ok := e.ParamByName(r.EntityParamName); !ok {
			c.v.Add(f+".entityParamName", "no parameter %q in entity %q", r.EntityParamName, e.Name)
		}
	}
	return nil
}

// stepPlace is where a step's parameters are by the step's label, for a
// parameter of a step removed and added back (paramIDs).
func stepPlace(label string) string { return "step\x00" + label }

// checkParams normalizes each step's parameters and resolves their links.
func (c *stepCheck) checkParams() error {
	keep := map[string]Parameter{} // the current parameters, by id
	for _, st := range c.old {
		paramsByID(st.Parameters, keep)
	}
	ids := newParamIDs(keep)
	for _, st := range c.old {
		ids.names(st.Parameters, st.ID, stepPlace(st.Label))
	}
	missing := false
	for i := range c.steps {
		ids.keep(c.steps[i].Parameters)
	}
	for i := range c.steps {
		missing = missing || ids.missing(c.steps[i].Parameters)
	}
	if missing && c.past != nil {
		past, err := c.past()
		if err != nil {
			return err
		}
		for _, st := range past {
			pastNames(ids, st.Parameters, keep, st.ID, stepPlace(st.Label))
		}
	}
	for i := range c.steps {
		st := &c.steps[i]
		f := fieldIndex("steps", i) + ".parameters"
		normalizeParams(c.v, f, st.Parameters, ids, []string{st.ID, stepPlace(st.Label)}, 0)
		checkSheetOwner(c.v, f, st.Parameters, "")
		for j := range st.Parameters {
			st.Parameters[j].StepID = st.ID
		}
		if err := resolveEntityRefs(c.tx, c.orgID, "", "", c.v, f, st.Parameters); err != nil {
			return err
		}
		for j := range st.Parameters {
			if err := c.resolveLinks(st, j, fieldIndex(f, j)); err != nil {
				return err
			}
		}
	}
	for i := range c.steps { // after every step's parameters have ids
		st := &c.steps[i]
		stamp(st.Parameters, keep, st.ID, false, c.now)
		for j := range st.Parameters {
			c.checkAPICalls(st, &st.Parameters[j], fieldIndex(fieldIndex("steps", i)+".parameters", j))
		}
	}
	return nil
}

// pastNames offers ids a past version's parameters that the process no
// longer has (not in cur), so that one added back by name takes its id.
func pastNames(ids *paramIDs, params []Parameter, cur map[string]Parameter, places ...string) {
	for _, p := range params {
		if _, ok := cur[p.ID]; !ok {
			for _, place := range places {
				ids.name(place, p.Name, p.ID)
			}
		}
		pastNames(ids, p.Parameters, cur, p.ID)
	}
}

// resolveLinks turns names into ids in a parameter's readFromEntity and
// insertOnEntity, checking that what they name exists.
func (c *stepCheck) resolveLinks(st *Step, j int, f string) error {
	p := &st.Parameters[j]
	stepParam := func(ref string) (string, bool) {
		for _, sp := range st.Parameters {
			if sp.ID == ref || sp.Name == ref {
				return sp.ID, true
			}
		}
		return "", false
	}
	if a := p.AdvancedOptions; a != nil && a.InsertOnEntity != "" {
		e, err := findEntity(c.tx, c.orgID, a.InsertOnEntity)
		if IsCode(err, CodeNotFound) {
			c.v.Add(f+".advancedOptions.insertOnEntity", "no entity named or with id %q", a.InsertOnEntity)
		} else if err != nil {
			return err
		} else {
			a.InsertOnEntity = e.ID
		}
	}
	if err := c.resolveOtherMeasurement(st, p, f); err != nil {
		return err
	}
	if err := c.resolveAutoFill(st, p, f); err != nil {
		return err
	}
	if a := p.AdvancedOptions; a != nil {
		for k, name := range a.InsertOnEntityMetadata {
			c.v.Check(slices.Contains(MetadataFields, name), fieldIndex(f+".advancedOptions.insertOnEntityMetadata", k), "must be one of %s", strings.Join(MetadataFields, ", "))
		}
	}
	r := p.ReadFromEntity
	if r == nil {
		return nil
	}
	r.StepID, r.ProcessID = st.ID, st.ProcessID
	e, err := findEntity(c.tx, c.orgID, r.EntityID)
	if IsCode(err, CodeNotFound) {
		c.v.Add(f+".readFromEntity.entityId", "no entity named or with id %q", r.EntityID)
		return nil
	}
	if err != nil {
		return err
	}
	r.EntityID = e.ID
	if ep, ok := e.ParamByName(r.ReadParameterID); ok {
		r.ReadParameterID = ep.ID
	} else {
		c.v.Add(f+".readFromEntity.readParameterId", "no parameter %q in entity %q", r.ReadParameterID, e.Name)
	}
	if r.OriginParameterID == "" {
		r.OriginParameterID = p.ID
	} else if id, ok := stepParam(r.OriginParameterID); ok {
		r.OriginParameterID = id
	} else {
		c.v.Add(f+".readFromEntity.originParameterId", "no parameter %q in this step", r.OriginParameterID)
	}
	for k, t := range r.TargetParameterIDs {
		if id, ok := stepParam(t); ok {
			r.TargetParameterIDs[k] = id
		} else {
			c.v.Add(fieldIndex(f+".readFromEntity.targetParameterIds", k), "no parameter %q in this step", t)
		}
	}
	return nil
}

// resolveAutoFill checks an autoFillEntityRelation: it names an ENTITY
// parameter of the same step (stored as its id), and the parameter's
// advancedOptions.entityParameterId, when given, a field of that entity
// (stored as its id); without it the field of the same name must exist.
func (c *stepCheck) resolveAutoFill(st *Step, p *Parameter, f string) error {
	if p.AutoFillEntityRelation == "" {
		return nil
	}
	var link *Parameter
	for k := range st.Parameters {
		if sp := &st.Parameters[k]; sp.ID == p.AutoFillEntityRelation || sp.Name == p.AutoFillEntityRelation {
			link = sp
		}
	}
	if link == nil || link.Type != TypeEntity || link.ID == p.ID {
		c.v.Add(f+".autoFillEntityRelation", "must name another ENTITY parameter of this step")
		return nil
	}
	p.AutoFillEntityRelation = link.ID
	e, err := findEntity(c.tx, c.orgID, link.EntityID)
	if IsCode(err, CodeNotFound) {
		return nil // the link's own check reports it
	} else if err != nil {
		return err
	}
	field := p.Name
	if a := p.AdvancedOptions; a != nil && a.EntityParameterID != "" {
		field = a.EntityParameterID
	}
	ep, ok := e.Param(field)
	if !ok {
		ep, ok = e.ParamByName(field)
	}
	if !ok {
		c.v.Add(f+".autoFillEntityRelation", "entity %q has no parameter %q to fill %s from", e.Name, field, p.Name)
		return nil
	}
	if p.AdvancedOptions != nil && p.AdvancedOptions.EntityParameterID != "" {
		p.AdvancedOptions.EntityParameterID = ep.ID
	}
	return nil
}

// resolveOtherMeasurement checks a readFromOtherMeasurementData and turns
// its names into ids: processId a process (id or label), searchFieldId and
// each readParameterId its parameters, each writeParameterId one of this step's.
func (c *stepCheck) resolveOtherMeasurement(st *Step, p *Parameter, f string) error {
	r := p.ReadFromOtherMeasurementData
	if r == nil {
		return nil
	}
	f += ".readFromOtherMeasurementData"
	r.ParameterID, r.StepID = p.ID, st.ID
	other, err := findProcess(c.tx, c.orgID, r.ProcessID, "")
	if IsCode(err, CodeInvalid) {
		if other, err = findProcess(c.tx, c.orgID, "", r.ProcessID); IsCode(err, CodeInvalid) {
			c.v.Add(f+".processId", "no process with id or label %q", r.ProcessID)
			return nil
		}
	}
	if err != nil {
		return err
	}
	r.ProcessID = other.ID
	find := func(ref string) (string, bool) {
		for _, os := range other.Steps {
			for _, op := range os.Parameters {
				if op.ID == ref || op.Name == ref {
					return op.ID, true
				}
			}
		}
		return "", false
	}
	// readParameterId is a shorthand: copy that parameter of the other
	// process into this step's parameter of the same name.
	if r.ReadParameterID != "" {
		id, ok := find(r.ReadParameterID)
		var name string
		for _, os := range other.Steps {
			if _, op := paramByID(os.Parameters, id); op.ID != "" {
				name = op.Name
			}
		}
		_, target := paramByID(st.Parameters, "")
		for _, sp := range st.Parameters {
			if sp.Name == name && sp.ID != p.ID {
				target = sp
			}
		}
		switch {
		case !ok:
			c.v.Add(f+".readParameterId", "no parameter %q in process %q", r.ReadParameterID, other.Label)
		case target.ID == "":
			c.v.Add(f+".readParameterId", "no other parameter named %q in this step to copy it into", name)
		default:
			r.ReadParameterID = id
			if !slices.ContainsFunc(r.SelectedFields, func(sf SelectedField) bool { return sf.ReadParameterID == id || sf.ReadParameterID == name }) {
				r.SelectedFields = append(r.SelectedFields, SelectedField{ReadParameterID: id, WriteParameterID: target.ID})
			}
		}
	}
	if id, ok := find(r.SearchFieldID); ok {
		r.SearchFieldID = id
	} else {
		c.v.Add(f+".searchFieldId", "no parameter %q in process %q", r.SearchFieldID, other.Label)
	}
	for k := range r.SelectedFields {
		sf := &r.SelectedFields[k]
		ff := fieldIndex(f+".selectedFields", k)
		if id, ok := find(sf.ReadParameterID); ok {
			sf.ReadParameterID = id
		} else {
			c.v.Add(ff+".readParameterId", "no parameter %q in process %q", sf.ReadParameterID, other.Label)
		}
		found := false
		for _, sp := range st.Parameters {
			if sp.ID == sf.WriteParameterID || sp.Name == sf.WriteParameterID {
				sf.WriteParameterID, found = sp.ID, true
			}
		}
		if !found {
			c.v.Add(ff+".writeParameterId", "no parameter %q in this step", sf.WriteParameterID)
		}
	}
	return nil
}

// checkFormulas parses every computedFormula of the steps and checks its
// names and cycles.
func (c *stepCheck) checkFormulas() {
	checkFormulas(c.v, paramGroups(c.steps), func(i, j int) string {
		return fmt.Sprintf("steps[%d].parameters[%d].computedFormula", i, j)
	})
}

// checkFormulas checks the formulas of groups of parameters (a process's
// steps, or one entity). A name is a parameter of the same group, or else
// of another group when only one group has it.
func checkFormulas(v *Validator, groups [][]Parameter, field func(i, j int) string) {
	owners := map[string][]int{}
	for i, g := range groups {
		for _, p := range g {
			owners[p.Name] = append(owners[p.Name], i)
		}
	}
	deps := map[string][]string{}
	where := map[string]string{}
	key := func(i int, name string) string { return strconv.Itoa(i) + "/" + name }
	for i, g := range groups {
		for j, p := range g {
			if len(p.ComputedFormula) == 0 {
				continue
			}
			f := field(i, j)
			e, err := formula.ParseTokens(p.ComputedFormula)
			if err != nil {
				v.Add(f, "does not parse: %v", err)
				continue
			}
			err = e.Check(func(name string) bool {
				o := owners[name]
				return slices.Contains(o, i) || len(o) == 1
			})
			if err != nil {
				v.Add(f, "%v", err)
				continue
			}
			k := key(i, p.Name)
			where[k] = f
			for _, ref := range e.Refs() {
				owner := i
				if !slices.Contains(owners[ref], i) {
					owner = owners[ref][0]
				}
				deps[k] = append(deps[k], key(owner, ref))
			}
		}
	}
	if cyc := formula.Cycle(deps); cyc != nil {
		names := make([]string, len(cyc))
		for k, id := range cyc {
			names[k] = id[strings.Index(id, "/")+1:]
		}
		v.Add(where[cyc[0]], "formulas form a cycle: %s", strings.Join(names, " → "))
	}
}

// CreateProcess adds a process with its steps. Errors: CodeInvalid naming
// the step and field; CodeConflict for a code or label in use.
func (s *Service) CreateProcess(ctx context.Context, p *Principal, in ProcessInput) (Process, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Process{}, err
	}
	now := s.Now()
	proc := Process{ID: NewID(), OrgID: p.OrgID, Version: 1, CreatedAt: now, UpdatedAt: now}
	err := s.store.Write(ctx, func(tx Tx) error {
		in := in
		var v Validator
		checkProcessMeta(&v, &in, "")
		if err := v.Err(); err != nil {
			return err
		}
		steps, err := s.checkSteps(tx, p.OrgID, proc.ID, in.Steps, nil, nil)
		if err != nil {
			return err
		}
		if in.Code == "" {
			if in.Code, err = freeCode(tx, p.OrgID, defaultCode(in.Name)); err != nil {
				return err
			}
		}
		proc.Name, proc.Label, proc.IconName, proc.Code, proc.Steps = in.Name, in.Label, in.IconName, in.Code, steps
		if err := tx.CreateProcess(proc); err != nil {
			return err
		}
		if err := tx.CreateProcessVersion(versionOf(proc, p.UserID)); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditProcessCreated, TargetProcess, proc.ID, proc.Label, nil, proc)
	})
	return proc, err
}

// freeCode returns base, or base-2, base-3... whichever no live process uses.
func freeCode(tx Tx, orgID, base string) (string, error) {
	for n := 1; ; n++ {
		code := base
		if n > 1 {
			code = fmt.Sprintf("%s-%d", base, n)
		}
		_, err := tx.FindProcessByCode(orgID, code)
		if IsCode(err, CodeNotFound) {
			return code, nil
		}
		if err != nil {
			return "", err
		}
	}
}

// versionOf is the version p is at, as by changed it.
func versionOf(p Process, by string) ProcessVersion {
	return ProcessVersion{ProcessID: p.ID, OrgID: p.OrgID, Version: p.Version, Steps: p.Steps, CreatedAt: p.UpdatedAt, StepCount: len(p.Steps),
		ChangedBy: by, ChangedAt: p.UpdatedAt}
}

// GetProcess returns a live process at its latest version, or at version
// when it is not 0. Errors: CodeNotFound.
func (s *Service) GetProcess(ctx context.Context, p *Principal, id string, version int) (Process, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return Process{}, err
	}
	var proc Process
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		proc, err = tx.GetProcess(p.OrgID, id, version)
		return err
	})
	return proc, err
}

// ListProcesses pages the org's live processes at their latest versions.
func (s *Service) ListProcesses(ctx context.Context, p *Principal, page Page, search string) ([]Process, int, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, 0, err
	}
	var list []Process
	var total int
	err := s.store.View(ctx, func(tx Tx) (err error) {
		list, total, err = tx.ListProcesses(p.OrgID, page, search, false)
		return err
	})
	return list, total, err
}

// ProcessName is a process as a list of measurements names it: its label,
// icon and the labels of its current version's steps.
type ProcessName struct {
	ID, Name, Label, IconName string
	Steps                     map[string]string // step id → label
}

// ProcessNames lists the org's processes by name, label, icon and step
// labels: what a list of measurements and a choice of process to start
// need. Holders of process:read, measurement:read or measurement:create
// see them (the definitions stay process:read's). Errors: CodeForbidden.
func (s *Service) ProcessNames(ctx context.Context, p *Principal) ([]ProcessName, error) {
	if !p.Can(FnProcessRead) && !p.Can(FnMeasurementRead) && !p.Can(FnMeasurementCreate) {
		return nil, Errorf(CodeForbidden, "listing processes needs a policy with function %q, %q or %q", FnProcessRead, FnMeasurementRead, FnMeasurementCreate)
	}
	var out []ProcessName
	err := s.store.View(ctx, func(tx Tx) error {
		list, _, err := tx.ListProcesses(p.OrgID, Page{Page: 1, PerPage: 500}, "", false) // a list to choose from: the first 500 (oldest first)
		for _, pr := range list {
			n := ProcessName{ID: pr.ID, Name: pr.Name, Label: pr.Label, IconName: pr.IconName, Steps: map[string]string{}}
			for _, st := range pr.Steps {
				n.Steps[st.ID] = st.Label
			}
			out = append(out, n)
		}
		return err
	})
	return out, err
}

// ListDeletedProcesses pages the org's deleted processes (deletedAt set)
// at their latest versions, which RestoreProcess brings back.
func (s *Service) ListDeletedProcesses(ctx context.Context, p *Principal, page Page, search string) ([]Process, int, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, 0, err
	}
	var list []Process
	var total int
	err := s.store.View(ctx, func(tx Tx) (err error) {
		list, total, err = tx.ListProcesses(p.OrgID, page, search, true)
		return err
	})
	return list, total, err
}

// RestoreProcess brings a deleted process back at its latest version, for
// those who may delete it. Its measurements never left (they run on their
// versions whatever becomes of the process); a recurring one starts again
// from now: the occurrences it missed while deleted are not made. Errors:
// CodeNotFound; CodeConflict when it is not deleted, when a live process
// has its code or label (naming them), or when its steps name what is gone
// meanwhile (a policy, an entity, a sheet, a contract template; naming the
// fields).
func (s *Service) RestoreProcess(ctx context.Context, p *Principal, id string) (Process, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Process{}, err
	}
	var proc Process
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if proc, err = tx.GetDeletedProcess(p.OrgID, id); IsCode(err, CodeNotFound) {
			if live, err := tx.GetProcess(p.OrgID, id, 0); err == nil {
				return Errorf(CodeConflict, "process %q is not deleted", live.Label)
			}
			return err
		} else if err != nil {
			return err
		}
		var v Validator
		if _, err := tx.FindProcessByCode(p.OrgID, proc.Code); err == nil {
			v.Add("code", "%q is the code of a live process: change or delete that one first", proc.Code)
		} else if !IsCode(err, CodeNotFound) {
			return err
		}
		if _, err := tx.FindProcessByLabel(p.OrgID, proc.Label); err == nil {
			v.Add("label", "%q is the label of a live process: change or delete that one first", proc.Label)
		} else if !IsCode(err, CodeNotFound) {
			return err
		}
		if err := v.Conflict(); err != nil {
			return err
		}
		proc.DeletedAt, proc.UpdatedAt = nil, s.Now()
		if err := tx.RestoreProcess(p.OrgID, proc.ID, proc.UpdatedAt); IsCode(err, CodeNotFound) {
			return Errorf(CodeConflict, "process %q is not deleted", proc.Label) // restored meanwhile
		} else if err != nil {
			return err // a conflict: a process took the code or label meanwhile
		}
		// Checked once live again: its steps may read from its own measurements.
		if _, err := s.checkSteps(tx, p.OrgID, proc.ID, proc.Steps, proc.Steps, nil); err != nil {
			return cannotRestore(err)
		}
		if err := s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditProcessRestored, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetProcess, ID: proc.ID, Name: proc.Label},
			Changes: map[string]AuditChange{"deleted": {Before: true, After: false}}}); err != nil {
			return err
		}
		if len(proc.Steps) > 0 && proc.Steps[0].Frequency != "" {
			return tx.SkipOccurrences(p.OrgID, proc.ID, proc.UpdatedAt)
		}
		return nil
	})
	return proc, err
}

// ListProcessVersions lists a process's versions, newest first.
func (s *Service) ListProcessVersions(ctx context.Context, p *Principal, id string) ([]ProcessVersion, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, err
	}
	var list []ProcessVersion
	err := s.store.Read(ctx, func(tx Tx) error {
		if _, err := tx.GetProcess(p.OrgID, id, 0); err != nil {
			return err
		}
		var err error
		if list, err = tx.ListProcessVersions(p.OrgID, id); err != nil {
			return err
		}
		names := map[string]string{}
		for i, v := range list {
			if _, ok := names[v.ChangedBy]; !ok && v.ChangedBy != "" {
				u, err := tx.GetUser(p.OrgID, v.ChangedBy)
				if err != nil && !IsCode(err, CodeNotFound) {
					return err
				}
				names[v.ChangedBy] = displayName(u)
			}
			list[i].ChangedByName = names[v.ChangedBy]
		}
		return nil
	})
	return list, err
}

// ProcessUpdate changes a process; nil fields stay. Steps, when set, is the
// whole new list (steps with a known id are edited, others added, missing
// ones removed).
type ProcessUpdate struct {
	Name     *string
	Label    *string
	IconName *string
	Code     *string
	Steps    *[]Step
	// FromVersion, when set, is the version the change was made from:
	// while another version is the latest the change is refused
	// (CodeConflict, IsNewerVersion) and nothing is stored. FromUpdatedAt,
	// when set, is the process's updatedAt then: a process saved since is
	// refused likewise (an edit in place keeps the version's number).
	FromVersion   int
	FromUpdatedAt Time
}

// errNewerVersion marks the refusal of a change made from a version that
// is no longer the latest.
var errNewerVersion = errors.New("a newer version was saved")

// IsNewerVersion reports whether err refused a change made from a version
// that is no longer the latest (ProcessUpdate.FromVersion).
func IsNewerVersion(err error) bool { return errors.Is(err, errNewerVersion) }

// checkFrom refuses u when it was made from a version other than cur's.
func (u ProcessUpdate) checkFrom(cur Process) error {
	var e *Error
	switch {
	case u.FromVersion != 0 && u.FromVersion != cur.Version:
		e = Errorf(CodeConflict, "version %d was saved after version %d, which this change was made from", cur.Version, u.FromVersion)
	case !u.FromUpdatedAt.IsZero() && u.FromUpdatedAt.Millis() != cur.UpdatedAt.Millis():
		e = Errorf(CodeConflict, "the process was saved again after this change was made from it")
	default:
		return nil
	}
	e.Err = errNewerVersion
	return e
}

// apply sets what u changes on in, the input of cur, unless u was made
// from another state of the process (checkFrom).
func (u ProcessUpdate) apply(cur Process, in *ProcessInput) error {
	if err := u.checkFrom(cur); err != nil {
		return err
	}
	setIf(&in.Name, u.Name)
	setIf(&in.Label, u.Label)
	setIf(&in.IconName, u.IconName)
	setIf(&in.Code, u.Code)
	setIf(&in.Steps, u.Steps)
	return nil
}

// UpdateProcess edits a process. Steps are changed in place while no
// measurement uses the current version, else saved as a new version; a
// change that changes nothing writes nothing (no version, no time of
// change) and answers the process as it is. Errors: as CreateProcess,
// plus CodeNotFound, and CodeConflict for a stale FromVersion.
func (s *Service) UpdateProcess(ctx context.Context, p *Principal, id string, u ProcessUpdate) (Process, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Process{}, err
	}
	var proc Process
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		proc, err = s.editProcess(tx, p, id, u.apply)
		return err
	})
	return proc, err
}

// editProcess loads a process, lets change edit its input (knowing the
// process as it is), validates and saves it (a new version when the
// current one is locked).
func (s *Service) editProcess(tx Tx, p *Principal, id string, change func(cur Process, in *ProcessInput) error) (Process, error) {
	cur, err := tx.GetProcess(p.OrgID, id, 0)
	if err != nil {
		return cur, err
	}
	in := ProcessInput{Name: cur.Name, Label: cur.Label, IconName: cur.IconName, Code: cur.Code, Steps: cloneSteps(cur.Steps)}
	labelFollows := cur.Label == cur.Name
	if err := change(cur, &in); err != nil {
		return cur, err
	}
	if labelFollows && in.Label == cur.Label && in.Name != cur.Name {
		in.Label = ""
	}
	var v Validator
	checkProcessMeta(&v, &in, cur.IconName)
	v.Check(in.Code != "", "code", "must not be empty")
	if err := v.Err(); err != nil {
		return cur, err
	}
	steps, err := s.checkSteps(tx, p.OrgID, cur.ID, in.Steps, cur.Steps, func() ([]Step, error) { return pastSteps(tx, cur) })
	if err != nil {
		return cur, err
	}
	if err := s.checkRemovedParams(tx, cur, steps); err != nil {
		return cur, err
	}
	next := cur
	next.Name, next.Label, next.IconName, next.Code, next.Steps = in.Name, in.Label, in.IconName, in.Code, steps
	stepsChanged := !sameSteps(cur.Steps, steps)
	if !stepsChanged && next.Name == cur.Name && next.Label == cur.Label && next.IconName == cur.IconName && next.Code == cur.Code {
		return cur, nil // nothing changed: nothing written
	}
	next.UpdatedAt = s.Now()
	if stepsChanged && cur.Locked {
		next.Version, next.Locked = cur.Version+1, false
		if err := tx.CreateProcessVersion(versionOf(next, p.UserID)); err != nil {
			return cur, err
		}
	} else if stepsChanged {
		if err := tx.UpdateProcessVersion(versionOf(next, p.UserID)); err != nil {
			return cur, err
		}
	}
	if err := tx.UpdateProcess(next); err != nil {
		return cur, err
	}
	changes := diffFields(cur, next)
	if next.Version != cur.Version {
		changes["version"] = AuditChange{Before: cur.Version, After: next.Version}
	}
	if len(changes) == 0 {
		return next, nil
	}
	return next, s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditProcessUpdated, Actor: actorOf(p),
		Target: AuditTarget{Kind: TargetProcess, ID: next.ID, Name: next.Label}, Changes: changes})
}

// pastSteps lists the steps of proc's earlier versions, newest first: a
// new version is made once one is used, so they hold every parameter whose
// values measurements may keep.
func pastSteps(tx Tx, proc Process) ([]Step, error) {
	if proc.Version <= 1 {
		return nil, nil
	}
	versions, err := tx.ListProcessVersions(proc.OrgID, proc.ID)
	var out []Step
	for _, v := range versions {
		if v.Version < proc.Version {
			out = append(out, v.Steps...)
		}
	}
	return out, err
}

// checkRemovedParams refuses to remove from cur a permanent parameter that
// an action of one of the process's measurements (of any version) holds a
// value for: CodeConflict naming the list it was removed from
// (steps[i].parameters, or steps when its step went too). The values of
// other parameters removed stay in the actions that hold them.
func (s *Service) checkRemovedParams(tx Tx, cur Process, steps []Step) error {
	live := map[string]Parameter{}
	lists := map[string]string{}
	for i, st := range steps {
		paramsByID(st.Parameters, live)
		listFields(st.Parameters, st.ID, fieldIndex("steps", i)+".parameters", lists)
	}
	old := map[string]Parameter{}
	var removed []RetiredParam
	for _, st := range cur.Steps {
		paramsByID(st.Parameters, old)
		removed = append(removed, removedParams(st.Parameters, st.ID, live)...)
	}
	return keptValues(removed, old, lists, "steps", "measurements", func(id string) (bool, error) {
		return actionsHold(tx, cur.OrgID, cur.ID, id)
	})
}

// actionsHold reports whether an action of a measurement of the process
// holds a value for the parameter id (superseded and reproved ones too:
// the ledger keeps them).
func actionsHold(tx Tx, orgID, processID, id string) (bool, error) {
	after := ""
	for {
		page, err := tx.ProcessActionsMentioning(orgID, processID, `"`+id+`"`, after, 100)
		if err != nil {
			return false, err
		}
		for _, a := range page {
			if holdsValue(a.Data, id) {
				return true, nil
			}
		}
		if len(page) < 100 {
			return false, nil
		}
		after = page[len(page)-1].ID
	}
}

// sameSteps compares definitions, ignoring edit times.
func sameSteps(a, b []Step) bool {
	strip := func(steps []Step) string {
		c := cloneSteps(steps)
		for i := range c {
			c[i].UpdatedAt = Time{}
		}
		j, _ := json.Marshal(c)
		return string(j)
	}
	return strip(a) == strip(b)
}

// DeleteProcess soft-deletes a process; its measurements keep it. Errors: CodeNotFound.
func (s *Service) DeleteProcess(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnProcessWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		proc, err := tx.GetProcess(p.OrgID, id, 0)
		if err != nil {
			return err
		}
		if err := tx.SoftDeleteProcess(p.OrgID, id, s.Now()); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditProcessDeleted, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetProcess, ID: proc.ID, Name: proc.Label},
			Changes: map[string]AuditChange{"deleted": {Before: false, After: true}}})
	})
}

// AddStep appends a step (or inserts it before position, from 0). Errors: as UpdateProcess.
func (s *Service) AddStep(ctx context.Context, p *Principal, processID string, st Step, position *int) (Step, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Step{}, err
	}
	var out Step
	err := s.store.Write(ctx, func(tx Tx) error {
		st.ID = ""
		proc, err := s.editProcess(tx, p, processID, func(_ Process, in *ProcessInput) error {
			at := len(in.Steps)
			if position != nil {
				if *position < 0 || *position > len(in.Steps) {
					return Invalid("position", "must be from 0 to %d", len(in.Steps))
				}
				at = *position
			}
			in.Steps = slices.Insert(in.Steps, at, st)
			return nil
		})
		if err != nil {
			return err
		}
		out = proc.Steps[slices.IndexFunc(proc.Steps, func(x Step) bool { return x.Label == strings.TrimSpace(st.Label) })]
		return nil
	})
	return out, err
}

// UpdateStep replaces one step with edit applied to it. Errors: CodeNotFound, CodeInvalid.
func (s *Service) UpdateStep(ctx context.Context, p *Principal, processID, stepID string, edit func(*Step) error) (Step, error) {
	var out Step
	err := s.store.Write(ctx, func(tx Tx) error {
		proc, err := s.editProcess(tx, p, processID, func(_ Process, in *ProcessInput) error {
			i := slices.IndexFunc(in.Steps, func(x Step) bool { return x.ID == stepID })
			if i < 0 {
				return NotFound("step")
			}
			if err := edit(&in.Steps[i]); err != nil {
				return err
			}
			in.Steps[i].ID = stepID
			return nil
		})
		if err != nil {
			return err
		}
		out = proc.Steps[slices.IndexFunc(proc.Steps, func(x Step) bool { return x.ID == stepID })]
		return nil
	})
	return out, err
}

// DeleteStep removes a step. Errors: CodeNotFound; CodeConflict when other
// steps refer to it or it is the only step.
func (s *Service) DeleteStep(ctx context.Context, p *Principal, processID, stepID string) error {
	if err := p.Require(FnProcessWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		_, err := s.editProcess(tx, p, processID, func(_ Process, in *ProcessInput) error {
			i := slices.IndexFunc(in.Steps, func(x Step) bool { return x.ID == stepID })
			if i < 0 {
				return NotFound("step")
			}
			if len(in.Steps) == 1 {
				return Errorf(CodeConflict, "a process keeps at least one step")
			}
			var users []string
			for _, st := range in.Steps {
				refers := slices.Contains(st.StepIDsDependencies, stepID) || slices.Contains(st.StepIDsReprovalDependencies, stepID) ||
					st.Routing != nil && slices.ContainsFunc(st.Routing.Rules, func(r RoutingRule) bool { return r.StepID == stepID })
				if refers {
					users = append(users, st.Label)
				}
			}
			if len(users) > 0 {
				return Errorf(CodeConflict, "steps %s refer to this step", strings.Join(users, ", "))
			}
			in.Steps = slices.Delete(in.Steps, i, i+1)
			return nil
		})
		return err
	})
}
