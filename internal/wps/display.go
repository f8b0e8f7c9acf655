package wps

import (
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// locales the display formatting knows: decimal and grouping separators,
// and how a currency symbol is placed.
var locales = map[string]struct {
	decimal, group string
	yes, no        string
	suffixCurrency bool
}{
	"en-US": {".", ",", "Yes", "No", false},
	"en-GB": {".", ",", "Yes", "No", false},
	"pt-BR": {",", ".", "Sim", "Não", false},
	"pt-PT": {",", " ", "Sim", "Não", true},
	"es-ES": {",", ".", "Sí", "No", true},
	"de-DE": {",", ".", "Ja", "Nein", true},
	"fr-FR": {",", " ", "Oui", "Non", true},
}

// currencySymbol is how a currency is written in a locale.
func currencySymbol(code, locale string) string {
	switch code {
	case "USD":
		if locale == "en-US" || locale == "" {
			return "$"
		}
		return "US$"
	case "BRL":
		return "R$"
	case "EUR":
		return "€"
	case "GBP":
		return "£"
	case "JPY":
		return "¥"
	}
	return code
}

// DisplayValue formats a canonical value for people, per the parameter's
// advancedOptions: numbers with the locale's separators, fixed decimals and
// the currency; dates with dateFormat (dd, MM, yyyy, HH, mm, ss); booleans
// in the locale's words. Anything else, or an unknown locale, is the value.
func DisplayValue(p Parameter, value string) string {
	a := p.AdvancedOptions
	if a == nil || value == "" {
		return value
	}
	loc, known := locales[a.Locale]
	if !known {
		loc = locales["en-US"]
	}
	switch p.Type {
	case TypeInt, TypeNumber, TypeFormula:
		d, err := decimal.NewFromString(value)
		if err != nil {
			return value
		}
		places := decimalsOf(p)
		if places < 0 && a.Currency != "" {
			places = 2
		}
		s := groupNumber(d, places, loc.decimal, loc.group)
		if a.Currency == "" {
			return s
		}
		sym := currencySymbol(a.Currency, a.Locale)
		if loc.suffixCurrency {
			return s + "\u00a0" + sym
		}
		if a.Locale == "" || a.Locale == "en-US" || a.Locale == "en-GB" {
			return sym + s
		}
		return sym + "\u00a0" + s
	case TypeDate, TypeDateTime:
		if a.DateFormat == "" {
			return value
		}
		t, err := time.Parse(time.RFC3339Nano, value)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, value); err != nil {
				return value
			}
		}
		layout, ok := DateLayout(a.DateFormat, p.Type == TypeDateTime)
		if !ok {
			return value
		}
		return t.Format(layout)
	case TypeBoolean:
		if !known {
			return value
		}
		if value == "true" {
			return loc.yes
		}
		return loc.no
	}
	return value
}

// groupNumber writes d with places decimals (all when negative) and the
// given separators.
func groupNumber(d decimal.Decimal, places int32, dec, group string) string {
	s := d.String()
	if places >= 0 {
		s = d.StringFixedBank(places)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(group)
		}
		b.WriteRune(r)
	}
	out := b.String()
	if hasFrac {
		out += dec + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

// dateTokens are what a dateFormat is written with, and their Go layouts.
var dateTokens = []struct{ token, layout string }{
	{"yyyy", "2006"}, {"MM", "01"}, {"dd", "02"}, {"HH", "15"}, {"mm", "04"}, {"ss", "05"},
}

// dateSeparators may stand between a dateFormat's tokens.
const dateSeparators = " /-.,:"

// DateLayout is the Go time layout of a parameter's dateFormat. A format
// is yyyy, MM and dd, each once, in any order, between separators (space,
// / - . , :); a DATETIME's (withTime) may add HH, mm and ss. ok is false
// for anything else: a date written without its year, or with letters Go
// would read as a layout of its own, could not be read back from a form
// as the date it showed.
func DateLayout(format string, withTime bool) (layout string, ok bool) {
	var b strings.Builder
	seen := map[string]bool{}
	for rest := format; rest != ""; {
		i := slices.IndexFunc(dateTokens, func(t struct{ token, layout string }) bool { return strings.HasPrefix(rest, t.token) })
		switch {
		case i >= 0:
			t := dateTokens[i]
			if seen[t.token] || i >= 3 && !withTime {
				return "", false
			}
			seen[t.token] = true
			b.WriteString(t.layout)
			rest = rest[len(t.token):]
		case strings.ContainsRune(dateSeparators, rune(rest[0])):
			b.WriteByte(rest[0])
			rest = rest[1:]
		default:
			return "", false
		}
	}
	if !seen["yyyy"] || !seen["MM"] || !seen["dd"] {
		return "", false
	}
	return b.String(), true
}

// DisplayLocales are the values advancedOptions.locale may take.
func DisplayLocales() []string {
	out := make([]string, 0, len(locales))
	for l := range locales {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}
