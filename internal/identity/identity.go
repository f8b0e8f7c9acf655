// Package identity signs people in through their org's OpenID provider: the
// relying party of OpenID Connect's code flow (PKCE, state, nonce), which
// verifies the provider's ID token and then calls the domain
// (wps.Service.SSOSignIn) to find or create the user and start a session.
// It also holds the use cases of an org's SSO settings (settings.go) and
// the user operations SCIM drives (provisioning.go), over the domain's
// store and rules. It keeps no data of its own.
package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"wps/internal/outbound"
	"wps/internal/wps"
)

// Config tunes the relying party.
type Config struct {
	// PublicURL is where browsers reach wps (WPS_PUBLIC_URL); the provider
	// sends them back to PublicURL + /sso/callback.
	PublicURL string
	// AllowPrivate lets issuers on loopback and private addresses be
	// dialled (WPS_WEBHOOK_ALLOW_PRIVATE, as webhooks).
	AllowPrivate bool
	// SecureCookies marks cookies Secure (also when PublicURL is https).
	SecureCookies bool
	// Timeout bounds each request to a provider (default 10 s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// RP is the relying party: it fetches discovery documents for
// wps.Service.PutSSO (Discover) and serves /sso/start and /sso/callback
// (Handler).
type RP struct {
	cfg    Config
	client *http.Client

	mu        sync.Mutex
	providers map[string]cachedProvider // by issuer
}

type cachedProvider struct {
	p  *oidc.Provider
	at time.Time
}

// providerTTL is how long a discovery document is used before it is
// fetched again. The provider's keys are fetched again whenever a token
// names a key the cached set lacks (a rotation).
const providerTTL = 10 * time.Minute

// New returns a relying party.
func New(cfg Config) *RP {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	return &RP{cfg: cfg, client: outbound.Client(cfg.Timeout, cfg.AllowPrivate), providers: map[string]cachedProvider{}}
}

// SetPublicURL sets Config.PublicURL when it was left empty (the server
// knows its address once it listens).
func (rp *RP) SetPublicURL(u string) {
	if rp.cfg.PublicURL == "" {
		rp.cfg.PublicURL = strings.TrimSuffix(u, "/")
	}
}

// clientContext makes go-oidc and oauth2 use the guarded client.
func (rp *RP) clientContext(ctx context.Context) context.Context {
	return oidc.ClientContext(context.WithValue(ctx, oauth2.HTTPClient, rp.client), rp.client)
}

// Discover fetches issuer's discovery document and checks that it names
// the issuer (wps.SSODiscoverer).
func (rp *RP) Discover(ctx context.Context, issuer string) error {
	p, err := oidc.NewProvider(rp.clientContext(ctx), issuer)
	if err != nil {
		return err
	}
	rp.mu.Lock()
	rp.providers[issuer] = cachedProvider{p: p, at: time.Now()}
	rp.mu.Unlock()
	return nil
}

// provider returns issuer's provider, from the cache when fresh. Its keys
// are fetched with a context of its own (the key set outlives requests).
func (rp *RP) provider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	rp.mu.Lock()
	c, ok := rp.providers[issuer]
	rp.mu.Unlock()
	if ok && time.Since(c.at) < providerTTL {
		return c.p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, rp.cfg.Timeout)
	defer cancel()
	p, err := oidc.NewProvider(rp.clientContext(context.WithoutCancel(ctx)), issuer)
	if err != nil {
		return nil, err
	}
	rp.mu.Lock()
	rp.providers[issuer] = cachedProvider{p: p, at: time.Now()}
	rp.mu.Unlock()
	return p, nil
}

// flowCookie carries one sign-in's secrets between /sso/start and
// /sso/callback, in the browser that started it.
const flowCookie = "wps_sso"

// flowTTL is how long a started sign-in may take at the provider.
const flowTTL = 10 * time.Minute

type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	OrgID    string `json:"o"`
	Next     string `json:"r,omitempty"`
	Expires  int64  `json:"e"`
}

func (f flow) encode() string {
	b, _ := json.Marshal(f)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeFlow(s string) (flow, bool) {
	var f flow
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &f) != nil || f.State == "" || f.Nonce == "" || f.Verifier == "" || f.OrgID == "" {
		return flow{}, false
	}
	return f, true
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Handler serves GET /sso/start and GET /sso/callback.
func (rp *RP) Handler(svc *wps.Service) http.Handler {
	h := &handler{rp: rp, svc: svc}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sso/start", h.start)
	mux.HandleFunc("GET /sso/callback", h.callback)
	mux.HandleFunc("/sso/", func(w http.ResponseWriter, r *http.Request) {
		page(w, http.StatusNotFound, "Not found", "There is no such page.")
	})
	return mux
}

type handler struct {
	rp  *RP
	svc *wps.Service
}

func (h *handler) secure() bool {
	return h.rp.cfg.SecureCookies || strings.HasPrefix(h.rp.cfg.PublicURL, "https://")
}

func (h *handler) oauth(set wps.SSOSettings, p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: set.ClientID, ClientSecret: set.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: h.rp.cfg.PublicURL + "/sso/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// LocalPath reports a return address that stays on this site: a path, not
// a scheme, a host ("//evil") or a backslash that browsers read as one.
func LocalPath(next string) bool {
	return strings.HasPrefix(next, "/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\x00\r\n\t") && len(next) <= 2000
}

func (h *handler) start(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	org, email, next := q.Get("org"), q.Get("email"), q.Get("next")
	if next != "" && !LocalPath(next) {
		page(w, http.StatusBadRequest, "Sign-in refused", "The return address must be a page of this site.")
		return
	}
	if org == "" && email == "" {
		page(w, http.StatusBadRequest, "Sign-in refused", "Say which organization: ?org=ORG_ID or ?email=you@your-company.")
		return
	}
	set, err := h.svc.SSOConfig(r.Context(), org, email)
	if err != nil {
		h.fail(w, r, err, "No organization signs in here with single sign-on for this address.")
		return
	}
	p, err := h.rp.provider(r.Context(), set.Issuer)
	if err != nil {
		h.rp.cfg.Logger.WarnContext(r.Context(), "sso: discovery failed", "org", set.OrgID, "err", err)
		page(w, http.StatusBadGateway, "Sign-in unavailable", "The organization's identity provider cannot be reached; try again later.")
		return
	}
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), OrgID: set.OrgID, Next: next,
		Expires: time.Now().Add(flowTTL).Unix()}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: f.encode(), Path: "/sso/", MaxAge: int(flowTTL.Seconds()),
		HttpOnly: true, Secure: h.secure(), SameSite: http.SameSiteLaxMode})
	to := h.oauth(set, p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	http.Redirect(w, r, to, http.StatusFound)
}

// refusal is a sign-in refused for a reason the page may say.
type refusal struct {
	status int
	msg    string
	err    error
}

func (e *refusal) Error() string { return fmt.Sprintf("%s: %v", e.msg, e.err) }

func refuse(status int, msg string, err error) error {
	return &refusal{status: status, msg: msg, err: err}
}

func (h *handler) callback(w http.ResponseWriter, r *http.Request) {
	// The flow is used once: its cookie goes whatever happens.
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: "/sso/", MaxAge: -1, HttpOnly: true, Secure: h.secure(), SameSite: http.SameSiteLaxMode})
	f, id, err := h.verify(r)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	out, err := h.svc.SSOSignIn(r.Context(), f.OrgID, id)
	if err != nil {
		h.fail(w, r, err, "")
		return
	}
	c := SessionCookie(out.Token, out.ExpiresAt.Time, h.secure())
	http.SetCookie(w, &c)
	to := "/"
	if f.Next != "" && LocalPath(f.Next) {
		to = f.Next
	}
	http.Redirect(w, r, to, http.StatusFound)
}

// verify checks the callback against its flow, exchanges the code and
// verifies the ID token: signature by a key of the provider's JWKS, iss,
// aud, exp, nonce, and email_verified not false.
func (h *handler) verify(r *http.Request) (flow, wps.SSOIdentity, error) {
	ctx := r.Context()
	var none wps.SSOIdentity
	c, err := r.Cookie(flowCookie)
	if err != nil {
		return flow{}, none, refuse(http.StatusBadRequest, "This sign-in was not started in this browser, or took too long; start again.", err)
	}
	f, ok := decodeFlow(c.Value)
	if !ok || time.Now().Unix() > f.Expires {
		return flow{}, none, refuse(http.StatusBadRequest, "This sign-in was not started in this browser, or took too long; start again.", errors.New("bad or expired flow cookie"))
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		return flow{}, none, refuse(http.StatusBadRequest, "This answer does not belong to the sign-in this browser started (state); start again.", errors.New("state mismatch"))
	}
	if e := q.Get("error"); e != "" {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider did not sign you in: "+e+".", errors.New(e+": "+q.Get("error_description")))
	}
	set, err := h.svc.SSOConfig(ctx, f.OrgID, "")
	if err != nil {
		return flow{}, none, err
	}
	p, err := h.rp.provider(ctx, set.Issuer)
	if err != nil {
		return flow{}, none, refuse(http.StatusBadGateway, "The organization's identity provider cannot be reached; try again later.", err)
	}
	tctx, cancel := context.WithTimeout(h.rp.clientContext(ctx), h.rp.cfg.Timeout)
	defer cancel()
	tok, err := h.oauth(set, p).Exchange(tctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider refused the sign-in code (used already, or expired); start again.", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider sent no ID token.", errors.New("no id_token"))
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: set.ClientID}).Verify(tctx, raw)
	if err != nil {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider's ID token was refused (signature, issuer, audience or expiry).", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return flow{}, none, refuse(http.StatusForbidden, "The ID token was not issued for this sign-in (nonce).", errors.New("nonce mismatch"))
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return flow{}, none, refuse(http.StatusForbidden, "The ID token's claims cannot be read.", err)
	}
	// A token with several audiences names the client it was issued to
	// (OpenID Connect Core 3.1.3.7): it must be this one.
	if azp, ok := claims["azp"].(string); ok && azp != set.ClientID {
		return flow{}, none, refuse(http.StatusForbidden, "The ID token was issued to another client (azp).", errors.New("azp "+azp))
	}
	email, _ := claims["email"].(string)
	if email == "" {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider gave no email address (scope email).", errors.New("no email claim"))
	}
	if v, ok := claims["email_verified"]; ok && (v == false || v == "false") {
		return flow{}, none, refuse(http.StatusForbidden, "The identity provider has not verified your email address.", errors.New("email_verified false"))
	}
	name, _ := claims["name"].(string)
	id := wps.SSOIdentity{Email: email, Name: name}
	if set.GroupsClaim != "" {
		id.Groups = groups(claims[set.GroupsClaim])
	}
	return f, id, nil
}

// groups reads a groups claim: a list of strings, or one string.
func groups(v any) []string {
	out := []string{}
	switch g := v.(type) {
	case string:
		out = append(out, g)
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// fail answers a refused sign-in with a page: the refusal's own words, the
// domain's message for a forbidden or unknown org, else a generic one
// (the cause is logged).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	var ref *refusal
	var we *wps.Error
	switch {
	case errors.As(err, &ref):
		h.rp.cfg.Logger.InfoContext(r.Context(), "sso: sign-in refused", "reason", ref.msg, "err", ref.err)
		page(w, ref.status, "Sign-in refused", ref.msg)
	case errors.As(err, &we) && we.Code == wps.CodeForbidden:
		page(w, http.StatusForbidden, "Sign-in refused", we.Message)
	case errors.As(err, &we) && we.Code == wps.CodeNotFound:
		if notFound == "" {
			notFound = "This organization no longer signs in with single sign-on."
		}
		page(w, http.StatusNotFound, "Sign-in refused", notFound)
	default:
		h.rp.cfg.Logger.ErrorContext(r.Context(), "sso: sign-in failed", "err", err)
		page(w, http.StatusInternalServerError, "Sign-in failed", "Something went wrong on our side; try again.")
	}
}
