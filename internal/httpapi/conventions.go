package httpapi

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// HTTP conventions every route follows: the authentication challenge of a
// 401, rate limit fields, CORS, and query parameters each operation
// declares.

// bearerChallenge is the WWW-Authenticate of a 401 (RFC 6750 section 3):
// the scheme and realm, and error="invalid_token" when a key was sent and
// refused.
const (
	bearerChallenge = `Bearer realm="wps"`
	invalidToken    = `Bearer realm="wps", error="invalid_token", error_description="the API key is unknown, revoked or its user deactivated"`
)

// challenge adds the Bearer challenge to a 401 that has none (RFC 9110: a
// 401 carries WWW-Authenticate), whoever wrote it.
func challenge(h http.Header, status int) {
	if status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", bearerChallenge)
	}
}

// rateLimitFields sets the RateLimit-Policy and RateLimit fields of the
// IETF draft (draft-ietf-httpapi-ratelimit-headers): the token bucket as a
// quota of burst requests over the seconds it takes to refill (w), the
// requests left now (r) and the seconds until the bucket is full again (t).
func (l *limiter) fields(h http.Header, left float64) {
	burst := float64(l.burst)
	w := max(1, int(math.Ceil(burst/float64(l.limit))))
	t := int(math.Ceil((burst - left) / float64(l.limit)))
	h.Set("RateLimit-Policy", `"default";q=`+strconv.Itoa(l.burst)+`;w=`+strconv.Itoa(w))
	h.Set("RateLimit", `"default";r=`+strconv.Itoa(int(max(0, left)))+`;t=`+strconv.Itoa(max(0, t)))
}

// corsHeaders are what a browser page of an allowed origin may send and read.
const (
	corsMethods = "GET, POST, PUT, PATCH, DELETE"
	corsAllow   = "Authorization, Content-Type, Accept, Idempotency-Key, X-Request-Id, X-CSRF-Token"
	corsExpose  = "Location, Retry-After, RateLimit, RateLimit-Policy, WWW-Authenticate, X-Request-Id, Idempotent-Replayed, Content-Disposition"
)

// cors lets pages of the configured origins call the API from a browser
// (off when origins is empty). A preflight (OPTIONS with
// Access-Control-Request-Method) from an allowed origin is answered 204
// here, before authentication. With "*" any origin may call, without
// credentials (cookies); listed origins may send them too.
func cors(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	anyOrigin := slices.Contains(origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if !anyOrigin {
			h.Add("Vary", "Origin")
		}
		origin := r.Header.Get("Origin")
		if origin == "" || !anyOrigin && !slices.Contains(origins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		if anyOrigin {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsAllow)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExpose)
		next.ServeHTTP(w, r)
	})
}

// knownQuery answers 422 naming the query parameters an operation does not
// declare (?perpage=1 would otherwise be ignored, and the client would
// never learn of its typo). The operation's parameters in the OpenAPI
// document are the one list: a deepObject parameter (filter) takes every
// key it prefixes (filter[NAME]).
func (s *Server) knownQuery(ctx huma.Context, next func(huma.Context)) {
	u := ctx.URL()
	if u.RawQuery == "" {
		next(ctx)
		return
	}
	op := ctx.Operation()
	var errs []error
	for key := range u.Query() {
		if !declared(op, key) {
			errs = append(errs, &huma.ErrorDetail{Location: "query." + key, Message: "unknown query parameter; " + takes(op)})
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int {
			return strings.Compare(a.(*huma.ErrorDetail).Location, b.(*huma.ErrorDetail).Location)
		})
		_ = huma.WriteErr(s.api, ctx, http.StatusUnprocessableEntity, "unknown query parameter", errs...)
		return
	}
	next(ctx)
}

// declared reports a query parameter key that op takes.
func declared(op *huma.Operation, key string) bool {
	for _, p := range op.Parameters {
		if p.In != "query" {
			continue
		}
		if p.Name == key || p.Style == "deepObject" && strings.HasPrefix(key, p.Name+"[") && strings.HasSuffix(key, "]") {
			return true
		}
	}
	return false
}

// takes lists op's query parameters for the message of an unknown one.
func takes(op *huma.Operation) string {
	var names []string
	for _, p := range op.Parameters {
		if p.In == "query" {
			n := p.Name
			if p.Style == "deepObject" {
				n += "[...]"
			}
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "this operation takes none"
	}
	return "this operation takes: " + strings.Join(names, ", ")
}

// withFilter documents the filter[NAME]=VALUE query parameters of a list
// (read by the operation's Resolve), so that knownQuery takes them.
func withFilter(o huma.Operation) huma.Operation {
	explode := true
	o.Parameters = append(o.Parameters, &huma.Param{Name: "filter", In: "query", Style: "deepObject", Explode: &explode,
		Description: "filter[NAME]=VALUE: records whose parameter NAME holds VALUE (in its canonical form; a MULTI_SELECT: holds that option)",
		Schema:      &huma.Schema{Type: "object", AdditionalProperties: &huma.Schema{Type: "string"}}})
	return o
}
