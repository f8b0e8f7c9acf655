package wps

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Entity is an org's data table definition, made of typed parameters.
type Entity struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	Label           string      `json:"label"`
	OrgID           string      `json:"orgId"`
	ViewPolicyNames []string    `json:"viewPolicyNames"`
	Parameters      []Parameter `json:"parameters"`
	CreatedAt       Time        `json:"createdAt"`
	UpdatedAt       Time        `json:"updatedAt"`
	DeletedAt       *Time       `json:"deletedAt" nullable:"true"`
	// Retired are the parameters removed whose values records keep.
	Retired []RetiredParam `json:"-"`
}

// Param finds a parameter by id.
func (e *Entity) Param(id string) (Parameter, bool) {
	for _, p := range e.Parameters {
		if p.ID == id {
			return p, true
		}
	}
	return Parameter{}, false
}

// ParamByName finds a top-level parameter by name, or else by id.
func (e *Entity) ParamByName(name string) (Parameter, bool) {
	for _, p := range e.Parameters {
		if p.Name == name {
			return p, true
		}
	}
	return e.Param(name)
}

// EntityInput is the body of an entity create (full form) or update.
type EntityInput struct {
	Name            string
	Label           string
	ViewPolicyNames []string
	Parameters      []Parameter
}

// SimplifiedParam is one parameter of the compact entity form.
type SimplifiedParam struct {
	N        string   // name
	T        string   // type
	Ref      string   // linked entity (name or id) of an ENTITY parameter
	Op       []string // entity operations
	IsUnique bool
}

// FromSimplified turns the compact entity form into the full one.
func FromSimplified(n string, vp []string, p []SimplifiedParam) EntityInput {
	in := EntityInput{Name: n, ViewPolicyNames: vp, Parameters: make([]Parameter, len(p))}
	for i, sp := range p {
		in.Parameters[i] = Parameter{Name: sp.N, Type: sp.T, EntityID: sp.Ref, EntityOperation: sp.Op, IsUnique: sp.IsUnique}
	}
	return in
}

// EntityUpdate changes an entity; nil fields stay as they are. Parameters,
// when set, is the whole new list: a parameter with a known id is changed in
// place, one without an id is added, and a missing one is removed.
type EntityUpdate struct {
	Name            *string
	Label           *string
	ViewPolicyNames *[]string
	Parameters      *[]Parameter
}

// Record is one row of an entity. Values are keyed by parameter name in the
// API and by parameter id in the store.
type Record struct {
	ID        string         `json:"id"`
	EntityID  string         `json:"entityId"`
	Values    map[string]any `json:"values"`
	CreatedAt Time           `json:"createdAt"`
	UpdatedAt Time           `json:"updatedAt"`
	OrgID     string         `json:"-"`
	// ImportJobID marks a record written by an import job: hidden until
	// the job succeeds.
	ImportJobID string `json:"-"`
}

// IndexRow is one indexed value of a record: for filters, and for
// uniqueness when Unique is set (the database enforces it).
type IndexRow struct {
	OrgID, EntityID, RecordID, ParamID, Value string
	Unique                                    bool
}

// RecordFilter selects records whose parameter has a value.
type RecordFilter struct {
	ParamID string
	Value   string
}

// RecordQuery pages and filters records.
type RecordQuery struct {
	Page    Page
	Filters []RecordFilter
}

// old holds the entity's current parameters (none for a new entity) and
// retired those it had before: a parameter added by the name of one of
// them takes its id back (paramIDs).
func (s *Service) checkEntityInput(tx Tx, orgID, selfID string, in *EntityInput, old []Parameter, retired []RetiredParam) error {
	in.Name = strings.TrimSpace(in.Name)
	if in.Label == "" {
		in.Label = in.Name
	}
	var v Validator
	v.Check(validName(in.Name, 100), "name", "must be 1 to 100 printable characters")
	v.Check(validName(in.Label, 200), "label", "must be 1 to 200 printable characters")
	prev := paramsByID(old, nil)
	ids := newParamIDs(prev)
	ids.names(old, "")
	for _, r := range retired {
		ids.name(r.Parent, r.Name, r.ID)
	}
	ids.keep(in.Parameters)
	normalizeParams(&v, "parameters", in.Parameters, ids, []string{""}, 0)
	checkSheetOwner(&v, "parameters", in.Parameters, selfID)
	stamp(in.Parameters, prev, "", true, s.Now())
	for j, p := range in.Parameters {
		f := fieldIndex("parameters", j)
		v.Check(len(p.APICalls) == 0, f+".apiCalls", "API calls fill step parameters only")
		// What fills a step's values or acts at its consensus has nothing to
		// act on in a record: refused rather than kept and shown doing nothing.
		v.Check(p.ReadFromEntity == nil, f+".readFromEntity", "reading from data fills step parameters only")
		v.Check(p.ReadFromOtherMeasurementData == nil, f+".readFromOtherMeasurementData", "reading another measurement fills step parameters only")
		v.Check(p.AutoFillEntityRelation == "", f+".autoFillEntityRelation", "filling from a linked record is for step parameters only")
		v.Check(p.ContractTemplateID == "", f+".contractTemplateId", "generated documents are step parameters only")
		if a := p.AdvancedOptions; a != nil {
			v.Check(a.InsertOnEntity == "" && len(a.InsertOnEntityMetadata) == 0, f+".advancedOptions.insertOnEntity", "writing to data happens at a step's consensus: step parameters only")
			v.Check(len(a.EntityOperation) == 0, f+".advancedOptions.entityOperation", "writing to a linked record happens at a step's consensus: step parameters only")
			v.Check(!a.HasMetadata, f+".advancedOptions.hasMetadata", "option metadata is written to data at a step's consensus: step parameters only")
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	checkFormulas(&v, [][]Parameter{in.Parameters}, func(_, j int) string {
		return fmt.Sprintf("parameters[%d].computedFormula", j)
	})
	if err := s.checkPolicyNames(tx, orgID, &v, "viewPolicyNames", in.ViewPolicyNames); err != nil {
		return err
	}
	var err error
	eachHiddenFrom("parameters", in.Parameters, func(field string, names []string) {
		if err == nil {
			err = s.checkPolicyNames(tx, orgID, &v, field, names)
		}
	})
	if err != nil {
		return err
	}
	in.ViewPolicyNames = normalize(in.ViewPolicyNames)
	if err := resolveEntityRefs(tx, orgID, selfID, in.Name, &v, "parameters", in.Parameters); err != nil {
		return err
	}
	if v.Err() == nil {
		if err := s.checkSheetLinks(tx, orgID, &v, [][]Parameter{in.Parameters}, func(_, j int) string { return fieldIndex("parameters", j) }); err != nil {
			return err
		}
	}
	if v.Err() == nil {
		sortParams(in.Parameters)
	}
	return v.Err()
}

// resolveEntityRefs turns the name-or-id of each ENTITY parameter's linked
// entity into the id, checking that it exists.
func resolveEntityRefs(tx Tx, orgID, selfID, selfName string, v *Validator, field string, params []Parameter) error {
	for i := range params {
		p := &params[i]
		f := fieldIndex(field, i)
		if p.Type == TypeTable {
			if err := resolveEntityRefs(tx, orgID, selfID, selfName, v, f+".parameters", p.Parameters); err != nil {
				return err
			}
		}
		if p.Type != TypeEntity {
			continue
		}
		ref := p.EntityID
		switch {
		case ref == "":
			v.Add(f+".entityId", "an ENTITY parameter needs the linked entity (ref): its name or id")
		case ref == selfID || ref == selfName:
			p.EntityID = selfID
		default:
			e, err := findEntity(tx, orgID, ref)
			if IsCode(err, CodeNotFound) {
				v.Add(f+".entityId", "no entity named or with id %q", ref)
				continue
			}
			if err != nil {
				return err
			}
			p.EntityID = e.ID
		}
	}
	return nil
}

// findEntity finds a live entity by id or else by name.
func findEntity(tx Tx, orgID, ref string) (Entity, error) {
	e, err := tx.GetEntity(orgID, ref)
	if IsCode(err, CodeNotFound) {
		return tx.FindEntityByName(orgID, ref)
	}
	return e, err
}

// checkPolicyNames reports names that are not policies of the org.
func (s *Service) checkPolicyNames(tx Tx, orgID string, v *Validator, field string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	pols, err := tx.ListPolicies(orgID)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range pols {
		known[p.Name] = true
	}
	for i, n := range names {
		v.Check(known[n], fieldIndex(field, i), "no policy named %q", n)
	}
	return nil
}

// CreateEntity adds an entity. Errors: CodeInvalid naming the field,
// CodeConflict when the name is taken.
func (s *Service) CreateEntity(ctx context.Context, p *Principal, in EntityInput) (Entity, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return Entity{}, err
	}
	now := s.Now()
	e := Entity{ID: NewID(), OrgID: p.OrgID, CreatedAt: now, UpdatedAt: now}
	err := s.store.Write(ctx, func(tx Tx) error {
		in := in
		in.Parameters = cloneParams(in.Parameters)
		if err := s.checkEntityInput(tx, p.OrgID, e.ID, &in, nil, nil); err != nil {
			return err
		}
		e.Name, e.Label, e.ViewPolicyNames, e.Parameters = in.Name, in.Label, in.ViewPolicyNames, in.Parameters
		if err := tx.CreateEntity(e); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditEntityCreated, TargetEntity, e.ID, e.Name, nil, e)
	})
	return e, err
}

// cloneParams deep-copies a parameter list so that a retried transaction
// starts from the request as sent.
func cloneParams(params []Parameter) []Parameter {
	b, _ := json.Marshal(params)
	var out []Parameter
	_ = json.Unmarshal(b, &out)
	return out
}

// GetEntity returns a live entity. Errors: CodeNotFound.
func (s *Service) GetEntity(ctx context.Context, p *Principal, id string) (Entity, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return Entity{}, err
	}
	var e Entity
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		e, err = tx.GetEntity(p.OrgID, id)
		return err
	})
	return e, err
}

// ListEntities pages the org's live entities; search matches name or label.
func (s *Service) ListEntities(ctx context.Context, p *Principal, page Page, search string) ([]Entity, int, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return nil, 0, err
	}
	var list []Entity
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, total, err = tx.ListEntities(p.OrgID, page, search, false)
		return err
	})
	return list, total, err
}

// ListDeletedEntities pages the org's deleted entities (deletedAt set),
// which RestoreEntity brings back; search matches name or label.
func (s *Service) ListDeletedEntities(ctx context.Context, p *Principal, page Page, search string) ([]Entity, int, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return nil, 0, err
	}
	var list []Entity
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		list, total, err = tx.ListEntities(p.OrgID, page, search, true)
		return err
	})
	return list, total, err
}

// RestoreEntity brings a deleted entity back as it was, with its records,
// for those who may delete it. Errors: CodeNotFound; CodeConflict when it
// is not deleted, when a live entity has its name (naming name), or when
// its definition names what is gone meanwhile (an entity, a sheet, a
// policy; naming the fields).
func (s *Service) RestoreEntity(ctx context.Context, p *Principal, id string) (Entity, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return Entity{}, err
	}
	var e Entity
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if e, err = tx.GetDeletedEntity(p.OrgID, id); IsCode(err, CodeNotFound) {
			if live, err := tx.GetEntity(p.OrgID, id); err == nil {
				return Errorf(CodeConflict, "entity %q is not deleted", live.Name)
			}
			return err
		} else if err != nil {
			return err
		}
		if _, err := tx.FindEntityByName(p.OrgID, e.Name); err == nil {
			return &Error{Code: CodeConflict, Message: fmt.Sprintf("name: a live entity is named %q", e.Name),
				Fields: []FieldError{fieldError("name", "%q is the name of a live entity: rename or delete that one first", e.Name)}}
		} else if !IsCode(err, CodeNotFound) {
			return err
		}
		e.DeletedAt, e.UpdatedAt = nil, s.Now()
		if err := tx.RestoreEntity(p.OrgID, e.ID, e.UpdatedAt); IsCode(err, CodeNotFound) {
			return Errorf(CodeConflict, "entity %q is not deleted", e.Name) // restored meanwhile
		} else if err != nil {
			return err // a conflict: an entity took the name meanwhile
		}
		in := EntityInput{Name: e.Name, Label: e.Label, ViewPolicyNames: e.ViewPolicyNames, Parameters: cloneParams(e.Parameters)}
		if err := cannotRestore(s.checkEntityInput(tx, p.OrgID, e.ID, &in, e.Parameters, e.Retired)); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditEntityRestored, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetEntity, ID: e.ID, Name: e.Name},
			Changes: map[string]AuditChange{"deleted": {Before: true, After: false}}})
	})
	return e, err
}

// cannotRestore turns the 422 of a definition checked again as it is
// restored into a 409: nothing in the request is wrong, what it names is gone.
func cannotRestore(err error) error {
	var we *Error
	if asError(err, &we) && we.Code == CodeInvalid {
		return &Error{Code: CodeConflict, Message: "it cannot be restored as it is: " + we.Message, Fields: we.Fields}
	}
	return err
}

// UpdateEntity changes an entity. Records follow: values of a parameter
// whose type changed are converted; values of removed parameters are kept,
// hidden, and show again when a parameter of the same name is added back
// (it takes the removed one's id). Errors: CodeInvalid, CodeNotFound,
// CodeConflict when the name is taken, when existing records cannot take a
// new type, when a parameter made unique has duplicate values, or when a
// removed parameter is permanent and records hold values for it (naming
// the list it was removed from).
func (s *Service) UpdateEntity(ctx context.Context, p *Principal, id string, u EntityUpdate) (Entity, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return Entity{}, err
	}
	var e Entity
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if e, err = tx.GetEntity(p.OrgID, id); err != nil {
			return err
		}
		old := e
		in := EntityInput{Name: e.Name, Label: e.Label, ViewPolicyNames: e.ViewPolicyNames, Parameters: cloneParams(e.Parameters)}
		setIf(&in.Name, u.Name)
		setIf(&in.Label, u.Label)
		setIf(&in.ViewPolicyNames, u.ViewPolicyNames)
		if u.Parameters != nil {
			in.Parameters = cloneParams(*u.Parameters)
		}
		if u.Label == nil && u.Name != nil && e.Label == e.Name {
			in.Label = "" // the label followed the name; keep it so
		}
		if err := s.checkEntityInput(tx, p.OrgID, e.ID, &in, old.Parameters, old.Retired); err != nil {
			return err
		}
		e.Name, e.Label, e.ViewPolicyNames, e.Parameters = in.Name, in.Label, in.ViewPolicyNames, in.Parameters
		e.UpdatedAt = s.Now()
		if u.Parameters != nil {
			e.Retired = retire(old.Retired, old.Parameters, e.Parameters)
		}
		if err := tx.UpdateEntity(e); err != nil {
			return err
		}
		if changes := diffFields(old, e); len(changes) > 0 {
			if err := s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditEntityUpdated, Actor: actorOf(p),
				Target: AuditTarget{Kind: TargetEntity, ID: e.ID, Name: e.Name}, Changes: changes}); err != nil {
				return err
			}
		}
		if u.Parameters == nil {
			return nil
		}
		return s.migrateRecords(tx, old, e)
	})
	return e, err
}

// retire is an entity's list of removed parameters once its parameters
// change from old to params: those removed now come first (a name added
// back takes the id of the latest parameter of that name), those back
// leave it.
func retire(retired []RetiredParam, old, params []Parameter) []RetiredParam {
	live := paramsByID(params, nil)
	out := removedParams(old, "", live)
	for _, r := range retired {
		if _, back := live[r.ID]; !back && !slices.ContainsFunc(out, func(o RetiredParam) bool { return o.ID == r.ID }) {
			out = append(out, r)
		}
	}
	return out
}

// migrateRecords rewrites every record of an entity whose parameters
// changed: a value of a parameter whose type changed (or that came back
// with another type) is converted, values of removed parameters stay, and
// the index follows the parameters. Errors: CodeConflict when a record
// cannot take a new type, or holds a value for a permanent parameter
// removed.
func (s *Service) migrateRecords(tx Tx, old, e Entity) error {
	ids, err := tx.ListRecordIDs(e.OrgID, e.ID)
	if err != nil {
		return err
	}
	was := map[string]string{} // the type each stored value was written for
	for _, r := range old.Retired {
		was[r.ID] = r.Type
	}
	oldParams := paramsByID(old.Parameters, nil)
	for id, p := range oldParams {
		was[id] = p.Type
	}
	removed := removedParams(old.Parameters, "", paramsByID(e.Parameters, nil))
	held := map[string]bool{}
	var bad []string
	for _, rid := range ids {
		r, err := tx.GetRecord(e.OrgID, e.ID, rid)
		if err != nil {
			return err
		}
		for _, rm := range removed {
			held[rm.ID] = held[rm.ID] || holdsValue(r.Values, rm.ID)
		}
		next := maps.Clone(r.Values)
		for _, np := range e.Parameters {
			val, has := r.Values[np.ID]
			if !has || val == nil || was[np.ID] == np.Type {
				continue
			}
			conv, ok := convertValue(np, val)
			if !ok {
				bad = append(bad, fmt.Sprintf("record %s: %s cannot be a %s", r.ID, np.Name, np.Type))
				continue
			}
			next[np.ID] = conv
		}
		if len(bad) >= 5 {
			break
		}
		r.Values = next
		if err := s.saveRecord(tx, e, r, false); err != nil {
			return err
		}
	}
	lists := map[string]string{}
	listFields(e.Parameters, "", "parameters", lists)
	err = keptValues(removed, oldParams, lists, "parameters", "records", func(id string) (bool, error) { return held[id], nil })
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return &Error{Code: CodeConflict, Message: "existing records cannot take the change: " + strings.Join(bad, "; ")}
	}
	return nil
}

// DeleteEntity soft-deletes an entity. Errors: CodeNotFound; CodeConflict
// when a live entity or process refers to it.
func (s *Service) DeleteEntity(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnEntityWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, id)
		if err != nil {
			return err
		}
		refs, err := tx.EntityReferrers(p.OrgID, e.ID)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			return Errorf(CodeConflict, "entity %q is referenced by %s", e.Name, strings.Join(refs, ", "))
		}
		if err := tx.SoftDeleteEntity(p.OrgID, e.ID, s.Now()); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditEntityDeleted, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetEntity, ID: e.ID, Name: e.Name},
			Changes: map[string]AuditChange{"deleted": {Before: false, After: true}}})
	})
}

// txRefs checks links inside one transaction.
type txRefs struct {
	tx    Tx
	orgID string
}

func (r txRefs) RecordExists(entityID, recordID string) (bool, error) {
	_, err := r.tx.GetRecord(r.orgID, entityID, recordID)
	if IsCode(err, CodeNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (r txRefs) AttachmentExists(id string) (bool, error) {
	_, err := r.tx.GetAttachment(r.orgID, id)
	if IsCode(err, CodeNotFound) {
		return false, nil
	}
	return err == nil, err
}

// checkRecordValues validates values (keyed by name) for e; with partial
// the result is merged over base.
func (s *Service) checkRecordValues(tx Tx, e Entity, in map[string]json.RawMessage, base map[string]any, field string, now time.Time) (map[string]any, error) {
	var v Validator
	c := &valueCheck{v: &v, refs: txRefs{tx, e.OrgID}}
	vals, _ := c.values(e.Parameters, in, field, base != nil)
	if c.err != nil {
		return nil, c.err
	}
	if base != nil {
		merged := map[string]any{}
		for k, val := range base {
			merged[k] = val
		}
		for k, val := range vals {
			merged[k] = val
		}
		vals = merged
		for _, p := range e.Parameters {
			_, sent := in[p.Name]
			if p.IsRequired && vals[p.ID] == nil && !sent { // a sent one was reported by values
				v.Add(joinPath(field, p.Name), "is required")
			}
		}
	}
	computeFormulas([][]Parameter{e.Parameters}, e.Parameters, vals, vals, now)
	if v.Err() == nil {
		if filled, err := s.recordSheets(tx, e, vals); err != nil {
			return nil, err
		} else if filled {
			computeFormulas([][]Parameter{e.Parameters}, e.Parameters, vals, vals, now)
		}
	}
	for k, val := range vals {
		if val == nil {
			delete(vals, k)
		}
	}
	return vals, v.Err()
}

// saveRecord writes r and its index rows; a unique violation names the field.
func (s *Service) saveRecord(tx Tx, e Entity, r Record, create bool) error {
	var err error
	if create {
		err = tx.CreateRecord(r)
	} else {
		err = tx.UpdateRecord(r)
	}
	if err != nil {
		return err
	}
	if !create { // a new record has no index rows nor references yet
		if err := tx.DeleteRecordIndex(e.OrgID, r.ID); err != nil {
			return err
		}
		if err := tx.DeleteRecordAttachmentRefs(e.OrgID, r.ID); err != nil {
			return err
		}
	}
	if refs := attachmentRefs(e.Parameters, r.Values, AttachmentRef{OrgID: e.OrgID, EntityID: e.ID, RecordID: r.ID}); len(refs) > 0 {
		if err := tx.AddAttachmentRefs(refs); err != nil {
			return err
		}
	}
	for _, p := range e.Parameters {
		for _, item := range itemStrings(r.Values[p.ID]) {
			row := IndexRow{OrgID: e.OrgID, EntityID: e.ID, RecordID: r.ID, ParamID: p.ID, Value: indexKey(item), Unique: p.IsUnique}
			if err := tx.InsertRecordIndex(row); IsCode(err, CodeConflict) {
				return &Error{Code: CodeConflict, Message: fmt.Sprintf("%s: %q is already used by another record", p.Name, item),
					Fields: []FieldError{fieldError("values."+p.Name, "must be unique")}, Err: err}
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// CreateRecord adds a record. Errors: CodeNotFound (entity), CodeInvalid
// naming the value, CodeConflict for a unique value in use.
func (s *Service) CreateRecord(ctx context.Context, p *Principal, entityID string, values map[string]json.RawMessage) (Record, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.store.Write(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		if out, err = s.createRecord(tx, e, values, "values"); err != nil {
			return err
		}
		if err := s.auditRecord(tx, p, AuditRecordCreated, e, out.ID, nil, out.Values); err != nil {
			return err
		}
		out = presentFor(p, e, out)
		return nil
	})
	return out, err
}

// createRecord validates values (keyed by name) and writes them as a new
// record of e, in the caller's transaction; it returns the record as stored
// (values by parameter id).
func (s *Service) createRecord(tx Tx, e Entity, values map[string]json.RawMessage, field string) (Record, error) {
	vals, err := s.checkRecordValues(tx, e, values, nil, field, s.now())
	if err != nil {
		return Record{}, err
	}
	now := s.Now()
	r := Record{ID: NewID(), OrgID: e.OrgID, EntityID: e.ID, Values: vals, CreatedAt: now, UpdatedAt: now}
	if err := s.saveRecord(tx, e, r, true); err != nil {
		return Record{}, err
	}
	return r, nil
}

// findRecord returns the first record of e whose parameter equals value, or nil.
func findRecord(tx Tx, e Entity, param Parameter, value string) (*Record, error) {
	list, _, err := tx.ListRecords(e.OrgID, e.ID, RecordQuery{Page: Page{Page: 1, PerPage: 1},
		Filters: []RecordFilter{{ParamID: param.ID, Value: indexKey(value)}}})
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// GetRecord returns one record. Errors: CodeNotFound.
func (s *Service) GetRecord(ctx context.Context, p *Principal, entityID, id string) (Record, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.store.Read(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		r, err := tx.GetRecord(p.OrgID, e.ID, id)
		out = presentFor(p, e, r)
		return err
	})
	return out, err
}

// ListRecords pages an entity's records; filters map a parameter name to a
// value, compared in the parameter's canonical form.
func (s *Service) ListRecords(ctx context.Context, p *Principal, entityID string, page Page, filters map[string]string) ([]Record, int, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return nil, 0, err
	}
	var out []Record
	var total int
	err := s.store.Read(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		hidden := hiddenInRecords(p, e)
		q := RecordQuery{Page: page}
		var v Validator
		keys := make([]string, 0, len(filters))
		for k := range filters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, name := range keys {
			prm, ok := e.ParamByName(name)
			if !ok {
				v.Add("filter["+name+"]", "is not a parameter")
				continue
			}
			if hidden[prm.ID] {
				v.Add("filter["+name+"]", "is hidden from you")
				continue
			}
			val, ok := convertValue(prm, filters[name])
			if prm.Type == TypeMultiSelect {
				val, ok = filters[name], hasOption(prm, filters[name])
			}
			items := itemStrings(val)
			if !ok || len(items) != 1 {
				v.Add("filter["+name+"]", "is not a valid %s value", prm.Type)
				continue
			}
			q.Filters = append(q.Filters, RecordFilter{ParamID: prm.ID, Value: indexKey(items[0])})
		}
		if err := v.Err(); err != nil {
			return err
		}
		list, n, err := tx.ListRecords(p.OrgID, e.ID, q)
		for _, r := range list {
			out = append(out, presentFor(p, e, r))
		}
		total = n
		return err
	})
	if out == nil {
		out = []Record{}
	}
	return out, total, err
}

// PatchRecord merges values into a record (null clears one). Errors: as CreateRecord.
func (s *Service) PatchRecord(ctx context.Context, p *Principal, entityID, id string, values map[string]json.RawMessage) (Record, error) {
	if err := p.Require(FnEntityWrite); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.store.Write(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		r, err := tx.GetRecord(p.OrgID, e.ID, id)
		if err != nil {
			return err
		}
		before := r.Values
		if r.Values, err = s.checkRecordValues(tx, e, values, r.Values, "values", s.now()); err != nil {
			return err
		}
		r.UpdatedAt = s.Now()
		if err := s.saveRecord(tx, e, r, false); err != nil {
			return err
		}
		if err := s.auditRecord(tx, p, AuditRecordUpdated, e, r.ID, before, r.Values); err != nil {
			return err
		}
		out = presentFor(p, e, r)
		return nil
	})
	return out, err
}

// DeleteRecord removes a record. Errors: CodeNotFound.
func (s *Service) DeleteRecord(ctx context.Context, p *Principal, entityID, id string) error {
	if err := p.Require(FnEntityWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		r, err := tx.GetRecord(p.OrgID, e.ID, id)
		if err != nil {
			return err
		}
		if err := tx.DeleteRecordIndex(p.OrgID, id); err != nil {
			return err
		}
		if err := tx.DeleteRecordAttachmentRefs(p.OrgID, id); err != nil {
			return err
		}
		if err := tx.DeleteRecord(p.OrgID, e.ID, id); err != nil {
			return err
		}
		return s.auditRecord(tx, p, AuditRecordDeleted, e, id, r.Values, nil)
	})
}

// importRecords adds rows (values keyed by name) all or nothing, in one
// transaction; Import checked the caller's function and the rows' number.
// Errors list every invalid row as rows[i].name; a unique conflict names
// its row.
func (s *Service) importRecords(ctx context.Context, p *Principal, entityID string, rows []map[string]json.RawMessage) (int, error) {
	err := s.store.Write(ctx, func(tx Tx) error {
		e, err := tx.GetEntity(p.OrgID, entityID)
		if err != nil {
			return err
		}
		if err := requireRecords(p, e); err != nil {
			return err
		}
		recs := make([]Record, 0, len(rows))
		var all Validator
		for i, row := range rows {
			vals, err := s.checkRecordValues(tx, e, row, nil, fieldIndex("rows", i), s.now())
			var we *Error
			if asError(err, &we) && we.Code == CodeInvalid {
				all.fields = append(all.fields, we.Fields...)
				continue
			} else if err != nil {
				return err
			}
			now := s.Now()
			recs = append(recs, Record{ID: NewID(), OrgID: p.OrgID, EntityID: e.ID, Values: vals, CreatedAt: now, UpdatedAt: now})
		}
		if err := all.Err(); err != nil {
			return err
		}
		for i, r := range recs {
			if err := s.saveRecord(tx, e, r, true); err != nil {
				var we *Error
				if asError(err, &we) && we.Code == CodeConflict {
					return &Error{Code: CodeConflict, Message: fmt.Sprintf("rows[%d]: %s", i, we.Message), Fields: prefixFields(fieldIndex("rows", i), we.Fields)}
				}
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}

func prefixFields(prefix string, fields []FieldError) []FieldError {
	out := make([]FieldError, len(fields))
	for i, f := range fields {
		f.Field = prefix + "." + f.Field
		out[i] = f
	}
	return out
}

// RecordsEntity returns an entity whose records the caller may use.
// Errors: CodeNotFound, CodeForbidden (the entity's view policies).
func (s *Service) RecordsEntity(ctx context.Context, p *Principal, entityID string) (Entity, error) {
	if err := p.Require(FnEntityRead); err != nil {
		return Entity{}, err
	}
	e, err := s.GetEntity(ctx, p, entityID)
	if err == nil {
		err = requireRecords(p, e)
	}
	return e, err
}

// ExportRecords calls fn with the entity and then each record, in creation
// order, reading in pages so that no transaction stays open while fn writes.
func (s *Service) ExportRecords(ctx context.Context, p *Principal, entityID string, fn func(e Entity, r *Record) error) error {
	e, err := s.RecordsEntity(ctx, p, entityID)
	if err != nil {
		return err
	}
	if err := fn(e, nil); err != nil {
		return err
	}
	after := ""
	for {
		var page []Record
		err := s.store.Read(ctx, func(tx Tx) (err error) {
			page, err = tx.ListRecordsAfter(p.OrgID, e.ID, after, 500)
			return err
		})
		if err != nil {
			return err
		}
		for _, r := range page {
			r := presentFor(p, e, r)
			if err := fn(e, &r); err != nil {
				return err
			}
		}
		if len(page) < 500 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// present turns stored values (by parameter id) into API values (by name).
func present(e Entity, r Record) Record {
	r.Values = byName(e.Parameters, r.Values)
	return r
}

func byName(params []Parameter, vals map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range params {
		v, ok := vals[p.ID]
		if !ok || v == nil {
			continue
		}
		if p.Type == TypeTable {
			rows := tableRows(v)
			named := make([]any, 0, len(rows))
			for _, row := range rows {
				named = append(named, byName(p.Parameters, row))
			}
			v = named
		}
		out[p.Name] = v
	}
	return out
}
