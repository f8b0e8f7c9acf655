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
