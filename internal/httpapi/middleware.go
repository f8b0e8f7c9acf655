package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"golang.org/x/time/rate"

	"wps/internal/wps"
)

type ctxKey int

const (
	principalKey ctxKey = iota
	requestIDKey
	clientKey
	callerKey
)

// caller is where authentication leaves who called, and routing the route
// that served it, for the access log (which wraps them, and so cannot see
// the principal in the request's context).
type caller struct {
	p     *wps.Principal
	route string
}

// clientInfo is what handlers may need of the connection.
type clientInfo struct {
	addr  string // the client's IP address
	https bool   // the request came over TLS
}

func client(ctx context.Context) clientInfo {
	c, _ := ctx.Value(clientKey).(clientInfo)
	return c
}

// principal returns the authenticated caller, or nil.
func principal(ctx context.Context) *wps.Principal {
	p, _ := ctx.Value(principalKey).(*wps.Principal)
	return p
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// recorder remembers the status and, when asked, a copy of the body.
type recorder struct {
	http.ResponseWriter
	status int
	body   *bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	challenge(r.Header(), code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body != nil {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests gives every request an id, logs it when it ends, and turns a
// panic into a 500 problem.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 100 {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		who := &caller{}
		ctx = context.WithValue(ctx, callerKey, who)
		rec := &recorder{ResponseWriter: w}
		r2 := r.WithContext(ctx)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(ctx, "panic", "err", v, "request_id", id)
				if rec.status == 0 {
					writeProblem(rec, newProblem(http.StatusInternalServerError, "", "internal error", nil))
				}
			}
			logged := s.log.Enabled(ctx, slog.LevelInfo)
			if s.observe == nil && !logged {
				return
			}
			took := time.Since(start)
			route := s.route(r2, who)
			if s.observe != nil {
				s.observe(route, rec.status, took)
			}
			if !logged {
				return
			}
			attrs := []any{"method", r.Method, "path", r.URL.Path, "route", route, "status", rec.status,
				"ms", float64(took.Microseconds()) / 1000, "request_id", id}
			if who.p != nil {
				attrs = append(attrs, "org", who.p.OrgID, "user", who.p.UserID)
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", slogAttrs(attrs)...)
		}()
		next.ServeHTTP(rec, r2)
	})
}

func slogAttrs(kv []any) []slog.Attr {
	out := make([]slog.Attr, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, slog.Any(kv[i].(string), kv[i+1]))
	}
	return out
}

// muxFallback answers the mux's own 404 and 405 (plain text) as problems.
func muxFallback(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&fallbackWriter{ResponseWriter: w, r: r}, r)
	})
}

// textURL refuses a URL whose text the store could not hold: invalid
// UTF-8 or the NUL character (PostgreSQL's text holds neither; SQLite
// would, and both engines answer alike). A path with it names no resource
// (404); a query parameter with it is invalid (422). In a URL both can only
// be written percent-encoded.
func textURL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !plainText(r.URL.Path) {
			writeProblem(w, newProblem(http.StatusNotFound, "", "no such resource: "+strconv.Quote(r.URL.Path), nil))
			return
		}
		if strings.Contains(r.URL.RawQuery, "%") {
			for k, vs := range r.URL.Query() {
				if !plainText(k) || slices.ContainsFunc(vs, func(v string) bool { return !plainText(v) }) {
					writeProblem(w, newProblem(http.StatusUnprocessableEntity, string(wps.CodeInvalid), strconv.Quote(k)+": "+textMessage,
						[]wps.FieldError{{Field: strings.ToValidUTF8(k, "\uFFFD"), Message: textMessage}}))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// plainText reports text the store can hold: valid UTF-8 without NUL.
func plainText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

type fallbackWriter struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (f *fallbackWriter) WriteHeader(code int) {
	plain := strings.HasPrefix(f.Header().Get("Content-Type"), "text/plain")
	if plain && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		f.swallow = true
		f.Header().Del("Content-Length")
		detail := "no such resource: " + f.r.URL.Path
		if code == http.StatusMethodNotAllowed {
			detail = f.r.Method + " is not allowed here; allowed: " + f.Header().Get("Allow")
		}
		writeProblem(f.ResponseWriter, newProblem(code, "", detail, nil))
		return
	}
	f.ResponseWriter.WriteHeader(code)
}

func (f *fallbackWriter) Write(b []byte) (int, error) {
	if f.swallow {
		return len(b), nil
	}
	return f.ResponseWriter.Write(b)
}

func (f *fallbackWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// authenticate resolves a Bearer key, or else the session cookie, to a
// principal. A request with neither (or with a cookie of a session that
// ended, or for a public operation) goes on anonymous: public routes serve
// it, others answer 401. A bad key answers 401 at once. A request the
// cookie authenticates must carry the session's X-CSRF-Token unless its
// method is safe (else 403): another site can make a browser send the
// cookie, not read the token.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), clientKey, clientInfo{addr: clientAddr(r), https: r.TLS != nil}))
		h := r.Header.Get("Authorization")
		if h == "" {
			c, err := r.Cookie(sessionCookie)
			if err != nil || c.Value == "" || s.isPublic(r) {
				next.ServeHTTP(w, r)
				return
			}
			p, err := s.svc.AuthenticateSession(r.Context(), c.Value)
			if wps.IsCode(err, wps.CodeUnauthorized) {
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				writeProblem(w, problemFor(r.Context(), s.log, err))
				return
			}
			setCaller(r.Context(), p)
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(wps.CSRFToken(c.Value))) != 1 {
					writeProblem(w, newProblem(http.StatusForbidden, "", "a request signed in by the session cookie needs its X-CSRF-Token header", nil))
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
			return
		}
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			writeProblem(w, unauthorized("use Authorization: Bearer <api-key>"))
			return
		}
		p, err := s.svc.Authenticate(r.Context(), strings.TrimSpace(key))
		if err != nil {
			if wps.IsCode(err, wps.CodeUnauthorized) {
				w.Header().Set("WWW-Authenticate", invalidToken)
			}
			writeProblem(w, problemFor(r.Context(), s.log, err))
			return
		}
		setCaller(r.Context(), p)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

// isPublic reports a request for an operation that needs no credential
// (signing in, accepting an invite): it ignores the session cookie, so a
// browser whose session is alive can sign in again, to another org too,
// without that session's CSRF token.
func (s *Server) isPublic(r *http.Request) bool {
	_, pattern := s.mux.Handler(r)
	return s.public[pattern]
}

// setRoute tells the access log which operation served the request: its
// method and OpenAPI path (POST /v1/webhook-deliveries/{id}:retry).
func setRoute(ctx context.Context, op *huma.Operation) {
	if c, _ := ctx.Value(callerKey).(*caller); c != nil {
		c.route, _ = op.Metadata["route"].(string) // set by register
	}
}

// route names the route of a request for the log and the metrics, from a
// small set: the operation that served it; else the API's mux pattern (a
// request answered before its operation ran: 401, 429); else the console's
// pattern, which its mux left on the request; else "unmatched".
func (s *Server) route(r *http.Request, who *caller) string {
	if who.route != "" {
		return who.route
	}
	if isAPI(r.URL.Path) {
		if _, pattern := s.mux.Handler(r); pattern != "" {
			return pattern
		}
	} else if r.Pattern != "" {
		return r.Pattern
	}
	return "unmatched"
}

// setCaller tells the access log who called.
func setCaller(ctx context.Context, p *wps.Principal) {
	if c, _ := ctx.Value(callerKey).(*caller); c != nil {
		c.p = p
	}
}

func unauthorized(detail string) *Problem {
	return newProblem(http.StatusUnauthorized, "", detail, nil)
}

// limiter is a token bucket per API key (per client address when anonymous).
type limiter struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	buckets map[string]*bucket
	sweep   time.Time
}

type bucket struct {
	l    *rate.Limiter
	seen time.Time
}

// allow takes a token for key, or says how long until one is free; left
// is what the bucket holds after.
func (l *limiter) allow(key string, now time.Time) (ok bool, wait time.Duration, left float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.sweep) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > 10*time.Minute {
				delete(l.buckets, k)
			}
		}
		l.sweep = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{l: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	res := b.l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d, 0
	}
	return true, 0, b.l.TokensAt(now)
}

func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := "addr:" + clientAddr(r)
		if p := principal(r.Context()); p != nil {
			key = "key:" + p.KeyID + p.SessionID // one of them is set
		}
		ok, wait, left := s.limiter.allow(key, s.svc.Now().Time)
		s.limiter.fields(w.Header(), left)
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeProblem(w, newProblem(http.StatusTooManyRequests, "", "rate limit exceeded; retry later", nil))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// idemState carries, from the operation that serves a request to the
// idempotency middleware, the fields of its answer that hold a secret.
type idemState struct{ secrets []string }

const idemKey ctxKey = 100

// idempotency replays the first answer to a POST with the same
// Idempotency-Key and body, so that a retried request never acts twice.
// The same key with another body answers 422; while the first request is
// still running, 409. A pending record is leased to its request, which
// renews the lease while it runs: one whose request died with its server
// is released when the lease runs out, and the key claimed anew, unless
// its changes were committed: the request's own write transaction marks the
// key committed (wps.WithIdempotency), and such a key is never run again
// (a retry whose first answer was lost answers 409). Answers of 5xx, 401
// and 429 of requests that committed nothing are not kept, so such a
// request can be retried with the same key. Fields of an answer that hold a secret (an API key, a token)
// are not kept either: a replay answers the rest. Anonymous requests are
// scoped by their body, which carries their credential.
func (s *Server) idempotency(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		// A sign-in answers a secret and a cookie, which are kept nowhere:
		// it is never replayed (signing in twice is harmless).
		if r.Method != http.MethodPost || key == "" || r.URL.Path == "/v1/sessions" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > 255 || !plainText(key) {
			writeProblem(w, newProblem(http.StatusBadRequest, "", "Idempotency-Key must be at most 255 characters of valid UTF-8", nil))
			return
		}
		limit := s.bodyLimit(r.URL.Path)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeProblem(w, newProblem(http.StatusRequestEntityTooLarge, "", "request body is over the limit of "+strconv.FormatInt(limit, 10)+" bytes", nil))
				return
			}
			writeProblem(w, newProblem(http.StatusBadRequest, "", "cannot read the request body", nil))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.RequestURI()+"\n"), body...))
		hash := hex.EncodeToString(sum[:])
		scope := "anonymous:" + hash
		if p := principal(r.Context()); p != nil {
			scope = p.KeyID + p.SessionID // one of them is set
		}
		now := s.svc.Now()
		rec := wps.Idempotent{Scope: scope, Key: key, RequestHash: hash, CreatedAt: now, LeaseUntil: wps.At(now.Add(s.idemLease))}

		prior, err := s.reserve(r.Context(), rec)
		if err != nil {
			writeProblem(w, problemFor(r.Context(), s.log, err))
			return
		}
		if prior != nil {
			switch {
			case prior.RequestHash != rec.RequestHash:
				writeProblem(w, newProblem(http.StatusUnprocessableEntity, string(wps.CodeInvalid),
					"this Idempotency-Key was used with another request", []wps.FieldError{{Field: "Idempotency-Key", Message: "used with another request"}}))
			case !prior.Done && prior.Committed && !prior.LeaseUntil.After(now.Time):
				writeProblem(w, newProblem(http.StatusConflict, "", "the request with this Idempotency-Key was carried out (its changes are kept), "+
					"but the server stopped before answering it; it is not run again: read the result instead", nil))
			case !prior.Done:
				writeProblem(w, newProblem(http.StatusConflict, "", "a request with this Idempotency-Key is in progress", nil))
			default:
				for k, v := range prior.Header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(prior.Status)
				_, _ = w.Write(prior.Body)
			}
			return
		}

		stopLease := s.renewLease(r.Context(), rec)
		state := &idemState{}
		out := &recorder{ResponseWriter: w, body: &bytes.Buffer{}}
		completed := false
		defer func() {
			// Runs after a panic too, so the key is never left in progress.
			stopLease()
			ctx := context.WithoutCancel(r.Context())
			keep := completed && out.status < 500 && out.status != http.StatusUnauthorized && out.status != http.StatusTooManyRequests
			err := s.svc.Store().Write(ctx, func(tx wps.Tx) error {
				if !keep {
					// A request whose changes were committed keeps its key
					// whatever it answered: it must not run again.
					if cur, err := tx.GetIdempotent(scope, key); err != nil || !cur.Committed || cur.CreatedAt.Millis() != rec.CreatedAt.Millis() {
						return tx.DeleteIdempotent(scope, key, rec.CreatedAt)
					}
				}
				rec.Done, rec.Status, rec.Body = true, out.status, withoutSecrets(out.body.Bytes(), state.secrets)
				rec.Header = map[string]string{}
				for _, h := range []string{"Content-Type", "Location"} {
					if v := out.Header().Get(h); v != "" {
						rec.Header[h] = v
					}
				}
				return tx.CompleteIdempotent(rec)
			})
			if err != nil {
				s.log.ErrorContext(ctx, "idempotency record", "err", err, "request_id", requestID(ctx))
			}
		}()
		ctx := wps.WithIdempotency(context.WithValue(r.Context(), idemKey, state), wps.IdempotencyClaim{Scope: scope, Key: key, CreatedAt: rec.CreatedAt})
		next.ServeHTTP(out, r.WithContext(ctx))
		completed = true
	})
}

// renewLease extends the lease of the pending record rec while its request
// runs, a third of the lease before it would run out; the returned function
// stops it and returns once no renewal is under way. Only requests that run
// that long write anything.
func (s *Server) renewLease(ctx context.Context, rec wps.Idempotent) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(max(s.idemLease/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				until := wps.At(s.svc.Now().Add(s.idemLease))
				err := s.svc.Store().Write(ctx, func(tx wps.Tx) error { return tx.ExtendIdempotent(rec.Scope, rec.Key, rec.CreatedAt, until) })
				if err != nil {
					s.log.WarnContext(ctx, "idempotency lease", "err", err, "request_id", requestID(ctx))
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// withoutSecrets removes the named fields (dot paths) from a JSON answer.
func withoutSecrets(body []byte, paths []string) []byte {
	if len(paths) == 0 {
		return body
	}
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return body // not an object: no field to remove
	}
	for _, path := range paths {
		m := doc
		parts := strings.Split(path, ".")
		for _, part := range parts[:len(parts)-1] {
			m, _ = m[part].(map[string]any)
		}
		if m != nil {
			delete(m, parts[len(parts)-1])
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	return append(out, '\n')
}

// reserve claims the key for this request, or returns the record that holds
// it. A record past its time to live, or pending past its lease, is dropped
// and the key claimed anew.
func (s *Server) reserve(ctx context.Context, rec wps.Idempotent) (*wps.Idempotent, error) {
	var prior *wps.Idempotent
	err := s.svc.Store().Write(ctx, func(tx wps.Tx) error {
		prior = nil
		old, err := tx.GetIdempotent(rec.Scope, rec.Key)
		// A record written before leases existed has none (0): its request
		// holds the key for one lease from its start.
		held := old.LeaseUntil.Time
		if floor := old.CreatedAt.Add(s.idemLease); held.Before(floor) {
			held = floor
		}
		switch {
		case err == nil && old.CreatedAt.Add(wps.IdempotencyTTL).After(rec.CreatedAt.Time) && (old.Done || old.Committed || held.After(rec.CreatedAt.Time)):
			prior = &old
			return nil
		case err == nil:
			if err := tx.DeleteIdempotent(old.Scope, old.Key, old.CreatedAt); err != nil {
				return err
			}
		case !wps.IsCode(err, wps.CodeNotFound):
			return err
		}
		return tx.ReserveIdempotent(rec)
	})
	return prior, err
}
