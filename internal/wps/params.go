package wps

import (
	"cmp"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Parameter types (semantics section 4). DataItem types use the same names.
const (
	TypeText        = "TEXT"
	TypeLongText    = "LONG_TEXT"
	TypeInt         = "INT"
	TypeNumber      = "NUMBER"
	TypeBoolean     = "BOOLEAN"
	TypeDate        = "DATE"
	TypeDateTime    = "DATETIME"
	TypeSelect      = "SELECT"
	TypeMultiSelect = "MULTI_SELECT"
	TypeEmail       = "EMAIL"
	TypeURL         = "URL"
	TypeAttachment  = "ATTACHMENT"
	TypeEntity      = "ENTITY"
	TypeTable       = "TABLE"
	TypeFormula     = "FORMULA"
)

// ParamTypes lists every parameter type.
var ParamTypes = []string{TypeText, TypeLongText, TypeInt, TypeNumber, TypeBoolean, TypeDate, TypeDateTime,
	TypeSelect, TypeMultiSelect, TypeEmail, TypeURL, TypeAttachment, TypeEntity, TypeTable, TypeFormula}

// uniqueTypes are the types whose values can be unique: one scalar each.
var uniqueTypes = []string{TypeText, TypeInt, TypeNumber, TypeDate, TypeDateTime, TypeSelect, TypeEmail, TypeURL, TypeEntity}

// Parameter is one typed input of an entity or a step. Sub-objects are
// stored and returned as sent; the service assigns their ids.
type Parameter struct {
	ID                             string                        `json:"id"`
	Name                           string                        `json:"name"`
	Label                          string                        `json:"label"`
	Type                           string                        `json:"type" enum:"TEXT,LONG_TEXT,INT,NUMBER,BOOLEAN,DATE,DATETIME,SELECT,MULTI_SELECT,EMAIL,URL,ATTACHMENT,ENTITY,TABLE,FORMULA"`
	Description                    string                        `json:"description,omitempty"`
	Index                          int                           `json:"index"`
	Decimals                       *int                          `json:"decimals,omitempty" minimum:"0" maximum:"12"`
	IsRequired                     bool                          `json:"isRequired"`
	IsUnique                       bool                          `json:"isUnique"`
	IsPermanent                    bool                          `json:"isPermanent"`
	ComputedFormula                []string                      `json:"computedFormula,omitempty"`
	ParameterID                    string                        `json:"parameterId,omitempty"`
	StepID                         string                        `json:"stepId,omitempty"`
	EntityID                       string                        `json:"entityId,omitempty" doc:"For an ENTITY parameter: the linked entity (its id, or its name in a request)"`
	EntityOperation                []string                      `json:"entityOperation,omitempty"`
	AutoFillEntityRelation         string                        `json:"autoFillEntityRelation,omitempty"`
	ContractTemplateID             string                        `json:"contractTemplateId,omitempty"`
	ContractTemplate               *ContractTemplate             `json:"contractTemplate,omitempty"`
	ShowColumns                    []string                      `json:"showColumns,omitempty"`
	ViewColumns                    []string                      `json:"viewColumns,omitempty"`
	AdvancedOptions                *AdvancedOptions              `json:"advancedOptions,omitempty"`
	OptionItems                    []OptionItem                  `json:"optionItems,omitempty"`
	SheetData                      *SheetData                    `json:"sheetData,omitempty"`
	ReadFromEntity                 *ReadFromEntity               `json:"readFromEntity,omitempty"`
	ReadFromOtherMeasurementData   *ReadFromOtherMeasurementData `json:"readFromOtherMeasurementData,omitempty"`
	ReadFromOtherMeasurementDataID string                        `json:"readFromOtherMeasurementDataId,omitempty"`
	APICalls                       []APICallLink                 `json:"apiCalls,omitempty"`
	Parameters                     []Parameter                   `json:"parameters,omitempty" doc:"The columns of a TABLE parameter"`
	CreatedAt                      *Time                         `json:"createdAt,omitempty"`
	UpdatedAt                      *Time                         `json:"updatedAt,omitempty"`
}

// multipleTypes are the types a parameter with advancedOptions.isMultiple
// may have: it then takes a list of such values.
var multipleTypes = []string{TypeText, TypeLongText, TypeEmail, TypeURL, TypeSelect, TypeAttachment, TypeEntity}

// Multiple reports whether p takes a list of values (advancedOptions.isMultiple).
func (p Parameter) Multiple() bool {
	return p.AdvancedOptions != nil && p.AdvancedOptions.IsMultiple && slices.Contains(multipleTypes, p.Type)
}

// AdvancedOptions tunes validation and display of a parameter.
type AdvancedOptions struct {
	ID                     string   `json:"id,omitempty"`
	Tooltip                string   `json:"tooltip,omitempty"`
	Description            string   `json:"description,omitempty"`
	Placeholder            string   `json:"placeholder,omitempty"`
	Max                    *float64 `json:"max,omitempty"`
	MaxLength              *int     `json:"maxLength,omitempty" minimum:"0"`
	Min                    *float64 `json:"min,omitempty"`
	MinLength              *int     `json:"minLength,omitempty" minimum:"0"`
	Decimals               *int     `json:"decimals,omitempty" minimum:"0" maximum:"12"`
	Sort                   *int     `json:"sort,omitempty"`
	Currency               string   `json:"currency,omitempty"`
	Locale                 string   `json:"locale,omitempty"`
	DateFormat             string   `json:"dateFormat,omitempty"`
	IsHidden               bool     `json:"isHidden"`
	RightFreeze            bool     `json:"rightFreeze"`
	LeftFreeze             bool     `json:"leftFreeze"`
	HasCustomColor         bool     `json:"hasCustomColor"`
	HasMetadata            bool     `json:"hasMetadata"`
	IsMultiple             bool     `json:"isMultiple"`
	HiddenFrom             []string `json:"hiddenFrom,omitempty"`
	InsertOnEntity         string   `json:"insertOnEntity,omitempty"`
	InsertOnEntityMetadata []string `json:"insertOnEntityMetadata,omitempty"`
	EntityOperation        []string `json:"entityOperation,omitempty"`
	ParameterID            string   `json:"parameterId,omitempty"`
	EntityParameterID      string   `json:"entityParameterId,omitempty"`
	CreatedAt              *Time    `json:"createdAt,omitempty"`
	UpdatedAt              *Time    `json:"updatedAt,omitempty"`
	DeletedAt              *Time    `json:"deletedAt" nullable:"true"`
}

// OptionItem is one allowed value of a SELECT or MULTI_SELECT parameter.
type OptionItem struct {
	ID                string         `json:"id,omitempty"`
	Value             string         `json:"value"`
	Label             string         `json:"label,omitempty"`
	Color             string         `json:"color,omitempty"`
	ParameterID       string         `json:"parameterId,omitempty"`
	EntityParameterID string         `json:"entityParameterId,omitempty"`
	Meta              map[string]any `json:"meta,omitempty"`
	Persisted         bool           `json:"persisted,omitempty"`
	CreatedAt         *Time          `json:"createdAt,omitempty"`
	UpdatedAt         *Time          `json:"updatedAt,omitempty"`
	DeletedAt         *Time          `json:"deletedAt" nullable:"true"`
}

// SheetData links a parameter to a spreadsheet cell.
type SheetData struct {
	ID                string `json:"id,omitempty"`
	SheetAPIID        string `json:"sheetApiId,omitempty"`
	Cell              string `json:"cell,omitempty"`
	InputType         string `json:"inputType,omitempty"`
	ParameterID       string `json:"parameterId,omitempty"`
	EntityID          string `json:"entityId,omitempty"`
	EntityParameterID string `json:"entityParameterId,omitempty"`
	Page              string `json:"page,omitempty"`
	Formula           string `json:"formula,omitempty"`
}

// ReadFromEntity fills target parameters from the record of EntityID whose
// ReadParameterID equals the value of OriginParameterID.
type ReadFromEntity struct {
	ID                 string   `json:"id,omitempty"`
	ParameterID        string   `json:"parameterId,omitempty" doc:"The parameter that holds this link"`
	StepID             string   `json:"stepId,omitempty"`
	ProcessID          string   `json:"processId,omitempty"`
	EntityID           string   `json:"entityId,omitempty"`
	ReadParameterID    string   `json:"readParameterId,omitempty"`
	OriginParameterID  string   `json:"originParameterId,omitempty"`
	TargetParameterIDs []string `json:"targetParameterIds,omitempty"`
	CreatedAt          *Time    `json:"createdAt,omitempty"`
	UpdatedAt          *Time    `json:"updatedAt,omitempty"`
}

// ReadFromOtherMeasurementData fills parameters from the latest measurement
// of ProcessID whose SearchFieldID equals the value.
type ReadFromOtherMeasurementData struct {
	ID              string          `json:"id,omitempty"`
	ProcessID       string          `json:"processId,omitempty"`
	StepID          string          `json:"stepId,omitempty"`
	ParameterID     string          `json:"parameterId,omitempty"`
	ReadParameterID string          `json:"readParameterId,omitempty"`
	SearchFieldID   string          `json:"searchFieldId,omitempty"`
	SelectedFields  []SelectedField `json:"selectedFields,omitempty"`
}

// SelectedField maps a read parameter to the parameter it fills.
type SelectedField struct {
	ReadParameterID  string `json:"readParameterId"`
	WriteParameterID string `json:"writeParameterId"`
}

// ContractTemplate names the entity a contract is generated from.
type ContractTemplate struct {
	TemplateEntityID   string `json:"templateEntityId,omitempty"`
	TemplateEntityName string `json:"templateEntityName,omitempty"`
}

// APICallLink attaches an API call to a parameter.
type APICallLink struct {
	ID          string    `json:"id,omitempty"`
	APICallID   string    `json:"apiCallId,omitempty"`
	ParameterID string    `json:"parameterId,omitempty"`
	Parameter   *ParamRef `json:"parameter,omitempty" doc:"The parameter the call fills"`
	APICall     *APICall  `json:"apiCall,omitempty"`
	CreatedAt   *Time     `json:"createdAt,omitempty"`
}

// APICall is a configured HTTP call that fills a parameter.
type APICall struct {
	ID          string   `json:"id,omitempty"`
	Type        string   `json:"type,omitempty" doc:"The HTTP method: POST (default) or GET"`
	Description string   `json:"description,omitempty"`
	Sort        []string `json:"sort,omitempty"`
	Parameters  []any    `json:"parameters,omitempty" doc:"The parameters (names or ids) whose current values the call sends"`
	URL         string   `json:"url,omitempty" doc:"The endpoint; its host must be on the server's allow-list (WPS_API_CALL_HOSTS)"`
	ResultPath  string   `json:"resultPath,omitempty" doc:"Where the value is in the JSON answer (dot path); default: the answer's value member, or the answer itself"`
	CreatedAt   *Time    `json:"createdAt,omitempty"`
	UpdatedAt   *Time    `json:"updatedAt,omitempty"`
}

// ParamLimits bound a definition (semantics section 7).
const (
	MaxParamsPerOwner = 200
	MaxTableDepth     = 1
)

// RetiredParam is a parameter removed from an entity: its records keep
// its values (hidden), and a parameter of the same name added again in
// its place takes its id back, so that they show again.
type RetiredParam struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Type   string `json:"type"`
	Parent string `json:"parent,omitempty"` // the TABLE it was a column of
}

// paramIDs gives the parameters of a definition being saved their ids.
// Values are stored by parameter id, so a parameter keeps its id while it
// is the same parameter: one sent with the id of a current parameter
// keeps it; one sent without (or with an unknown id) takes the id of the
// parameter of the same name in the same place (step, table) that the
// definition has and the body does not keep, or had before it was removed;
// any other gets a new id.
type paramIDs struct {
	current map[string]Parameter  // the definition's parameters and columns, by id
	byName  map[string]string     // place and name → id: current ones first, then removed ones
	kept    map[string]*Parameter // current ids the body sends, and the parameter that sends each first
	used    map[string]bool
}

func newParamIDs(current map[string]Parameter) *paramIDs {
	if current == nil {
		current = map[string]Parameter{}
	}
	return &paramIDs{current: current, byName: map[string]string{}, kept: map[string]*Parameter{}, used: map[string]bool{}}
}

func placeKey(place, name string) string { return place + "\x00" + strings.TrimSpace(name) }

// name makes id the one a new parameter called name in place takes back,
// unless another one already is.
func (ids *paramIDs) name(place, name, id string) {
	if k := placeKey(place, name); ids.byName[k] == "" {
		ids.byName[k] = id
	}
}

// names records the names of params (in place) and of their columns.
func (ids *paramIDs) names(params []Parameter, places ...string) {
	for _, p := range params {
		for _, place := range places {
			ids.name(place, p.Name, p.ID)
		}
		ids.names(p.Parameters, p.ID)
	}
}

// keep notes the current ids that params (and their columns) are sent
// with, before any id is assigned: they stay with the parameter that
// sends them.
func (ids *paramIDs) keep(params []Parameter) {
	for i := range params {
		p := &params[i]
		if _, ok := ids.current[p.ID]; ok && ids.kept[p.ID] == nil {
			ids.kept[p.ID] = p
		}
		ids.keep(p.Parameters)
	}
}

// missing reports whether some parameter of params will not keep the id
// it is sent with.
func (ids *paramIDs) missing(params []Parameter) bool {
	for i := range params {
		if ids.kept[params[i].ID] != &params[i] || ids.missing(params[i].Parameters) {
			return true
		}
	}
	return false
}

// assign gives p its id, looking for its name in places (in order).
func (ids *paramIDs) assign(p *Parameter, places []string) {
	if p.ID != "" && ids.kept[p.ID] == p {
		ids.used[p.ID] = true
		return
	}
	for _, place := range places {
		id := ids.byName[placeKey(place, p.Name)]
		if id != "" && !ids.used[id] && ids.kept[id] == nil {
			p.ID, ids.used[id] = id, true
			return
		}
	}
	p.ID = NewID()
}

// removedParams lists the parameters of old and their columns that live
// (the new definition's parameters and columns, by id) lacks; parent is the
// id of old's place ("" for an entity's, the step's for a step's).
func removedParams(old []Parameter, parent string, live map[string]Parameter) []RetiredParam {
	var out []RetiredParam
	for _, p := range old {
		if _, ok := live[p.ID]; !ok {
			out = append(out, RetiredParam{ID: p.ID, Name: p.Name, Type: p.Type, Parent: parent})
		}
		out = append(out, removedParams(p.Parameters, p.ID, live)...)
	}
	return out
}

// keptValues checks the removal of parameters whose values are kept: a
// removed parameter that was permanent (in old, by id) and that holds says
// holds a value is a conflict, named by the field of the list it was
// removed from (lists: the new definition's lists by place id; fallback
// for a list it no longer has).
func keptValues(removed []RetiredParam, old map[string]Parameter, lists map[string]string, fallback, holders string, holds func(id string) (bool, error)) error {
	var v Validator
	for _, r := range removed {
		if !old[r.ID].IsPermanent {
			continue
		}
		held, err := holds(r.ID)
		if err != nil {
			return err
		}
		if held {
			field, ok := lists[r.Parent]
			if !ok {
				field = fallback
			}
			v.Add(field, "%q is permanent and %s hold values for it: it cannot be removed", r.Name, holders)
		}
	}
	return v.Conflict()
}

// listFields names the field of each parameter list of params (at field)
// by the id of its place: place itself, and each TABLE's id for its columns.
func listFields(params []Parameter, place, field string, into map[string]string) {
	into[place] = field
	for j, p := range params {
		if p.Type == TypeTable {
			listFields(p.Parameters, p.ID, fieldIndex(field, j)+".parameters", into)
		}
	}
}

// checkSheetOwner checks each sheetData.entityId of params: empty, or
// owner (the id of the entity that owns the parameters; "" for a step's),
// which an entity's parameters are given when they send none.
func checkSheetOwner(v *Validator, field string, params []Parameter, owner string) {
	for j := range params {
		p := &params[j]
		f := fieldIndex(field, j)
		if sd := p.SheetData; sd != nil {
			switch {
			case sd.EntityID == owner:
			case owner == "":
				v.Add(f+".sheetData.entityId", "must be empty: a step's parameter belongs to no entity")
			case sd.EntityID != "":
				v.Add(f+".sheetData.entityId", "must be empty or %q, the id of the entity the parameter belongs to", owner)
			default:
				sd.EntityID = owner
			}
		}
		checkSheetOwner(v, f+".parameters", p.Parameters, owner)
	}
}

// normalizeParams checks a parameter list, fills defaults and assigns ids to
// the parameters and sub-objects that have none. field is the path of the
// list in the request ("parameters", "steps[0].parameters"). ids gives the
// parameters their ids (places: where the list is, for a parameter's name
// to find its former id). depth counts TABLE nesting.
func normalizeParams(v *Validator, field string, params []Parameter, ids *paramIDs, places []string, depth int) {
	v.Check(len(params) <= MaxParamsPerOwner, field, "must have at most %d parameters", MaxParamsPerOwner)
	seen := map[string]bool{}
	for i := range params {
		p := &params[i]
		f := fieldIndex(field, i)
		p.Name = strings.TrimSpace(p.Name)
		if !validName(p.Name, 100) {
			v.Add(f+".name", "must be 1 to 100 printable characters")
		} else if seen[p.Name] {
			v.Add(f+".name", "%q is used by another parameter", p.Name)
		}
		seen[p.Name] = true
		if p.Label == "" {
			p.Label = p.Name
		}
		if !slices.Contains(ParamTypes, p.Type) {
			v.Add(f+".type", "must be one of %s", strings.Join(ParamTypes, ", "))
		}
		if p.IsUnique && !slices.Contains(uniqueTypes, p.Type) {
			v.Add(f+".isUnique", "a %s parameter cannot be unique", p.Type)
		}
		ids.assign(p, places)
		p.Index = i
		v.Check(!slices.ContainsFunc(p.EntityOperation, func(o string) bool { return o != "WRITE" }), f+".entityOperation", "the one entity operation is WRITE")
		v.Check(len(p.EntityOperation) == 0 || p.Type == TypeEntity, f+".entityOperation", "only an ENTITY parameter writes to its linked record")
		v.Check(len(p.OptionItems) == 0 || p.Type == TypeSelect || p.Type == TypeMultiSelect, f+".optionItems", "a %s parameter has no options: only SELECT and MULTI_SELECT do", p.Type)
		if p.AdvancedOptions != nil {
			a := p.AdvancedOptions
			setID(&a.ID)
			a.DeletedAt = nil // the service's, like the times: an option set is not deleted
			v.Check(!slices.ContainsFunc(a.EntityOperation, func(o string) bool { return o != "WRITE" }), f+".advancedOptions.entityOperation", "the one entity operation is WRITE")
			v.Check(len(a.EntityOperation) == 0 || p.Type == TypeEntity, f+".advancedOptions.entityOperation", "only an ENTITY parameter writes to its linked record")
			if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
				v.Add(f+".advancedOptions.min", "must not be greater than max")
			}
			if a.MinLength != nil && a.MaxLength != nil && *a.MinLength > *a.MaxLength {
				v.Add(f+".advancedOptions.minLength", "must not be greater than maxLength")
			}
			if a.IsMultiple && !slices.Contains(multipleTypes, p.Type) {
				v.Add(f+".advancedOptions.isMultiple", "a %s parameter cannot take several values (only %s)", p.Type, strings.Join(multipleTypes, ", "))
			}
			if a.IsMultiple && p.IsUnique {
				v.Add(f+".advancedOptions.isMultiple", "a unique parameter cannot take several values")
			}
			if a.IsMultiple && (a.Min != nil && *a.Min < 0 || a.Max != nil && *a.Max < 0) {
				v.Add(f+".advancedOptions.min", "counts of values cannot be negative")
			}
			checkOptionsApply(v, f+".advancedOptions", p)
		}
		if p.SheetData != nil {
			setID(&p.SheetData.ID)
		}
		if p.ReadFromEntity != nil {
			setID(&p.ReadFromEntity.ID)
		}
		if p.ReadFromOtherMeasurementData != nil {
			setID(&p.ReadFromOtherMeasurementData.ID)
		}
		for j := range p.APICalls {
			setID(&p.APICalls[j].ID)
		}
		if depth > 0 { // what fills a step's parameters works on them, not on the cells of a row
			v.Check(len(p.APICalls) == 0, f+".apiCalls", "a TABLE column cannot be filled by an API call")
			v.Check(p.ReadFromEntity == nil, f+".readFromEntity", "a TABLE column cannot be filled from an entity")
			v.Check(p.ReadFromOtherMeasurementData == nil, f+".readFromOtherMeasurementData", "a TABLE column cannot be filled from another measurement")
			v.Check(p.AutoFillEntityRelation == "", f+".autoFillEntityRelation", "a TABLE column cannot be filled from a linked record")
			v.Check(p.SheetData == nil || p.SheetData.SheetAPIID == "", f+".sheetData", "a TABLE column cannot be linked to a sheet cell")
			v.Check(p.ContractTemplateID == "", f+".contractTemplateId", "a TABLE column cannot be a generated document")
			v.Check(!p.IsUnique, f+".isUnique", "a TABLE column cannot be unique: uniqueness is of a whole value")
		}
		switch p.Type {
		case TypeSelect, TypeMultiSelect:
			if len(p.OptionItems) == 0 {
				v.Add(f+".optionItems", "a %s parameter needs at least one option", p.Type)
			}
			values := map[string]bool{}
			for j := range p.OptionItems {
				o := &p.OptionItems[j]
				setID(&o.ID)
				o.DeletedAt = nil // the service's: a listed option is live
				if o.Value == "" {
					v.Add(fieldIndex(f+".optionItems", j)+".value", "must not be empty")
				} else if values[o.Value] {
					v.Add(fieldIndex(f+".optionItems", j)+".value", "%q is listed twice", o.Value)
				}
				values[o.Value] = true
				if o.Label == "" {
					o.Label = o.Value
				}
			}
		case TypeTable:
			if depth >= MaxTableDepth {
				v.Add(f+".type", "a TABLE cannot hold another TABLE")
			} else if len(p.Parameters) == 0 {
				v.Add(f+".parameters", "a TABLE parameter needs at least one column")
			}
			normalizeParams(v, f+".parameters", p.Parameters, ids, []string{p.ID}, depth+1)
		case TypeFormula:
			if len(p.ComputedFormula) == 0 {
				v.Add(f+".computedFormula", "a FORMULA parameter needs a formula")
			}
		}
		if p.Type != TypeTable && len(p.Parameters) > 0 {
			v.Add(f+".parameters", "only a TABLE parameter has nested parameters")
		}
	}
}

func setID(id *string) {
	if *id == "" {
		*id = NewID()
	}
}

// decimalsOf is the rounding of a NUMBER: the parameter's own, else its
// advanced options', else none (-1).
func decimalsOf(p Parameter) int32 {
	switch {
	case p.Decimals != nil:
		return int32(*p.Decimals)
	case p.AdvancedOptions != nil && p.AdvancedOptions.Decimals != nil:
		return int32(*p.AdvancedOptions.Decimals)
	}
	return -1
}

// stamp fills what a saved definition says of its parameters' parts and
// no client sets: parameterId (the parameter a part belongs to, and a
// parameter's own id), entityParameterId for an entity's parameters, the
// step of a step's parameters and columns, readFromOtherMeasurementDataId,
// an option's persisted, an API call link's parameter, and createdAt and
// updatedAt of each part: kept from prev (the definition's current
// parameters, by id) while the part is unchanged, now otherwise.
func stamp(params []Parameter, prev map[string]Parameter, stepID string, entity bool, now Time) {
	for i := range params {
		p := &params[i]
		old := prev[p.ID]
		p.ParameterID = p.ID
		if stepID != "" {
			p.StepID = stepID
		}
		entityParam := ""
		if entity {
			entityParam = p.ID
		}
		// A parameter's single parts keep their ids (a client may send
		// them without), its options theirs, matched by value.
		if a, o := p.AdvancedOptions, old.AdvancedOptions; a != nil && o != nil {
			a.ID = o.ID
		}
		if a, o := p.SheetData, old.SheetData; a != nil && o != nil {
			a.ID = o.ID
		}
		if a, o := p.ReadFromEntity, old.ReadFromEntity; a != nil && o != nil {
			a.ID = o.ID
		}
		if a, o := p.ReadFromOtherMeasurementData, old.ReadFromOtherMeasurementData; a != nil && o != nil {
			a.ID = o.ID
		}
		if a := p.AdvancedOptions; a != nil {
			a.ParameterID = p.ID
			if entity {
				a.EntityParameterID = entityParam
			}
			a.CreatedAt, a.UpdatedAt = times(a, old.AdvancedOptions, now, func(x *AdvancedOptions) (*Time, *Time) { return x.CreatedAt, x.UpdatedAt },
				func(x *AdvancedOptions) { x.CreatedAt, x.UpdatedAt = nil, nil })
		}
		if sd := p.SheetData; sd != nil {
			sd.ParameterID = p.ID
			if entity {
				sd.EntityParameterID = entityParam
			}
		}
		if rf := p.ReadFromEntity; rf != nil {
			rf.ParameterID = p.ID
			rf.CreatedAt, rf.UpdatedAt = times(rf, old.ReadFromEntity, now, func(x *ReadFromEntity) (*Time, *Time) { return x.CreatedAt, x.UpdatedAt },
				func(x *ReadFromEntity) { x.CreatedAt, x.UpdatedAt = nil, nil })
		}
		p.ReadFromOtherMeasurementDataID = ""
		if rf := p.ReadFromOtherMeasurementData; rf != nil {
			rf.ParameterID = p.ID
			p.ReadFromOtherMeasurementDataID = rf.ID
		}
		oldOptions := map[string]*OptionItem{}
		byValue := map[string]*OptionItem{}
		for j := range old.OptionItems {
			oldOptions[old.OptionItems[j].ID] = &old.OptionItems[j]
			byValue[old.OptionItems[j].Value] = &old.OptionItems[j]
		}
		used := map[string]bool{}
		for _, o := range p.OptionItems {
			used[o.ID] = true
		}
		for j := range p.OptionItems {
			o := &p.OptionItems[j]
			if prior := byValue[o.Value]; oldOptions[o.ID] == nil && prior != nil && !used[prior.ID] {
				o.ID, used[prior.ID] = prior.ID, true
			}
			o.ParameterID, o.EntityParameterID, o.Persisted = p.ID, entityParam, true
			o.CreatedAt, o.UpdatedAt = times(o, oldOptions[o.ID], now, func(x *OptionItem) (*Time, *Time) { return x.CreatedAt, x.UpdatedAt },
				func(x *OptionItem) { x.CreatedAt, x.UpdatedAt = nil, nil })
		}
		for j := range p.APICalls {
			l := &p.APICalls[j]
			l.ParameterID = p.ID
			l.Parameter = &ParamRef{ID: p.ID, Name: p.Name, Label: p.Label, Type: p.Type}
			if l.CreatedAt == nil {
				l.CreatedAt = &now
			}
		}
		stamp(p.Parameters, prev, stepID, entity, now)
		var before *Parameter
		if _, ok := prev[p.ID]; ok {
			before = &old
		}
		p.CreatedAt, p.UpdatedAt = times(p, before, now, func(x *Parameter) (*Time, *Time) { return x.CreatedAt, x.UpdatedAt },
			func(x *Parameter) { x.CreatedAt, x.UpdatedAt, x.Index = nil, nil, 0 })
	}
}

// ParamRef names a parameter (in an API call link).
type ParamRef struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Label string `json:"label"`
	Type  string `json:"type"`
}

// times returns a part's createdAt and updatedAt: the old part's when it
// is the same but for them, now for what is new or changed.
func times[T any](cur, old *T, now Time, get func(*T) (*Time, *Time), clear func(*T)) (*Time, *Time) {
	if old == nil {
		return &now, &now
	}
	created, updated := get(old)
	if created == nil {
		created = &now
	}
	a, b := *cur, *old
	clear(&a)
	clear(&b)
	if updated == nil || !reflect.DeepEqual(a, b) {
		updated = &now
	}
	return created, updated
}

// paramsByID indexes params and their columns by id.
func paramsByID(params []Parameter, into map[string]Parameter) map[string]Parameter {
	if into == nil {
		into = map[string]Parameter{}
	}
	for _, p := range params {
		into[p.ID] = p
		paramsByID(p.Parameters, into)
	}
	return into
}

// sortParams puts parameters in the order of their advancedOptions.sort
// (those without keep their place after the sorted ones, as sent), and
// each parameter's API calls in the order of their sort (its first item,
// as a number when it is one), then renumbers index. It runs once a
// definition is valid, so that errors name parameters as sent.
func sortParams(params []Parameter) {
	slices.SortStableFunc(params, func(a, b Parameter) int {
		return cmpSort(paramSort(a), paramSort(b))
	})
	for i := range params {
		p := &params[i]
		p.Index = i
		slices.SortStableFunc(p.APICalls, func(a, b APICallLink) int { return cmpSort(callSort(a), callSort(b)) })
		sortParams(p.Parameters)
	}
}

// sortKey orders by a number, then by text; a missing key sorts last.
type sortKey struct {
	set  bool
	num  *float64
	text string
}

func paramSort(p Parameter) sortKey {
	if p.AdvancedOptions == nil || p.AdvancedOptions.Sort == nil {
		return sortKey{}
	}
	n := float64(*p.AdvancedOptions.Sort)
	return sortKey{set: true, num: &n}
}

func callSort(l APICallLink) sortKey {
	if l.APICall == nil || len(l.APICall.Sort) == 0 {
		return sortKey{}
	}
	k := sortKey{set: true, text: l.APICall.Sort[0]}
	if n, err := strconv.ParseFloat(k.text, 64); err == nil {
		k.num = &n
	}
	return k
}

func cmpSort(a, b sortKey) int {
	switch {
	case !a.set || !b.set:
		return cmpBool(b.set, a.set)
	case a.num != nil && b.num != nil:
		return cmp.Compare(*a.num, *b.num)
	case a.num != nil || b.num != nil:
		return cmpBool(b.num != nil, a.num != nil) // numbers before text
	}
	return strings.Compare(a.text, b.text)
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// Types that each advanced option acts on; set on another type, an option
// would be kept and shown back while doing nothing, so it is refused.
var (
	lengthTypes = []string{TypeText, TypeLongText, TypeEmail, TypeURL}
	rangeTypes  = []string{TypeInt, TypeNumber, TypeDate, TypeDateTime} // a FORMULA's result is not checked
	dateTypes   = []string{TypeDate, TypeDateTime}
	numberTypes = []string{TypeInt, TypeNumber, TypeFormula}
)

// ForType clears the settings p's type has no use for, those that
// checkOptionsApply refuses and a linked entity outside ENTITY, in p and
// its TABLE columns. The console's designers call it: their forms keep a
// hidden control's value while its field changes type, and the person
// changing the type means to drop what no longer shows.
func ForType(p *Parameter) {
	if p.Type != TypeSelect && p.Type != TypeMultiSelect {
		p.OptionItems = nil
	}
	if p.Type != TypeEntity {
		p.EntityID, p.ShowColumns, p.ViewColumns, p.EntityOperation = "", nil, nil, nil
	}
	for i := range p.Parameters {
		ForType(&p.Parameters[i])
	}
	a := p.AdvancedOptions
	if a == nil {
		return
	}
	if !slices.Contains(lengthTypes, p.Type) {
		a.MinLength, a.MaxLength = nil, nil
	}
	if !slices.Contains(rangeTypes, p.Type) && !p.Multiple() {
		a.Min, a.Max = nil, nil
	}
	if !slices.Contains(numberTypes, p.Type) {
		a.Currency = ""
	}
	if !slices.Contains(dateTypes, p.Type) {
		a.DateFormat = ""
	}
	if p.Type != TypeEntity {
		a.EntityOperation = nil
	}
}

// checkOptionsApply refuses the advanced options p's type has no use for,
// and a dateFormat or locale the display cannot follow.
func checkOptionsApply(v *Validator, field string, p *Parameter) {
	a := p.AdvancedOptions
	if (a.MinLength != nil || a.MaxLength != nil) && !slices.Contains(lengthTypes, p.Type) {
		name := ".maxLength" // the option set, named
		if a.MaxLength == nil {
			name = ".minLength"
		}
		v.Add(field+name, "a %s parameter has no length: only %s do", p.Type, strings.Join(lengthTypes, ", "))
	}
	if (a.Min != nil || a.Max != nil) && !slices.Contains(rangeTypes, p.Type) && !p.Multiple() {
		name := ".min"
		if a.Min == nil {
			name = ".max"
		}
		v.Add(field+name, "a %s parameter has no minimum or maximum: only %s do, and a field of several values (a count)", p.Type, strings.Join(rangeTypes, ", "))
	}
	if a.DateFormat != "" {
		if !slices.Contains(dateTypes, p.Type) {
			v.Add(field+".dateFormat", "a %s parameter has no date format: only DATE and DATETIME do", p.Type)
		} else if _, ok := DateLayout(a.DateFormat, p.Type == TypeDateTime); !ok {
			v.Add(field+".dateFormat", "must be yyyy, MM and dd, each once, between spaces or / - . , : (a DATETIME may add HH, mm and ss), such as dd/MM/yyyy")
		}
	}
	if a.Locale != "" && !slices.Contains(DisplayLocales(), a.Locale) {
		v.Add(field+".locale", "must be one of %s", strings.Join(DisplayLocales(), ", "))
	}
	if a.Currency != "" && !slices.Contains(numberTypes, p.Type) {
		v.Add(field+".currency", "a %s parameter has no currency: only %s do", p.Type, strings.Join(numberTypes, ", "))
	}
}
