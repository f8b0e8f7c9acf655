package formula

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Kind is the type of a Value.
type Kind int

// The kinds of values.
const (
	Null Kind = iota
	Number
	String
	Bool
	Date
)

// Value is a formula value. Numbers are exact decimals; dates are instants.
type Value struct {
	Kind Kind
	Num  decimal.Decimal
	Str  string
	Bool bool
	Time time.Time
}

// Num makes a number value.
func Num(d decimal.Decimal) Value { return Value{Kind: Number, Num: d} }

// Str makes a string value.
func Str(s string) Value { return Value{Kind: String, Str: s} }

// Boolean makes a boolean value.
func Boolean(b bool) Value { return Value{Kind: Bool, Bool: b} }

// At makes a date value.
func At(t time.Time) Value { return Value{Kind: Date, Time: t} }

func (v Value) String() string {
	switch v.Kind {
	case Number:
		return v.Num.String()
	case String:
		return v.Str
	case Bool:
		if v.Bool {
			return "true"
		}
		return "false"
	case Date:
		return v.Time.UTC().Format(time.RFC3339)
	}
	return ""
}

func (k Kind) String() string {
	return [...]string{"null", "number", "string", "boolean", "date"}[k]
}

// EvalError is a type error found while evaluating.
type EvalError struct {
	Pos int
	Msg string
}

func (e *EvalError) Error() string { return fmt.Sprintf("at %d: %s", e.Pos, e.Msg) }

// Env gives the formula its inputs and the current time (for today()).
type Env struct {
	Vars map[string]Value
	Now  time.Time
}

// Eval computes the formula. A missing variable is null; arithmetic on null
// is null; a division by zero is null.
func (e *Expr) Eval(env Env) (Value, error) {
	return eval(e.root, env)
}

func eval(n node, env Env) (Value, error) {
	switch x := n.(type) {
	case numLit:
		return Num(x.v), nil
	case strLit:
		return Str(x.v), nil
	case boolLit:
		return Boolean(x.v), nil
	case nullLit:
		return Value{}, nil
	case ident:
		return env.Vars[x.name], nil
	case unary:
		v, err := eval(x.x, env)
		if err != nil || v.Kind == Null {
			return Value{}, err
		}
		if x.op == "not" {
			if v.Kind != Bool {
				return Value{}, &EvalError{x.at, "not needs a boolean, got " + v.Kind.String()}
			}
			return Boolean(!v.Bool), nil
		}
		if v.Kind != Number {
			return Value{}, &EvalError{x.at, "- needs a number, got " + v.Kind.String()}
		}
		return Num(v.Num.Neg()), nil
	case binary:
		return evalBinary(x, env)
	case call:
		return evalCall(x, env)
	}
	return Value{}, &EvalError{n.pos(), "cannot evaluate"}
}

func evalBinary(x binary, env Env) (Value, error) {
	l, err := eval(x.l, env)
	if err != nil {
		return Value{}, err
	}
	if x.op == "and" || x.op == "or" {
		if l.Kind != Bool {
			return Value{}, &EvalError{x.at, x.op + " needs booleans, got " + l.Kind.String()}
		}
		if x.op == "and" && !l.Bool || x.op == "or" && l.Bool {
			return l, nil
		}
		r, err := eval(x.r, env)
		if err != nil {
			return Value{}, err
		}
		if r.Kind != Bool {
			return Value{}, &EvalError{x.at, x.op + " needs booleans, got " + r.Kind.String()}
		}
		return r, nil
	}
	r, err := eval(x.r, env)
	if err != nil {
		return Value{}, err
	}
	switch x.op {
	case "==", "!=":
		eq := equal(l, r)
		return Boolean(eq == (x.op == "==")), nil
	case "<", "<=", ">", ">=":
		if l.Kind == Null || r.Kind == Null {
			return Value{}, nil
		}
		c, ok := compare(l, r)
		if !ok {
			return Value{}, &EvalError{x.at, fmt.Sprintf("cannot compare %s with %s", l.Kind, r.Kind)}
		}
		switch x.op {
		case "<":
			return Boolean(c < 0), nil
		case "<=":
			return Boolean(c <= 0), nil
		case ">":
			return Boolean(c > 0), nil
		}
		return Boolean(c >= 0), nil
	}
	if l.Kind == Null || r.Kind == Null {
		return Value{}, nil
	}
	if x.op == "+" && l.Kind == String && r.Kind == String {
		return Str(l.Str + r.Str), nil
	}
	if l.Kind != Number || r.Kind != Number {
		return Value{}, &EvalError{x.at, fmt.Sprintf("%s needs numbers, got %s and %s", x.op, l.Kind, r.Kind)}
	}
	switch x.op {
	case "+":
		return Num(l.Num.Add(r.Num)), nil
	case "-":
		return Num(l.Num.Sub(r.Num)), nil
	case "*":
		return Num(l.Num.Mul(r.Num)), nil
	case "/":
		if r.Num.IsZero() {
			return Value{}, nil
		}
		return Num(l.Num.DivRound(r.Num, 16)), nil
	case "%":
		if r.Num.IsZero() {
			return Value{}, nil
		}
		return Num(l.Num.Mod(r.Num)), nil
	}
	return Value{}, &EvalError{x.at, "unknown operator " + x.op}
}

func equal(l, r Value) bool {
	if l.Kind != r.Kind {
		return false
	}
	switch l.Kind {
	case Number:
		return l.Num.Equal(r.Num)
	case String:
		return l.Str == r.Str
	case Bool:
		return l.Bool == r.Bool
	case Date:
		return l.Time.Equal(r.Time)
	}
	return true
}

func compare(l, r Value) (int, bool) {
	if l.Kind != r.Kind {
		return 0, false
	}
	switch l.Kind {
	case Number:
		return l.Num.Cmp(r.Num), true
	case String:
		return strings.Compare(l.Str, r.Str), true
	case Date:
		return l.Time.Compare(r.Time), true
	}
	return 0, false
}

func evalCall(x call, env Env) (Value, error) {
	if x.name == "if" {
		if len(x.args) != 3 {
			return Value{}, &EvalError{x.at, "if takes 3 arguments"}
		}
		c, err := eval(x.args[0], env)
		if err != nil {
			return Value{}, err
		}
		if c.Kind == Null {
			return Value{}, nil
		}
		if c.Kind != Bool {
			return Value{}, &EvalError{x.at, "if needs a boolean condition, got " + c.Kind.String()}
		}
		if c.Bool {
			return eval(x.args[1], env)
		}
		return eval(x.args[2], env)
	}
	args := make([]Value, len(x.args))
	for i, a := range x.args {
		v, err := eval(a, env)
		if err != nil {
			return Value{}, err
		}
		args[i] = v
	}
	numbers := func() ([]decimal.Decimal, error) {
		out := make([]decimal.Decimal, 0, len(args))
		for _, a := range args {
			switch a.Kind {
			case Null:
			case Number:
				out = append(out, a.Num)
			default:
				return nil, &EvalError{x.at, x.name + " needs numbers, got " + a.Kind.String()}
			}
		}
		return out, nil
	}
	switch x.name {
	case "sum", "min", "max":
		ns, err := numbers()
		if err != nil || len(ns) == 0 {
			if x.name == "sum" && err == nil {
				return Num(decimal.Zero), nil
			}
			return Value{}, err
		}
		acc := ns[0]
		for _, n := range ns[1:] {
			switch x.name {
			case "sum":
				acc = acc.Add(n)
			case "min":
				acc = decimal.Min(acc, n)
			case "max":
				acc = decimal.Max(acc, n)
			}
		}
		return Num(acc), nil
	case "abs", "round":
		ns, err := numbers()
		if err != nil || len(ns) < len(args) || len(ns) == 0 {
			return Value{}, err
		}
		if x.name == "abs" {
			return Num(ns[0].Abs()), nil
		}
		places := int64(0)
		if len(ns) > 1 {
			if !ns[1].IsInteger() || ns[1].IntPart() < 0 || ns[1].IntPart() > 20 {
				return Value{}, &EvalError{x.at, "round places must be a whole number from 0 to 20"}
			}
			places = ns[1].IntPart()
		}
		return Num(ns[0].RoundBank(int32(places))), nil
	case "concat":
		var b strings.Builder
		for _, a := range args {
			b.WriteString(a.String())
		}
		return Str(b.String()), nil
	case "len":
		if args[0].Kind == Null {
			return Num(decimal.Zero), nil
		}
		if args[0].Kind != String {
			return Value{}, &EvalError{x.at, "len needs a string, got " + args[0].Kind.String()}
		}
		return Num(decimal.NewFromInt(int64(utf8.RuneCountInString(args[0].Str)))), nil
	case "today":
		y, m, d := env.Now.UTC().Date()
		return At(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)), nil
	case "dateDiff":
		if args[0].Kind == Null || args[1].Kind == Null {
			return Value{}, nil
		}
		if args[0].Kind != Date || args[1].Kind != Date {
			return Value{}, &EvalError{x.at, "dateDiff needs two dates"}
		}
		unit := "days"
		if len(args) == 3 {
			unit = args[2].Str
		}
		d := args[1].Time.Sub(args[0].Time)
		per := map[string]time.Duration{"days": 24 * time.Hour, "hours": time.Hour, "minutes": time.Minute}[unit]
		if per == 0 {
			return Value{}, &EvalError{x.at, `dateDiff unit must be "days", "hours" or "minutes"`}
		}
		return Num(decimal.NewFromInt(int64(d / per))), nil
	}
	return Value{}, &EvalError{x.at, "unknown function " + x.name}
}
