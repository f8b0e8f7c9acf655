package console

import (
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"wps/internal/lang"
	"wps/internal/wps"
)

// routes lists every page of the console, in one place.
func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET /{$}", c.signedIn(c.home))
	m.HandleFunc("GET /assets/{name}", c.asset)
	m.HandleFunc("GET /theme.css", c.theme)

	m.HandleFunc("GET /signin", c.anyone(c.signInPage))
	m.HandleFunc("POST /signin", c.anyone(c.signIn))
	m.HandleFunc("GET /signin/sso", c.anyone(c.ssoContinue))
	m.HandleFunc("POST /signout", c.signedIn(c.signOut))
	m.HandleFunc("GET /invite/{token}", c.anyone(c.invitePage))
	m.HandleFunc("POST /invite/{token}", c.anyone(c.acceptInvite))
	m.HandleFunc("GET /forgot", c.anyone(c.forgotPage))
	m.HandleFunc("POST /forgot", c.anyone(c.forgot))
	m.HandleFunc("GET /reset/{token}", c.anyone(c.resetPage))
	m.HandleFunc("POST /reset/{token}", c.anyone(c.reset))

	m.HandleFunc("GET /inbox", c.signedIn(c.inbox))
	m.HandleFunc("GET /measurements", c.signedIn(c.measurements))
	m.HandleFunc("POST /measurements", c.signedIn(c.startMeasurement))
	m.HandleFunc("GET /measurements/{id}", c.signedIn(c.measurement))
	m.HandleFunc("POST /measurements/{id}/actions", c.signedIn(c.act))
	m.HandleFunc("POST /actions/{id}/reprove", c.signedIn(c.reprove))
	m.HandleFunc("GET /files/{id}", c.signedIn(c.file))

	m.HandleFunc("GET /processes", c.signedIn(c.processes))
	m.HandleFunc("GET /processes/{id}", c.signedIn(c.process))
	m.HandleFunc("POST /processes/{id}/restore", c.signedIn(c.restoreProcess))
	m.HandleFunc("POST /processes/{id}/migrations", c.signedIn(c.migrate))
	m.HandleFunc("GET /processes/{id}/compare", c.signedIn(c.compare))
	m.HandleFunc("GET /processes/new", c.signedIn(c.designNew))
	m.HandleFunc("GET /processes/{id}/edit", c.signedIn(c.designEdit))
	m.HandleFunc("POST /processes/{id}/delete", c.signedIn(c.deleteProcess))
	m.HandleFunc("POST /processes/design", c.signedIn(c.design))
	m.HandleFunc("POST /processes/design/diagram", c.signedIn(c.designDiagram))

	m.HandleFunc("GET /reports", c.signedIn(c.reportsOverview))
	m.HandleFunc("GET /reports/{id}", c.signedIn(c.report))
	m.HandleFunc("GET /reports/{id}/csv", c.signedIn(c.reportCSV))

	m.HandleFunc("GET /entities", c.signedIn(c.entities))
	m.HandleFunc("GET /entities/{id}", c.signedIn(c.records))
	m.HandleFunc("POST /entities/{id}/restore", c.signedIn(c.restoreEntity))
	c.entityRoutes() // the entity designer and records changed in place (entity_designer.go)

	m.HandleFunc("GET /settings", c.signedIn(c.settings))
	m.HandleFunc("POST /settings", c.signedIn(c.saveSettings))
	m.HandleFunc("GET /settings/delegations", c.signedIn(c.delegations))
	m.HandleFunc("POST /settings/delegations", c.signedIn(c.delegate))
	m.HandleFunc("POST /delegations/{id}/revoke", c.signedIn(c.revokeDelegation))

	m.HandleFunc("GET /admin", c.signedIn(c.admin))
	m.HandleFunc("GET /admin/users", c.signedIn(c.users))
	m.HandleFunc("POST /admin/invites", c.signedIn(c.invite))
	m.HandleFunc("POST /admin/users/{id}", c.signedIn(c.updateUser))
	m.HandleFunc("GET /admin/policies", c.signedIn(c.policies))
	m.HandleFunc("POST /admin/policies", c.signedIn(c.savePolicy))
	m.HandleFunc("GET /admin/webhooks", c.signedIn(c.webhooks))
	m.HandleFunc("POST /admin/webhooks", c.signedIn(c.createWebhook))
	m.HandleFunc("POST /admin/deliveries/{id}/retry", c.signedIn(c.retryDelivery))
	m.HandleFunc("GET /admin/org", c.signedIn(c.orgSettings))
	m.HandleFunc("POST /admin/org", c.signedIn(c.saveOrg))
	m.HandleFunc("GET /admin/sso", c.signedIn(c.ssoSettings))
	m.HandleFunc("GET /admin/audit", c.signedIn(c.audit))
	m.HandleFunc("POST /admin/sso", c.signedIn(c.saveSSO))

	m.HandleFunc("/", c.anyone(func(q *req) error { return wps.Errorf(wps.CodeNotFound, "%s", q.t("error.noPage")) }))
}

// asset serves an embedded file; with its content hash in ?v= it is cached
// for good (the URL changes with the content).
func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	if r.URL.Query().Get("v") == c.assets[name] {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	_, _ = w.Write(b)
}

// loadTemplates parses each page with the layout around it, in English,
// showing times in UTC.
func (c *Console) loadTemplates() { c.pages = c.parsePages(lang.For(lang.Default), time.UTC) }

// pagesFor are the pages in language p that show times in loc (a user's
// time zone), parsed once per language and zone.
func (c *Console) pagesFor(p *lang.Printer, loc *time.Location) map[string]*template.Template {
	if loc == time.UTC && p.Locale == lang.Default {
		return c.pages
	}
	key := p.Locale + " " + loc.String()
	if pages, ok := c.zones.Load(key); ok {
		return pages.(map[string]*template.Template)
	}
	pages, _ := c.zones.LoadOrStore(key, c.parsePages(p, loc))
	return pages.(map[string]*template.Template)
}

func (c *Console) parsePages(p *lang.Printer, loc *time.Location) map[string]*template.Template {
	funcs := template.FuncMap{
		"asset": func(name string) string { return "/assets/" + name + "?v=" + c.assets[name] },
		"t":     p.T,
		"th":    p.HTML,
		"when":  func(t wps.Time) string { return p.When(t.Time, loc) },
		// until is an end the way it was chosen: a last day, included, for
		// an end at midnight in the reader's zone; else the instant.
		"until": func(t wps.Time) string {
			if l := t.Time.In(loc); l.Hour() == 0 && l.Minute() == 0 && l.Second() == 0 && l.Nanosecond() == 0 {
				return l.AddDate(0, 0, -1).Format(p.DateLayout())
			}
			return p.When(t.Time, loc)
		},
		"ago": func(t wps.Time) string { return p.Ago(c.svc.Now().Time, t.Time) },
		"due": func(t wps.Time) string { return p.Due(c.svc.Now().Time, t.Time) },
		"short": func(s string) string {
			if len(s) > 12 {
				return s[:12] + "…"
			}
			return s
		},
		"join":     strings.Join,
		"contains": slices.Contains[[]string],
		"lower":    strings.ToLower,
		"title":    p.Status,
		"add":      func(a, b int) int { return a + b },
		"sub":      func(a, b int) int { return a - b },
		"list":     func(xs ...string) []string { return xs },
		"pair":     func(a, b any) []any { return []any{a, b} },
		"icon":     icon,
		"sigField": func(id, meaning, err string, ssoOnly bool) sigField {
			return sigField{ID: id, Meaning: meaning, Error: err, SSOOnly: ssoOnly}
		},
		"add1":      func(a, b float64) float64 { return a + b },
		"sub1":      func(a, b float64) float64 { return a - b },
		"slug":      slug,
		"percent":   func(v *float64) string { return strconv.FormatFloat(*v*100, 'f', 1, 64) + "%" },
		"stepLabel": stepLabel,
		"dict": func(kv ...any) map[string]any { // a template's arguments by name: dict "k" v "k2" v2
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	pages := map[string]*template.Template{}
	names, _ := fs.Glob(templateFS, "templates/*.html")
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "parts" {
			continue
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, n))
	}
	return pages
}
