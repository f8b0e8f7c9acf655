package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestConsoleLanguages: the console speaks the user's language (their
// setting, else the browser's Accept-Language, else English), says which in
// <html lang>, and shows times in the user's zone with relative deadlines.
func TestConsoleLanguages(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		b := newBrowser(t)
		base := o.env.Server.URL
		o.env.Clock.Advance(3 * time.Hour) // the inspection is an hour overdue

		// A pt-BR user in São Paulo: Portuguese, local times with the offset.
		o.env.Call(http.MethodPatch, "/v1/users/me", o.inspector, map[string]any{"locale": "pt-BR", "timeZone": "America/Sao_Paulo"}, 200)
		ines := b.person(base)
		signIn(ines, "ines@example.com") // the sign-in page speaks the browser's language (English)
		if got := ines.eval(`document.documentElement.lang`); got != "pt-BR" {
			t.Fatalf("<html lang> %q", got)
		}
		ines.sees("Caixa de entrada")
		due := ines.text("tr.overdue")
		if !strings.Contains(due, "(UTC-03:00)") || !strings.Contains(due, "atrasado há 1 h") || !strings.Contains(due, "Atrasada") {
			t.Fatalf("the Inbox's due column: %q", due)
		}
		local := o.env.Clock.Now().Add(-time.Hour).In(time.FixedZone("", -3*3600)).Format("02/01/2006 15:04")
		if !strings.Contains(due, local) {
			t.Fatalf("the due time is not %s in São Paulo, day first: %q", local, due)
		}
		ines.press("link", o.name)
		ines.sees("Measure the pump at its outlet.") // the process's own words stay as written
		ines.sees("Histórico")
		ines.screenshot("pt-BR") // for docs/console.md
		if got := ines.text("section.form-step"); !strings.Contains(got, "Salvar") || !strings.Contains(got, "Observação") {
			t.Fatalf("the step's form: %q", got)
		}
		// The service's refusal of a value, in Portuguese by the field.
		ines.fill("Outlet temperature (°C)", "180")
		ines.fill("Condition", "good")
		ines.press("button", "Salvar")
		if got := ines.text("#f-temperature-err"); !strings.Contains(got, "deve ser no máximo 120") {
			t.Fatalf("the refusal by the field is not in Portuguese: %q", got)
		}
		ines.open("/settings")
		if got := ines.eval(`document.getElementById("set-locale").value + " " + document.getElementById("set-zone").value`); got != "pt-BR America/Sao_Paulo" {
			t.Fatalf("settings show %q", got)
		}

		// A user without a setting whose browser asks for Spanish.
		sam := b.person(base)
		if _, err := chromedp.Call(sam.ctx, network.Enable, network.EnableParams{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(sam.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": "es-ES,es;q=0.9"}}); err != nil {
			t.Fatal(err)
		}
		sam.open("/signin")
		if got := sam.eval(`document.documentElement.lang`); got != "es" {
			t.Fatalf("<html lang> of the sign-in page %q", got)
		}
		sam.fill("Correo electrónico", "sam@example.com")
		sam.fill("Contraseña", password)
		sam.press("button", "Iniciar sesión")
		sam.sees("Nada te espera.")
		sam.sees("Bandeja de entrada")
		sam.screenshot("es")

		// Choosing English in the settings page turns the next page English.
		sam.open("/settings")
		sam.call("combobox", "Idioma", `function() { this.value = "en"; }`)
		sam.press("button", "Guardar")
		sam.sees("Saved.")
		if got := sam.eval(`document.documentElement.lang`); got != "en" {
			t.Fatalf("<html lang> after choosing English %q", got)
		}
	})
}
