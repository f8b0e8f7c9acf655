package wps

import "testing"

func TestDisplayValue(t *testing.T) {
	num := func(loc, cur string, decimals int) Parameter {
		return Parameter{Type: TypeNumber, Decimals: &decimals, AdvancedOptions: &AdvancedOptions{Locale: loc, Currency: cur}}
	}
	date := func(typ, f string) Parameter {
		return Parameter{Type: typ, AdvancedOptions: &AdvancedOptions{DateFormat: f}}
	}
	cases := []struct {
		p    Parameter
		v    string
		want string
	}{
		{num("pt-BR", "USD", 2), "1234.5", "US$\u00a01.234,50"},
		{num("pt-BR", "BRL", 2), "-1234567.891", "R$\u00a0-1.234.567,89"},
		{num("en-US", "USD", 2), "1234.5", "$1,234.50"},
		{num("de-DE", "EUR", 2), "1234.5", "1.234,50\u00a0€"},
		{num("pt-BR", "", 1), "0.25", "0,2"},
		{num("en-US", "", 0), "999", "999"},
		{date(TypeDate, "dd/MM/yyyy"), "2026-03-01", "01/03/2026"},
		{date(TypeDateTime, "dd/MM/yyyy HH:mm"), "2026-03-01T13:05:00.000Z", "01/03/2026 13:05"},
		{Parameter{Type: TypeBoolean, AdvancedOptions: &AdvancedOptions{Locale: "pt-BR"}}, "true", "Sim"},
		{Parameter{Type: TypeText}, "as is", "as is"},
		{num("xx-XX", "", 2), "1000", "1,000.00"},
	}
	for _, c := range cases {
		if got := DisplayValue(c.p, c.v); got != c.want {
			t.Errorf("%+v %q: %q, want %q", c.p.AdvancedOptions, c.v, got, c.want)
		}
	}
}

// A dateFormat is yyyy, MM and dd once each between separators (a
// DATETIME's may add HH, mm, ss); anything else has no layout, so that a
// date shown in it can always be read back as the same date.
func TestDateLayout(t *testing.T) {
	for _, c := range []struct {
		format   string
		withTime bool
		layout   string
	}{
		{"dd/MM/yyyy", false, "02/01/2006"},
		{"yyyy-MM-dd", false, "2006-01-02"},
		{"dd.MM.yyyy", false, "02.01.2006"},
		{"MM/dd/yyyy HH:mm", true, "01/02/2006 15:04"},
		{"yyyy-MM-dd HH:mm:ss", true, "2006-01-02 15:04:05"},
		{"dd/MM/yyyy HH:mm", false, ""}, // a DATE has no time
		{"dd/MM", false, ""},            // no year: not read back
		{"d/M/yyyy", false, ""},         // letters Go reads as its own
		{"Day dd.MM.yyyy", false, ""},
		{"dd/MM/yyyy/yyyy", false, ""},
		{"", false, ""},
	} {
		layout, ok := DateLayout(c.format, c.withTime)
		if layout != c.layout || ok != (c.layout != "") {
			t.Errorf("%q (time %v): %q %v, want %q", c.format, c.withTime, layout, ok, c.layout)
		}
	}
}
