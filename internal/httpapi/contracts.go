package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

type templateIn struct {
	Body struct {
		Name             string `json:"name" required:"true" maxLength:"200"`
		Body             string `json:"body" required:"true" doc:"Paragraphs separated by blank lines, # headings, placeholders {{param NAME}}, {{entity FIELD}}, {{measurement.name}}, {{process.name}}, {{date}}"`
		TemplateEntityID string `json:"templateEntityId,omitempty" doc:"The entity (id or name) whose record, linked by an ENTITY parameter, fills {{entity FIELD}}"`
	}
}

type templateUpdateIn struct {
	ID   string `path:"id" maxLength:"100"`
	Body struct {
		Name             *string `json:"name,omitempty" maxLength:"200"`
		Body             *string `json:"body,omitempty"`
		TemplateEntityID *string `json:"templateEntityId,omitempty" doc:"An entity's id or name; empty for none"`
	}
}

type templateGetIn struct {
	ID      string `path:"id" maxLength:"100"`
	Version int    `query:"version" minimum:"0" maximum:"2147483647" doc:"A past version; the current one when absent"`
}

type templateListIn struct {
	PageQuery
	Search string `query:"search" maxLength:"200" doc:"Name contains (case-insensitive)"`
}

func (s *Server) createTemplate(ctx context.Context, in *templateIn) (*created[wps.Template], error) {
	b := in.Body
	tp, err := s.svc.CreateTemplate(ctx, principal(ctx), wps.TemplateInput{Name: b.Name, Body: b.Body, TemplateEntityID: b.TemplateEntityID})
	return &created[wps.Template]{Location: "/v1/contract-templates/" + tp.ID, Body: tp}, err
}

func (s *Server) listTemplates(ctx context.Context, in *templateListIn) (*paged[wps.Template], error) {
	list, total, err := s.svc.ListTemplates(ctx, principal(ctx), in.page(), in.Search)
	return pagedOf(list, in.page(), total), err
}

func (s *Server) getTemplate(ctx context.Context, in *templateGetIn) (*body[wps.Template], error) {
	tp, err := s.svc.GetTemplate(ctx, principal(ctx), in.ID, in.Version)
	return &body[wps.Template]{tp}, err
}

func (s *Server) listTemplateVersions(ctx context.Context, in *idPath) (*list[wps.Template], error) {
	v, err := s.svc.ListTemplateVersions(ctx, principal(ctx), in.ID)
	return listOf(v), err
}

func (s *Server) updateTemplate(ctx context.Context, in *templateUpdateIn) (*body[wps.Template], error) {
	b := in.Body
	tp, err := s.svc.UpdateTemplate(ctx, principal(ctx), in.ID, wps.TemplateUpdate{Name: b.Name, Body: b.Body, TemplateEntityID: b.TemplateEntityID})
	return &body[wps.Template]{tp}, err
}

func (s *Server) deleteTemplate(ctx context.Context, in *idPath) (*empty, error) {
	return nil, s.svc.DeleteTemplate(ctx, principal(ctx), in.ID)
}

func (s *Server) listDocuments(ctx context.Context, in *idPath) (*list[wps.Document], error) {
	docs, err := s.svc.ListDocuments(ctx, principal(ctx), in.ID)
	return listOf(docs), err
}

func (s *Server) getDocument(ctx context.Context, in *idPath) (*body[wps.DocumentDetail], error) {
	d, err := s.svc.GetDocument(ctx, principal(ctx), in.ID)
	return &body[wps.DocumentDetail]{d}, err
}

// documentContent sends a document's PDF.
func (s *Server) documentContent(ctx context.Context, in *idPath) (*huma.StreamResponse, error) {
	d, err := s.svc.DocumentContent(ctx, principal(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "application/pdf")
		hctx.SetHeader("Content-Length", strconv.Itoa(len(d.Content)))
		hctx.SetHeader("Content-Disposition", `attachment; filename="`+d.ID+`.pdf"`)
		hctx.SetHeader("ETag", `"`+d.SHA256+`"`)
		hctx.SetHeader("X-Content-Type-Options", "nosniff")
		hctx.SetStatus(http.StatusOK)
		if _, err := hctx.BodyWriter().Write(d.Content); err != nil {
			s.log.ErrorContext(ctx, "download interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}, nil
}

type verifyIn struct {
	ID       string `path:"id" maxLength:"100"`
	Rerender bool   `query:"rerender" doc:"Also render the template's version again with the document's inputs and compare the bytes (rerendered): within the server's rendering limits, a few times a minute per user (429 beyond)"`
}

func (s *Server) verifyDocument(ctx context.Context, in *verifyIn) (*body[wps.DocumentCheck], error) {
	c, err := s.svc.VerifyDocument(ctx, principal(ctx), in.ID, in.Rerender)
	return &body[wps.DocumentCheck]{c}, err
}

// withPDF documents a PDF response.
func withPDF(o huma.Operation) huma.Operation {
	o.Responses = map[string]*huma.Response{"200": {Description: "The PDF, with an ETag of its SHA-256",
		Content: map[string]*huma.MediaType{"application/pdf": {Schema: &huma.Schema{Type: "string", Format: "binary"}}}}}
	return o
}
