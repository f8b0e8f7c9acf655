package httpapi

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/sheets"
	"wps/internal/wps"
)

type measurementIn struct {
	Body struct {
		ProcessID   string `json:"processId,omitempty" doc:"The process (this or processUuid is required); its latest version is used"`
		ProcessUUID string `json:"processUuid,omitempty" doc:"Same as processId"`
	}
}

func (s *Server) createMeasurement(ctx context.Context, in *measurementIn) (*created[wps.MeasurementView], error) {
	id, err := sameProcess("processId", in.Body.ProcessID, "processUuid", in.Body.ProcessUUID)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, wps.Invalid("processId", "is required")
	}
	m, err := s.svc.CreateMeasurement(ctx, principal(ctx), id)
	return &created[wps.MeasurementView]{Location: "/v1/measurements/" + m.ID, Body: m}, err
}

// sameProcess reads a process id given under either of two names
// (processId, processUuid: both are natural, and clients mix them); given
// under both, they must agree.
func sameProcess(field, v, alias, av string) (string, error) {
	if v != "" && av != "" && v != av {
		return "", wps.Invalid(alias, "%s and %s name different processes", field, alias)
	}
	return cmp.Or(v, av), nil
}

type simplifiedIn struct {
	Body struct {
		ProcessUUID  string                     `json:"processUuid,omitempty" doc:"The process id (this or processLabel)"`
		ProcessID    string                     `json:"processId,omitempty" doc:"Same as processUuid"`
		ProcessLabel string                     `json:"processLabel,omitempty" doc:"The process's exact label"`
		StepID       string                     `json:"stepId,omitempty" doc:"The step id (default: the first step)"`
		StepUUID     string                     `json:"stepUuid,omitempty" doc:"Same as stepId"`
		StepLabel    string                     `json:"stepLabel,omitempty"`
		Parameters   map[string]json.RawMessage `json:"parameters,omitempty" doc:"Values keyed by parameter name or label"`
		Signature    *signatureIn               `json:"signature,omitempty" doc:"Required at a step with a signatureMeaning: the signer's credential"`
	}
}

// signatureIn is the credential of a request that signs: the signer's
// password re-entered, or sso after a sign-in through single sign-on in
// the last 5 minutes. The password is checked and forgotten.
type signatureIn struct {
	Password string `json:"password,omitempty" doc:"The signer's password, re-entered (never stored)"`
	SSO      bool   `json:"sso,omitempty" doc:"Sign with a sign-in through the organization's single sign-on in the last 5 minutes instead of the password"`
}

func (s *signatureIn) input() wps.SignatureInput {
	if s == nil {
		return wps.SignatureInput{}
	}
	return wps.SignatureInput{Password: s.Password, SSO: s.SSO}
}

func (s *Server) createSimplifiedMeasurement(ctx context.Context, in *simplifiedIn) (*created[wps.SimplifiedView], error) {
	b := in.Body
	process, err := sameProcess("processUuid", b.ProcessUUID, "processId", b.ProcessID)
	if err != nil {
		return nil, err
	}
	m, err := s.svc.CreateSimplified(ctx, principal(ctx), wps.SimplifiedInput{ProcessUUID: process, ProcessLabel: b.ProcessLabel,
		StepID: b.StepID, StepUUID: b.StepUUID, StepLabel: b.StepLabel, Parameters: b.Parameters, Signature: b.Signature.input()})
	return &created[wps.SimplifiedView]{Location: "/v1/measurements/" + m.ID, Body: m}, err
}

type measurementListIn struct {
	PageQuery
	ProcessID   string    `query:"processId" maxLength:"100"`
	ProcessUUID string    `query:"processUuid" maxLength:"100" doc:"Same as processId"`
	Status      string    `query:"status" enum:"OPEN,APPROVED,REPROVED,STAGE_OPEN,CONSENSUS,IN_CONSENSUS,PENDING"`
	StepID      string    `query:"stepId" maxLength:"100" doc:"Only measurements where this step is open"`
	Overdue     bool      `query:"overdue" doc:"Only measurements with an open step past its deadline"`
	CreatedFrom time.Time `query:"createdFrom" doc:"Created at or after (RFC 3339)"`
	CreatedTo   time.Time `query:"createdTo" doc:"Created before (RFC 3339)"`
	Name        string    `query:"name" maxLength:"100" doc:"Only measurements whose name starts with this (case-insensitive), e.g. PUMP-12"`
	Actionable  string    `query:"actionable" enum:"me" doc:"me: only measurements waiting on the caller (an open step with a seat they can fill now), each with its actionableSteps; stepId and overdue then apply to those steps"`
}

func (s *Server) listMeasurements(ctx context.Context, in *measurementListIn) (*paged[wps.MeasurementSummary], error) {
	page := in.page()
	process, err := sameProcess("processId", in.ProcessID, "processUuid", in.ProcessUUID)
	if err != nil {
		return nil, err
	}
	q := wps.MeasurementQuery{Page: page, ProcessID: process, Status: in.Status, OpenStepID: in.StepID, Overdue: in.Overdue,
		Actionable: in.Actionable == "me", Name: in.Name}
	if !in.CreatedFrom.IsZero() {
		t := wps.At(in.CreatedFrom)
		q.CreatedFrom = &t
	}
	if !in.CreatedTo.IsZero() {
		t := wps.At(in.CreatedTo)
		q.CreatedBefore = &t
	}
	list, total, err := s.svc.ListMeasurements(ctx, principal(ctx), q)
	return pagedOf(list, page, total), err
}

func (s *Server) getMeasurement(ctx context.Context, in *idPath) (*body[wps.MeasurementView], error) {
	m, err := s.svc.GetMeasurement(ctx, principal(ctx), in.ID)
	return &body[wps.MeasurementView]{m}, err
}

type actIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		StepID          string                     `json:"stepId" required:"true"`
		Type            string                     `json:"type" required:"true" enum:"WRITE_DATA,APPROVAL,REJECTION"`
		PolicyName      string                     `json:"policyName,omitempty" doc:"The seat to fill when the caller holds several of the step's policies"`
		Parameters      map[string]json.RawMessage `json:"parameters,omitempty" doc:"WRITE_DATA: values keyed by parameter name or label"`
		Observation     string                     `json:"observation,omitempty" maxLength:"10000"`
		TransactionHash string                     `json:"transactionHash,omitempty" maxLength:"200"`
		Signature       *signatureIn               `json:"signature,omitempty" doc:"Required at a step with a signatureMeaning: the signer's credential"`
	}
}

func (s *Server) act(ctx context.Context, in *actIn) (*created[wps.ActionView], error) {
	b := in.Body
	a, err := s.svc.Act(ctx, principal(ctx), in.ID, wps.ActInput{StepID: b.StepID, Type: b.Type, PolicyName: b.PolicyName,
		Parameters: b.Parameters, Observation: b.Observation, TransactionHash: b.TransactionHash, Signature: b.Signature.input()})
	return &created[wps.ActionView]{Location: "/v1/actions/" + a.ID, Body: a}, err
}

func (s *Server) getAction(ctx context.Context, in *idPath) (*body[wps.ActionView], error) {
	a, err := s.svc.GetAction(ctx, principal(ctx), in.ID)
	return &body[wps.ActionView]{a}, err
}

type reproveIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Observation     string       `json:"observation" required:"true" maxLength:"10000" doc:"Why the action is reproved"`
		TransactionHash string       `json:"transactionHash,omitempty" maxLength:"200"`
		Signature       *signatureIn `json:"signature,omitempty" doc:"Required when the action's step has a signatureMeaning: the signer's credential"`
	}
}

func (s *Server) reprove(ctx context.Context, in *reproveIn) (*created[wps.ActionView], error) {
	a, err := s.svc.Reprove(ctx, principal(ctx), in.ID, in.Body.Observation, in.Body.TransactionHash, in.Body.Signature.input())
	return &created[wps.ActionView]{Location: "/v1/actions/" + a.ID, Body: a}, err
}

type measurementExportIn struct {
	ProcessID   string `query:"processId" maxLength:"100" doc:"The process whose measurements to export (this or processUuid is required)"`
	ProcessUUID string `query:"processUuid" maxLength:"100" doc:"Same as processId"`
	Format      string `query:"format" enum:"csv,xlsx" default:"csv" doc:"csv, or xlsx for a workbook"`
}

// exportMeasurements streams one row per measurement of a process: its
// fields, then one column per parameter ("Step.parameter") with its current
// value, empty where the reader may not see it.
func (s *Server) exportMeasurements(ctx context.Context, in *measurementExportIn) (*huma.StreamResponse, error) {
	p := principal(ctx)
	id, err := sameProcess("processId", in.ProcessID, "processUuid", in.ProcessUUID)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, wps.Invalid("processId", "is required (or processUuid)")
	}
	in.ProcessID = id
	// The first call checks access and the process before any byte is sent.
	var header []string
	stop := errors.New("header read")
	if err := s.svc.ExportMeasurements(ctx, p, in.ProcessID, func(cols []wps.ExportColumn, _ []any) error {
		for _, c := range cols {
			header = append(header, c.Name)
		}
		return stop
	}); !errors.Is(err, stop) {
		return nil, err
	}
	cell := func(v any) string {
		if t, ok := v.(wps.Time); ok {
			b, _ := t.MarshalJSON()
			return strings.Trim(string(b), `"`)
		}
		return csvValue(v)
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		var err error
		if in.Format == "xlsx" {
			var w *sheets.RowWriter
			if w, err = sheets.NewRowWriter(header); err == nil {
				err = s.svc.ExportMeasurements(ctx, p, in.ProcessID, func(_ []wps.ExportColumn, row []any) error {
					if row == nil {
						return nil
					}
					out := make([]any, len(row))
					for i, v := range row {
						if _, ok := v.(wps.Time); ok {
							out[i] = cell(v)
						} else {
							out[i] = xlsxValue(v)
						}
					}
					return w.Add(out)
				})
			}
			if err == nil {
				hctx.SetHeader("Content-Type", xlsxType)
				hctx.SetHeader("Content-Disposition", `attachment; filename="measurements.xlsx"`)
				hctx.SetStatus(http.StatusOK)
				_, err = w.WriteTo(hctx.BodyWriter())
			}
		} else {
			hctx.SetHeader("Content-Type", "text/csv; charset=utf-8")
			hctx.SetHeader("Content-Disposition", `attachment; filename="measurements.csv"`)
			hctx.SetStatus(http.StatusOK)
			cw := csv.NewWriter(hctx.BodyWriter())
			if err = cw.Write(header); err == nil {
				err = s.svc.ExportMeasurements(ctx, p, in.ProcessID, func(_ []wps.ExportColumn, row []any) error {
					if row == nil {
						return nil
					}
					rec := make([]string, len(row))
					for i, v := range row {
						rec[i] = cell(v)
					}
					if err := cw.Write(rec); err != nil {
						return err
					}
					cw.Flush()
					return cw.Error()
				})
			}
			cw.Flush()
		}
		if err != nil {
			s.log.ErrorContext(ctx, "export interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}, nil
}
