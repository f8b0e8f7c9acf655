package wps

import (
	"context"
	"crypto/sha1"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"wps/internal/engine"
)

// The response shapes of measurements and actions (interface.md).

// DataItemView is one value of a parameter in an action.
type DataItemView struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Value string `json:"value"`
	// DisplayValue is value formatted per the parameter's advancedOptions
	// (locale, currency, dateFormat).
	DisplayValue string         `json:"displayValue"`
	Type         string         `json:"type"`
	DataItemID   string         `json:"dataItemId"`
	ParameterID  string         `json:"parameterId"`
	DataID       string         `json:"dataId"`
	Index        int            `json:"index"`
	Param        *Parameter     `json:"param,omitempty"`
	DataItems    []DataItemView `json:"dataItems,omitempty" doc:"A TABLE row's cells"`
	Error        string         `json:"error,omitempty" doc:"Why a sheet OUTPUT has no value (a formula error such as #DIV/0!, a value of the wrong type, a calculation over the time limit)"`
}

// DataView is what one action wrote into one parameter.
type DataView struct {
	ID                string         `json:"id"`
	ActionID          string         `json:"actionId"`
	StepID            string         `json:"stepId"`
	ParameterID       string         `json:"parameterId"`
	EntityParameterID string         `json:"entityParameterId"`
	HasGSheetKey      bool           `json:"hasGSheetKey"`
	DataItems         []DataItemView `json:"dataItems"`
	APICallID         string         `json:"apiCallId,omitempty" doc:"The id of the parameter's apiCall whose answer gave this value (absent: the value was sent)"`
}

// ProcessRef is the process embedded in a step of an action.
type ProcessRef struct {
	ID        string `json:"id"`
	ProcessID string `json:"processId"`
	Name      string `json:"name"`
	Label     string `json:"label"`
	IconName  string `json:"iconName"`
	OrgID     string `json:"orgId"`
	CreatedAt Time   `json:"createdAt"`
	UpdatedAt Time   `json:"updatedAt"`
}

// StepEntity is the entity a step works with.
type StepEntity struct {
	Label        string      `json:"label"`
	Params       []Parameter `json:"params"`
	HasGSheetKey bool        `json:"hasGSheetKey"`
}

// StepView is a step as a measurement shows it: with its status there.
type StepView struct {
	Step
	Parameters              []StepParameter `json:"parameters"`
	Status                  string          `json:"status" doc:"WAITING, OPEN, CONSENSED or SKIPPED in this measurement"`
	Entity                  *StepEntity     `json:"entity"`
	HasGSheetKey            bool            `json:"hasGSheetKey"`
	HasGSheetInputParameter bool            `json:"hasGSheetInputParameter"`
	Process                 *ProcessRef     `json:"process,omitempty"`
}

// StepParameter is a step's parameter as a measurement shows it: its
// apiCalls are the calls themselves, not the links a process holds.
type StepParameter struct {
	Parameter
	APICalls []APICall `json:"apiCalls,omitempty"`
}

// CounterpartSeat is one role that can fill a policy's seat.
type CounterpartSeat struct {
	Permission string `json:"permission"`
	TokenID    string `json:"tokenId"`
	Role       string `json:"role"`
}

// Counterpart lists who can fill one policy's seat at the action's step.
type Counterpart struct {
	Name string            `json:"name"`
	Data []CounterpartSeat `json:"data"`
}

// MeasurementActionView is an action inside the measurement response.
type MeasurementActionView struct {
	ID                        string        `json:"id"`
	StepID                    string        `json:"stepId"`
	ActionID                  string        `json:"actionId"`
	MeasurementID             string        `json:"measurementId"`
	TokenID                   string        `json:"tokenId"`
	CreatedAt                 Time          `json:"createdAt"`
	UpdatedAt                 Time          `json:"updatedAt"`
	Username                  string        `json:"username"`
	UserID                    string        `json:"userId"`
	Role                      string        `json:"role"`
	UserRoles                 []string      `json:"userRoles"`
	Observation               string        `json:"observation"`
	TransactionHash           string        `json:"transactionHash"`
	UserAddress               string        `json:"userAddress"`
	Type                      string        `json:"type" enum:"WRITE_DATA,APPROVAL,REJECTION"`
	Data                      []DataView    `json:"data"`
	CounterpartsPoliciesRoles []Counterpart `json:"counterpartsPoliciesRoles"`
	PolicyName                string        `json:"policyName"`
	LedgerHash                string        `json:"ledgerHash"`
	LeafHash                  string        `json:"leafHash" doc:"The action's leaf hash in the org's ledger (base64): GET /v1/actions/{id}/proof proves it"`
	Reproved                  bool          `json:"reproved"`
	Superseded                bool          `json:"superseded"`
	ReprovesActionID          string        `json:"reprovesActionId,omitempty"`
	Sheets                    []SheetHash   `json:"sheets,omitempty" doc:"The workbooks this action recalculated: the SHA-256 of each filled copy"`
	// Signature is set on a signed action (semantics section 19).
	Signature  *ActionSignature `json:"signature,omitempty" doc:"The action's electronic signature, when its step has a signatureMeaning"`
	OnBehalfOf *OnBehalfOf      `json:"onBehalfOf,omitempty" doc:"The user whose seat the action filled by a delegation (absent: the actor's own)"`
}

// SheetHash is the SHA-256 of a measurement's filled copy of a workbook as
// an action left it.
type SheetHash struct {
	SheetAPIID string `json:"sheetApiId"`
	SHA256     string `json:"sha256"`
}

func sheetHashes(a Action) []SheetHash {
	var out []SheetHash
	for _, e := range a.Sheets() {
		if e.SHA256 != "" {
			out = append(out, SheetHash{SheetAPIID: e.SheetAPIID, SHA256: e.SHA256})
		}
	}
	return out
}

// ProcessEmbed is the process inside a measurement response.
type ProcessEmbed struct {
	ID       string                  `json:"id"`
	Name     string                  `json:"name"`
	Type     string                  `json:"type"`
	IconName string                  `json:"iconName"`
	OrgID    string                  `json:"orgId"`
	Label    string                  `json:"label"`
	Code     string                  `json:"code"`
	Version  int                     `json:"version"`
	Steps    []StepView              `json:"steps"`
	Actions  []MeasurementActionView `json:"actions"`
}

// ReservedToken is a filled seat.
type ReservedToken struct {
	PolicyName string `json:"policyName"`
	TokenID    string `json:"tokenId"`
}

// AvailableTokens are a policy's unfilled seats.
type AvailableTokens struct {
	PolicyName string   `json:"policyName"`
	TokenIDs   []string `json:"tokenIds"`
}

// PolicyRef names a policy.
type PolicyRef struct {
	PolicyName string `json:"policyName"`
}

// StepUnfilled lists an open step's unfilled seats.
type StepUnfilled struct {
	StepID             string      `json:"stepId"`
	UnfilledPolicies   []PolicyRef `json:"unfilledPolicies"`
	NextUnfilledPolicy string      `json:"nextUnfilledPolicy"`
}

// MeasurementHead is what every shape of a measurement starts with.
type MeasurementHead struct {
	ID             string          `json:"id"`
	MeasurementID  string          `json:"measurementId"`
	Name           string          `json:"name"`
	OrgID          string          `json:"orgId"`
	ProcessID      string          `json:"processId"`
	Version        int             `json:"version"`
	Status         string          `json:"status" enum:"OPEN,APPROVED,REPROVED,STAGE_OPEN,CONSENSUS,IN_CONSENSUS,PENDING"`
	CreatedAt      Time            `json:"createdAt"`
	UpdatedAt      Time            `json:"updatedAt"`
	ReservedTokens []ReservedToken `json:"reservedTokens"`
}

// MeasurementView is the measurement response.
type MeasurementView struct {
	MeasurementHead
	CurrentStep      *StepView      `json:"currentStep"`
	UnfilledPolicies []StepUnfilled `json:"unfilledPolicies"`
	PendingPolicies  []string       `json:"pendingPolicies"`
	Process          ProcessEmbed   `json:"process"`
}

// MeasurementStatuses are the statuses a measurement can have.
var MeasurementStatuses = []string{"OPEN", "STAGE_OPEN", "IN_CONSENSUS", "CONSENSUS", "REPROVED", "PENDING", "APPROVED"}

// MeasurementSummary is a measurement in lists and embedded in actions.
type MeasurementSummary struct {
	MeasurementHead
	OpenStepIDs []string `json:"openStepIds"`
	// ActionableSteps is in the answers of ?actionable=me only.
	ActionableSteps []ActionableStep `json:"actionableSteps,omitempty" doc:"With actionable=me: the open steps where the caller can fill a seat now, in step order"`
}

// ActionableStep is an open step where the caller can fill a seat now.
type ActionableStep struct {
	StepID      string      `json:"stepId"`
	Label       string      `json:"label"`
	PolicyNames []string    `json:"policyNames" doc:"The seats the caller can fill now (* for a step without policies); an action fills the first unless it names one"`
	OpenedAt    Time        `json:"openedAt"`
	DueAt       *Time       `json:"dueAt" nullable:"true" doc:"When the step's deadline passes (null: no deadline)"`
	Overdue     bool        `json:"overdue" doc:"The deadline has passed"`
	OnBehalfOf  *OnBehalfOf `json:"onBehalfOf,omitempty" doc:"The user whose seats these are, received by a delegation (absent: the caller's own)"`
}

// MeasurementDefinition is the seats of a measurement.
type MeasurementDefinition struct {
	ID              string            `json:"id"`
	MeasurementID   string            `json:"measurementId"`
	TokenIDs        []string          `json:"tokenIds"`
	CreatedAt       Time              `json:"createdAt"`
	ReservedTokens  []ReservedToken   `json:"reservedTokens"`
	AvailableTokens []AvailableTokens `json:"availableTokens"`
}

// EntityData is data bound to one entity.
type EntityData struct {
	EntityID string `json:"entityId"`
	Data     []any  `json:"data"`
}

// ReadMapping says which values were read from entities.
type ReadMapping struct {
	Actions map[string]any `json:"actions"`
	Entity  map[string]any `json:"entity"`
}

// SimplifiedView is the answer of POST /v1/measurements/simplified.
type SimplifiedView struct {
	IsStepConsensed       bool                  `json:"isStepConsensed"`
	StepID                string                `json:"stepId"`
	ActionID              string                `json:"actionId"`
	ID                    string                `json:"id"`
	Name                  string                `json:"name"`
	ProcessID             string                `json:"processId"`
	OrgID                 string                `json:"orgId"`
	Status                string                `json:"status" enum:"OPEN,APPROVED,REPROVED,STAGE_OPEN,CONSENSUS,IN_CONSENSUS,PENDING"`
	CreatedAt             Time                  `json:"createdAt"`
	UpdatedAt             Time                  `json:"updatedAt"`
	ReadFromEntityMapping ReadMapping           `json:"readFromEntityMapping"`
	MeasurementDefinition MeasurementDefinition `json:"measurementDefinition"`
	EntityDataItems       []EntityData          `json:"entityDataItems"`
	EntityManipulations   []EntityData          `json:"entityManipulations"`
	EntitiesByID          map[string]Entity     `json:"entitiesById"`
	Process               ProcessEmbed          `json:"process"`
	UnfilledPolicies      []StepUnfilled        `json:"unfilledPolicies"`
	CurrentStep           *StepView             `json:"currentStep"`
	WebhookURLs           string                `json:"webhookUrls"`
	PendingPolicies       []string              `json:"pendingPolicies"`
}

// ActionView is an action with its step, measurement and data.
type ActionView struct {
	ID               string             `json:"id"`
	TokenID          string             `json:"tokenId"`
	Type             string             `json:"type" enum:"WRITE_DATA,APPROVAL,REJECTION"`
	UserAddress      string             `json:"userAddress"`
	Username         string             `json:"username"`
	UserID           string             `json:"userId"`
	TransactionHash  string             `json:"transactionHash"`
	Observation      string             `json:"observation"`
	MeasurementID    string             `json:"measurementId"`
	StepID           string             `json:"stepId"`
	PolicyName       string             `json:"policyName"`
	LedgerHash       string             `json:"ledgerHash"`
	LeafHash         string             `json:"leafHash" doc:"The action's leaf hash in the org's ledger (base64): GET /v1/actions/{id}/proof proves it"`
	ReprovesActionID string             `json:"reprovesActionId,omitempty"`
	CreatedAt        Time               `json:"createdAt"`
	Step             StepView           `json:"step"`
	Measurement      MeasurementSummary `json:"measurement"`
	Data             []DataView         `json:"data"`
	Sheets           []SheetHash        `json:"sheets,omitempty" doc:"The workbooks this action recalculated: the SHA-256 of each filled copy"`
	CurrentStep      *StepView          `json:"currentStep"`
	// Signature is set on a signed action (semantics section 19).
	Signature  *ActionSignature `json:"signature,omitempty" doc:"The action's electronic signature, when its step has a signatureMeaning"`
	OnBehalfOf *OnBehalfOf      `json:"onBehalfOf,omitempty" doc:"The user whose seat the action filled by a delegation (absent: the actor's own)"`
}

// derivedID makes a stable id for a view object from its parts.
func derivedID(base string, parts ...string) string {
	ns, err := uuid.Parse(base)
	if err != nil {
		ns = uuid.NameSpaceOID
	}
	// uuid.NewSHA1(ns, "/part/part…"), hashed from one stack buffer: a
	// measurement's view derives two ids per value it shows.
	var buf [160]byte
	b := append(buf[:0], ns[:]...)
	for _, p := range parts {
		b = append(append(b, '/'), p...)
	}
	sum := sha1.Sum(b)
	var id uuid.UUID
	copy(id[:], sum[:])
	id[6] = (id[6] & 0x0f) | 0x50 // version 5
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id.String()
}

// dataViews turns an action's stored values into Data and DataItems, in
// the step's parameter order, leaving out the values hidden from the reader.
func dataViews(a Action, st *Step, hidden map[string]bool) []DataView {
	out := []DataView{}
	if st == nil {
		return out
	}
	var reasons map[string]string
	for i := range st.Parameters {
		p := &st.Parameters[i]
		v, ok := a.Data[p.ID]
		if ok && v == nil && isOutput(*p) && !hidden[p.ID] {
			if reasons == nil {
				reasons = a.sheetErrors()
			}
			if why := reasons[p.ID]; why != "" {
				dataID := derivedID(a.ID, p.ID)
				id := derivedID(dataID, p.ID, "0")
				out = append(out, DataView{ID: dataID, ActionID: a.ID, StepID: a.StepID, ParameterID: p.ID, HasGSheetKey: true,
					DataItems: []DataItemView{{ID: id, DataItemID: id, Label: p.Label, Type: p.Type, ParameterID: p.ID, DataID: dataID, Param: p, Error: why}}})
			}
			continue
		}
		if !ok || v == nil || hidden[p.ID] {
			continue
		}
		dataID := derivedID(a.ID, p.ID)
		d := DataView{ID: dataID, ActionID: a.ID, StepID: a.StepID, ParameterID: p.ID, HasGSheetKey: p.SheetData != nil && p.SheetData.SheetAPIID != "",
			DataItems: items(dataID, p, v, hidden)}
		if p.AdvancedOptions != nil {
			d.EntityParameterID = p.AdvancedOptions.EntityParameterID
		}
		if len(p.APICalls) > 0 {
			d.APICallID = a.FilledBy()[p.ID]
		}
		out = append(out, d)
	}
	return out
}

// items shows one parameter's value as data items. They point at p (read
// only: a view shares the version's steps), a TABLE's with its columns.
func items(dataID string, p *Parameter, v any, hidden map[string]bool) []DataItemView {
	param := p
	if p.Type == TypeTable {
		rows := tableRows(v)
		out := make([]DataItemView, 0, len(rows))
		for i, m := range rows {
			id := derivedID(dataID, "row", strconv.Itoa(i))
			item := DataItemView{ID: id, DataItemID: id, Label: p.Label, Type: p.Type, ParameterID: p.ID, DataID: dataID, Index: i, Param: param}
			for j := range p.Parameters {
				col := &p.Parameters[j]
				if cv, ok := m[col.ID]; ok && cv != nil && !hidden[col.ID] {
					item.DataItems = append(item.DataItems, items(id, col, cv, hidden)...)
				}
			}
			out = append(out, item)
		}
		return out
	}
	strs := itemStrings(v)
	out := make([]DataItemView, 0, len(strs))
	for i, s := range strs {
		id := derivedID(dataID, p.ID, strconv.Itoa(i))
		out = append(out, DataItemView{ID: id, DataItemID: id, Label: p.Label, Value: s, DisplayValue: DisplayValue(*p, s), Type: p.Type,
			ParameterID: p.ID, DataID: dataID, Index: i, Param: param})
	}
	return out
}

// stepView shows a step of a measurement.
func (r *run) stepView(st Step, withProcess bool) StepView {
	v := StepView{Step: st, Status: engine.Waiting, Parameters: make([]StepParameter, len(st.Parameters))}
	if ss := r.m.State.Steps[st.ID]; ss != nil {
		v.Status = ss.Status
	}
	for i, p := range st.Parameters {
		v.Parameters[i].Parameter = p
		for _, l := range p.APICalls {
			if l.APICall != nil {
				v.Parameters[i].APICalls = append(v.Parameters[i].APICalls, *l.APICall)
			}
		}
		if p.SheetData != nil && p.SheetData.SheetAPIID != "" {
			v.HasGSheetKey = true
		}
		if p.SheetData != nil && p.SheetData.InputType != "" {
			v.HasGSheetInputParameter = true
		}
	}
	if st.Routing != nil && st.Routing.EntityID != "" {
		if e, err := r.tx.GetEntity(r.m.OrgID, st.Routing.EntityID); err == nil {
			v.Entity = &StepEntity{Label: e.Label, Params: e.Parameters, HasGSheetKey: slices.ContainsFunc(e.Parameters, linked)}
		}
	}
	if withProcess {
		v.Process = &ProcessRef{ID: r.proc.ID, ProcessID: r.proc.ID, Name: r.proc.Name, Label: r.proc.Label, IconName: r.proc.IconName,
			OrgID: r.proc.OrgID, CreatedAt: r.proc.CreatedAt, UpdatedAt: r.proc.UpdatedAt}
	}
	return v
}

// currentStep is the open step with the lowest position, or nil.
func (r *run) currentStep() *StepView {
	open := engine.OpenSteps(r.def, r.m.State)
	if len(open) == 0 {
		return nil
	}
	_, st := stepByID(r.proc.Steps, open[0])
	v := r.stepView(*st, false)
	return &v
}

func (r *run) unfilled() []StepUnfilled {
	out := []StepUnfilled{}
	for _, id := range engine.OpenSteps(r.def, r.m.State) {
		_, sd := r.def.Step(id)
		ss := r.m.State.Steps[id]
		u := StepUnfilled{StepID: id, UnfilledPolicies: []PolicyRef{}, NextUnfilledPolicy: engine.NextOrdered(sd, ss)}
		for _, p := range engine.Unfilled(sd, ss) {
			u.UnfilledPolicies = append(u.UnfilledPolicies, PolicyRef{p})
		}
		if u.NextUnfilledPolicy == "" && len(u.UnfilledPolicies) > 0 {
			u.NextUnfilledPolicy = u.UnfilledPolicies[0].PolicyName
		}
		out = append(out, u)
	}
	return out
}

func (r *run) pending() []string {
	out := []string{}
	if open := engine.OpenSteps(r.def, r.m.State); len(open) > 0 {
		_, sd := r.def.Step(open[0])
		out = append(out, engine.Unfilled(sd, r.m.State.Steps[open[0]])...)
	}
	return out
}

// reserved lists the filled seats, in step and policy order.
func (r *run) reserved() []ReservedToken {
	out := []ReservedToken{}
	for _, st := range r.proc.Steps {
		ss := r.m.State.Steps[st.ID]
		for _, p := range st.PolicyNames {
			if seat, ok := ss.Seats[p]; ok {
				out = append(out, ReservedToken{PolicyName: p, TokenID: seat.Token})
			}
		}
	}
	return out
}

func (r *run) summary() MeasurementSummary {
	return MeasurementSummary{MeasurementHead: r.head(), OpenStepIDs: append([]string{}, engine.OpenSteps(r.def, r.m.State)...)}
}

func (r *run) head() MeasurementHead {
	return MeasurementHead{ID: r.m.ID, MeasurementID: r.m.ID, Name: r.m.Name, OrgID: r.m.OrgID, ProcessID: r.m.ProcessID,
		Version: r.m.Version, Status: r.m.Status, CreatedAt: r.m.CreatedAt, UpdatedAt: r.m.UpdatedAt, ReservedTokens: r.reserved()}
}

func (r *run) actionViews() []MeasurementActionView {
	out := make([]MeasurementActionView, 0, len(r.actions))
	for _, a := range r.actions {
		_, st := stepByID(r.proc.Steps, a.StepID)
		v := MeasurementActionView{ID: a.ID, StepID: a.StepID, ActionID: a.ID, MeasurementID: a.MeasurementID, TokenID: a.TokenID,
			CreatedAt: a.CreatedAt, UpdatedAt: a.CreatedAt, Username: a.Username, UserID: a.UserID, Role: a.Role, UserRoles: a.UserRoles,
			Observation: a.Observation, TransactionHash: a.TransactionHash, UserAddress: a.UserID, Type: a.Type, Data: []DataView{},
			CounterpartsPoliciesRoles: r.counterparts(st), PolicyName: a.PolicyName, LedgerHash: a.LedgerHash, LeafHash: a.LeafHash,
			Reproved: a.Reproved, Superseded: a.Superseded, ReprovesActionID: a.ReprovesActionID, Signature: a.Signature}
		v.Data = dataViews(a, st, r.hidden())
		v.Sheets = sheetHashes(a)
		v.OnBehalfOf = a.onBehalfOf()
		out = append(out, v)
	}
	return out
}

// seatPermission is what a policy's seat may do at its step: APPROVE when
// the policy grants action:approve or names role ADMIN (approve or reject,
// and write data too when it grants action:write), WRITE when it grants
// only action:write, READ otherwise (none of its holders' actions fill it).
func seatPermission(pol Policy) string {
	switch {
	case slices.Contains(pol.Functions, string(FnActionApprove)) || slices.Contains(pol.Roles, RoleAdmin):
		return "APPROVE"
	case slices.Contains(pol.Functions, string(FnActionWrite)):
		return "WRITE"
	}
	return "READ"
}

// counterparts lists, for each policy of the step, the roles that fill its seat.
func (r *run) counterparts(st *Step) []Counterpart {
	out := []Counterpart{}
	if st == nil {
		return out
	}
	if r.policies == nil && r.p.OrgPolicies != nil {
		r.policies = r.p.OrgPolicies
	} else if r.policies == nil {
		r.policies, _ = r.tx.ListPolicies(r.m.OrgID)
	}
	pols := r.policies
	for i, name := range st.PolicyNames {
		c := Counterpart{Name: name, Data: []CounterpartSeat{}}
		j := slices.IndexFunc(pols, func(p Policy) bool { return p.Name == name })
		if j < 0 {
			out = append(out, c)
			continue
		}
		perm := seatPermission(pols[j])
		for _, role := range countingRoles(*st, pols[j]) {
			c.Data = append(c.Data, CounterpartSeat{Permission: perm, TokenID: st.TokenIDs[i], Role: role})
		}
		out = append(out, c)
	}
	return out
}

func (r *run) embed() ProcessEmbed {
	e := ProcessEmbed{ID: r.proc.ID, Name: r.proc.Name, Type: "PROCESS", IconName: r.proc.IconName, OrgID: r.proc.OrgID,
		Label: r.proc.Label, Code: r.proc.Code, Version: r.proc.Version, Actions: r.actionViews()}
	for _, st := range r.proc.Steps {
		e.Steps = append(e.Steps, r.stepView(st, false))
	}
	return e
}

func (r *run) view() MeasurementView {
	return MeasurementView{MeasurementHead: r.head(), CurrentStep: r.currentStep(), UnfilledPolicies: r.unfilled(),
		PendingPolicies: r.pending(), Process: r.embed()}
}

func (r *run) definition() MeasurementDefinition {
	d := MeasurementDefinition{ID: derivedID(r.m.ID, "definition"), MeasurementID: r.m.ID, TokenIDs: []string{}, CreatedAt: r.m.CreatedAt,
		ReservedTokens: r.reserved(), AvailableTokens: []AvailableTokens{}}
	avail := map[string][]string{}
	var order []string
	for _, st := range r.proc.Steps {
		ss := r.m.State.Steps[st.ID]
		for i, p := range st.PolicyNames {
			d.TokenIDs = append(d.TokenIDs, st.TokenIDs[i])
			if _, filled := ss.Seats[p]; filled || ss.Status == engine.Consensed || ss.Status == engine.Skipped {
				continue
			}
			if _, seen := avail[p]; !seen {
				order = append(order, p)
			}
			avail[p] = append(avail[p], st.TokenIDs[i])
		}
	}
	for _, p := range order {
		d.AvailableTokens = append(d.AvailableTokens, AvailableTokens{PolicyName: p, TokenIDs: avail[p]})
	}
	return d
}

// entitiesByID loads the entities the process version refers to.
func (r *run) entitiesByID() map[string]Entity {
	out := map[string]Entity{}
	add := func(id string) {
		if _, ok := out[id]; ok || id == "" {
			return
		}
		if e, err := r.tx.GetEntity(r.m.OrgID, id); err == nil {
			out[id] = e
		}
	}
	for _, st := range r.proc.Steps {
		if st.Routing != nil {
			add(st.Routing.EntityID)
		}
		for _, p := range st.Parameters {
			if p.Type == TypeEntity {
				add(p.EntityID)
			}
			if p.ReadFromEntity != nil {
				add(p.ReadFromEntity.EntityID)
			}
			if p.AdvancedOptions != nil {
				add(p.AdvancedOptions.InsertOnEntity)
			}
		}
	}
	return out
}

func (r *run) simplifiedView(a Action, consensed bool) SimplifiedView {
	_, st := stepByID(r.proc.Steps, a.StepID)
	writes := r.visibleWrites()
	return SimplifiedView{IsStepConsensed: consensed, StepID: a.StepID, ActionID: a.ID, ID: r.m.ID, Name: r.m.Name, ProcessID: r.m.ProcessID,
		OrgID: r.m.OrgID, Status: r.m.Status, CreatedAt: r.m.CreatedAt, UpdatedAt: r.m.UpdatedAt,
		ReadFromEntityMapping: r.readMapping(a.ID), MeasurementDefinition: r.definition(),
		EntityDataItems: entityDataItems(writes), EntityManipulations: writes,
		EntitiesByID: r.entitiesByID(), Process: r.embed(), UnfilledPolicies: r.unfilled(), CurrentStep: r.currentStep(),
		WebhookURLs: st.WebhookURLs, PendingPolicies: r.pending()}
}

// actionView shows an action; for a reproval, data is the reproved action's.
func (r *run) actionView(a Action, reproved *Action) ActionView {
	_, st := stepByID(r.proc.Steps, a.StepID)
	v := ActionView{ID: a.ID, TokenID: a.TokenID, Type: a.Type, UserAddress: a.UserID, Username: a.Username, UserID: a.UserID,
		TransactionHash: a.TransactionHash, Observation: a.Observation, MeasurementID: a.MeasurementID, StepID: a.StepID,
		PolicyName: a.PolicyName, LedgerHash: a.LedgerHash, LeafHash: a.LeafHash, ReprovesActionID: a.ReprovesActionID, CreatedAt: a.CreatedAt,
		Step: r.stepView(*st, true), Measurement: r.summary(), Data: []DataView{}, CurrentStep: r.currentStep(), Signature: a.Signature}
	shown := a
	if reproved != nil {
		shown = *reproved
	}
	v.Data = dataViews(shown, st, r.hidden())
	v.Sheets = sheetHashes(shown)
	v.OnBehalfOf = a.onBehalfOf()
	return v
}

// readRun loads a measurement for viewing.
func (s *Service) readRun(tx Tx, p *Principal, measurementID string) (*run, error) {
	m, proc, actions, err := tx.ReadMeasurement(p.OrgID, measurementID)
	if err != nil {
		return nil, err
	}
	r := &run{s: s, tx: tx, p: p, m: m, proc: proc, actions: actions, now: s.Now()}
	r.def = engineDef(r.proc.Steps)
	return r, nil
}

// GetMeasurement returns the measurement response. Errors: CodeNotFound.
func (s *Service) GetMeasurement(ctx context.Context, p *Principal, id string) (MeasurementView, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return MeasurementView{}, err
	}
	var out MeasurementView
	err := s.store.View(ctx, func(tx Tx) error { // readRun reads in one statement
		r, err := s.readRun(tx, p, id)
		if err != nil {
			return err
		}
		out = r.view()
		return nil
	})
	return out, err
}

// Permitted is what the caller may do on a measurement now, by the same
// rules Act and Reprove apply: what a page offers (semantics §14).
type Permitted struct {
	// Steps are the open steps where the caller can fill a seat now.
	Steps []ActionableStep
	// Write and Approve: the caller's functions action:write (save data)
	// and action:approve (approve or reject).
	Write, Approve bool
	// Reprovable are the ids of the actions the caller may reprove.
	Reprovable []string
}

// GetMeasurementPermitted returns the measurement response and what the
// caller may do on it now. Errors: those of GetMeasurement.
func (s *Service) GetMeasurementPermitted(ctx context.Context, p *Principal, id string) (MeasurementView, Permitted, error) {
	var out MeasurementView
	var can Permitted
	if err := p.Require(FnMeasurementRead); err != nil {
		return out, can, err
	}
	err := s.store.View(ctx, func(tx Tx) error { // readRun reads in one statement
		r, err := s.readRun(tx, p, id)
		if err != nil {
			return err
		}
		out = r.view()
		if r.user, err = actor(tx, p); err != nil {
			return err
		}
		if r.dels, err = delegatorsOf(tx, p.OrgID, r.user.ID, r.now); err != nil {
			return err
		}
		can = Permitted{Steps: r.actionableSteps(), Write: p.Can(FnActionWrite) || delegatedCan(r.dels, FnActionWrite),
			Approve: p.Can(FnActionApprove) || delegatedCan(r.dels, FnActionApprove)}
		if p.Can(FnActionReprove) && r.m.Status != engine.StatusApproved {
			for _, a := range r.actions {
				if a.Type != engine.Rejection && !a.Reproved && !a.Superseded && r.mayReprove(a.StepID) {
					can.Reprovable = append(can.Reprovable, a.ID)
				}
			}
		}
		return nil
	})
	return out, can, err
}

// GetAction returns one action with its step, measurement and data. Errors: CodeNotFound.
func (s *Service) GetAction(ctx context.Context, p *Principal, id string) (ActionView, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return ActionView{}, err
	}
	var out ActionView
	err := s.store.Read(ctx, func(tx Tx) error {
		a, err := tx.GetAction(p.OrgID, id)
		if err != nil {
			return err
		}
		r, err := s.readRun(tx, p, a.MeasurementID)
		if err != nil {
			return err
		}
		var reproved *Action
		if a.ReprovesActionID != "" {
			if t, err := tx.GetAction(p.OrgID, a.ReprovesActionID); err == nil {
				reproved = &t
			}
		}
		out = r.actionView(a, reproved)
		return nil
	})
	return out, err
}

// ListMeasurements pages the measurements q selects, newest first. With
// q.Actionable, those where p can fill a seat now (actionableSteps), each
// with those steps; nothing for a caller who may not act at all.
func (s *Service) ListMeasurements(ctx context.Context, p *Principal, q MeasurementQuery) ([]MeasurementSummary, int, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return nil, 0, err
	}
	if q.Status != "" && !slices.Contains(MeasurementStatuses, q.Status) {
		return nil, 0, Invalid("status", "must be one of %s", strings.Join(MeasurementStatuses, ", "))
	}
	out := []MeasurementSummary{}
	var total int
	q.Now = s.Now()
	err := s.store.View(ctx, func(tx Tx) error { // the page, its total and its versions are one statement
		var user User
		var dels []delegator
		if q.Actionable {
			var err error
			if user, err = actor(tx, p); err != nil {
				return err
			}
			if dels, err = delegatorsOf(tx, p.OrgID, user.ID, q.Now); err != nil {
				return err
			}
			if !mayAct(p) {
				dels = slices.DeleteFunc(dels, func(d delegator) bool { return !mayActFor(d) })
				if len(dels) == 0 {
					return nil
				}
			}
			q.Filler = fillerOf(user, p.Policies, dels)
			if !mayAct(p) {
				q.Filler.Keys = nil // only delegated seats
			}
		}
		list, n, err := tx.ListMeasurements(p.OrgID, q)
		if err != nil {
			return err
		}
		total = n
		for _, m := range list {
			r := &run{tx: tx, p: p, user: user, m: m.Measurement, proc: Process{Steps: m.Steps}, def: engineDef(m.Steps), now: q.Now, dels: dels}
			sum := r.summary()
			if q.Actionable {
				sum.ActionableSteps = r.actionableSteps()
			}
			out = append(out, sum)
		}
		return nil
	})
	return out, total, err
}

// actionableSteps lists the open steps where the run's user can fill a
// seat now, as an action of theirs could (seatHolder, engine.SeatsFor).
func (r *run) actionableSteps() []ActionableStep {
	out := []ActionableStep{}
	if !seatsOpen(r.m) {
		return out
	}
	for _, id := range engine.OpenSteps(r.def, r.m.State) {
		_, sd := r.def.Step(id)
		_, st := stepByID(r.proc.Steps, id)
		ss := r.m.State.Steps[id]
		holds, _ := seatHolder(*st, r.user.Roles, r.p.Policies)
		pxs, _ := proxies(r.dels, *st)
		seats, onBehalfOf := engine.SeatsOf(sd, ss, r.user.ID, holds, pxs)
		if len(seats) == 0 {
			continue
		}
		a := ActionableStep{StepID: id, Label: st.Label, PolicyNames: seats, OpenedAt: At(ss.OpenedAt), DueAt: dueAt(*st, ss.OpenedAt, r.calendars())}
		if del := delegatorByID(r.dels, onBehalfOf); del != nil {
			a.OnBehalfOf = &OnBehalfOf{UserID: del.ID, Name: displayName(del.User)}
		}
		a.Overdue = a.DueAt != nil && a.DueAt.Before(r.now.Time)
		out = append(out, a)
	}
	return out
}

// readMapping says which parameters the action's data took from which
// records (of the entities whose records the reader may read).
func (r *run) readMapping(actionID string) ReadMapping {
	m := ReadMapping{Actions: map[string]any{}, Entity: map[string]any{}}
	var reads []EntityRead
	for _, rd := range r.reads {
		if e, err := r.tx.GetEntity(r.m.OrgID, rd.EntityID); err == nil && canReadRecords(r.p, e) && !r.hidden()[rd.ParameterID] {
			reads = append(reads, rd)
		}
	}
	if len(reads) == 0 {
		return m
	}
	m.Actions[actionID] = reads
	for _, rd := range reads {
		ids, _ := m.Entity[rd.EntityID].([]string)
		if !slices.Contains(ids, rd.RecordID) {
			m.Entity[rd.EntityID] = append(ids, rd.RecordID)
		}
	}
	return m
}

// visibleWrites are the records this run wrote, as the reader may see
// them: only those of entities whose records they may read, without the
// values hidden from them there or in the step that wrote them.
func (r *run) visibleWrites() []EntityData {
	out := []EntityData{}
	hiddenNames := map[string]bool{}
	for _, st := range r.proc.Steps {
		for _, p := range st.Parameters {
			if r.hidden()[p.ID] {
				hiddenNames[p.Name] = true
			}
		}
	}
	for _, w := range r.writes {
		e, err := r.tx.GetEntity(r.m.OrgID, w.EntityID)
		if err != nil || !canReadRecords(r.p, e) {
			continue
		}
		inRecords := hiddenInRecords(r.p, e)
		seen := EntityData{EntityID: w.EntityID}
		for _, d := range w.Data {
			rec, ok := d.(Record)
			if !ok {
				continue
			}
			vals := map[string]any{}
			for name, v := range rec.Values {
				ep, _ := e.ParamByName(name)
				if !hiddenNames[name] && !inRecords[ep.ID] {
					vals[name] = v
				}
			}
			rec.Values = vals
			seen.Data = append(seen.Data, rec)
		}
		out = append(out, seen)
	}
	return out
}

// entityDataItems lists the values of the records written to each entity,
// by parameter name.
func entityDataItems(writes []EntityData) []EntityData {
	out := []EntityData{}
	for _, w := range writes {
		items := EntityData{EntityID: w.EntityID}
		for _, d := range w.Data {
			if rec, ok := d.(Record); ok {
				items.Data = append(items.Data, rec.Values)
			}
		}
		out = append(out, items)
	}
	return out
}
