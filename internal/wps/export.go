package wps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"wps/internal/engine"
)

// ExportFormat names the process definition format.
const ExportFormat = "wps.process/v1"

// ProcessExport is a process definition that can be kept in git and
// imported into any org: steps refer to each other by label, to entities by
// name and to parameters by name; ids, seats and times are left out.
type ProcessExport struct {
	Format   string           `json:"format" enum:"wps.process/v1"`
	Name     string           `json:"name"`
	Label    string           `json:"label,omitempty"`
	IconName string           `json:"iconName,omitempty"`
	Code     string           `json:"code,omitempty"`
	Steps    []map[string]any `json:"steps"`
}

// ExportProcess returns the latest version of a process as a portable definition.
func (s *Service) ExportProcess(ctx context.Context, p *Principal, id string) (ProcessExport, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return ProcessExport{}, err
	}
	var out ProcessExport
	err := s.store.Read(ctx, func(tx Tx) error {
		proc, err := tx.GetProcess(p.OrgID, id, 0)
		if err != nil {
			return err
		}
		out = ProcessExport{Format: ExportFormat, Name: proc.Name, Label: proc.Label, IconName: proc.IconName, Code: proc.Code}
		labels := map[string]string{}
		for _, st := range proc.Steps {
			labels[st.ID] = st.Label
		}
		entities := map[string]Entity{}
		entity := func(id string) (Entity, error) {
			if e, ok := entities[id]; ok || id == "" {
				return e, nil
			}
			e, err := tx.GetEntity(p.OrgID, id)
			if IsCode(err, CodeNotFound) {
				return Entity{ID: id, Name: id}, nil
			}
			entities[id] = e
			return e, err
		}
		template := func(id string) string { // contract templates by name
			if tp, err := tx.GetTemplate(p.OrgID, id, 0, false); err == nil {
				return tp.Name
			}
			return id
		}
		for _, st := range cloneSteps(proc.Steps) {
			m, err := exportStep(st, labels, entity, template)
			if err != nil {
				return err
			}
			out.Steps = append(out.Steps, m)
		}
		return nil
	})
	return out, err
}

func exportStep(st Step, labels map[string]string, entity func(string) (Entity, error), template func(string) string) (map[string]any, error) {
	toLabels := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = labels[id]
		}
		return out
	}
	st.StepIDsDependencies = toLabels(st.StepIDsDependencies)
	st.StepIDsReprovalDependencies = toLabels(st.StepIDsReprovalDependencies)
	if r := st.Routing; r != nil {
		for i := range r.Rules {
			r.Rules[i].StepID = labels[r.Rules[i].StepID]
		}
		if r.EntityID != "" {
			e, err := entity(r.EntityID)
			if err != nil {
				return nil, err
			}
			r.EntityID = e.Name
		}
	}
	if st.LegalContractID != "" {
		st.LegalContractID = template(st.LegalContractID)
	}
	names := map[string]string{}
	for _, prm := range st.Parameters {
		names[prm.ID] = prm.Name
	}
	for i := range st.Parameters {
		prm := &st.Parameters[i]
		if prm.ContractTemplateID != "" {
			prm.ContractTemplateID, prm.ContractTemplate = template(prm.ContractTemplateID), nil // the import describes it again
		}
		if prm.Type == TypeEntity {
			e, err := entity(prm.EntityID)
			if err != nil {
				return nil, err
			}
			prm.EntityID = e.Name
		}
		if a := prm.AdvancedOptions; a != nil && a.InsertOnEntity != "" {
			e, err := entity(a.InsertOnEntity)
			if err != nil {
				return nil, err
			}
			a.InsertOnEntity = e.Name
		}
		if r := prm.ReadFromEntity; r != nil {
			e, err := entity(r.EntityID)
			if err != nil {
				return nil, err
			}
			if ep, ok := e.Param(r.ReadParameterID); ok {
				r.ReadParameterID = ep.Name
			}
			r.EntityID, r.StepID, r.ProcessID, r.ID = e.Name, "", "", ""
			r.OriginParameterID = names[r.OriginParameterID]
			for k, t := range r.TargetParameterIDs {
				r.TargetParameterIDs[k] = names[t]
			}
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"id", "processId", "tokenIds", "createdAt", "updatedAt", "deletedAt"} {
		delete(m, k)
	}
	if params, ok := m["parameters"].([]any); ok {
		stripIDs(params)
	}
	return m, nil
}

// stripIDs removes what the service assigns (ids, the links to the
// parameter a part belongs to, timestamps) from exported parameters.
func stripIDs(params []any) {
	assigned := []string{"id", "parameterId", "entityParameterId", "createdAt", "updatedAt", "deletedAt", "persisted", "parameter"}
	strip := func(m map[string]any) {
		for _, k := range assigned {
			delete(m, k)
		}
	}
	for _, p := range params {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"id", "stepId", "index", "parameterId", "readFromOtherMeasurementDataId", "createdAt", "updatedAt"} {
			delete(pm, k)
		}
		for _, sub := range []string{"advancedOptions", "sheetData", "readFromOtherMeasurementData", "readFromEntity"} {
			if m, ok := pm[sub].(map[string]any); ok {
				strip(m)
			}
		}
		for _, list := range []string{"optionItems", "apiCalls"} {
			if items, ok := pm[list].([]any); ok {
				for _, it := range items {
					if m, ok := it.(map[string]any); ok {
						strip(m)
					}
				}
			}
		}
		if nested, ok := pm["parameters"].([]any); ok {
			stripIDs(nested)
		}
	}
}

// ImportProcess creates a process from an exported definition. Errors: as CreateProcess.
func (s *Service) ImportProcess(ctx context.Context, p *Principal, doc ProcessExport) (Process, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Process{}, err
	}
	if doc.Format != ExportFormat {
		return Process{}, Invalid("format", "must be %q", ExportFormat)
	}
	b, err := json.Marshal(doc.Steps)
	if err != nil {
		return Process{}, Invalid("steps", "cannot be read: %v", err)
	}
	var steps []Step
	if err := json.Unmarshal(b, &steps); err != nil {
		return Process{}, Invalid("steps", "cannot be read: %v", err)
	}
	return s.CreateProcess(ctx, p, ProcessInput{Name: doc.Name, Label: doc.Label, IconName: doc.IconName, Code: doc.Code, Steps: steps})
}

// ExportColumn is one column of a measurements export: a fixed field, or a
// parameter of a step of the process's latest version.
type ExportColumn struct {
	Name  string // "id", "name", "status", "createdAt", "updatedAt", "Step label.parameter name" or "Step label.signature"
	Param *Parameter
	// SignedStep is the id of the step whose signatures the column shows
	// (a step with a signatureMeaning), "" for the other columns.
	SignedStep string
}

// ExportMeasurements calls fn once with the columns and a nil row, then
// with each measurement of the process (its current values, in the list's order): the
// fixed fields, then one value per parameter column, nil where there is
// none or the reader may not see it (semantics section 9). Errors:
// CodeForbidden, CodeNotFound (the process).
func (s *Service) ExportMeasurements(ctx context.Context, p *Principal, processID string, fn func(cols []ExportColumn, row []any) error) error {
	if err := p.Require(FnMeasurementRead); err != nil {
		return err
	}
	var proc Process
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		proc, err = tx.GetProcess(p.OrgID, processID, 0)
		return err
	}); err != nil {
		return err
	}
	cols := []ExportColumn{{Name: "id"}, {Name: "name"}, {Name: "status"}, {Name: "createdAt"}, {Name: "updatedAt"}}
	for _, st := range proc.Steps {
		for i := range st.Parameters {
			cols = append(cols, ExportColumn{Name: st.Label + "." + st.Parameters[i].Name, Param: &st.Parameters[i]})
		}
		if st.SignatureMeaning != "" {
			cols = append(cols, ExportColumn{Name: st.Label + ".signature", SignedStep: st.ID})
		}
	}
	if err := fn(cols, nil); err != nil {
		return err
	}
	const batch = 200
	for n := 1; ; n++ {
		var list []ListedMeasurement
		err := s.store.Read(ctx, func(tx Tx) (err error) {
			list, _, err = tx.ListMeasurements(p.OrgID, MeasurementQuery{ProcessID: proc.ID, Page: Page{Page: n, PerPage: batch}})
			return err
		})
		if err != nil {
			return err
		}
		for _, lm := range list {
			var row []any
			err := s.store.View(ctx, func(tx Tx) error {
				r, err := s.readRun(tx, p, lm.ID)
				if err != nil {
					return err
				}
				cur, hidden := r.current(nil), r.hidden()
				row = []any{r.m.ID, r.m.Name, r.m.Status, r.m.CreatedAt, r.m.UpdatedAt}
				for _, c := range cols[5:] {
					if c.SignedStep != "" {
						row = append(row, r.signatures(c.SignedStep))
						continue
					}
					if hidden[c.Param.ID] {
						row = append(row, nil)
					} else {
						row = append(row, visibleValue(c.Param, cur[c.Param.ID], hidden))
					}
				}
				return nil
			})
			if IsCode(err, CodeNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if err := fn(cols, row); err != nil {
				return err
			}
		}
		if len(list) < batch {
			return nil
		}
	}
}

// signatures are the electronic signatures of the actions that count at
// a step (not superseded, reproved or rejections), as text: "Approved by
// NAME <EMAIL> at TIME (password)", joined by "; "; nil when none.
func (r *run) signatures(stepID string) any {
	var out []string
	for _, a := range r.actions {
		if a.StepID != stepID || a.Signature == nil || a.Superseded || a.Reproved || a.Type == engine.Rejection {
			continue
		}
		out = append(out, SignatureText(*a.Signature))
	}
	if len(out) == 0 {
		return nil
	}
	return strings.Join(out, "; ")
}

// SignatureText is a signature as one line people read: "Approved by
// NAME <EMAIL> at TIME (password)".
func SignatureText(s ActionSignature) string {
	return fmt.Sprintf("%s by %s <%s> at %s (%s)", s.Meaning, s.SignerName, s.SignerEmail, s.SignedAt.UTC().Format("2006-01-02T15:04:05.000Z"), s.Method)
}

// visibleValue is v as an export shows it to the reader: a TABLE's rows
// keyed by column name, without the columns hidden from the reader
// (section 9 holds in exports as in views).
func visibleValue(p *Parameter, v any, hidden map[string]bool) any {
	if p.Type != TypeTable || v == nil {
		return v
	}
	rows := tableRows(v)
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		kept := make(map[string]any, len(r))
		for _, col := range p.Parameters {
			if cell, ok := r[col.ID]; ok && !hidden[col.ID] {
				kept[col.Name] = cell
			}
		}
		out = append(out, kept)
	}
	return out
}
