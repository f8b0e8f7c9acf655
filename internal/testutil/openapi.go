package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// The response check: every answer a test receives through Env.Do is
// validated against the OpenAPI document the server serves (status, media
// type and body, with kin-openapi), so a route, field or status missing
// from the document fails the test that meets it.
//
//   - An answer of an operation in the document must be one of its
//     declared statuses and media types; a JSON (or YAML) body must match
//     the schema; a body of another media type (a file, a CSV) is checked
//     for its status and media type only.
//   - An answer to an API path or method outside the document (an unknown
//     path, a wrong method: 404, 405; a credential refused before routing)
//     must be a problem+json body matching the Problem schema; a CORS
//     preflight (OPTIONS) may answer 204 with no body.
//   - SCIM (/scim/...) is served beside the API with its own schemas
//     (RFC 7643), media type and error body, which the document does not
//     describe (docs/decisions.md): its answers are checked against SCIM's
//     conventions instead (checkSCIM), never as problems.
//   - Other paths outside the API (the console's pages and assets) are not
//     described by the document, and are not checked.

// Contract is the served OpenAPI document, ready to validate answers.
type Contract struct {
	doc     *openapi3.T
	routes  []docRoute
	problem *openapi3.SchemaRef
	// legacy is doc read as OpenAPI 3.0. Validating against a 3.1 document,
	// kin-openapi compiles each schema into a JSON Schema 2020-12 validator
	// on every answer (most of a test's time under -race), and then, for a
	// schema that refers to components and uses no 2020-12 keyword, drops
	// it and validates the 3.0 way. Such a schema is checked against legacy
	// directly (refersOnly): the same validation, without the compiling.
	legacy     *openapi3.T
	refersOnly sync.Map // *openapi3.Schema → bool
}

type docRoute struct {
	path    string
	re      *regexp.Regexp
	params  []string
	literal int // characters outside parameters: the most specific route wins, as in ServeMux
	item    *openapi3.PathItem
}

var (
	contractOnce sync.Once
	contract     *Contract
	contractErr  error
)

// loadContract reads the document h serves at /v1/openapi.json, once per
// test binary (every server serves the same one).
func loadContract(h http.Handler) (*Contract, error) {
	contractOnce.Do(func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
		if rec.Code != http.StatusOK {
			contractErr = fmt.Errorf("GET /v1/openapi.json answered %d", rec.Code)
			return
		}
		contract, contractErr = NewContract(rec.Body.Bytes())
	})
	return contract, contractErr
}

// NewContract loads an OpenAPI document (it must be valid) for Check.
func NewContract(document []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	legacy := *doc
	legacy.OpenAPI = "3.0.3"
	c := &Contract{doc: doc, legacy: &legacy, problem: doc.Components.Schemas["Problem"]}
	if c.problem == nil {
		return nil, fmt.Errorf("the OpenAPI document has no Problem schema")
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for path, item := range doc.Paths.Map() {
		r := docRoute{path: path, item: item, literal: len(param.ReplaceAllString(path, ""))}
		expr := "^"
		last := 0
		for _, m := range param.FindAllStringIndex(path, -1) {
			expr += regexp.QuoteMeta(path[last:m[0]]) + "([^/]+)"
			r.params = append(r.params, path[m[0]+1:m[1]-1])
			last = m[1]
		}
		r.re = regexp.MustCompile(expr + regexp.QuoteMeta(path[last:]) + "$")
		c.routes = append(c.routes, r)
	}
	return c, nil
}

// find returns the operation that serves method on path, or nil.
func (c *Contract) find(method, path string) (*routers.Route, map[string]string) {
	var best *docRoute
	var values []string
	for i := range c.routes {
		r := &c.routes[i]
		m := r.re.FindStringSubmatch(path)
		if m == nil || r.item.GetOperation(method) == nil {
			continue
		}
		if best == nil || r.literal > best.literal {
			best, values = r, m[1:]
		}
	}
	if best == nil {
		return nil, nil
	}
	params := map[string]string{}
	for i, name := range best.params {
		params[name] = values[i]
	}
	return &routers.Route{Spec: c.doc, Path: best.path, PathItem: best.item, Method: method, Operation: best.item.GetOperation(method)}, params
}

// Check validates one answer to req against the document; nil when it
// conforms (or its path is outside the API).
func (c *Contract) Check(req *http.Request, status int, header http.Header, body []byte) error {
	path := req.URL.Path
	if path == "/scim" || strings.HasPrefix(path, "/scim/") {
		return checkSCIM(req, status, header, body)
	}
	if !strings.HasPrefix(path, "/v1/") && path != "/healthz" && path != "/readyz" {
		return nil // the console's pages: not the API
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	route, params := c.find(method, path)
	if route == nil {
		return c.checkOutside(req, status, header, body)
	}
	name := route.Method + " " + route.Path
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s answered %d, which the document does not declare: %s", name, status, clip(body))
	}
	media := header.Get("Content-Type")
	if len(ref.Value.Content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("%s answered %d with a body (%s), where the document declares none: %s", name, status, media, clip(body))
		}
		return nil
	}
	mt := ref.Value.Content.Get(media)
	if mt == nil {
		return fmt.Errorf("%s answered %d as %q, which the document does not declare (%v)", name, status, media, keys(ref.Value.Content))
	}
	if req.Method == http.MethodHead {
		return nil
	}
	base, _, _ := mime.ParseMediaType(media)
	if !structured(base) {
		return nil // a file or CSV: its status and media type are what the document says of it
	}
	if mt.Schema != nil && c.validatedAs30(mt.Schema.Value) {
		route.Spec = c.legacy
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Errorf("%s answered %d: %v\nbody: %s", name, status, err, clip(body))
	}
	return nil
}

// validatedAs30 reports whether kin-openapi validates a value against
// schema the OpenAPI 3.0 way even in a 3.1 document (see Contract.legacy):
// the schema refers to a component, and neither it nor a schema it reaches
// uses a keyword that only JSON Schema 2020-12 validates (the keywords
// kin-openapi's fallback looks for) or 3.0's nullable (which 3.1 ignores).
func (c *Contract) validatedAs30(schema *openapi3.Schema) bool {
	if schema == nil {
		return false
	}
	if v, ok := c.refersOnly.Load(schema); ok {
		return v.(bool)
	}
	only2020 := errors.New("a JSON Schema 2020-12 keyword")
	walked := openapi3.NewSchemaRef("", schema).WalkSubtree(func(_ string, ref *openapi3.SchemaRef) error {
		if s := ref.Value; s != nil && (s.Const != nil || len(s.PrefixItems) != 0 || s.Contains != nil ||
			len(s.PatternProperties) != 0 || len(s.DependentSchemas) != 0 || s.PropertyNames != nil ||
			s.UnevaluatedItems.Has != nil || s.UnevaluatedItems.Schema != nil ||
			s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil ||
			s.If != nil || s.Then != nil || s.Else != nil || len(s.DependentRequired) != 0 ||
			len(s.Defs) != 0 || s.ContentSchema != nil || s.Nullable) {
			return only2020
		}
		return nil
	})
	as30 := false
	if walked == nil {
		b, err := json.Marshal(schema)
		var tree any
		as30 = err == nil && json.Unmarshal(b, &tree) == nil && refersToComponent(tree)
	}
	c.refersOnly.Store(schema, as30)
	return as30
}

// refersToComponent reports a "$ref" to one of the document's schemas in a
// schema (as JSON).
func refersToComponent(node any) bool {
	switch node := node.(type) {
	case map[string]any:
		if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, "#/components/schemas/") {
			return true
		}
		for _, v := range node {
			if refersToComponent(v) {
				return true
			}
		}
	case []any:
		for _, v := range node {
			if refersToComponent(v) {
				return true
			}
		}
	}
	return false
}

// checkOutside checks an answer to an API path or method the document does
// not list: a problem, or a CORS preflight's 204.
func (c *Contract) checkOutside(req *http.Request, status int, header http.Header, body []byte) error {
	name := req.Method + " " + req.URL.Path
	if req.Method == http.MethodOptions && status == http.StatusNoContent && len(body) == 0 {
		return nil
	}
	if status < 400 {
		return fmt.Errorf("%s is not in the document, yet answered %d: %s", name, status, clip(body))
	}
	if media, _, _ := mime.ParseMediaType(header.Get("Content-Type")); media != "application/problem+json" {
		return fmt.Errorf("%s (not in the document) answered %d as %q, not a problem: %s", name, status, header.Get("Content-Type"), clip(body))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s answered %d with a problem that is not JSON: %v", name, status, err)
	}
	opts := []openapi3.SchemaValidationOption{openapi3.MultiErrors(), openapi3.VisitAsResponse(), openapi3.EnableJSONSchema2020()}
	if err := c.problem.Value.VisitJSON(v, opts...); err != nil {
		return fmt.Errorf("%s answered %d with a body that is not a Problem: %v\nbody: %s", name, status, err, clip(body))
	}
	return nil
}

// checkSCIM checks an answer of SCIM (RFC 7644): a 204 has no body; any
// other answer is application/scim+json, a JSON object whose schemas are
// listed; an error (400 and above) is SCIM's error body, its status the
// answer's as a string.
func checkSCIM(req *http.Request, status int, header http.Header, body []byte) error {
	name := req.Method + " " + req.URL.Path
	if status == http.StatusNoContent {
		if len(body) > 0 {
			return fmt.Errorf("SCIM %s answered 204 with a body: %s", name, clip(body))
		}
		return nil
	}
	if media, _, _ := mime.ParseMediaType(header.Get("Content-Type")); media != "application/scim+json" {
		return fmt.Errorf("SCIM %s answered %d as %q, not application/scim+json: %s", name, status, header.Get("Content-Type"), clip(body))
	}
	if req.Method == http.MethodHead {
		return nil
	}
	var v struct {
		Schemas []string `json:"schemas"`
		Status  any      `json:"status"`
		Detail  *string  `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil || len(v.Schemas) == 0 {
		return fmt.Errorf("SCIM %s answered %d with a body that is not a SCIM object with schemas (%v): %s", name, status, err, clip(body))
	}
	if status >= 400 {
		if v.Schemas[0] != "urn:ietf:params:scim:api:messages:2.0:Error" || v.Status != any(fmt.Sprint(status)) || v.Detail == nil {
			return fmt.Errorf("SCIM %s answered %d with a body that is not SCIM's error (schemas, status %q, detail): %s", name, status, fmt.Sprint(status), clip(body))
		}
	}
	return nil
}

// structured reports a media type whose body the document's schema
// describes value by value.
func structured(media string) bool {
	return media == "application/json" || strings.HasSuffix(media, "+json") || media == "application/yaml"
}

func keys(c openapi3.Content) []string {
	var out []string
	for k := range c {
		out = append(out, k)
	}
	return out
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// check validates an answer the test received through Do (its request
// body is gone by then; the answer's check does not need it).
func (e *Env) check(req *http.Request, res *Response) {
	e.T.Helper()
	c, err := loadContract(e.Server.Config.Handler)
	if err != nil {
		e.T.Errorf("the response check cannot start: %v", err)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(nil))
	if err := c.Check(req, res.Status, res.Header, res.Body); err != nil {
		e.T.Errorf("answer does not match the OpenAPI document: %v", err)
	}
}
