// Package httpapi serves the wps API over HTTP: routes.go lists every route,
// one file per noun decodes, calls the service and encodes, problem.go maps
// every error to one status, and the OpenAPI 3.1 document is generated from
// the same registrations by huma.
package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	gojson "github.com/goccy/go-json"
	"golang.org/x/time/rate"
	"sigs.k8s.io/yaml"

	"wps/internal/reports"
	"wps/internal/scim"
	"wps/internal/wps"
)

func init() {
	huma.NewError = humaError
}

// Options configures a Server; zero values take defaults.
type Options struct {
	Logger       *slog.Logger
	MaxBodyBytes int64   // default 1 MiB
	RateLimit    float64 // requests per second per API key; 0 turns limiting off
	RateBurst    int     // default 2 × RateLimit
	Version      string
	// Blobs keeps attachment bytes; without it uploads answer 500.
	Blobs wps.BlobStore
	// IdempotencyLease is how long a pending Idempotency-Key stays held
	// without its request renewing it (default 30 s): after a crash, the
	// key is free again this long after.
	IdempotencyLease time.Duration
	// SecureCookies marks session cookies Secure even when the request
	// reached wps over plain HTTP (TLS ends at a proxy in front).
	SecureCookies bool
	// Console serves every path outside the API (/v1/, /healthz, /readyz)
	// when set: the web console, behind the same access log.
	Console http.Handler
	// SSO serves /sso/ (the identity package's sign-in through an
	// organization's OpenID provider) when set.
	SSO http.Handler
	// CORSOrigins are the origins whose pages may call the API from a
	// browser ("*": any, without cookies); none: CORS is off.
	CORSOrigins []string
	// ObserveRequest, when set, is told of every request once it is
	// answered (metrics): its route (the pattern, as the access log names
	// it), status and duration.
	ObserveRequest func(route string, status int, took time.Duration)
	// ReportMaxDays is the longest range of a report (default
	// reports.DefaultMaxDays).
	ReportMaxDays int
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	blobs   wps.BlobStore
	svc     *wps.Service
	log     *slog.Logger
	maxBody int64
	limiter *limiter
	// idemLease is how long a pending Idempotency-Key is held unrenewed.
	idemLease     time.Duration
	secureCookies bool
	observe       func(route string, status int, took time.Duration)
	api           huma.API
	reports       *reports.Reports
	handler       http.Handler
	// mux and public let authentication tell an operation that needs no
	// credential (by its mux pattern), whose request ignores the cookie.
	mux    *http.ServeMux
	public map[string]bool
	// doc and page are the OpenAPI document and its reference page as
	// served (openapi.go, docs.go), each made once.
	docOnce, pageOnce sync.Once
	doc, page         []byte
}

// New builds the API over svc.
func New(svc *wps.Service, opt Options) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 1 << 20
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.IdempotencyLease <= 0 {
		opt.IdempotencyLease = 30 * time.Second
	}
	s := &Server{svc: svc, log: opt.Logger, maxBody: opt.MaxBodyBytes, blobs: opt.Blobs, idemLease: opt.IdempotencyLease,
		secureCookies: opt.SecureCookies, observe: opt.ObserveRequest, reports: reports.New(opt.ReportMaxDays, func() time.Time { return svc.Now().Time })}
	if opt.RateLimit > 0 {
		if opt.RateBurst <= 0 {
			opt.RateBurst = int(2 * opt.RateLimit)
		}
		s.limiter = &limiter{limit: rate.Limit(opt.RateLimit), burst: max(opt.RateBurst, 1), buckets: map[string]*bucket{}}
	}

	mux := http.NewServeMux()
	s.mux, s.public = mux, map[string]bool{}
	cfg := huma.DefaultConfig("wps: Workflow Process Service", opt.Version)
	cfg.FieldsOptionalByDefault = true
	cfg.CreateHooks = nil // no $schema links in bodies: the shapes are the contract
	cfg.OpenAPIPath = ""  // served by routes.go, as an operation of its own (openapi.go)
	cfg.DocsPath = ""
	cfg.SchemasPath = ""
	cfg.Info.Description = "Define entities and processes made of steps, then drive each measurement through them. See docs/api.md."
	cfg.Tags = tags
	cfg.Servers = []*huma.Server{{URL: "/", Description: "The server that serves this document"}}
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An API key: Authorization: Bearer wps_..."},
	}
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeFor[wps.Time](), reflect.TypeFor[time.Time]())
	cfg.Formats = map[string]huma.Format{"application/json": jsonFormat, "json": jsonFormat, "application/yaml": yamlFormat, "yaml": yamlFormat}
	s.api = huma.NewAPI(cfg, newAdapter(mux))
	s.api.UseMiddleware(s.authorize, s.knownQuery)
	s.routes()
	describeFields(s.api.OpenAPI().Components.Schemas)
	describeParams(s.api.OpenAPI())
	addExamples(s.api.OpenAPI())

	var h http.Handler = textURL(muxFallback(mux))
	h = s.idempotency(h)
	h = s.rateLimit(h)
	h = s.authenticate(h)
	h = cors(opt.CORSOrigins, h)
	if opt.Console != nil {
		h = beside(h, opt.Console)
	}
	h = s.withSCIM(h, scim.New(svc, scim.Options{Principal: principal, Logger: opt.Logger, MaxBodyBytes: opt.MaxBodyBytes}))
	if opt.SSO != nil { // anonymous: limited per client address, as the API's anonymous requests
		h = ssoBeside(h, s.rateLimit(opt.SSO))
	}
	s.handler = s.logRequests(h)
	return s
}

// beside sends the API's paths to api and every other path to console.
func beside(api, console http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPI(r.URL.Path) {
			api.ServeHTTP(w, r)
			return
		}
		console.ServeHTTP(w, r)
	})
}

// ssoBeside sends /sso/ to sso and every other path to next.
func ssoBeside(next, sso http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/sso/") {
			sso.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isAPI reports a path of the API (the console serves the others).
func isAPI(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == "/v1" || p == "/healthz" || p == "/readyz"
}

// SetCaller tells the access log who made the request (the console's
// requests, which the API's authentication does not see).
func SetCaller(r *http.Request, p *wps.Principal) { setCaller(r.Context(), p) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// OpenAPI returns the generated OpenAPI document.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// access says who may call an operation: anyone (public), any member
// (fn empty), or holders of a policy granting fn (and ADMIN).
type access struct {
	public bool
	fn     wps.Function
}

var (
	public = access{public: true}
	member = access{}
)

func needs(fn wps.Function) access { return access{fn: fn} }

// op describes one route for huma and the OpenAPI document.
func op(method, path, id, summary string, status int, a access) huma.Operation {
	o := huma.Operation{
		OperationID:   id,
		Method:        method,
		Path:          path,
		Summary:       summary,
		DefaultStatus: status,
		Metadata:      map[string]any{"access": a},
		Tags:          []string{tag(path)},
		Security:      []map[string][]string{}, // public: no credential
	}
	if !a.public {
		o.Security = []map[string][]string{{"bearer": {}}}
		if a.fn != "" {
			o.Description = "Requires function `" + string(a.fn) + "`."
			o.Extensions = map[string]any{"x-wps-function": string(a.fn)}
		}
	}
	return o
}

// register adds a route whose handler returns domain errors.
func register[I, O any](s *Server, o huma.Operation, fn func(context.Context, *I) (*O, error)) {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = s.maxBody
	}
	o.Metadata["route"] = strings.ToUpper(o.Method) + " " + o.Path // for the access log and metrics
	a, _ := o.Metadata["access"].(access)
	if a.public {
		s.public[o.Metadata["route"].(string)] = true
	}
	in := reflect.TypeFor[I]()
	_, body := in.FieldByName("Body")
	_, raw := in.FieldByName("RawBody")
	o.Errors = errorsOf(&o, a, body || raw)
	huma.Register(s.api, o, func(ctx context.Context, in *I) (*O, error) {
		out, err := fn(ctx, in)
		if err != nil {
			return nil, problemFor(ctx, s.log, err)
		}
		return out, nil
	})
}

// authorize enforces each operation's access before its body is read, and
// tells the idempotency middleware which fields of the answer are secret.
func (s *Server) authorize(ctx huma.Context, next func(huma.Context)) {
	setRoute(ctx.Context(), ctx.Operation())
	if st, _ := ctx.Context().Value(idemKey).(*idemState); st != nil {
		st.secrets, _ = ctx.Operation().Metadata["secrets"].([]string)
	}
	a, _ := ctx.Operation().Metadata["access"].(access)
	if !a.public {
		p := principal(ctx.Context())
		if p == nil {
			_ = huma.WriteErr(s.api, ctx, http.StatusUnauthorized, "missing API key: use Authorization: Bearer <api-key>")
			return
		}
		if a.fn != "" && !p.Can(a.fn) {
			_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, "this action needs a policy with function "+string(a.fn))
			return
		}
	}
	next(ctx)
}

// jsonFormat encodes responses with goccy/go-json, a drop-in encoder about
// twice as fast as encoding/json on the large measurement shapes; requests
// are still decoded by encoding/json, as huma validates them.
var jsonFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		enc := gojson.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	},
	Unmarshal: unmarshalJSON,
}

// yamlFormat answers YAML to a client that asks for it (Accept:
// application/yaml) and reads YAML bodies, so that process definitions can be
// kept in git as YAML: the same documents as JSON, converted by
// sigs.k8s.io/yaml (which goes through JSON, so field names and validation
// are the JSON ones).
var yamlFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	},
	Unmarshal: func(data []byte, v any) error {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return err
		}
		return unmarshalJSON(j, v)
	},
}

// importLimit is the body limit of bulk imports.
const importLimit = 20 << 20

// uploadLimit is the body limit of an attachment upload: the file and the
// multipart framing around it.
const uploadLimit = wps.MaxAttachmentBytes + 64<<10

// bodyLimit is the body limit of a request to path.
func (s *Server) bodyLimit(path string) int64 {
	switch {
	case strings.HasSuffix(path, ":import"):
		return importLimit
	case path == "/v1/attachments" || path == "/v1/sheets":
		return uploadLimit
	}
	return s.maxBody
}

// withSecrets names the fields of an operation's answer that hold a secret
// shown once (dot paths): they are never kept for an Idempotency-Key replay.
func withSecrets(o huma.Operation, paths ...string) huma.Operation {
	o.Metadata["secrets"] = paths
	return o
}

// withBodyLimit raises an operation's body limit above the default.
func withBodyLimit(o huma.Operation, n int64) huma.Operation {
	o.MaxBodyBytes = n
	return o
}

// withImportJob documents an import's two answers: 200 with the rows
// imported, or 202 with the job that imports them, at its Location.
func (s *Server) withImportJob(o huma.Operation) huma.Operation {
	reg := s.api.OpenAPI().Components.Schemas
	str := &huma.Schema{Type: "string"}
	o.Responses = map[string]*huma.Response{
		"200": {Description: "Imported at once", Content: map[string]*huma.MediaType{
			"application/json": {Schema: reg.Schema(reflect.TypeFor[imported](), true, "Imported")}}},
		"202": {Description: "Accepted as a job: poll its Location until it is SUCCEEDED or FAILED",
			Headers: map[string]*huma.Param{"Location": {Schema: str}, "Preference-Applied": {Schema: str}},
			Content: map[string]*huma.MediaType{"application/json": {Schema: reg.Schema(reflect.TypeFor[wps.ImportJob](), true, "ImportJob")}}},
	}
	return o
}

// withCSV documents an export: CSV, or with ?format=xlsx a workbook.
func withCSV(o huma.Operation) huma.Operation {
	o.Responses = map[string]*huma.Response{"200": {Description: "CSV with a header row, or (format=xlsx) an .xlsx workbook",
		Content: map[string]*huma.MediaType{"text/csv": {Schema: &huma.Schema{Type: "string"}},
			xlsxType: {Schema: &huma.Schema{Type: "string", Format: "binary"}}}}}
	return o
}
