package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

type uploadIn struct {
	RawBody multipart.Form
}

// upload stores the form's "file" part; its type is sniffed from the content.
func (s *Server) upload(ctx context.Context, in *uploadIn) (*created[wps.Attachment], error) {
	if s.blobs == nil {
		return nil, wps.Internal(errors.New("no attachment store configured"))
	}
	files := in.RawBody.File["file"]
	if len(files) != 1 {
		return nil, wps.Invalid("file", "send exactly one file in the multipart field \"file\"")
	}
	f, err := files[0].Open()
	if err != nil {
		return nil, wps.Errorf(wps.CodeBadRequest, "cannot read the file")
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, wps.Errorf(wps.CodeBadRequest, "cannot read the file")
	}
	head = head[:n]
	a, err := s.svc.Upload(ctx, principal(ctx), s.blobs, files[0].Filename, http.DetectContentType(head), io.MultiReader(bytes.NewReader(head), f))
	return &created[wps.Attachment]{Location: "/v1/attachments/" + a.ID, Body: a}, err
}

// download streams an attachment of the caller's org.
func (s *Server) download(ctx context.Context, in *idPath) (*huma.StreamResponse, error) {
	if s.blobs == nil {
		return nil, wps.NotFound("attachment")
	}
	a, rc, err := s.svc.OpenAttachment(ctx, principal(ctx), s.blobs, in.ID)
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer rc.Close()
		hctx.SetHeader("Content-Type", a.ContentType)
		hctx.SetHeader("Content-Length", strconv.FormatInt(a.Size, 10))
		hctx.SetHeader("Content-Disposition", `attachment; filename="`+sanitizeFilename(a.Filename)+`"`)
		hctx.SetHeader("ETag", `"`+a.SHA256+`"`)
		hctx.SetHeader("X-Content-Type-Options", "nosniff")
		hctx.SetStatus(http.StatusOK)
		if _, err := io.Copy(hctx.BodyWriter(), rc); err != nil {
			s.log.ErrorContext(ctx, "download interrupted", "err", err, "request_id", requestID(ctx))
		}
	}}, nil
}

// sanitizeFilename keeps a file name safe inside a quoted header value.
func sanitizeFilename(name string) string {
	b := []rune{}
	for _, r := range name {
		if r < 0x20 || r == '"' || r == '\\' || r > 0x7e {
			r = '_'
		}
		b = append(b, r)
	}
	return string(b)
}

// withUpload documents the multipart upload and raises its body limit.
func withUpload(o huma.Operation) huma.Operation {
	o.MaxBodyBytes = uploadLimit
	return o
}

// withBinary documents a binary response.
func withBinary(o huma.Operation) huma.Operation {
	o.Responses = map[string]*huma.Response{"200": {Description: "The file, as the media type sniffed from its bytes, with an ETag of its SHA-256",
		Content: map[string]*huma.MediaType{"*/*": {Schema: &huma.Schema{Type: "string", Format: "binary"}}}}}
	return o
}
