package httpapi

import (
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

// xlsxType is the media type of an .xlsx workbook.
const xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

type sheetUploadIn struct {
	RawBody multipart.Form
}

// uploadSheet stores the form's "file" part as a workbook.
func (s *Server) uploadSheet(ctx context.Context, in *sheetUploadIn) (*created[wps.Sheet], error) {
	files := in.RawBody.File["file"]
	if len(files) != 1 {
		return nil, wps.Invalid("file", "send exactly one .xlsx file in the multipart field \"file\"")
	}
	if files[0].Size > wps.MaxAttachmentBytes {
		return nil, wps.Errorf(wps.CodeTooLarge, "a sheet is at most %d bytes", wps.MaxAttachmentBytes)
	}
	f, err := files[0].Open()
	if err != nil {
		return nil, wps.Errorf(wps.CodeBadRequest, "cannot read the file")
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, wps.MaxAttachmentBytes+1))
	if err != nil {
		return nil, wps.Errorf(wps.CodeBadRequest, "cannot read the file")
	}
	sh, err := s.svc.UploadSheet(ctx, principal(ctx), files[0].Filename, content)
	return &created[wps.Sheet]{Location: "/v1/sheets/" + sh.ID, Body: sh}, err
}

type sheetListIn struct {
	PageQuery
}

func (s *Server) listSheets(ctx context.Context, in *sheetListIn) (*paged[wps.Sheet], error) {
	list, total, err := s.svc.ListSheets(ctx, principal(ctx), in.page())
	return pagedOf(list, in.page(), total), err
}

func (s *Server) getSheet(ctx context.Context, in *idPath) (*body[wps.Sheet], error) {
	sh, err := s.svc.GetSheet(ctx, principal(ctx), in.ID)
	return &body[wps.Sheet]{sh}, err
}

func (s *Server) deleteSheet(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeleteSheet(ctx, principal(ctx), in.ID)
}

func (s *Server) sheetContent(ctx context.Context, in *idPath) (*huma.StreamResponse, error) {
	sh, content, err := s.svc.SheetContent(ctx, principal(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return workbook(sh.Name, sh.SHA256, content), nil
}

type measurementSheetIn struct {
	ID      string `path:"id" maxLength:"100"`
	SheetID string `path:"sheetApiId" maxLength:"100"`
}

// measurementSheet downloads a measurement's filled copy of a workbook.
func (s *Server) measurementSheet(ctx context.Context, in *measurementSheetIn) (*huma.StreamResponse, error) {
	sh, ms, err := s.svc.GetMeasurementSheet(ctx, principal(ctx), in.ID, in.SheetID)
	if err != nil {
		return nil, err
	}
	return workbook(sh.Name, ms.SHA256, ms.Content), nil
}

// workbook answers an .xlsx file, its ETag the SHA-256 of its bytes.
func workbook(name, sha string, content []byte) *huma.StreamResponse {
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", xlsxType)
		hctx.SetHeader("Content-Length", strconv.Itoa(len(content)))
		hctx.SetHeader("Content-Disposition", `attachment; filename="`+sanitizeFilename(name)+`"`)
		hctx.SetHeader("ETag", `"`+sha+`"`)
		hctx.SetHeader("X-Content-Type-Options", "nosniff")
		hctx.SetStatus(http.StatusOK)
		_, _ = hctx.BodyWriter().Write(content)
	}}
}

// withXLSX documents a workbook response.
func withXLSX(o huma.Operation) huma.Operation {
	o.Responses = map[string]*huma.Response{"200": {Description: "The .xlsx workbook, with an ETag of its SHA-256",
		Content: map[string]*huma.MediaType{xlsxType: {Schema: &huma.Schema{Type: "string", Format: "binary"}}}}}
	return o
}
