// Package lang holds the words of the console and of its mail in each
// language it speaks (one catalogue a language: messages/*.json) and picks
// the language a person reads: their own setting, else their browser's
// Accept-Language, else English. It knows nothing of the domain's rules.
package lang

import (
	"embed"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

//go:embed messages/*.json
var files embed.FS

// The service's messages (its refusals: "must be a number", "no such step
// in process %q") are English fmt formats; service/LOCALE.json gives each
// its words in another language, the same verbs in the same order (or
// numbered, %[2]q). Format finds them.
//
//go:embed service/*.json
var serviceFiles embed.FS

// Default is the language when nothing else is known.
const Default = "en"

// Supported are the languages, as users' locale settings name them; the
// first is the default.
var Supported = []string{"en", "pt-BR", "es"}

var (
	tags    = []language.Tag{language.English, language.BrazilianPortuguese, language.Spanish}
	matcher = language.NewMatcher(tags)
	bundle  = load()
	cache   sync.Map // locale → *Printer
)

// Catalogue reads one language's catalogue as written: message id → text,
// or plural forms (one, many, other) → text. Tests compare catalogues with it.
func Catalogue(locale string) (map[string]any, error) {
	b, err := files.ReadFile(path.Join("messages", locale+".json"))
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

// load builds the bundle from the embedded catalogues. A plural message
// without a "many" form uses its "other" form for it (Portuguese and
// Spanish use "many" only for millions: "1.000.000 de …").
func load() *i18n.Bundle {
	b := i18n.NewBundle(language.English)
	for i, loc := range Supported {
		cat, err := Catalogue(loc)
		if err != nil {
			panic(fmt.Sprintf("lang: catalogue %s: %v", loc, err))
		}
		var msgs []*i18n.Message
		for id, v := range cat {
			m := &i18n.Message{ID: id}
			switch v := v.(type) {
			case string:
				m.Other = v
			case map[string]any:
				str := func(k string) string { s, _ := v[k].(string); return s }
				m.Zero, m.One, m.Two, m.Few, m.Many, m.Other = str("zero"), str("one"), str("two"), str("few"), str("many"), str("other")
				if m.Many == "" {
					m.Many = m.Other
				}
			default:
				panic(fmt.Sprintf("lang: catalogue %s: %s is neither a text nor plural forms", loc, id))
			}
			msgs = append(msgs, m)
		}
		if err := b.AddMessages(tags[i], msgs...); err != nil {
			panic(fmt.Sprintf("lang: catalogue %s: %v", loc, err))
		}
	}
	return b
}

// Valid tells whether locale is one of Supported.
func Valid(locale string) bool { return slices.Contains(Supported, locale) }

// Pick is the language a person reads: locale (their own setting) when it
// is supported, else the best match of acceptLanguage (an Accept-Language
// header), else English.
func Pick(locale, acceptLanguage string) string {
	if Valid(locale) {
		return locale
	}
	if acceptLanguage == "" {
		return Default
	}
	prefs, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(prefs) == 0 {
		return Default
	}
	_, i, conf := matcher.Match(prefs...)
	if conf == language.No {
		return Default
	}
	return Supported[i]
}

// Printer words messages in one language.
type Printer struct {
	Locale  string // one of Supported: <html lang>
	loc     *i18n.Localizer
	service map[string]string // the service's formats in this language
}

// ServiceCatalogue reads a language's words for the service's messages:
// English format → its format in locale (none for English).
func ServiceCatalogue(locale string) (map[string]string, error) {
	out := map[string]string{}
	b, err := serviceFiles.ReadFile(path.Join("service", locale+".json"))
	if err != nil {
		return out, nil
	}
	return out, json.Unmarshal(b, &out)
}

// Format is the service's message format in p's language (wps.Error.Say
// words a refusal with it); a format the catalogue lacks comes back as it
// is, in English.
func (p *Printer) Format(format string) string {
	if p == nil {
		return format
	}
	if f, ok := p.service[format]; ok {
		return f
	}
	return format
}

// For is the Printer of locale (English for an unsupported one).
func For(locale string) *Printer {
	if !Valid(locale) {
		locale = Default
	}
	if p, ok := cache.Load(locale); ok {
		return p.(*Printer)
	}
	svc, err := ServiceCatalogue(locale)
	if err != nil {
		panic(fmt.Sprintf("lang: service catalogue %s: %v", locale, err))
	}
	p, _ := cache.LoadOrStore(locale, &Printer{Locale: locale, loc: i18n.NewLocalizer(bundle, locale, Default), service: svc})
	return p.(*Printer)
}

// T words message id with args, name/value pairs filling its {{.Name}}
// placeholders; an argument named Count picks the plural form. An id no
// catalogue has comes back as itself (the catalogue test catches it).
func (p *Printer) T(id string, args ...any) string {
	data := make(map[string]any, len(args)/2)
	var count any
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		data[k] = args[i+1]
		if k == "Count" {
			count = args[i+1]
		}
	}
	s, err := p.loc.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: data, PluralCount: count})
	if err != nil && s == "" {
		return id
	}
	return s
}

// HTML words a message whose text holds markup (a <code> or <strong>):
// the catalogue's text is trusted, every argument is escaped.
func (p *Printer) HTML(id string, args ...any) template.HTML {
	esc := slices.Clone(args)
	for i := 1; i < len(esc); i += 2 {
		if s, ok := esc[i].(string); ok {
			esc[i] = html.EscapeString(s)
		}
	}
	return template.HTML(p.T(id, esc...))
}

// DateLayout is how the language writes a date (Go layout): dd/mm/yyyy in
// Portuguese and Spanish, ISO 8601 (yyyy-mm-dd) in English, which no
// reader of either order misreads.
func (p *Printer) DateLayout() string {
	if p.Locale == "en" {
		return "2006-01-02"
	}
	return "02/01/2006"
}

// DatePattern is DateLayout as people read it (dd/MM/yyyy).
func (p *Printer) DatePattern() string {
	if p.Locale == "en" {
		return "yyyy-MM-dd"
	}
	return "dd/MM/yyyy"
}

// When is t in loc with its offset (UTC when loc is UTC), in the
// language's date order: 2026-03-01 14:05 (UTC-03:00), 01/03/2026 14:05 (UTC-03:00).
func (p *Printer) When(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	t = t.In(loc)
	if loc == time.UTC {
		return t.Format(p.DateLayout() + " 15:04 UTC")
	}
	return t.Format(p.DateLayout() + " 15:04 (UTC-07:00)")
}

// span is d rounded down to its largest unit, as a count and a unit name
// (minutes under an hour, hours under two days, then days).
func span(d time.Duration) (int, string) {
	switch {
	case d < time.Hour:
		return max(int(d/time.Minute), 1), "min"
	case d < 48*time.Hour:
		return int(d / time.Hour), "h"
	}
	return int(d / (24 * time.Hour)), "d"
}

// Due says how t, a deadline, stands from now: "due in 3 h", "overdue by 2 d".
func (p *Printer) Due(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if t.After(now) {
		n, unit := span(t.Sub(now))
		return p.T("time.dueIn", "Span", p.T("time."+unit, "Count", n))
	}
	n, unit := span(now.Sub(t))
	return p.T("time.overdueBy", "Span", p.T("time."+unit, "Count", n))
}

// Ago says how long before now t was: "3 h ago", "just now".
func (p *Printer) Ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Minute {
		return p.T("time.justNow")
	}
	n, unit := span(d)
	return p.T("time.ago", "Span", p.T("time."+unit, "Count", n))
}

// Status is a status code as people read it (IN_CONSENSUS → In consensus),
// from the catalogue's status.* messages; an unknown one is written plainly.
func (p *Printer) Status(s string) string {
	if s == "" {
		return ""
	}
	id := "status." + s
	if t := p.T(id); t != id {
		return t
	}
	s = strings.ToLower(strings.ReplaceAll(s, "_", " "))
	return strings.ToUpper(s[:1]) + s[1:]
}
