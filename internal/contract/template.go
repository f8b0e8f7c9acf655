// Package contract reads contract templates and renders contracts to PDF.
// It is pure: a template body and the values that fill it give the same
// bytes every time (fixed metadata, the creation date passed in, an
// embedded font), so a document can be rendered again and compared. The
// domain (internal/wps) decides what the values are and who may see them.
package contract

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Placeholder kinds.
const (
	KindParam       = "param"            // {{param NAME}}: a value of the measurement, by parameter name
	KindEntity      = "entity"           // {{entity FIELD}}: a field of the linked record of the template's entity
	KindMeasurement = "measurement.name" // {{measurement.name}}
	KindProcess     = "process.name"     // {{process.name}}
	KindDate        = "date"             // {{date}}: the day of the consensus (UTC)
)

// Placeholder is one {{...}} of a body.
type Placeholder struct {
	Kind string
	Name string // the parameter or field of param and entity
	Text string // as written, braces included
}

// Key is the placeholder's canonical form: the key of its value in Inputs.
func (p Placeholder) Key() string {
	if p.Name == "" {
		return p.Kind
	}
	return p.Kind + " " + p.Name
}

// Part is a piece of a block: literal text, or a placeholder.
type Part struct {
	Text string
	Ph   *Placeholder
}

// Block is a paragraph, or a heading (Level 1 to 3). Its lines stay as
// written (joined by "\n").
type Block struct {
	Level int
	Parts []Part
}

// Template is a parsed body.
type Template struct {
	Blocks []Block
	// Placeholders lists each distinct placeholder once, in order of first use.
	Placeholders []Placeholder
}

// Error is a body that cannot be a template; Placeholder is the one at
// fault, as written, when there is one.
type Error struct {
	Placeholder string
	Msg         string
}

func (e *Error) Error() string { return e.Msg }

// Parse reads a body: blocks separated by blank lines, a block whose first
// line starts with "#", "##" or "###" and a space a heading (that line
// only), and placeholders in double braces. A body must be valid UTF-8
// without control characters other than tab and line breaks; an unknown or
// unclosed placeholder is an error.
func Parse(body string) (Template, error) {
	var t Template
	if !utf8.ValidString(body) {
		return t, &Error{Msg: "the body must be valid UTF-8"}
	}
	body = strings.ReplaceAll(body, "\r\n", "\n")
	for i, r := range body {
		if r == '\n' || r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\r' {
			line := strings.Count(body[:i], "\n") + 1
			return t, &Error{Msg: fmt.Sprintf("the body holds a control character (U+%04X) on line %d", r, line)}
		}
	}
	seen := map[string]bool{}
	var para []string
	flush := func() error {
		if len(para) == 0 {
			return nil
		}
		b, err := parseBlock(strings.Join(para, "\n"), 0)
		para = nil
		if err != nil {
			return err
		}
		t.Blocks = append(t.Blocks, b)
		return nil
	}
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			if err := flush(); err != nil {
				return t, err
			}
			continue
		}
		if level := headingLevel(trimmed); level > 0 {
			if err := flush(); err != nil {
				return t, err
			}
			b, err := parseBlock(strings.TrimSpace(trimmed[level:]), level)
			if err != nil {
				return t, err
			}
			t.Blocks = append(t.Blocks, b)
			continue
		}
		para = append(para, strings.TrimRight(line, " \t"))
	}
	if err := flush(); err != nil {
		return t, err
	}
	for _, b := range t.Blocks {
		for _, p := range b.Parts {
			if p.Ph != nil && !seen[p.Ph.Key()] {
				seen[p.Ph.Key()] = true
				t.Placeholders = append(t.Placeholders, *p.Ph)
			}
		}
	}
	return t, nil
}

// headingLevel is 1 to 3 for a line starting with that many "#" and a
// space, else 0.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n < 1 || n > 3 || len(line) == n || line[n] != ' ' {
		return 0
	}
	return n
}

func parseBlock(text string, level int) (Block, error) {
	b := Block{Level: level}
	for text != "" {
		open := strings.Index(text, "{{")
		if open < 0 {
			b.Parts = append(b.Parts, Part{Text: text})
			break
		}
		if open > 0 {
			b.Parts = append(b.Parts, Part{Text: text[:open]})
		}
		rest := text[open+2:]
		end := strings.Index(rest, "}}")
		if end < 0 || strings.Contains(rest[:end], "\n") || strings.Contains(rest[:end], "{{") {
			written := firstLine(text[open:], 40)
			return b, &Error{Placeholder: written, Msg: fmt.Sprintf("the placeholder %s is not closed with }}", written)}
		}
		ph, err := parsePlaceholder(text[open : open+2+end+2])
		if err != nil {
			return b, err
		}
		b.Parts = append(b.Parts, Part{Ph: &ph})
		text = rest[end+2:]
	}
	return b, nil
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

func parsePlaceholder(written string) (Placeholder, error) {
	inner := strings.TrimSpace(written[2 : len(written)-2])
	word, name, _ := strings.Cut(inner, " ")
	name = strings.TrimSpace(name)
	ph := Placeholder{Kind: word, Name: name, Text: written}
	switch word {
	case KindParam, KindEntity:
		if name == "" {
			return ph, &Error{Placeholder: written, Msg: fmt.Sprintf("the placeholder %s names no %s", written, map[string]string{KindParam: "parameter", KindEntity: "field"}[word])}
		}
		return ph, nil
	case KindMeasurement, KindProcess, KindDate:
		if name != "" {
			break
		}
		return ph, nil
	}
	return ph, &Error{Placeholder: written, Msg: fmt.Sprintf("unknown placeholder %s: use {{param NAME}}, {{entity FIELD}}, {{measurement.name}}, {{process.name}} or {{date}}", written)}
}
