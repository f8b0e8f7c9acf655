// Package scim serves SCIM 2.0 (RFC 7643, RFC 7644) at /scim/v2 for
// identity providers that provision users: it translates Users and Groups
// to the user and role operations of wps.Service, which keeps every rule.
// A group is a role. The API's middleware (request id, access log,
// authentication, rate limit) runs before it (internal/httpapi); answers
// are application/scim+json, errors SCIM's error body.
package scim

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"wps/internal/wps"
)

// Prefix is where SCIM is served.
const Prefix = "/scim/v2"

// MediaType is the media type of every SCIM answer.
const MediaType = "application/scim+json"

// Schema URNs.
const (
	userSchema     = "urn:ietf:params:scim:schemas:core:2.0:User"
	groupSchema    = "urn:ietf:params:scim:schemas:core:2.0:Group"
	listSchema     = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	patchSchema    = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	errorSchema    = "urn:ietf:params:scim:api:messages:2.0:Error"
	spcSchema      = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	rtSchema       = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	schemaSchema   = "urn:ietf:params:scim:schemas:core:2.0:Schema"
	maxCount       = 100
	defaultMaxBody = 1 << 20
)

// Options configures the handler.
type Options struct {
	// Principal returns the caller the API's authentication found, or nil.
	Principal func(context.Context) *wps.Principal
	Logger    *slog.Logger
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
}

type handler struct {
	svc     *wps.Service
	opt     Options
	mux     *http.ServeMux
	maxBody int64
}

// New returns the SCIM handler over svc. Its mux patterns name the routes
// (r.Pattern, for the access log).
func New(svc *wps.Service, opt Options) http.Handler {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{svc: svc, opt: opt, mux: http.NewServeMux(), maxBody: opt.MaxBodyBytes}
	if h.maxBody <= 0 {
		h.maxBody = defaultMaxBody
	}
	h.routes()
	return h
}

func (h *handler) routes() {
	m := func(pattern string, fn func(w http.ResponseWriter, r *http.Request, p *wps.Principal) error) {
		h.mux.Handle(pattern, h.serve(fn))
	}
	m("GET "+Prefix+"/ServiceProviderConfig", h.serviceProviderConfig)
	m("GET "+Prefix+"/ResourceTypes", h.resourceTypes)
	m("GET "+Prefix+"/ResourceTypes/{id}", h.resourceType)
	m("GET "+Prefix+"/Schemas", h.schemas)
	m("GET "+Prefix+"/Schemas/{id}", h.schema)

	m("POST "+Prefix+"/Users", h.createUser)
	m("GET "+Prefix+"/Users", h.listUsers)
	m("GET "+Prefix+"/Users/{id}", h.getUser)
	m("PUT "+Prefix+"/Users/{id}", h.replaceUser)
	m("PATCH "+Prefix+"/Users/{id}", h.patchUser)
	m("DELETE "+Prefix+"/Users/{id}", h.deleteUser)

	m("POST "+Prefix+"/Groups", h.createGroup)
	m("GET "+Prefix+"/Groups", h.listGroups)
	m("GET "+Prefix+"/Groups/{id}", h.getGroup)
	m("PUT "+Prefix+"/Groups/{id}", h.replaceGroup)
	m("PATCH "+Prefix+"/Groups/{id}", h.patchGroup)
	m("DELETE "+Prefix+"/Groups/{id}", h.deleteGroup)

	m("/", func(w http.ResponseWriter, r *http.Request, _ *wps.Principal) error {
		return scimErr(http.StatusNotFound, "", "no such SCIM resource: "+r.Method+" "+r.URL.Path)
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// serve authenticates and authorizes the caller (users:manage), bounds the
// body and writes the error fn returns.
func (h *handler) serve(fn func(w http.ResponseWriter, r *http.Request, p *wps.Principal) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := h.opt.Principal(r.Context())
		var err error
		switch {
		case p == nil:
			err = scimErr(http.StatusUnauthorized, "", "use Authorization: Bearer <api-key> of a user holding users:manage")
		case !p.Can(wps.FnUsersManage):
			err = scimErr(http.StatusForbidden, "", "SCIM needs a policy with function \"users:manage\"")
		case !utf8.ValidString(r.URL.Path) || strings.ContainsRune(r.URL.Path, 0):
			err = scimErr(http.StatusNotFound, "", "no such SCIM resource")
		case plainQuery(r) != nil:
			err = plainQuery(r)
		default:
			r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
			err = fn(w, r, p)
		}
		if err != nil {
			h.writeErr(w, r, err)
		}
	})
}

// Error is a SCIM error answer (RFC 7644 section 3.12).
type Error struct {
	Status   int
	ScimType string
	Detail   string
}

func (e *Error) Error() string { return e.Detail }

func scimErr(status int, scimType, detail string) *Error {
	return &Error{Status: status, ScimType: scimType, Detail: detail}
}

func invalidSyntax(detail string) *Error {
	return scimErr(http.StatusBadRequest, "invalidSyntax", detail)
}

func invalidValue(detail string) *Error {
	return scimErr(http.StatusBadRequest, "invalidValue", detail)
}

// writeErr writes err as SCIM's error body: a *Error as it is, a domain
// error by its code (the cause of an internal one is logged, never shown).
func (h *handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var se *Error
	if !errors.As(err, &se) {
		se = fromDomain(err)
		if se.Status == http.StatusInternalServerError {
			h.opt.Logger.ErrorContext(r.Context(), "scim", "err", err, "path", r.URL.Path)
		}
	}
	WriteError(w, se.Status, se.ScimType, se.Detail)
}

// WriteError writes a SCIM error body.
func WriteError(w http.ResponseWriter, status int, scimType, detail string) {
	body := map[string]any{"schemas": []string{errorSchema}, "status": strconv.Itoa(status), "detail": detail}
	if scimType != "" {
		body["scimType"] = scimType
	}
	write(w, status, body)
}

// fromDomain maps a domain error to SCIM's status and scimType.
func fromDomain(err error) *Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return scimErr(http.StatusRequestEntityTooLarge, "", "the body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
	}
	var we *wps.Error
	if !errors.As(err, &we) {
		return scimErr(http.StatusInternalServerError, "", "internal error")
	}
	switch we.Code {
	case wps.CodeInvalid, wps.CodeBadRequest:
		return invalidValue(we.Message)
	case wps.CodeTooLarge:
		return scimErr(http.StatusRequestEntityTooLarge, "", we.Message)
	case wps.CodeNotFound:
		return scimErr(http.StatusNotFound, "", we.Message)
	case wps.CodeConflict:
		if strings.Contains(we.Message, "email") {
			return scimErr(http.StatusConflict, "uniqueness", we.Message)
		}
		return scimErr(http.StatusConflict, "", we.Message)
	case wps.CodeForbidden:
		return scimErr(http.StatusForbidden, "", we.Message)
	case wps.CodeUnauthorized:
		return scimErr(http.StatusUnauthorized, "", we.Message)
	case wps.CodeRateLimited:
		return scimErr(http.StatusTooManyRequests, "", we.Message)
	}
	return scimErr(http.StatusInternalServerError, "", "internal error")
}

func write(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decode reads a JSON object body. Its member names are looked up without
// regard to case (RFC 7643 section 2.1), see get.
func decode(r *http.Request) (map[string]any, error) {
	var body map[string]any
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalidSyntax("the body is not a JSON object: " + err.Error())
	}
	if body == nil {
		return nil, invalidSyntax("the body is not a JSON object")
	}
	if dec.More() {
		return nil, invalidSyntax("the body has more than one JSON value")
	}
	if hasNUL(body) {
		return nil, invalidValue(textMessage)
	}
	return body, nil
}

// textMessage refuses text the store cannot hold alike on both engines
// (PostgreSQL's text has no NUL; JSON decoding already replaced invalid
// UTF-8).
const textMessage = "text must be valid UTF-8 without the NUL character (U+0000)"

// hasNUL reports a NUL character in any string (or member name) of v.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// plainQuery refuses a query whose values the store could not hold.
func plainQuery(r *http.Request) error {
	for k, vs := range r.URL.Query() {
		for _, v := range append(vs, k) {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				return invalidValue(strconv.Quote(k) + ": " + textMessage)
			}
		}
	}
	return nil
}

// get returns the member of m named key in any case.
func get(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// hasSchema checks that body's schemas list urn.
func hasSchema(body map[string]any, urn string) error {
	v, _ := get(body, "schemas")
	list, _ := v.([]any)
	for _, s := range list {
		if s, ok := s.(string); ok && strings.EqualFold(s, urn) {
			return nil
		}
	}
	return invalidSyntax("schemas must list " + urn)
}

// page reads startIndex (1-based; below 1 is 1) and count (0 to 100,
// default 100) as RFC 7644 section 3.4.2.4 says.
func page(r *http.Request) (start, count int, err error) {
	start, count = 1, maxCount
	q := r.URL.Query()
	if v := q.Get("startIndex"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil {
			return 0, 0, invalidValue("startIndex must be an integer")
		}
		start = max(n, 1)
	}
	if v := q.Get("count"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil {
			return 0, 0, invalidValue("count must be an integer")
		}
		count = min(max(n, 0), maxCount)
	}
	return start, count, nil
}

func listResponse(w http.ResponseWriter, total, start int, resources []any) {
	if resources == nil {
		resources = []any{}
	}
	write(w, http.StatusOK, map[string]any{
		"schemas": []string{listSchema}, "totalResults": total, "startIndex": start,
		"itemsPerPage": len(resources), "Resources": resources,
	})
}

// location is the absolute URL of a resource, from the request's host.
func location(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host + Prefix + path
}
