// Package console serves the web console: server-rendered pages over the
// same wps.Service as the API, signed in with the API's session cookie.
// Every rule (who may do what, who sees which value) is the service's; the
// console only turns forms into service calls and answers into HTML.
package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"wps/internal/httpapi"
	"wps/internal/lang"
	"wps/internal/reports"
	"wps/internal/wps"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configures the console.
type Options struct {
	Logger *slog.Logger
	// Blobs keeps attachment bytes (uploads in forms, downloads, the logo).
	Blobs wps.BlobStore
	// SecureCookies marks the session cookie Secure over plain HTTP (TLS
	// ends at a proxy in front).
	SecureCookies bool
	// MaxUploadBytes bounds a form with files (default 32 MiB).
	MaxUploadBytes int64
	// ReportMaxDays is the longest range of a report (default
	// reports.DefaultMaxDays).
	ReportMaxDays int
}

// Console is an http.Handler for every page of the console.
type Console struct {
	svc     *wps.Service
	opt     Options
	log     *slog.Logger
	mux     *http.ServeMux
	pages   map[string]*template.Template
	zones   sync.Map          // language and time zone → their pages (pagesFor)
	assets  map[string]string // asset name → content hash, for cache-busting URLs
	reports *reports.Reports
}

// csp allows nothing from another host, no inline script or style, no
// framing. Colours that come from data (themeColor, option colours) reach
// the page as a stylesheet of /theme.css or as SVG presentation
// attributes, which CSP does not govern.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New builds the console over svc.
func New(svc *wps.Service, opt Options) *Console {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxUploadBytes <= 0 {
		opt.MaxUploadBytes = 32 << 20
	}
	c := &Console{svc: svc, opt: opt, log: opt.Logger, mux: http.NewServeMux(), assets: map[string]string{},
		reports: reports.New(opt.ReportMaxDays, func() time.Time { return svc.Now().Time })}
	c.loadAssets()
	c.loadTemplates()
	c.routes()
	return c
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) loadAssets() {
	_ = fs.WalkDir(assetFS, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := assetFS.ReadFile(path)
		sum := sha256.Sum256(b)
		c.assets[strings.TrimPrefix(path, "assets/")] = hex.EncodeToString(sum[:4])
		return nil
	})
}

// req is one request of a signed-in user (p is nil on public pages).
type req struct {
	w     http.ResponseWriter
	r     *http.Request
	p     *wps.Principal
	token string // the session token (the cookie's value)
	org   wps.Org
	// records are the linked records read for this page, by entity and columns.
	records map[string]recordOptions
	// labels are linked records' labels read for this page, by entity and
	// record id ("" when the reader may not read them).
	labels map[string]string
	// lang words the page: the user's language, else the browser's, else English.
	lang *lang.Printer
	// loc is the time zone the page shows times in: the user's, else UTC.
	loc *time.Location
}

// newReq is a request of p (nil on public pages), with its language and
// time zone.
func newReq(w http.ResponseWriter, r *http.Request, p *wps.Principal) *req {
	q := &req{w: w, r: r, p: p, loc: time.UTC}
	locale := ""
	if p != nil {
		locale = p.User.Locale
		if loc, err := time.LoadLocation(p.User.TimeZone); p.User.TimeZone != "" && err == nil {
			q.loc = loc
		}
	}
	q.lang = lang.For(lang.Pick(locale, r.Header.Get("Accept-Language")))
	return q
}

// t words message id in the request's language (lang.Printer.T).
func (q *req) t(id string, args ...any) string { return q.lang.T(id, args...) }

func (q *req) ctx() context.Context { return q.r.Context() }

// handler is a page's code: it renders or redirects, or returns an error
// that the console shows as a page with the status the error's code maps to.
type handler func(q *req) error

// signedIn wraps a page that needs a session: without one, the browser goes
// to the sign-in page and comes back. Every method but GET and HEAD must
// carry the session's CSRF token in the form (field csrf).
func (c *Console) signedIn(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := httpapi.SessionToken(r)
		var p *wps.Principal
		var err error
		if token != "" {
			p, err = c.svc.AuthenticateSession(r.Context(), token)
		}
		if p == nil {
			if err != nil && !wps.IsCode(err, wps.CodeUnauthorized) {
				c.fail(newReq(w, r, nil), err)
				return
			}
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			q := newReq(w, r, nil)
			c.fail(q, wps.Errorf(wps.CodeUnauthorized, "%s", q.t("error.sessionEnded")))
			return
		}
		httpapi.SetCaller(r, p)
		q := newReq(w, r, p)
		q.token = token
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
				r.Body = http.MaxBytesReader(w, r.Body, c.opt.MaxUploadBytes)
				if err := r.ParseMultipartForm(8 << 20); err != nil {
					c.fail(q, wps.Errorf(wps.CodeTooLarge, "%s", q.t("error.tooLarge", "Bytes", c.opt.MaxUploadBytes)))
					return
				}
				defer r.MultipartForm.RemoveAll() // files past 8 MiB wait in temporary files
			} else {
				r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
			}
			got := r.PostFormValue("csrf")
			if subtle.ConstantTimeCompare([]byte(got), []byte(wps.CSRFToken(token))) != 1 {
				c.fail(q, wps.Errorf(wps.CodeForbidden, "%s", q.t("error.formExpired")))
				return
			}
		}
		q.org, err = c.svc.GetOrg(r.Context(), p)
		if err != nil {
			c.fail(q, err)
			return
		}
		if err := h(q); err != nil {
			c.fail(q, err)
		}
	}
}

// sameSite refuses a form another site's page sent (its Origin or
// Sec-Fetch-Site says so): without a session there is no CSRF token, and a
// sign-in from another site would sign the browser into someone else's
// account (login CSRF).
var sameSite = http.NewCrossOriginProtection()

// anyone wraps a page that needs no session (sign in, accept an invite).
func (c *Console) anyone(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		q := newReq(w, r, nil)
		if err := sameSite.Check(r); err != nil {
			c.fail(q, wps.Errorf(wps.CodeForbidden, "%s", q.t("error.otherSite")))
			return
		}
		if err := h(q); err != nil {
			c.fail(q, err)
		}
	}
}

// statusOf is the HTTP status the API answers for err.
func statusOf(err error) int { return httpapi.Status(err) }

// message is what a person reads for err: the domain's message in the
// page's language (lang.Printer.Format; English where it has no words),
// or a generic one for an internal error (logged, never shown).
func (q *req) message(err error) string {
	var e *wps.Error
	if errors.As(err, &e) && e.Code != wps.CodeInternal {
		return e.Say(q.lang.Format)
	}
	return q.t("error.internal")
}

// say is a field's message in the page's language.
func (q *req) say(f wps.FieldError) string { return f.Say(q.lang.Format) }

// fail renders an error page.
func (c *Console) fail(q *req, err error) {
	st := statusOf(err)
	if st == http.StatusInternalServerError {
		c.log.ErrorContext(q.r.Context(), "console", "path", q.r.URL.Path, "err", err)
	}
	var e *wps.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		q.w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds()+0.999)))
	}
	text := q.t(fmt.Sprintf("http.%d", st)) // the catalogue's http.* names the statuses the console shows
	if strings.HasPrefix(text, "http.") {
		text = http.StatusText(st)
	}
	c.render(q, st, "error", q.t("title.error"), map[string]any{"Status": st, "StatusText": text, "Message": q.message(err)})
}

// page is what every template gets: the page's data and the frame around it.
type page struct {
	Lang   string // <html lang>
	Title  string
	User   *wps.User
	Org    wps.Org
	CSRF   string
	Nav    []navItem
	Path   string
	Theme  string // the /theme.css URL for the org's colour, or ""
	Logo   string
	Notice string
	// Refresh is a path of this site the page goes on to at once (a
	// navigation, which form-action 'self' does not govern).
	Refresh string
	Data    any
}

type navItem struct {
	Name, Label, Href string
	Current           bool
	Needs             wps.Function // the function a user needs to use the section ("": none)
	AlsoNeeds         wps.Function // a second function it needs ("": none)
}

// sections are the console's sections; an org's operations name those
// shown to non-admins, and each shows only to a user who holds the
// function its pages need.
var sections = []navItem{
	{Name: "inbox", Label: "nav.inbox", Href: "/inbox", Needs: wps.FnMeasurementRead},
	{Name: "measurements", Label: "nav.measurements", Href: "/measurements", Needs: wps.FnMeasurementRead},
	{Name: "processes", Label: "nav.processes", Href: "/processes", Needs: wps.FnProcessRead},
	{Name: "entities", Label: "nav.entities", Href: "/entities", Needs: wps.FnEntityRead},
	{Name: "reports", Label: "nav.reports", Href: "/reports", Needs: wps.FnProcessRead, AlsoNeeds: wps.FnMeasurementRead},
}

// nav is the menu of a signed-in user: the sections they may use (and
// their org shows), then Admin if they may use a page of it.
func nav(q *req) []navItem {
	var out []navItem
	for _, s := range sections {
		if s.Needs != "" && !q.p.Can(s.Needs) || s.AlsoNeeds != "" && !q.p.Can(s.AlsoNeeds) {
			continue
		}
		if q.p.IsAdmin() || len(q.org.Operations) == 0 || slices.Contains(q.org.Operations, s.Name) {
			s.Current = strings.HasPrefix(q.r.URL.Path, s.Href)
			s.Label = q.t(s.Label)
			out = append(out, s)
		}
	}
	if len(adminLinks(q.p)) > 0 {
		out = append(out, navItem{Name: "admin", Label: q.t("nav.admin"), Href: "/admin", Current: strings.HasPrefix(q.r.URL.Path, "/admin")})
	}
	return out
}

// home (/) sends a user to the first section of their menu (the Inbox,
// for those who may read measurements), or to their settings when the
// menu is empty.
func (c *Console) home(q *req) error {
	if n := nav(q); len(n) > 0 {
		return q.redirect(n[0].Href, "")
	}
	return q.redirect("/settings", "")
}

// notices are the messages a redirect after a change may show (by code,
// so that a link cannot make the console say anything else): the codes
// of the catalogue's notice.* messages.
var notices = []string{"saved", "approved", "rejected", "reproved", "started", "invited", "updated", "imported",
	"signedout", "welcome", "resetsent", "reset", "deactivated", "retried", "restored", "revoked", "deleted"}

// render shows page name in the request's language and time zone.
func (c *Console) render(q *req, status int, name, title string, data any) {
	if q.lang == nil {
		q.lang, q.loc = lang.For(lang.Default), time.UTC
	}
	t := c.pagesFor(q.lang, q.loc)[name]
	pg := page{Lang: q.lang.Locale, Title: title, Path: q.r.URL.Path, Data: data}
	if done := q.r.URL.Query().Get("done"); slices.Contains(notices, done) {
		pg.Notice = q.t("notice." + done)
	}
	if r, ok := data.(interface{ refresh() string }); ok {
		pg.Refresh = r.refresh()
	}
	if q.p != nil {
		u := q.p.User
		pg.User, pg.Org, pg.CSRF = &u, q.org, wps.CSRFToken(q.token)
		pg.Nav = nav(q)
		if col, ok := parseHex(q.org.ThemeColor); ok {
			// v: the theme's rules follow console.css (its backgrounds, its dark mode), so a
			// new stylesheet is a new theme URL; the colour's stylesheet is cached for good.
			pg.Theme = "/theme.css?c=" + col.hex() + "&v=" + c.assets["console.css"]
		}
		if q.org.LogoKey != "" {
			pg.Logo = "/files/" + url.PathEscape(q.org.LogoKey)
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", pg); err != nil {
		c.log.ErrorContext(q.r.Context(), "console template", "page", name, "err", err)
		http.Error(q.w, "internal error", http.StatusInternalServerError)
		return
	}
	q.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	q.w.Header().Set("Cache-Control", "no-store")
	q.w.WriteHeader(status)
	_, _ = q.w.Write(buf.Bytes())
}

// redirect sends the browser to path after a change (303, so a reload
// does not post the form again), with a notice code.
func (q *req) redirect(path, done string) error {
	if done != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "done=" + done
	}
	http.Redirect(q.w, q.r, path, http.StatusSeeOther)
	return nil
}

// pageURL is the URL of the same page with other values, page n.
func pageURL(path string, v url.Values, n int) string {
	u := url.Values{}
	for k, vs := range v {
		u[k] = vs
	}
	u.Set("page", strconv.Itoa(n))
	return path + "?" + u.Encode()
}

// localPath keeps a ?next= target on this site: a path, never a URL of
// another host (an open redirect); else home (/, the user's first section).
func localPath(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// clientAddr is the client's IP address, for sign-in throttling.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
