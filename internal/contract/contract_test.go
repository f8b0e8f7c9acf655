package contract_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"wps/internal/contract"
	tu "wps/internal/testutil"
)

func TestParse(t *testing.T) {
	tpl, err := contract.Parse("# Supply agreement\n\nBetween {{process.name}} and {{entity name}}\non {{date}}.\r\n\n## Price\n\n{{param price}} for {{ param  unit price }} ({{measurement.name}}, {{param price}})\n#not a heading")
	if err != nil {
		t.Fatal(err)
	}
	var levels []int
	for _, b := range tpl.Blocks {
		levels = append(levels, b.Level)
	}
	if len(levels) != 4 || levels[0] != 1 || levels[1] != 0 || levels[2] != 2 || levels[3] != 0 {
		t.Fatalf("blocks: %v", levels)
	}
	var keys []string
	for _, p := range tpl.Placeholders {
		keys = append(keys, p.Key())
	}
	if got := strings.Join(keys, "|"); got != "process.name|entity name|date|param price|param unit price|measurement.name" {
		t.Fatalf("placeholders: %s", got)
	}

	for body, want := range map[string]string{
		"Hello {{name}}":             "{{name}}",
		"Hello {{param}}":            "{{param}}",
		"Hello {{entity  }}":         "{{entity  }}",
		"Hello {{date now}}":         "{{date now}}",
		"Hello {{param price":        "{{param price",
		"Hello {{param a\nb}}":       "{{param a",
		"Hello {{param a {{date}}":   "{{param a {{date}}",
		"{{measurement.id}} is new":  "{{measurement.id}}",
		"A bell \a in the text":      "",
		"A NUL \x00 in the text":     "",
		"A C1 \u0085 control":        "",
		"Invalid UTF-8 \xff in text": "",
	} {
		_, err := contract.Parse(body)
		var ce *contract.Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q: %v, want a contract.Error", body, err)
		}
		if ce.Placeholder != want {
			t.Fatalf("%q: placeholder %q, want %q (%s)", body, ce.Placeholder, want, ce.Msg)
		}
	}
}

func inputs() contract.Inputs {
	at := time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC)
	return contract.Inputs{DocumentID: "0190a1b2-doc", Title: "Contrato de fornecimento", Process: "Compras", Measurement: "PROC-7", Step: "Aprovação",
		At: at, Values: map[string]string{"param preço": "R$ 1.234,56", "entity name": "Fornecedora São João Ltda.", "date": "2026-01-05",
			"measurement.name": "PROC-7", "process.name": "Compras"},
		Signatures: []contract.Signature{
			{Policy: "Comprador", Name: "Inês Araújo", Email: "ines@example.com", At: at.Add(-time.Hour), ActionID: "act-1", LedgerHash: strings.Repeat("ab", 32)},
			{Policy: "Financeiro", Name: "João", Email: "joao@example.com", At: at, ActionID: "act-2"},
		}}
}

const body = `# Contrato de fornecimento

Entre {{process.name}} e {{entity name}}, em {{date}} ({{measurement.name}}).
Preço: {{param preço}}. Acentuação: ação, coração, pão, órgão, çÇ ñ ü ß.

## Cláusula única

Texto em hebraico: שלום עולם; em árabe: مرحبا بالعالم; emoji: 😀.

` + "Palavraextremamentelongasemespaçosquenãocabenalinhadeformaalgumaeprecisaserquebradaemvárioslugaresparanãosairdapágina."

func TestRenderIsDeterministic(t *testing.T) {
	in := inputs()
	a, err := contract.Render(body, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := contract.Render(body, inputs())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same body and inputs gave different bytes")
	}
	if !bytes.HasPrefix(a, []byte("%PDF-")) || !bytes.Contains(a, []byte("/CreationDate (D:20260105093000)")) {
		t.Fatalf("not a PDF dated at the consensus: %.200q", a)
	}
	in.Values["param preço"] = "R$ 1.234,57"
	c, err := contract.Render(body, in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Fatal("another value gave the same bytes")
	}
}

func TestRenderText(t *testing.T) {
	pdf, err := contract.Render(body, inputs())
	if err != nil {
		t.Fatal(err)
	}
	text := tu.PDFText(t, pdf)
	for _, want := range []string{"Contrato de fornecimento", "Entre Compras e Fornecedora São João Ltda., em 2026-01-05 (PROC-7).",
		"Preço: R$ 1.234,56. Acentuação: ação, coração, pão, órgão, çÇ ñ ü ß.", "Cláusula única", "emoji: �",
		"Signatures", "Seat 1: Comprador", "Signed by: Inês Araújo <ines@example.com>", "At: 2026-01-05T08:30:00.000Z",
		"Action: act-1", "Ledger hash: " + strings.Repeat("ab", 32), "Seat 2: Financeiro", "Signed by: João <joao@example.com>",
		"Ledger hash: recorded with this document", "Document 0190a1b2-doc · page 2 of 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
	// The long word is cut over several lines, none longer than the page.
	var pieces []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Palavra") || len(pieces) > 0 && line != "" && !strings.Contains(line, " ") {
			pieces = append(pieces, line)
		} else if len(pieces) > 0 {
			break
		}
	}
	if len(pieces) < 2 || strings.Join(pieces, "") != body[strings.Index(body, "Palavra"):] {
		t.Fatalf("the long word was not wrapped whole: %q", pieces)
	}
}

func TestRenderRefusesABadBody(t *testing.T) {
	if _, err := contract.Render("Hello {{nobody}}", inputs()); err == nil {
		t.Fatal("rendered a body with an unknown placeholder")
	}
}

// BenchmarkRender: a document's cost, paid inside the transaction of its
// consensus (docs/contracts.md).
func BenchmarkRender(b *testing.B) {
	in := inputs()
	for b.Loop() {
		if _, err := contract.Render(body, in); err != nil {
			b.Fatal(err)
		}
	}
}

// Limits: a document within them is the same document; one beyond them is
// refused before it is drawn (characters), stopped mid-paragraph (time), or
// refused once made (bytes).
func TestRenderWithinLimits(t *testing.T) {
	ctx := context.Background()
	plain, err := contract.Render(body, inputs())
	if err != nil {
		t.Fatal(err)
	}
	within, err := contract.RenderWithin(ctx, body, inputs(), contract.Limits{MaxChars: 1000, MaxBytes: 1 << 20, Timeout: time.Minute})
	if err != nil || !bytes.Equal(plain, within) {
		t.Fatalf("within the limits: other bytes (%v)", err)
	}

	// 200 placeholders of a 999,000-character value (issue 32 item 4): refused
	// at once, naming the placeholder.
	in := inputs()
	in.Values["param preço"] = strings.Repeat("lorem ipsum ", 999000/12)
	huge := "# Title\n\n" + strings.Repeat("{{param preço}} {{date}}\n\n", 200)
	start := time.Now()
	_, err = contract.RenderWithin(ctx, huge, in, contract.Limits{MaxChars: 200000})
	var le *contract.LimitError
	if !errors.As(err, &le) || le.Limit != contract.LimitChars || le.Placeholder != "param preço" || le.Uses != 200 ||
		le.Share != 200*999000 || le.Got != le.Share+200*int64(len("2026-01-05"))+5+200 || le.Max != 200000 {
		t.Fatalf("%#v (%v)", le, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing took %v", d)
	}
	// The template's own text, when it is the most: no placeholder named.
	_, err = contract.RenderWithin(ctx, strings.Repeat("words ", 400)+"{{date}}", inputs(), contract.Limits{MaxChars: 1000})
	if !errors.As(err, &le) || le.Limit != contract.LimitChars || le.Placeholder != "" {
		t.Fatalf("%#v (%v)", le, err)
	}

	// Time: one paragraph of 1,000,000 lines (seconds of work) is stopped at
	// a page break.
	in = inputs()
	in.Values["param preço"] = strings.Repeat("a\n", 1000000)
	start = time.Now()
	_, err = contract.RenderWithin(ctx, "{{param preço}}", in, contract.Limits{Timeout: 50 * time.Millisecond})
	if !errors.As(err, &le) || le.Limit != contract.LimitTime || le.Max != int64(50*time.Millisecond) {
		t.Fatalf("%#v (%v)", le, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stopping took %v", d)
	}
	// The caller's context ends it too, with the context's error.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := contract.RenderWithin(gone, body, inputs(), contract.Limits{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled rendering: %v", err)
	}

	// Bytes: measured on the PDF.
	_, err = contract.RenderWithin(ctx, body, inputs(), contract.Limits{MaxBytes: len(plain) - 1})
	if !errors.As(err, &le) || le.Limit != contract.LimitBytes || le.Got != int64(len(plain)) {
		t.Fatalf("%#v (%v)", le, err)
	}
}
