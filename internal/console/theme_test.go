package console

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"wps/internal/lang"
	"wps/internal/wps"
)

func TestThemeContrast(t *testing.T) {
	for _, hex := range []string{"#ffeb3b", "#0A7F5A", "#000", "#ffffff", "#808080", "#1a2b3c", "#f0f", "#7fff00", "#FFD700", "#0b5cab", "#b42318"} {
		c, ok := parseHex(hex)
		if !ok {
			t.Fatalf("%s did not parse", hex)
		}
		if r := contrast(c, onColor(c)); r < 4.5 {
			t.Errorf("%s: text on it has contrast %.2f, under WCAG AA's 4.5", hex, r)
		}
		for _, grounds := range [][]rgb{lightGrounds, darkGrounds} {
			text := readableOn(c, 4.5, grounds...)
			for _, bg := range grounds {
				if r := contrast(text, bg); r < 4.5 {
					t.Errorf("%s: as text (#%s) on #%s, contrast %.2f", hex, text.hex(), bg.hex(), r)
				}
			}
		}
	}
	if got := onColor(rgb{255, 235, 59}); got != ink {
		t.Errorf("yellow gets %v text, want ink", got)
	}
	if got := onColor(rgb{10, 40, 90}); got != white {
		t.Errorf("navy gets %v text, want white", got)
	}
	if r := contrast(white, rgb{0, 0, 0}); r < 20.9 || r > 21.1 {
		t.Errorf("black on white: %.2f, want 21", r)
	}
	for _, bad := range []string{"", "#12", "red", "#gggggg", "#1234567"} {
		if _, ok := parseHex(bad); ok {
			t.Errorf("%q parsed as a colour", bad)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/measurements?status=OPEN": "/measurements?status=OPEN", "//evil.example": "/",
		"https://evil.example": "/", "/\\evil": "/", "inbox": "/"} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSectionsAreTheDomains(t *testing.T) {
	if len(sections) != len(wps.ConsoleSections) {
		t.Fatalf("console sections %v, domain %v", sections, wps.ConsoleSections)
	}
	for i, s := range sections {
		if s.Name != wps.ConsoleSections[i] {
			t.Fatalf("section %d is %q here, %q in the domain", i, s.Name, wps.ConsoleSections[i])
		}
	}
}

// TestIconsDrawn: every icon name a process may have is drawn, and only those.
func TestIconsDrawn(t *testing.T) {
	if len(icons) != len(wps.IconNames) {
		t.Fatalf("%d icons drawn, %d names", len(icons), len(wps.IconNames))
	}
	for _, n := range wps.IconNames {
		if icon(n) == "" {
			t.Fatalf("icon %q is not drawn", n)
		}
	}
	if icon("rocket") != "" {
		t.Fatal("an unknown name is drawn")
	}
}

func TestValueText(t *testing.T) {
	sel := wps.Parameter{Type: wps.TypeSelect, OptionItems: []wps.OptionItem{{Value: "pass", Label: "Aprovado", Color: "#ff0000"}, {Value: "fail"}}}
	for _, c := range []struct {
		p    wps.Parameter
		v    string
		want string
	}{
		{sel, "pass", "Aprovado"}, {sel, "fail", "fail"},
		{wps.Parameter{Type: wps.TypeBoolean}, "true", "Yes"}, {wps.Parameter{Type: wps.TypeBoolean}, "false", "No"},
		{wps.Parameter{Type: wps.TypeNumber, AdvancedOptions: &wps.AdvancedOptions{Locale: "pt-BR", Currency: "BRL"}}, "1234.5", "R$\u00a01.234,50"},
	} {
		if got := valueText(words{lang.For("en"), time.UTC}, c.p, c.v); got != c.want {
			t.Errorf("valueText(%s, %q) = %q, want %q", c.p.Type, c.v, got, c.want)
		}
	}
	// Dates in the parameter's dateFormat, else the language's; instants in the reader's zone.
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	date, us := wps.Parameter{Type: wps.TypeDate}, wps.Parameter{Type: wps.TypeDate, AdvancedOptions: &wps.AdvancedOptions{DateFormat: "MM/dd/yyyy"}}
	for _, c := range []struct {
		w       words
		p       wps.Parameter
		v, want string
	}{
		{words{lang.For("en"), time.UTC}, date, "2026-03-01", "2026-03-01"},
		{words{lang.For("pt-BR"), time.UTC}, date, "2026-03-01", "01/03/2026"},
		{words{lang.For("es"), time.UTC}, us, "2026-03-01", "03/01/2026"},
		{words{lang.For("pt-BR"), sp}, wps.Parameter{Type: wps.TypeDateTime}, "2026-03-01T12:00:00Z", "01/03/2026 09:00 (UTC-03:00)"},
		{words{lang.For("es"), time.UTC}, wps.Parameter{Type: wps.TypeBoolean}, "true", "Sí"},
	} {
		if got := valueText(c.w, c.p, c.v); got != c.want {
			t.Errorf("valueText in %s (%s, %q) = %q, want %q", c.w.Locale, c.p.Type, c.v, got, c.want)
		}
	}
	// A DATE typed in the format shown is sent as yyyy-mm-dd; an instant from the reader's zone as UTC.
	if got := string(scalarJSON(words{lang.For("pt-BR"), sp}, date, "01/03/2026")); got != `"2026-03-01"` {
		t.Errorf("a pt-BR date is sent as %s", got)
	}
	if got := string(scalarJSON(words{lang.For("pt-BR"), sp}, wps.Parameter{Type: wps.TypeDateTime}, "2026-03-01T09:00")); got != `"2026-03-01T12:00:00Z"` {
		t.Errorf("a São Paulo instant is sent as %s", got)
	}
	// Colours: the console's palette unless hasCustomColor; then the options' own.
	if got := optionColors(sel); got[0] != palette[0] || got[1] != palette[1] {
		t.Errorf("palette colours %v", got)
	}
	sel.AdvancedOptions = &wps.AdvancedOptions{HasCustomColor: true}
	if got := optionColors(sel); got[0] != "#ff0000" || got[1] != "" {
		t.Errorf("custom colours %v", got)
	}
	if got := byteSize(2048); got != "2.0 KB" {
		t.Errorf("byteSize %q", got)
	}
}

// TestThemeGroundsFollowTheStylesheet: the backgrounds the theme's text
// colour is made readable on are those console.css puts text on, in light
// and in dark mode.
func TestThemeGroundsFollowTheStylesheet(t *testing.T) {
	css, err := os.ReadFile("assets/console.css")
	if err != nil {
		t.Fatal(err)
	}
	s := string(css)
	dark := s[strings.Index(s, "@media (prefers-color-scheme: dark)"):]
	light := s[:strings.Index(s, "@media (prefers-color-scheme: dark)")]
	for _, c := range []struct {
		block   string
		grounds []rgb
	}{{light, lightGrounds}, {dark, darkGrounds}} {
		for _, name := range []string{"--bg", "--card", "--th", "--overdue", "--subtle", "--ok-bg"} {
			m := regexp.MustCompile(name + `:(#[0-9a-fA-F]{3,6})[;}]`).FindStringSubmatch(c.block)
			if m == nil {
				t.Fatalf("console.css sets no %s", name)
			}
			col, _ := parseHex(m[1])
			if !slices.Contains(c.grounds, col) {
				t.Errorf("%s is %s in console.css, which theme.go's grounds %v leave out", name, m[1], c.grounds)
			}
		}
	}
}
