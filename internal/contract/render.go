package contract

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
)

// The font is DejaVu Sans (Debian's fonts-dejavu-core 2.37), whose licence
// lets it be embedded and redistributed: see fonts/LICENSE and
// docs/decisions.md. A subset of it is embedded in each document.
//
//go:embed fonts/DejaVuSans.ttf
var font []byte

// Renderer names the rendering code in each document's metadata. Change it
// whenever a change here would change the bytes of a document: documents
// rendered before then compare equal only with the renderer they name.
const Renderer = "wps contract renderer 1"

// Inputs are everything a document is rendered from besides its
// template's body: with the same body and Inputs, Render gives the same
// bytes. They are stored with each document.
type Inputs struct {
	// Renderer is the renderer that rendered them (Renderer then): another
	// renderer may give other bytes.
	Renderer    string `json:"renderer"`
	DocumentID  string `json:"documentId"`
	Title       string `json:"title" doc:"The template's name"`
	Process     string `json:"process"`
	Measurement string `json:"measurement"`
	Step        string `json:"step"`
	// At is when the step reached consensus: the document's date.
	At time.Time `json:"at"`
	// Values holds each placeholder's text, by its key (Placeholder.Key):
	// "param NAME", "entity FIELD", "measurement.name", "process.name", "date".
	Values     map[string]string `json:"values"`
	Signatures []Signature       `json:"signatures"`
}

// Signature is one seat of the consensed step: the action that filled it.
type Signature struct {
	Policy   string    `json:"policy"`
	Name     string    `json:"name"`
	Email    string    `json:"email"`
	At       time.Time `json:"at"`
	ActionID string    `json:"actionId"`
	// LedgerHash is the action's link in the ledger; empty for the action
	// that completed the consensus, whose ledger entry records this
	// document's SHA-256 (so the document cannot hold it).
	LedgerHash string `json:"ledgerHash"`
	// Meaning and Method are those of an electronic signature (the step's
	// signatureMeaning; password or sso), empty for an approval that was
	// not one.
	Meaning string `json:"meaning,omitempty" doc:"The step's signatureMeaning when the approval was an electronic signature"`
	Method  string `json:"method,omitempty" doc:"How the signer proved who they are: password or sso"`
}

// Page layout, in millimetres on A4.
const (
	margin     = 20.0
	lineHeight = 5.2
	bodySize   = 10.5
)

var headingSizes = map[int]float64{1: 16, 2: 13, 3: 11.5}

// Limits bound one rendering; a zero field bounds nothing. None of them
// changes the bytes of a document rendered within them.
type Limits struct {
	// MaxChars bounds the characters of the filled body: the template's
	// text and each placeholder's value, as many times as it appears.
	// Checked before anything is drawn.
	MaxChars int
	// MaxBytes bounds the PDF's size.
	MaxBytes int
	// Timeout bounds the rendering's time, checked before each paragraph
	// and at each new page.
	Timeout time.Duration
}

// The limits a LimitError names.
const (
	LimitChars = "chars"
	LimitBytes = "bytes"
	LimitTime  = "time"
)

// LimitError is a rendering refused or stopped at one of its Limits.
type LimitError struct {
	Limit string // LimitChars, LimitBytes or LimitTime
	// Max is the bound and Got what the document came to (characters or
	// bytes; for LimitTime, Max is the timeout in nanoseconds and Got 0).
	Max, Got int64
	// For LimitChars: the key of the placeholder whose values fill most
	// of the characters (Placeholder.Key), when they outnumber the
	// template's own text; its characters and how many times it appears.
	Placeholder string
	Share       int64
	Uses        int
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitChars:
		return fmt.Sprintf("the document would hold %d characters, more than %d", e.Got, e.Max)
	case LimitBytes:
		return fmt.Sprintf("the document takes %d bytes, more than %d", e.Got, e.Max)
	}
	return fmt.Sprintf("rendering took longer than %v", time.Duration(e.Max))
}

// Count is the number of characters of body filled with values (the
// bound of Limits.MaxChars), with the placeholder that fills the most of
// them (its key, its characters and its uses; "" when the template's own
// text outnumbers every placeholder's).
func Count(t Template, values map[string]string) (total int64, key string, share int64, uses int) {
	text := int64(0)
	per := map[string]int64{}
	n := map[string]int{}
	for _, b := range t.Blocks {
		for _, p := range b.Parts {
			if p.Ph == nil {
				text += int64(utf8.RuneCountInString(p.Text))
				continue
			}
			k := p.Ph.Key()
			per[k] += int64(utf8.RuneCountInString(values[k]))
			n[k]++
		}
	}
	total = text
	for _, ph := range t.Placeholders { // in order of first use: the first of equals wins
		k := ph.Key()
		total += per[k]
		if per[k] > share && per[k] > text {
			key, share, uses = k, per[k], n[k]
		}
	}
	return total, key, share, uses
}

// errStopped stops the PDF library when the rendering runs out of time.
var errStopped = errors.New("rendering stopped")

// Render makes the PDF of a body filled with in, followed by a signature
// page, with no limits. Errors: as RenderWithin.
func Render(body string, in Inputs) ([]byte, error) {
	return RenderWithin(context.Background(), body, in, Limits{})
}

// RenderWithin makes the PDF of a body filled with in, followed by a
// signature page, within lim. A document within lim has the same bytes as
// Render gives. Errors: a body that does not parse (*Error), a limit
// reached (*LimitError), ctx's error when it ends first, or a failure of
// the PDF library (a bug).
func RenderWithin(ctx context.Context, body string, in Inputs, lim Limits) ([]byte, error) {
	start := time.Now()
	t, err := Parse(body)
	if err != nil {
		return nil, err
	}
	if lim.MaxChars > 0 {
		total, key, share, uses := Count(t, in.Values)
		if total > int64(lim.MaxChars) {
			return nil, &LimitError{Limit: LimitChars, Max: int64(lim.MaxChars), Got: total, Placeholder: key, Share: share, Uses: uses}
		}
	}
	if lim.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.Timeout)
		defer cancel()
	}
	stopped := func() error { // why the rendering must stop, or nil
		if ctx.Err() == nil {
			return nil
		}
		if lim.Timeout > 0 && time.Since(start) >= lim.Timeout {
			return &LimitError{Limit: LimitTime, Max: int64(lim.Timeout)}
		}
		return ctx.Err()
	}
	if err := stopped(); err != nil {
		return nil, err
	}
	at := in.At.UTC()
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCatalogSort(true)
	pdf.SetCreationDate(at)
	pdf.SetModificationDate(at)
	pdf.SetProducer(Renderer, true)
	pdf.SetCreator("wps", true)
	pdf.SetTitle(clean(in.Title), true)
	pdf.SetSubject(clean(in.Measurement), true)
	pdf.AliasNbPages("{nb}") // before the fonts: their subsets keep room for it
	pdf.AddUTF8FontFromBytes("DejaVu", "", font)
	pdf.SetMargins(margin, margin+4, margin)
	pdf.SetAutoPageBreak(true, margin)
	pdf.SetHeaderFunc(func() {
		if stopped() != nil { // a new page: a long paragraph is stopped here
			pdf.SetError(errStopped)
			return
		}
		regular(pdf, 8)
		pdf.SetTextColor(110, 110, 110)
		pdf.SetXY(margin, margin-8)
		pdf.CellFormat(0, 4, clean(in.Title), "", 0, "L", false, 0, "")
		pdf.SetXY(margin, margin-8)
		pdf.CellFormat(0, 4, clean(in.Process+" · "+in.Measurement), "", 0, "R", false, 0, "")
		pdf.SetTextColor(0, 0, 0)
		pdf.SetY(margin + 4)
	})
	pdf.SetFooterFunc(func() {
		pdf.SetY(-margin + 6)
		regular(pdf, 7.5)
		pdf.SetTextColor(110, 110, 110)
		pdf.CellFormat(0, 4, fmt.Sprintf("Document %s · page %d of {nb}", in.DocumentID, pdf.PageNo()), "", 0, "C", false, 0, "")
		pdf.SetTextColor(0, 0, 0)
	})

	pdf.AddPage()
	for i, b := range t.Blocks {
		if err := stopped(); err != nil {
			return nil, err
		}
		text := fill(b, in.Values)
		if b.Level > 0 {
			if i > 0 {
				pdf.Ln(2)
			}
			bold(pdf, headingSizes[b.Level])
			pdf.MultiCell(0, headingSizes[b.Level]*0.5, text, "", "L", false)
			pdf.Ln(1.5)
			continue
		}
		regular(pdf, bodySize)
		pdf.MultiCell(0, lineHeight, text, "", "L", false)
		pdf.Ln(lineHeight * 0.6)
	}
	signaturePage(pdf, in)

	var out bytes.Buffer
	if err := pdf.Output(&out); errors.Is(err, errStopped) {
		return nil, stopped()
	} else if err != nil {
		return nil, fmt.Errorf("render the contract: %w", err)
	}
	if lim.MaxBytes > 0 && out.Len() > lim.MaxBytes {
		return nil, &LimitError{Limit: LimitBytes, Max: int64(lim.MaxBytes), Got: int64(out.Len())}
	}
	return out.Bytes(), nil
}

// signaturePage lists the seats of the step: the approvals are the signatures.
func signaturePage(pdf *fpdf.Fpdf, in Inputs) {
	pdf.AddPage()
	bold(pdf, headingSizes[1])
	pdf.MultiCell(0, 8, "Signatures", "", "L", false)
	pdf.Ln(1.5)
	regular(pdf, 9.5)
	pdf.MultiCell(0, 4.8, clean(fmt.Sprintf("Step “%s” of %s (%s) reached consensus at %s. Each seat below was filled by the action named: "+
		"these approvals are the signatures of this document. Its SHA-256 is recorded in the ledger with the action that completed "+
		"the consensus; that entry's hash cannot be printed here, as it covers this document's hash (GET /v1/documents/%s/verify shows both).",
		in.Step, in.Measurement, in.Process, stamp(in.At), in.DocumentID)), "", "L", false)
	pdf.Ln(3)
	for i, s := range in.Signatures {
		bold(pdf, 10.5)
		pdf.MultiCell(0, 5.5, clean(fmt.Sprintf("Seat %d: %s", i+1, s.Policy)), "", "L", false)
		regular(pdf, 9.5)
		signer := s.Name
		if s.Email != "" {
			signer += " <" + s.Email + ">"
		}
		hash := s.LedgerHash
		if hash == "" {
			hash = "recorded with this document (this action's ledger entry holds its SHA-256)"
		}
		lines := [][2]string{{"Signed by", signer}, {"At", stamp(s.At)}, {"Action", s.ActionID}, {"Ledger hash", hash}}
		if s.Meaning != "" { // an electronic signature: what it means and how its signer proved who they are
			lines = append([][2]string{{"Meaning", s.Meaning}}, lines...)
			lines = append(lines, [2]string{"Signed with", map[string]string{"password": "password re-entered", "sso": "single sign-on"}[s.Method]})
		}
		for _, line := range lines {
			pdf.MultiCell(0, 4.8, clean(line[0]+": "+line[1]), "", "L", false)
		}
		pdf.Ln(3)
	}
	if len(in.Signatures) == 0 {
		pdf.MultiCell(0, 4.8, "No seat: the step has no policies.", "", "L", false)
	}
}

// stamp writes an instant as the API does.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fill is a block's text with its placeholders replaced by their values.
func fill(b Block, values map[string]string) string {
	var s strings.Builder
	for _, p := range b.Parts {
		if p.Ph == nil {
			s.WriteString(p.Text)
			continue
		}
		s.WriteString(values[p.Ph.Key()])
	}
	return clean(s.String())
}

// clean makes text printable with the font: tabs become spaces, other
// control characters spaces, and characters beyond the Basic Multilingual
// Plane (which the PDF library cannot map) U+FFFD. Characters the font
// lacks print as its missing-glyph box. Right-to-left text prints in its
// logical order (no bidirectional reordering or shaping).
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t', unicode.IsControl(r):
			return ' '
		case r > 0xFFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

// regular sets the font at size.
func regular(pdf *fpdf.Fpdf, size float64) {
	pdf.SetFont("DejaVu", "", size)
	pdf.SetTextRenderingMode(0)
}

// bold sets the font at size, drawn with a thin outline as well: one font
// file is parsed per document (a second, bold file doubled the time).
func bold(pdf *fpdf.Fpdf, size float64) {
	pdf.SetFont("DejaVu", "", size)
	pdf.SetLineWidth(size * 0.012)
	pdf.SetTextRenderingMode(2)
}
