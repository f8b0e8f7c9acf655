package lang

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCataloguesComplete: every catalogue has every message any other
// has, plural messages have "one" and "other" in each, placeholders agree,
// and every message id the console's templates and the Go code of the
// console and of mail use is in the catalogues.
func TestCataloguesComplete(t *testing.T) {
	cats := map[string]map[string]any{}
	for _, loc := range Supported {
		c, err := Catalogue(loc)
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		cats[loc] = c
	}
	placeholder := regexp.MustCompile(`\{\{\s*\.(\w+)\s*\}\}`)
	names := func(v any) []string {
		var out []string
		texts := []string{}
		switch v := v.(type) {
		case string:
			texts = append(texts, v)
		case map[string]any:
			for _, x := range v {
				s, _ := x.(string)
				texts = append(texts, s)
			}
		}
		for _, s := range texts {
			for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
				if !slices.Contains(out, m[1]) {
					out = append(out, m[1])
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, a := range Supported {
		for _, b := range Supported {
			for id, v := range cats[a] {
				w, ok := cats[b][id]
				if !ok {
					t.Errorf("%s lacks %q (in %s)", b, id, a)
					continue
				}
				if _, plural := v.(map[string]any); plural {
					m, ok := w.(map[string]any)
					if !ok || m["one"] == nil || m["other"] == nil {
						t.Errorf("%s: %q must have the plural forms one and other, as in %s", b, id, a)
					}
				}
				if na, nb := names(v), names(w); !slices.Equal(na, nb) && a == Default {
					t.Errorf("%s: %q has placeholders %v, %s has %v", b, id, nb, a, na)
				}
			}
		}
	}

	// The ids used: {{t "id"}} and {{th "id"}} in templates, q.t("id"),
	// .T("id") and .HTML("id") in Go, and the ids the console keeps in
	// tables ("nav.inbox").
	used := map[string]string{}
	inTemplate := regexp.MustCompile(`\{\{-?\s*(?:t|th)\s+"([^"]+)"`)
	inGo := regexp.MustCompile(`(?:q\.t|\.T|\.HTML|\bw\.t)\("([a-zA-Z0-9_.]+)"|"((?:nav|title|admin|notice|mail)\.[a-zA-Z0-9_.]+)"`)
	for _, dir := range []string{"../console", "../notify"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			re := inGo
			if strings.HasSuffix(path, ".html") {
				re = inTemplate
			} else if !strings.HasSuffix(path, ".go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				id := m[1]
				if id == "" && len(m) > 2 {
					id = m[2]
				}
				if !strings.HasSuffix(id, ".") { // a prefix: "notice." + code
					used[id] = path
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(used) < 50 {
		t.Fatalf("only %d message ids found in use: is the scan right?", len(used))
	}
	for id, path := range used {
		if _, ok := cats[Default][id]; !ok {
			t.Errorf("%s uses %q, which no catalogue has", path, id)
		}
	}
}

func TestPick(t *testing.T) {
	for _, c := range []struct{ locale, accept, want string }{
		{"pt-BR", "es", "pt-BR"},
		{"", "es-MX,es;q=0.9,en;q=0.5", "es"},
		{"", "pt-PT,pt;q=0.9", "pt-BR"},
		{"", "de-DE,fr;q=0.8", "en"},
		{"", "", "en"},
		{"fr", "garbage;;;", "en"},
		{"", "en-GB", "en"},
	} {
		if got := Pick(c.locale, c.accept); got != c.want {
			t.Errorf("Pick(%q, %q) = %q, want %q", c.locale, c.accept, got, c.want)
		}
	}
}

func TestPluralsAndTimes(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		locale string
		at     time.Time
		want   string
	}{
		{"en", now.Add(3*time.Hour + 10*time.Minute), "due in 3 h"},
		{"en", now.Add(-49 * time.Hour), "overdue by 2 days"},
		{"en", now.Add(-25 * time.Hour), "overdue by 25 h"},
		{"en", now.Add(-72 * time.Hour), "overdue by 3 days"},
		{"pt-BR", now.Add(-72 * time.Hour), "atrasado há 3 dias"},
		{"es", now.Add(50 * time.Hour), "vence en 2 días"},
		{"es", now.Add(30 * time.Second), "vence en 1 min"},
	} {
		if got := For(c.locale).Due(now, c.at); got != c.want {
			t.Errorf("%s Due = %q, want %q", c.locale, got, c.want)
		}
	}
	for _, c := range []struct {
		locale string
		n      int
		want   string
	}{
		{"en", 1, "1 day"}, {"en", 2, "2 days"}, {"pt-BR", 1, "1 dia"}, {"pt-BR", 0, "0 dia"}, {"pt-BR", 2, "2 dias"},
		{"es", 1, "1 día"}, {"es", 0, "0 días"}, {"es", 1000000, "1000000 días"},
	} {
		if got := For(c.locale).T("time.d", "Count", c.n); got != c.want {
			t.Errorf("%s %d days = %q, want %q", c.locale, c.n, got, c.want)
		}
	}
	sp, _ := time.LoadLocation("America/Sao_Paulo")
	if got := For("pt-BR").When(now, sp); got != "01/03/2026 09:00 (UTC-03:00)" {
		t.Errorf("When in São Paulo: %q", got)
	}
	if got := For("en").When(now, time.UTC); got != "2026-03-01 12:00 UTC" {
		t.Errorf("When in UTC: %q", got)
	}
	if got := For("en").HTML("nav.logo", "Org", "<b>"); !strings.Contains(string(got), "&lt;b&gt;") {
		t.Errorf("an argument is not escaped: %q", got)
	}
}
