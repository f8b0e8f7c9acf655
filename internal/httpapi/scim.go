package httpapi

import (
	"net/http"
	"strings"

	"wps/internal/scim"
)

// SCIM 2.0 (internal/scim) is served beside the API at /scim/v2, as plain
// net/http handlers rather than huma operations: its resources have their
// own schemas (RFC 7643), media type and error body, which the OpenAPI
// document does not describe (docs/decisions.md). Its requests pass the
// same access log (request id, route, metrics), authentication and rate
// limit as the API's; no CORS (identity providers call from their
// servers) and no Idempotency-Key.

// isSCIM reports a path of SCIM.
func isSCIM(p string) bool { return p == "/scim" || strings.HasPrefix(p, "/scim/") }

// withSCIM sends SCIM's paths through authentication and the rate limit to
// h, the others to api. An answer the middleware gives as a problem (401,
// 429) becomes SCIM's error body, its headers kept (WWW-Authenticate,
// Retry-After).
func (s *Server) withSCIM(api, h http.Handler) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if c, _ := r.Context().Value(callerKey).(*caller); c != nil && r.Pattern != "" {
			c.route = r.Pattern // the SCIM mux's pattern, for the access log
		}
	})
	chain := s.authenticate(s.rateLimit(named))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isSCIM(r.URL.Path) {
			api.ServeHTTP(w, r)
			return
		}
		sw := &scimWriter{ResponseWriter: w}
		chain.ServeHTTP(sw, r)
	})
}

// scimWriter rewrites a problem+json answer as SCIM's error body.
type scimWriter struct {
	http.ResponseWriter
	swallow bool
}

func (w *scimWriter) WriteHeader(code int) {
	if strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
		w.swallow = true
		detail := http.StatusText(code)
		switch code {
		case http.StatusUnauthorized:
			detail = "use Authorization: Bearer <api-key> of an active user holding users:manage"
		case http.StatusTooManyRequests:
			detail = "rate limit exceeded; retry later"
		}
		w.Header().Del("Content-Length")
		scim.WriteError(w.ResponseWriter, code, "", detail)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *scimWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *scimWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
