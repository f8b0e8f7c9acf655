package httpapi

import (
	"context"
	"encoding/json"

	"wps/internal/wps"
)

type processIn struct {
	Body struct {
		Name     string     `json:"name" required:"true"`
		Label    string     `json:"label,omitempty"`
		IconName string     `json:"iconName,omitempty"`
		Code     string     `json:"code,omitempty" doc:"Short unique code, e.g. INSP; measurements are named CODE-n. Derived from the name when absent."`
		Steps    []wps.Step `json:"steps" required:"true" doc:"Steps in order; they refer to each other by id or label"`
	}
}

type processUpdateIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Name     *string     `json:"name,omitempty"`
		Label    *string     `json:"label,omitempty"`
		IconName *string     `json:"iconName,omitempty"`
		Code     *string     `json:"code,omitempty"`
		Steps    *[]wps.Step `json:"steps,omitempty" doc:"The whole new list: known ids are edited, others added, missing ones removed"`
	}
}

type processGetIn struct {
	ID      string `path:"id" maxLength:"100"`
	Version int    `query:"version" minimum:"0" maximum:"2147483647" doc:"A past version; the latest when absent"`
}

func processCreated(p wps.Process, err error) (*created[wps.Process], error) {
	return &created[wps.Process]{Location: "/v1/process/" + p.ID, Body: p}, err
}

func (s *Server) createProcess(ctx context.Context, in *processIn) (*created[wps.Process], error) {
	b := in.Body
	return processCreated(s.svc.CreateProcess(ctx, principal(ctx), wps.ProcessInput{Name: b.Name, Label: b.Label, IconName: b.IconName, Code: b.Code, Steps: b.Steps}))
}

// listProcesses answers the list form: steps without their parameters.
func (s *Server) listProcesses(ctx context.Context, in *trashQuery) (*paged[wps.Process], error) {
	listFn := s.svc.ListProcesses
	if in.Deleted {
		listFn = s.svc.ListDeletedProcesses
	}
	list, total, err := listFn(ctx, principal(ctx), in.page(), in.Search)
	for i := range list {
		for j := range list[i].Steps {
			list[i].Steps[j].Parameters = nil
		}
	}
	return pagedOf(list, in.page(), total), err
}

func (s *Server) getProcess(ctx context.Context, in *processGetIn) (*body[wps.Process], error) {
	p, err := s.svc.GetProcess(ctx, principal(ctx), in.ID, in.Version)
	return &body[wps.Process]{p}, err
}

func (s *Server) updateProcess(ctx context.Context, in *processUpdateIn) (*body[wps.Process], error) {
	b := in.Body
	p, err := s.svc.UpdateProcess(ctx, principal(ctx), in.ID, wps.ProcessUpdate{Name: b.Name, Label: b.Label, IconName: b.IconName, Code: b.Code, Steps: b.Steps})
	return &body[wps.Process]{p}, err
}

func (s *Server) deleteProcess(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeleteProcess(ctx, principal(ctx), in.ID)
}

func (s *Server) restoreProcess(ctx context.Context, in *idPath) (*body[wps.Process], error) {
	p, err := s.svc.RestoreProcess(ctx, principal(ctx), in.ID)
	return &body[wps.Process]{p}, err
}

func (s *Server) listProcessVersions(ctx context.Context, in *idPath) (*list[wps.ProcessVersion], error) {
	v, err := s.svc.ListProcessVersions(ctx, principal(ctx), in.ID)
	return listOf(v), err
}

type migrationIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body wps.MigrationInput
}

func (s *Server) migrateMeasurements(ctx context.Context, in *migrationIn) (*body[wps.Migration], error) {
	m, err := s.svc.MigrateMeasurements(ctx, principal(ctx), in.ID, in.Body)
	return &body[wps.Migration]{m}, err
}

type stepAddIn struct {
	ID       string `path:"id" maxLength:"100"`
	Position int    `query:"position" default:"-1" minimum:"-1" doc:"Insert before this position (from 0); appended when absent"`
	Body     wps.Step
}

type stepPath struct {
	ID     string `path:"id" maxLength:"100"`
	StepID string `path:"stepId" maxLength:"100"`
}

type stepPatchIn struct {
	ID      string `path:"id" maxLength:"100"`
	StepID  string `path:"stepId" maxLength:"100"`
	Body    wps.Step
	RawBody []byte
}

func (s *Server) addStep(ctx context.Context, in *stepAddIn) (*created[wps.Step], error) {
	var pos *int
	if in.Position >= 0 {
		pos = &in.Position
	}
	st, err := s.svc.AddStep(ctx, principal(ctx), in.ID, in.Body, pos)
	return &created[wps.Step]{Location: "/v1/process/" + in.ID + "/steps/" + st.ID, Body: st}, err
}

// updateStep changes only the fields the body carries.
func (s *Server) updateStep(ctx context.Context, in *stepPatchIn) (*body[wps.Step], error) {
	st, err := s.svc.UpdateStep(ctx, principal(ctx), in.ID, in.StepID, func(st *wps.Step) error {
		return mergeJSON(st, in.RawBody)
	})
	return &body[wps.Step]{st}, err
}

// mergeJSON overlays the top-level fields of patch onto v.
func mergeJSON(v any, patch []byte) error {
	cur, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m, p map[string]json.RawMessage
	if err := json.Unmarshal(cur, &m); err != nil {
		return err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return wps.Errorf(wps.CodeBadRequest, "the body must be a JSON object")
	}
	for k, val := range p {
		m[k] = val
	}
	merged, _ := json.Marshal(m)
	return json.Unmarshal(merged, v)
}

func (s *Server) deleteStep(ctx context.Context, in *stepPath) (*empty, error) {
	return nil, s.svc.DeleteStep(ctx, principal(ctx), in.ID, in.StepID)
}

func (s *Server) exportProcess(ctx context.Context, in *idPath) (*body[wps.ProcessExport], error) {
	doc, err := s.svc.ExportProcess(ctx, principal(ctx), in.ID)
	return &body[wps.ProcessExport]{doc}, err
}

type importProcessIn struct {
	Body wps.ProcessExport
}

func (s *Server) importProcess(ctx context.Context, in *importProcessIn) (*created[wps.Process], error) {
	return processCreated(s.svc.ImportProcess(ctx, principal(ctx), in.Body))
}
