package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"wps/internal/wps"
)

// Problem is an RFC 9457 problem detail, the body of every error response.
type Problem struct {
	Type   string           `json:"type" doc:"A URI naming the kind of problem"`
	Title  string           `json:"title"`
	Status int              `json:"status"`
	Detail string           `json:"detail"`
	Code   string           `json:"code" doc:"Stable machine-readable error code"`
	Errors []wps.FieldError `json:"errors,omitempty" doc:"The offending fields"`
	header http.Header
}

// GetHeaders gives huma the headers of a problem (Retry-After).
func (p *Problem) GetHeaders() http.Header { return p.header }

func (p *Problem) Error() string  { return p.Detail }
func (p *Problem) GetStatus() int { return p.Status }

// ContentType makes huma send problems as application/problem+json.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// statusOf maps each domain error code to its one HTTP status.
var statusOf = map[wps.Code]int{
	wps.CodeBadRequest:   http.StatusBadRequest,
	wps.CodeUnauthorized: http.StatusUnauthorized,
	wps.CodeForbidden:    http.StatusForbidden,
	wps.CodeNotFound:     http.StatusNotFound,
	wps.CodeConflict:     http.StatusConflict,
	wps.CodeGone:         http.StatusGone,
	wps.CodeInvalid:      http.StatusUnprocessableEntity,
	wps.CodeTooLarge:     http.StatusRequestEntityTooLarge,
	wps.CodeRateLimited:  http.StatusTooManyRequests,
	wps.CodeUpstream:     http.StatusBadGateway,
	wps.CodeInternal:     http.StatusInternalServerError,
}

// Status is the HTTP status the API answers for err (500 for an error
// that is not a wps.Error): the console shows errors with the same.
func Status(err error) int {
	if st := statusOf[wps.ErrorCode(err)]; st != 0 {
		return st
	}
	return http.StatusInternalServerError
}

// codeOf names the statuses that only the HTTP layer produces.
var codeOf = map[int]string{
	http.StatusMethodNotAllowed:     "method_not_allowed",
	http.StatusUnsupportedMediaType: "unsupported_media_type",
	http.StatusRequestTimeout:       "timeout",
}

func newProblem(status int, code, detail string, fields []wps.FieldError) *Problem {
	if code == "" {
		code = codeOf[status]
		for c, s := range statusOf {
			if s == status && code == "" {
				code = string(c)
			}
		}
	}
	return &Problem{Type: "urn:wps:problem:" + code, Title: http.StatusText(status), Status: status,
		Detail: detail, Code: code, Errors: fields}
}

// problemFor turns any error into a Problem. Internal errors are logged with
// their cause and shown only as "internal error".
func problemFor(ctx context.Context, log *slog.Logger, err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "the request was cancelled or timed out", nil)
	}
	var e *wps.Error
	if !errors.As(err, &e) {
		e = wps.Internal(err)
	}
	status := statusOf[e.Code]
	if status == 0 || status == http.StatusInternalServerError {
		log.ErrorContext(ctx, "internal error", "err", err, "request_id", requestID(ctx))
		return newProblem(http.StatusInternalServerError, string(wps.CodeInternal), "internal error", nil)
	}
	if status >= 500 {
		log.WarnContext(ctx, "upstream failure", "err", err, "request_id", requestID(ctx))
	}
	p = newProblem(status, string(e.Code), e.Message, e.Fields)
	if e.RetryAfter > 0 {
		p.header = http.Header{"Retry-After": {strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds())))}}
	}
	return p
}

// humaError replaces huma's error constructor so that its own errors
// (decoding, schema validation, limits) are Problems naming the field. An
// unknown field is a malformed request (400), not an invalid value.
func humaError(status int, msg string, errs ...error) huma.StatusError {
	if status >= 500 {
		return newProblem(status, "", "internal error", nil)
	}
	var fields []wps.FieldError
	code := ""
	for _, err := range errs {
		var d *huma.ErrorDetail
		if !errors.As(err, &d) {
			continue
		}
		field := fieldName(d.Location)
		m := d.Message
		if name, ok := strings.CutPrefix(m, "expected required property "); ok {
			name, _, _ = strings.Cut(name, " ")
			field = joinField(field, name)
			m = "is required"
		}
		if m == "unexpected property" {
			status, code, m = http.StatusBadRequest, string(wps.CodeBadRequest), "unknown field"
		}
		for _, bm := range bodyMessages { // unmarshalJSON
			if f, ok := strings.CutSuffix(m, ": "+bm); ok && field == "" {
				status, code, field, m = http.StatusUnprocessableEntity, string(wps.CodeInvalid), f, bm
			}
		}
		if status == http.StatusBadRequest && field == "" {
			m = "malformed JSON: " + jsonSyntaxHint(d.Message)
		}
		if field == "" {
			msg = m
			continue
		}
		fields = append(fields, wps.FieldError{Field: field, Message: m})
	}
	if len(fields) > 0 {
		msg = fields[0].Field + ": " + fields[0].Message
	}
	return newProblem(status, code, msg, fields)
}

// fieldName turns huma's "body.a.b" or "query.page" into "a.b" or "page".
func fieldName(loc string) string {
	for _, p := range []string{"body.", "query.", "path.", "header."} {
		if s, ok := strings.CutPrefix(loc, p); ok {
			return s
		}
	}
	if loc == "body" {
		return ""
	}
	return loc
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// jsonSyntaxHint keeps the decoder's message but not the echoed body.
func jsonSyntaxHint(msg string) string {
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// writeProblem writes p outside huma (middleware, mux fallbacks).
func writeProblem(w http.ResponseWriter, p *Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	for k, v := range p.header {
		w.Header()[k] = v
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}
