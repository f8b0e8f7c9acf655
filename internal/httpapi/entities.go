package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/xuri/excelize/v2"

	"wps/internal/sheets"
	"wps/internal/wps"
)

type entityIn struct {
	Body struct {
		Name            string          `json:"name" required:"true"`
		Label           string          `json:"label,omitempty"`
		ViewPolicyNames []string        `json:"viewPolicyNames,omitempty"`
		Parameters      []wps.Parameter `json:"parameters,omitempty"`
	}
}

type simplifiedParamBody struct {
	N        string   `json:"n" required:"true" doc:"parameter name"`
	T        string   `json:"t" required:"true" doc:"parameter type"`
	Ref      string   `json:"ref,omitempty" doc:"ENTITY parameters: the linked entity's name or id"`
	Op       []string `json:"op,omitempty" doc:"entity operations, e.g. WRITE"`
	IsUnique bool     `json:"isUnique,omitempty"`
}

type simplifiedEntityIn struct {
	Body struct {
		N  string                `json:"n" required:"true" doc:"entity name"`
		VP []string              `json:"vp,omitempty" doc:"view policy names"`
		P  []simplifiedParamBody `json:"p,omitempty" doc:"parameters"`
	}
}

type entityUpdateIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Name            *string          `json:"name,omitempty"`
		Label           *string          `json:"label,omitempty"`
		ViewPolicyNames *[]string        `json:"viewPolicyNames,omitempty"`
		Parameters      *[]wps.Parameter `json:"parameters,omitempty"`
	}
}

type listQuery struct {
	PageQuery
	Search string `query:"search" maxLength:"200" doc:"Name or label contains (case-insensitive)"`
}

// trashQuery is the query of a list that also shows what was deleted.
type trashQuery struct {
	PageQuery
	Search  string `query:"search" maxLength:"200" doc:"Name or label contains (case-insensitive)"`
	Deleted bool   `query:"deleted" doc:"List the deleted ones instead (deletedAt set), which :restore brings back"`
}

func entityCreated(e wps.Entity, err error) (*created[wps.Entity], error) {
	return &created[wps.Entity]{Location: "/v1/entities/" + e.ID, Body: e}, err
}

func (s *Server) createEntity(ctx context.Context, in *entityIn) (*created[wps.Entity], error) {
	b := in.Body
	return entityCreated(s.svc.CreateEntity(ctx, principal(ctx), wps.EntityInput{Name: b.Name, Label: b.Label, ViewPolicyNames: b.ViewPolicyNames, Parameters: b.Parameters}))
}

func (s *Server) createSimplifiedEntity(ctx context.Context, in *simplifiedEntityIn) (*created[wps.Entity], error) {
	ps := make([]wps.SimplifiedParam, len(in.Body.P))
	for i, p := range in.Body.P {
		ps[i] = wps.SimplifiedParam{N: p.N, T: p.T, Ref: p.Ref, Op: p.Op, IsUnique: p.IsUnique}
	}
	return entityCreated(s.svc.CreateEntity(ctx, principal(ctx), wps.FromSimplified(in.Body.N, in.Body.VP, ps)))
}

func (s *Server) listEntities(ctx context.Context, in *trashQuery) (*paged[wps.Entity], error) {
	list := s.svc.ListEntities
	if in.Deleted {
		list = s.svc.ListDeletedEntities
	}
	entities, total, err := list(ctx, principal(ctx), in.page(), in.Search)
	return pagedOf(entities, in.page(), total), err
}

func (s *Server) getEntity(ctx context.Context, in *idPath) (*body[wps.Entity], error) {
	e, err := s.svc.GetEntity(ctx, principal(ctx), in.ID)
	return &body[wps.Entity]{e}, err
}

func (s *Server) updateEntity(ctx context.Context, in *entityUpdateIn) (*body[wps.Entity], error) {
	b := in.Body
	e, err := s.svc.UpdateEntity(ctx, principal(ctx), in.ID, wps.EntityUpdate{Name: b.Name, Label: b.Label, ViewPolicyNames: b.ViewPolicyNames, Parameters: b.Parameters})
	return &body[wps.Entity]{e}, err
}

func (s *Server) deleteEntity(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeleteEntity(ctx, principal(ctx), in.ID)
}

func (s *Server) restoreEntity(ctx context.Context, in *idPath) (*body[wps.Entity], error) {
	e, err := s.svc.RestoreEntity(ctx, principal(ctx), in.ID)
	return &body[wps.Entity]{e}, err
}

// Records.

type recordPath struct {
	ID       string `path:"id" maxLength:"100"`
	RecordID string `path:"recordId" maxLength:"100"`
}

type recordValues struct {
	Values map[string]json.RawMessage `json:"values" required:"true" doc:"Values keyed by parameter name"`
}

type recordIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body recordValues
}

type recordPatchIn struct {
	ID       string `path:"id" maxLength:"100"`
	RecordID string `path:"recordId" maxLength:"100"`
	Body     recordValues
}

// recordListIn takes filter[NAME]=VALUE query parameters besides paging.
type recordListIn struct {
	ID string `path:"id" maxLength:"100"`
	PageQuery
	filters map[string]string
}

// Resolve collects filter[NAME]=VALUE pairs.
func (in *recordListIn) Resolve(ctx huma.Context) []error {
	in.filters = map[string]string{}
	u := ctx.URL()
	for key, vals := range u.Query() {
		if name, ok := strings.CutPrefix(key, "filter["); ok && strings.HasSuffix(name, "]") && len(vals) > 0 {
			in.filters[strings.TrimSuffix(name, "]")] = vals[0]
		}
	}
	return nil
}

func (s *Server) createRecord(ctx context.Context, in *recordIn) (*created[wps.Record], error) {
	r, err := s.svc.CreateRecord(ctx, principal(ctx), in.ID, in.Body.Values)
	return &created[wps.Record]{Location: "/v1/entities/" + in.ID + "/records/" + r.ID, Body: r}, err
}

func (s *Server) listRecords(ctx context.Context, in *recordListIn) (*paged[wps.Record], error) {
	page := in.page()
	list, total, err := s.svc.ListRecords(ctx, principal(ctx), in.ID, page, in.filters)
	return pagedOf(list, page, total), err
}

func (s *Server) getRecord(ctx context.Context, in *recordPath) (*body[wps.Record], error) {
	r, err := s.svc.GetRecord(ctx, principal(ctx), in.ID, in.RecordID)
	return &body[wps.Record]{r}, err
}

func (s *Server) patchRecord(ctx context.Context, in *recordPatchIn) (*body[wps.Record], error) {
	r, err := s.svc.PatchRecord(ctx, principal(ctx), in.ID, in.RecordID, in.Body.Values)
	return &body[wps.Record]{r}, err
}

func (s *Server) deleteRecord(ctx context.Context, in *recordPath) (*empty, error) {
	return nil, s.svc.DeleteRecord(ctx, principal(ctx), in.ID, in.RecordID)
}

// Import and export.

type importIn struct {
	ID          string `path:"id" maxLength:"100"`
	ContentType string `header:"Content-Type" doc:"text/csv, application/json or the .xlsx media type (application/vnd.openxmlformats-officedocument.spreadsheetml.sheet)"`
	Prefer      string `header:"Prefer" doc:"respond-async: run the import as a job whatever its size"`
	RawBody     []byte `contentType:"text/csv" doc:"CSV with a header row of parameter names, an .xlsx workbook (its first page, first row the parameter names or labels), or a JSON array of objects keyed by parameter name"`
}

type imported struct {
	Imported int `json:"imported"`
}

// importOut is 200 with the rows imported, or 202 with the job that
// imports them (routes.go documents both: withImportJob).
type importOut struct {
	Status   int
	Location string `header:"Location" hidden:"true"`
	Applied  string `header:"Preference-Applied" hidden:"true"`
	Body     any
}

func (s *Server) importRecords(ctx context.Context, in *importIn) (*importOut, error) {
	rows, err := s.importRows(ctx, in)
	if err != nil {
		return nil, err
	}
	async := preferAsync(in.Prefer)
	res, err := s.svc.Import(ctx, principal(ctx), s.blobs, in.ID, rows, async)
	if err != nil {
		return nil, err
	}
	if res.Job == nil {
		return &importOut{Status: http.StatusOK, Body: imported{res.Imported}}, nil
	}
	out := &importOut{Status: http.StatusAccepted, Location: "/v1/import-jobs/" + res.Job.ID, Body: res.Job}
	if async {
		out.Applied = "respond-async"
	}
	return out, nil
}

// preferAsync reports a Prefer header asking for respond-async (RFC 7240).
func preferAsync(h string) bool {
	for _, p := range strings.Split(h, ",") {
		name, _, _ := strings.Cut(p, ";")
		if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
			return true
		}
	}
	return false
}

// importRows reads an import's body: CSV, a JSON array or a workbook.
func (s *Server) importRows(ctx context.Context, in *importIn) ([]map[string]json.RawMessage, error) {
	mt, _, _ := mime.ParseMediaType(in.ContentType)
	if mt == xlsxType {
		return s.xlsxRows(ctx, in.ID, in.RawBody)
	}
	if !utf8.Valid(in.RawBody) {
		return nil, wps.Errorf(wps.CodeBadRequest, "the body must be valid UTF-8")
	}
	switch mt {
	case "application/json":
		var rows []map[string]json.RawMessage
		if json.Unmarshal(in.RawBody, &rows) != nil {
			return nil, wps.Errorf(wps.CodeBadRequest, "the body must be a JSON array of objects keyed by parameter name")
		}
		if path, bad := badTextAt(in.RawBody); bad {
			return nil, wps.Invalid("rows"+path, textMessage)
		}
		return rows, nil
	case "text/csv":
		return s.csvRows(ctx, in.ID, in.RawBody)
	}
	return nil, huma.Error415UnsupportedMediaType("the body must be text/csv, application/json or " + xlsxType)
}

// Import jobs.

type importJobPath struct {
	ID string `path:"id" maxLength:"100"`
}

func (s *Server) getImportJob(ctx context.Context, in *importJobPath) (*body[wps.ImportJob], error) {
	j, err := s.svc.GetImportJob(ctx, principal(ctx), in.ID)
	return &body[wps.ImportJob]{j}, err
}

// csvRows reads CSV with a header row into rows keyed by parameter name,
// each cell turned into JSON by its parameter's type. The id, createdAt and
// updatedAt columns of an export are ignored, so an export imports as is.
func (s *Server) csvRows(ctx context.Context, entityID string, data []byte) ([]map[string]json.RawMessage, error) {
	e, err := s.svc.GetEntity(ctx, principal(ctx), entityID)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, wps.Errorf(wps.CodeBadRequest, "malformed CSV: %v", err)
	}
	var rows []map[string]json.RawMessage
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, wps.Errorf(wps.CodeBadRequest, "malformed CSV: %v", err)
		}
		row, err := tableRow(e, header, rec, len(rows), csvCell)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
}

// tableRow turns one row of text cells under header into values keyed by
// parameter name (a header may name a parameter or its label).
func tableRow(e wps.Entity, header, rec []string, n int, conv func(wps.Parameter, string) json.RawMessage) (map[string]json.RawMessage, error) {
	row := map[string]json.RawMessage{}
	for i, cell := range rec {
		if i >= len(header) || cell == "" || exportOnly[header[i]] {
			continue
		}
		name := header[i]
		p, ok := e.ParamByName(name)
		if !ok {
			for _, q := range e.Parameters {
				if q.Label == name {
					p, name = q, q.Name
					break
				}
			}
		}
		v := conv(p, cell)
		if path, bad := badTextAt(v); bad {
			return nil, wps.Invalid(fmt.Sprintf("rows[%d].%s%s", n, name, path), textMessage)
		}
		row[name] = v
	}
	return row, nil
}

// xlsxRows reads the records of a workbook's first page (see tableRow).
func (s *Server) xlsxRows(ctx context.Context, entityID string, data []byte) ([]map[string]json.RawMessage, error) {
	e, err := s.svc.GetEntity(ctx, principal(ctx), entityID)
	if err != nil {
		return nil, err
	}
	var rows []map[string]json.RawMessage
	err = s.svc.SheetRows(data, func(header, rec []string) error {
		for _, c := range rec {
			if !utf8.ValidString(c) {
				return wps.Errorf(wps.CodeBadRequest, "the workbook's text must be valid UTF-8")
			}
		}
		row, err := tableRow(e, header, rec, len(rows), xlsxCell)
		rows = append(rows, row)
		return err
	})
	return rows, err
}

// xlsxCell is csvCell for a workbook's cell: TRUE and FALSE are booleans,
// and a date is a serial day number.
func xlsxCell(p wps.Parameter, cell string) json.RawMessage {
	switch p.Type {
	case wps.TypeBoolean:
		switch cell {
		case "TRUE", "1":
			return json.RawMessage("true")
		case "FALSE", "0":
			return json.RawMessage("false")
		}
	case wps.TypeDate, wps.TypeDateTime:
		if days, err := strconv.ParseFloat(cell, 64); err == nil {
			t, err := excelize.ExcelDateToTime(days, false)
			if err == nil {
				layout := time.DateOnly
				if p.Type == wps.TypeDateTime {
					layout = time.RFC3339
				}
				b, _ := json.Marshal(t.UTC().Format(layout))
				return b
			}
		}
	}
	return csvCell(p, cell)
}

var exportOnly = map[string]bool{"id": true, "createdAt": true, "updatedAt": true}

// csvCell is the JSON a CSV cell stands for, given the parameter: a list
// (MULTI_SELECT, TABLE, isMultiple) or a number is the JSON the cell holds.
func csvCell(p wps.Parameter, cell string) json.RawMessage {
	if p.Multiple() && strings.HasPrefix(strings.TrimSpace(cell), "[") && json.Valid([]byte(cell)) {
		return json.RawMessage(cell)
	}
	switch p.Type {
	case wps.TypeInt, wps.TypeNumber, wps.TypeMultiSelect, wps.TypeTable:
		if json.Valid([]byte(cell)) {
			return json.RawMessage(cell)
		}
	case wps.TypeBoolean:
		if l := strings.ToLower(cell); l == "true" || l == "false" {
			return json.RawMessage(l)
		}
	}
	b, _ := json.Marshal(cell)
	return b
}

type exportIn struct {
	ID     string `path:"id" maxLength:"100"`
	Format string `query:"format" enum:"csv,xlsx" default:"csv" doc:"csv, or xlsx for a workbook"`
}

func (s *Server) exportRecords(ctx context.Context, in *exportIn) (*huma.StreamResponse, error) {
	p := principal(ctx)
	if _, err := s.svc.RecordsEntity(ctx, p, in.ID); err != nil {
		return nil, err
	}
	if in.Format == "xlsx" {
		return s.exportXLSX(ctx, p, in.ID), nil
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "text/csv; charset=utf-8")
		hctx.SetHeader("Content-Disposition", `attachment; filename="records.csv"`)
		hctx.SetStatus(http.StatusOK)
		w := csv.NewWriter(hctx.BodyWriter())
		var names []string
		err := s.svc.ExportRecords(ctx, p, in.ID, func(e wps.Entity, r *wps.Record) error {
			if r == nil {
				names = make([]string, 0, len(e.Parameters))
				for _, prm := range e.Parameters {
					names = append(names, prm.Name)
				}
				return w.Write(append(append([]string{"id"}, names...), "createdAt", "updatedAt"))
			}
			row := []string{r.ID}
			for _, n := range names {
				row = append(row, csvValue(r.Values[n]))
			}
			ca, _ := r.CreatedAt.MarshalJSON()
			ua, _ := r.UpdatedAt.MarshalJSON()
			row = append(row, strings.Trim(string(ca), `"`), strings.Trim(string(ua), `"`))
			if err := w.Write(row); err != nil {
				return err
			}
			w.Flush()
			return w.Error()
		})
		w.Flush()
		if err != nil {
			s.log.ErrorContext(ctx, "export interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}, nil
}

// csvValue writes a value as its canonical text; lists and rows as JSON.
func csvValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// exportXLSX writes the records as a workbook: the CSV's columns, numbers
// and booleans as such, lists and rows as JSON text.
func (s *Server) exportXLSX(ctx context.Context, p *wps.Principal, entityID string) *huma.StreamResponse {
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		var w *sheets.RowWriter
		var names []string
		err := s.svc.ExportRecords(ctx, p, entityID, func(e wps.Entity, r *wps.Record) error {
			if r == nil {
				names = make([]string, 0, len(e.Parameters))
				for _, prm := range e.Parameters {
					names = append(names, prm.Name)
				}
				var err error
				w, err = sheets.NewRowWriter(append(append([]string{"id"}, names...), "createdAt", "updatedAt"))
				return err
			}
			row := []any{r.ID}
			for _, n := range names {
				row = append(row, xlsxValue(r.Values[n]))
			}
			ca, _ := r.CreatedAt.MarshalJSON()
			ua, _ := r.UpdatedAt.MarshalJSON()
			return w.Add(append(row, strings.Trim(string(ca), `"`), strings.Trim(string(ua), `"`)))
		})
		if err == nil {
			hctx.SetHeader("Content-Type", xlsxType)
			hctx.SetHeader("Content-Disposition", `attachment; filename="records.xlsx"`)
			hctx.SetStatus(http.StatusOK)
			_, err = w.WriteTo(hctx.BodyWriter())
		}
		if err != nil {
			s.log.ErrorContext(ctx, "export interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}
}

// xlsxValue is a value as a workbook cell.
func xlsxValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		return x
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == string(x) {
			return f
		}
	}
	return csvValue(v)
}
