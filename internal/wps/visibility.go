package wps

import (
	"slices"

	"wps/internal/formula"
)

// Who sees which value (semantics section 9), in one place. Every path
// that shows values (measurement and action answers, record reads and
// exports, attachments) asks these functions; values are always computed
// and stored, only showing them is restricted.

// canSee reports whether the reader may see a step's data: the step names
// no view policy, or the reader holds one of them, or is ADMIN.
func canSee(p *Principal, st Step) bool {
	if len(st.ViewPolicyNames) == 0 || p.IsAdmin() {
		return true
	}
	return slices.ContainsFunc(st.ViewPolicyNames, p.HoldsPolicy)
}

// hiddenFrom reports whether a parameter's advancedOptions.hiddenFrom
// names a policy the reader holds (ADMIN is never hidden from).
func hiddenFrom(p *Principal, prm Parameter) bool {
	if prm.AdvancedOptions == nil || len(prm.AdvancedOptions.HiddenFrom) == 0 || p.IsAdmin() {
		return false
	}
	return slices.ContainsFunc(prm.AdvancedOptions.HiddenFrom, p.HoldsPolicy)
}

// canReadRecords reports whether the reader may read an entity's records:
// function entity:read, and one of the entity's view policies when it
// names any (ADMIN may always).
func canReadRecords(p *Principal, e Entity) bool {
	if p.IsAdmin() {
		return true
	}
	if !p.Can(FnEntityRead) {
		return false
	}
	return len(e.ViewPolicyNames) == 0 || slices.ContainsFunc(e.ViewPolicyNames, p.HoldsPolicy)
}

// requireRecords answers 403 unless the reader may use the records
// endpoints of e.
func requireRecords(p *Principal, e Entity) error {
	if p.IsAdmin() || len(e.ViewPolicyNames) == 0 || slices.ContainsFunc(e.ViewPolicyNames, p.HoldsPolicy) {
		return nil
	}
	return Errorf(CodeForbidden, "the records of entity %q are shown only to holders of %v", e.Name, e.ViewPolicyNames)
}

// formulaScope resolves the names a formula of own may use: own's
// parameters, else the one parameter of scope with that name (a name two
// groups share is ambiguous and resolves to nothing, as definitions are
// checked).
func formulaScope(scope [][]Parameter, own []Parameter) map[string]Parameter {
	byName := map[string]Parameter{}
	count := map[string]int{}
	for _, group := range scope {
		for _, p := range group {
			count[p.Name]++
			byName[p.Name] = p
		}
	}
	for name, n := range count {
		if n > 1 {
			delete(byName, name)
		}
	}
	for _, p := range own {
		byName[p.Name] = p
	}
	return byName
}

// hideDerived adds to hidden every formula of groups that reads a hidden
// parameter, until nothing changes (formulas may read formulas).
func hideDerived(groups [][]Parameter, hidden map[string]bool) {
	type derived struct {
		id     string
		inputs []string
	}
	var formulas []derived
	for _, own := range groups {
		var names map[string]Parameter
		for _, p := range own {
			if len(p.ComputedFormula) == 0 {
				continue
			}
			e, err := formula.ParseTokens(p.ComputedFormula)
			if err != nil {
				continue
			}
			if names == nil {
				names = formulaScope(groups, own)
			}
			d := derived{id: p.ID}
			for _, ref := range e.Refs() {
				if in, ok := names[ref]; ok {
					d.inputs = append(d.inputs, in.ID)
				}
			}
			formulas = append(formulas, d)
		}
	}
	// A sheet's OUTPUTs read every INPUT linked to the same sheet.
	inputs := map[string][]string{}
	for _, own := range groups {
		for _, p := range own {
			if linked(p) && !isOutput(p) {
				inputs[p.SheetData.SheetAPIID] = append(inputs[p.SheetData.SheetAPIID], p.ID)
			}
		}
	}
	for _, own := range groups {
		for _, p := range own {
			if isOutput(p) {
				formulas = append(formulas, derived{id: p.ID, inputs: inputs[p.SheetData.SheetAPIID]})
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, f := range formulas {
			if !hidden[f.id] && slices.ContainsFunc(f.inputs, func(id string) bool { return hidden[id] }) {
				hidden[f.id], changed = true, true
			}
		}
	}
}

// hiddenInRecords lists the parameters of e whose values the reader may
// not see in its records: hiddenFrom (a TABLE's columns with it, or a
// column alone), and formulas reading them.
func hiddenInRecords(p *Principal, e Entity) map[string]bool {
	hidden := map[string]bool{}
	if p.IsAdmin() {
		return hidden
	}
	hideParams(e.Parameters, func(prm Parameter) bool { return hiddenFrom(p, prm) }, hidden)
	if len(hidden) > 0 {
		hideDerived([][]Parameter{e.Parameters}, hidden)
	}
	return hidden
}

// hideParams adds to hidden the parameters hide says, with all the columns
// of a TABLE it says, and the columns it says of the others.
func hideParams(params []Parameter, hide func(Parameter) bool, hidden map[string]bool) {
	for _, prm := range params {
		if hide(prm) {
			hidden[prm.ID] = true
			for _, col := range prm.Parameters {
				hidden[col.ID] = true
			}
			continue
		}
		for _, col := range prm.Parameters {
			if hide(col) {
				hidden[col.ID] = true
			}
		}
	}
}

// presentFor shows a record to the reader: values by name, without those
// hidden from them (nor the hidden cells of a TABLE's rows).
func presentFor(p *Principal, e Entity, r Record) Record {
	hidden := hiddenInRecords(p, e)
	if len(hidden) == 0 {
		return present(e, r)
	}
	r.Values = withoutHidden(e.Parameters, r.Values, hidden)
	return present(e, r)
}

// withoutHidden is vals (by parameter id) without the hidden ones, and
// without the hidden columns of TABLE rows.
func withoutHidden(params []Parameter, vals map[string]any, hidden map[string]bool) map[string]any {
	out := make(map[string]any, len(vals))
	for _, prm := range params {
		v, ok := vals[prm.ID]
		if !ok || hidden[prm.ID] {
			continue
		}
		if prm.Type == TypeTable && v != nil && slices.ContainsFunc(prm.Parameters, func(c Parameter) bool { return hidden[c.ID] }) {
			rows := tableRows(v)
			kept := make([]map[string]any, 0, len(rows))
			for _, row := range rows {
				kept = append(kept, withoutHidden(prm.Parameters, row, hidden))
			}
			v = kept
		}
		out[prm.ID] = v
	}
	return out
}

// sight works out, for one reader, which parameters of process versions
// are hidden from them. It looks definitions up through the transaction,
// each once, and follows readFromOtherMeasurementData from process to
// process; a process met again while its own answer is being worked out
// (a cycle) counts as hidden.
type sight struct {
	p        *Principal
	tx       Tx
	entities map[string]*Entity         // nil: unknown
	records  map[string]map[string]bool // hiddenInRecords by entity id
	sources  map[string]map[string]bool // by process id (latest version); nil while being worked out
}

func newSight(tx Tx, p *Principal) *sight {
	return &sight{p: p, tx: tx, entities: map[string]*Entity{}, records: map[string]map[string]bool{}, sources: map[string]map[string]bool{}}
}

// inRecords is what the reader may not see in the records of e: nil when
// they may not read them at all (or e is unknown), else hiddenInRecords,
// worked out once per entity.
func (s *sight) inRecords(e *Entity) map[string]bool {
	if e == nil || !canReadRecords(s.p, *e) {
		return nil
	}
	h, ok := s.records[e.ID]
	if !ok {
		h = hiddenInRecords(s.p, *e)
		s.records[e.ID] = h
	}
	return h
}

func (s *sight) entity(id string) *Entity {
	if e, ok := s.entities[id]; ok {
		return e
	}
	var found *Entity
	if e, err := s.tx.GetEntity(s.p.OrgID, id); err == nil {
		found = &e
	}
	s.entities[id] = found
	return found
}

// hidden lists the parameters (by id) of a process version whose values
// the reader may not see: the parameters of steps they cannot see, those
// hidden from them, and the values derived from hidden ones: formulas
// reading them, targets of readFromEntity (and parameters filled through
// autoFillEntityRelation) of an entity whose records they cannot read, and fields copied by readFromOtherMeasurementData from a
// parameter they could not see in its own process. A value a client typed
// into such a target carries the same visibility: it stands where the
// derived value would.
func (s *sight) hidden(steps []Step) map[string]bool {
	p := s.p
	hidden := map[string]bool{}
	if p.IsAdmin() {
		return hidden
	}
	groups := make([][]Parameter, len(steps))
	for i, st := range steps {
		groups[i] = st.Parameters
		see := canSee(p, st)
		hideParams(st.Parameters, func(prm Parameter) bool { return !see || hiddenFrom(p, prm) }, hidden)
	}
	for _, st := range steps {
		for _, prm := range st.Parameters {
			if rf := prm.ReadFromEntity; rf != nil {
				e := s.entity(rf.EntityID)
				inRecords := s.inRecords(e)
				rp, _ := entityParam(e, rf.ReadParameterID, "")
				for _, id := range rf.TargetParameterIDs {
					_, tp := paramByID(st.Parameters, id)
					// Filled from the record's field of the target's name; all of
					// them hidden when the record is found by a field the reader
					// may not see (finding one would tell its value).
					if ep, ok := entityParam(e, "", tp.Name); inRecords == nil || inRecords[rp.ID] || ok && inRecords[ep.ID] {
						hidden[id] = true
					}
				}
			}
			if prm.AutoFillEntityRelation != "" {
				_, link := paramByID(st.Parameters, prm.AutoFillEntityRelation)
				e := s.entity(link.EntityID)
				from, name := "", prm.Name
				if a := prm.AdvancedOptions; a != nil && a.EntityParameterID != "" {
					from, name = a.EntityParameterID, ""
				}
				if ep, ok := entityParam(e, from, name); s.inRecords(e) == nil || ok && s.inRecords(e)[ep.ID] {
					hidden[prm.ID] = true
				}
			}
			if rf := prm.ReadFromOtherMeasurementData; rf != nil {
				searched := s.sees(rf.ProcessID, rf.SearchFieldID) // else a match would tell the searched value
				for _, sf := range rf.SelectedFields {
					if !searched || !s.sees(rf.ProcessID, sf.ReadParameterID) {
						hidden[sf.WriteParameterID] = true
					}
				}
			}
		}
	}
	hideDerived(groups, hidden)
	return hidden
}

// entityParam is e's parameter of id, else of name (false when e is nil
// or has none).
func entityParam(e *Entity, id, name string) (Parameter, bool) {
	if e == nil {
		return Parameter{}, false
	}
	if id != "" {
		return e.Param(id)
	}
	return e.ParamByName(name)
}

// sees reports whether the reader could see parameter paramID of process
// processID (its latest version) in a measurement of it.
func (s *sight) sees(processID, paramID string) bool {
	if s.p.IsAdmin() {
		return true
	}
	hidden := s.latest(processID)
	shown, present := hidden[paramID]
	return hidden != nil && present && !shown
}

// latest is what the reader may not see of processID's latest version:
// every parameter of it, true when hidden; worked out once. nil when the
// process cannot be read, or while it is being worked out (a cycle).
func (s *sight) latest(processID string) map[string]bool {
	hidden, seen := s.sources[processID]
	if seen {
		return hidden
	}
	s.sources[processID] = nil // a cycle back here finds nil: hidden
	src, err := s.tx.GetProcess(s.p.OrgID, processID, 0)
	if err != nil {
		return nil
	}
	hidden = s.hidden(src.Steps)
	for _, st := range src.Steps {
		for _, prm := range st.Parameters {
			if _, ok := hidden[prm.ID]; !ok {
				hidden[prm.ID] = false // present, shown
			}
		}
	}
	s.sources[processID] = hidden
	return hidden
}

// hiddenAt is hidden for the steps of an older version of processID with
// what its latest version hides as well: a policy added to a parameter's
// hiddenFrom (or a step's view policies) since hides the values recorded
// before the change too. The stricter of the two: removing one later
// shows nothing recorded under it.
func (s *sight) hiddenAt(processID string, steps []Step) map[string]bool {
	hidden := s.hidden(steps)
	if s.p.IsAdmin() {
		return hidden
	}
	added := false
	for id, h := range s.latest(processID) {
		if h && !hidden[id] {
			hidden[id], added = true, true
		}
	}
	if added {
		groups := make([][]Parameter, len(steps))
		for i, st := range steps {
			groups[i] = st.Parameters
		}
		hideDerived(groups, hidden)
	}
	return hidden
}

// hidden returns the parameters of the run's process version hidden from
// its reader, worked out once per run: with what the process's latest
// version hides too, for a measurement of an older one (hiddenAt).
func (r *run) hidden() map[string]bool {
	if r.hiddenIDs == nil {
		r.hiddenIDs = newSight(r.tx, r.p).hiddenFor(r)
	}
	return r.hiddenIDs
}

// hiddenFor is hidden for run r's steps: hiddenAt for a measurement of a
// version older than its process's latest (r.proc.Version, read with it).
func (s *sight) hiddenFor(r *run) map[string]bool {
	if r.proc.ID != "" && r.proc.Version != r.m.Version {
		return s.hiddenAt(r.proc.ID, r.proc.Steps)
	}
	return s.hidden(r.proc.Steps)
}

// sees reports whether the run's reader could see parameter paramID of
// another process (its latest version).
func (r *run) sees(processID, paramID string) bool {
	return newSight(r.tx, r.p).sees(processID, paramID)
}

// eachHiddenFrom calls fn with the field and the hiddenFrom list of every
// parameter of params that has one, TABLE columns included.
func eachHiddenFrom(field string, params []Parameter, fn func(field string, names []string)) {
	for i := range params {
		p := &params[i]
		f := fieldIndex(field, i)
		if p.AdvancedOptions != nil && len(p.AdvancedOptions.HiddenFrom) > 0 {
			fn(f+".advancedOptions.hiddenFrom", p.AdvancedOptions.HiddenFrom)
		}
		eachHiddenFrom(f+".parameters", p.Parameters, fn)
	}
}
