// Package formula is the expression language of computed parameters:
// numbers (exact decimals), strings, booleans and dates; + - * / %;
// comparisons; and, or, not; and the functions if, sum, min, max, round, abs,
// concat, len, today and dateDiff. Parameters are referenced by name; a name
// that is not a plain identifier is written between backticks.
//
// Parse never panics, whatever its input (it is fuzzed); Eval reports type
// errors and returns null for a division by zero.
package formula

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// MaxLength bounds a formula's source, MaxDepth its nesting.
const (
	MaxLength = 4000
	MaxDepth  = 64
)

// Error is a syntax or reference error, with the byte offset where it was found.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at %d: %s", e.Pos, e.Msg) }

// Expr is a parsed formula.
type Expr struct {
	root node
	src  string
}

// String returns the source.
func (e *Expr) String() string { return e.src }

type node interface{ pos() int }

type (
	numLit struct {
		at int
		v  decimal.Decimal
	}
	strLit struct {
		at int
		v  string
	}
	boolLit struct {
		at int
		v  bool
	}
	nullLit struct{ at int }
	ident   struct {
		at   int
		name string
	}
	unary struct {
		at int
		op string
		x  node
	}
	binary struct {
		at   int
		op   string
		l, r node
	}
	call struct {
		at   int
		name string
		args []node
	}
)

func (n numLit) pos() int  { return n.at }
func (n strLit) pos() int  { return n.at }
func (n boolLit) pos() int { return n.at }
func (n nullLit) pos() int { return n.at }
func (n ident) pos() int   { return n.at }
func (n unary) pos() int   { return n.at }
func (n binary) pos() int  { return n.at }
func (n call) pos() int    { return n.at }

// arity gives each function's fewest and most arguments (-1: any number).
var arity = map[string][2]int{
	"if": {3, 3}, "sum": {1, -1}, "min": {1, -1}, "max": {1, -1}, "round": {1, 2}, "abs": {1, 1},
	"concat": {1, -1}, "len": {1, 1}, "today": {0, 0}, "dateDiff": {2, 3},
}

// Functions lists the function names.
func Functions() []string {
	out := make([]string, 0, len(arity))
	for f := range arity {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

type token struct {
	kind string // num, str, ident, op, eof
	text string
	at   int
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			return nil, &Error{i, "invalid UTF-8"}
		case unicode.IsSpace(r):
			i += w
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			toks = append(toks, token{"num", src[i:j], i})
			i = j
		case r == '"' || r == '\'' || r == '`':
			j := i + 1
			var b strings.Builder
			for j < len(src) && rune(src[j]) != r {
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				b.WriteByte(src[j])
				j++
			}
			if j >= len(src) {
				return nil, &Error{i, "unterminated quote"}
			}
			kind := "str"
			if r == '`' {
				kind = "ident"
				if b.Len() == 0 {
					return nil, &Error{i, "empty name"}
				}
			}
			toks = append(toks, token{kind, b.String(), i})
			i = j + 1
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(src) {
				r2, w2 := utf8.DecodeRuneInString(src[j:])
				if !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || r2 == '_') {
					break
				}
				j += w2
			}
			toks = append(toks, token{"ident", src[i:j], i})
			i = j
		default:
			op := ""
			for _, cand := range []string{"==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "=", "!", "(", ")", ","} {
				if strings.HasPrefix(src[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" {
				return nil, &Error{i, fmt.Sprintf("unexpected %q", r)}
			}
			toks = append(toks, token{"op", op, i})
			i += len(op)
		}
	}
	return append(toks, token{"eof", "", len(src)}), nil
}

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) isOp(texts ...string) bool {
	t := p.peek()
	return t.kind == "op" && slices.Contains(texts, t.text) || t.kind == "ident" && slices.Contains(texts, t.text)
}

// Parse reads a formula. computedFormula tokens are joined with single
// spaces before parsing (ParseTokens).
func Parse(src string) (*Expr, error) {
	if len(src) > MaxLength {
		return nil, &Error{0, fmt.Sprintf("longer than %d characters", MaxLength)}
	}
	if strings.TrimSpace(src) == "" {
		return nil, &Error{0, "empty formula"}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "eof" {
		return nil, &Error{t.at, fmt.Sprintf("unexpected %q", t.text)}
	}
	return &Expr{root: root, src: src}, nil
}

// ParseTokens parses the tokens of a computedFormula joined with single spaces.
func ParseTokens(tokens []string) (*Expr, error) { return Parse(strings.Join(tokens, " ")) }

// nested runs parse one level of nesting deeper, refusing past MaxDepth.
func (p *parser) nested(parse func() (node, error)) (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, &Error{p.peek().at, "nested too deeply"}
	}
	return parse()
}

func (p *parser) or() (node, error) {
	return p.nested(func() (node, error) { return p.leftAssoc(p.and, "or", "||") })
}

func (p *parser) and() (node, error) { return p.leftAssoc(p.not, "and", "&&") }

// leftAssoc parses operand (op operand)* with the given operators,
// grouping to the left.
func (p *parser) leftAssoc(operand func() (node, error), ops ...string) (node, error) {
	l, err := operand()
	for err == nil && p.isOp(ops...) {
		t := p.next()
		var r node
		if r, err = operand(); err == nil {
			l = binary{t.at, opName(t.text), l, r}
		}
	}
	return l, err
}

// opName is an operator's one name: || is or, && is and, = is ==.
func opName(op string) string {
	switch op {
	case "||":
		return "or"
	case "&&":
		return "and"
	case "=":
		return "=="
	}
	return op
}

func (p *parser) not() (node, error) {
	if p.isOp("not", "!") {
		t := p.next()
		x, err := p.nested(p.not)
		return unary{t.at, "not", x}, err
	}
	return p.cmp()
}

func (p *parser) cmp() (node, error) {
	l, err := p.add()
	if err == nil && p.isOp("==", "=", "!=", "<", "<=", ">", ">=") {
		t := p.next()
		var r node
		if r, err = p.add(); err == nil {
			l = binary{t.at, opName(t.text), l, r}
		}
	}
	return l, err
}

func (p *parser) add() (node, error) { return p.leftAssoc(p.mul, "+", "-") }

func (p *parser) mul() (node, error) { return p.leftAssoc(p.unary, "*", "/", "%") }

func (p *parser) unary() (node, error) {
	if p.isOp("-", "+") {
		t := p.next()
		x, err := p.nested(p.unary)
		if t.text == "+" {
			return x, err
		}
		return unary{t.at, "-", x}, err
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case "num":
		d, err := decimal.NewFromString(t.text)
		if err != nil || strings.Count(t.text, ".") > 1 {
			return nil, &Error{t.at, fmt.Sprintf("bad number %q", t.text)}
		}
		return numLit{t.at, d}, nil
	case "str":
		return strLit{t.at, t.text}, nil
	case "ident":
		switch t.text {
		case "true", "false":
			return boolLit{t.at, t.text == "true"}, nil
		case "null":
			return nullLit{t.at}, nil
		case "and", "or", "not":
			return nil, &Error{t.at, fmt.Sprintf("unexpected %q", t.text)}
		}
		if !p.isOp("(") {
			return ident{t.at, t.text}, nil
		}
		p.next() // (
		c := call{at: t.at, name: t.text}
		if p.isOp(")") {
			p.next()
			return c, nil
		}
		for {
			a, err := p.or()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			if p.isOp(",") {
				p.next()
				continue
			}
			if !p.isOp(")") {
				return nil, &Error{p.peek().at, "expected , or )"}
			}
			p.next()
			return c, nil
		}
	case "op":
		if t.text == "(" {
			x, err := p.nested(p.or)
			if err != nil {
				return nil, err
			}
			if !p.isOp(")") {
				return nil, &Error{p.peek().at, "expected )"}
			}
			p.next()
			return x, nil
		}
	case "eof":
		return nil, &Error{t.at, "unexpected end of formula"}
	}
	return nil, &Error{t.at, fmt.Sprintf("unexpected %q", t.text)}
}

// Refs returns the parameter names the formula reads, sorted, once each.
func (e *Expr) Refs() []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		switch x := n.(type) {
		case ident:
			out = append(out, x.name)
		case unary:
			walk(x.x)
		case binary:
			walk(x.l)
			walk(x.r)
		case call:
			for _, a := range x.args {
				walk(a)
			}
		}
	}
	walk(e.root)
	slices.Sort(out)
	return slices.Compact(out)
}

// Check reports the first reference to a name known does not accept, and
// the first call of an unknown function or with a wrong argument count.
func (e *Expr) Check(known func(name string) bool) error {
	var err error
	var walk func(n node)
	walk = func(n node) {
		if err != nil {
			return
		}
		switch x := n.(type) {
		case ident:
			if !known(x.name) {
				err = &Error{x.at, fmt.Sprintf("unknown parameter %q", x.name)}
			}
		case unary:
			walk(x.x)
		case binary:
			walk(x.l)
			walk(x.r)
		case call:
			a, ok := arity[x.name]
			switch {
			case !ok:
				err = &Error{x.at, fmt.Sprintf("unknown function %q (known: %s)", x.name, strings.Join(Functions(), ", "))}
			case len(x.args) < a[0] || a[1] >= 0 && len(x.args) > a[1]:
				err = &Error{x.at, fmt.Sprintf("%s takes %s arguments", x.name, arityText(a))}
			}
			for _, arg := range x.args {
				walk(arg)
			}
		}
	}
	walk(e.root)
	return err
}

func arityText(a [2]int) string {
	switch {
	case a[0] == a[1]:
		return fmt.Sprint(a[0])
	case a[1] < 0:
		return fmt.Sprintf("at least %d", a[0])
	}
	return fmt.Sprintf("%d to %d", a[0], a[1])
}

// Cycle finds a cycle among formulas: deps maps each computed name to the
// names it reads. It returns the names along one cycle, or nil.
func Cycle(deps map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range deps[n] {
			if _, computed := deps[d]; !computed {
				continue
			}
			switch color[d] {
			case grey:
				i := slices.Index(stack, d)
				found = append(slices.Clone(stack[i:]), d)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	names := make([]string, 0, len(deps))
	for n := range deps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if color[n] == white && visit(n) {
			return found
		}
	}
	return nil
}
