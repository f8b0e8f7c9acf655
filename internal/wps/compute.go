package wps

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"wps/internal/formula"
)

// computeFormulas evaluates the computed parameters of own over the current
// values (by parameter id) and puts the results in data. scope holds every
// group of parameters names may refer to (a process's steps, or an entity). Formulas that read
// other formulas settle in as many passes as there are formulas (definitions
// have no cycles). A value that cannot be computed (missing input, division
// by zero, type mismatch) is left empty.
func computeFormulas(scope [][]Parameter, own []Parameter, cur, data map[string]any, now time.Time) {
	var params []Parameter
	for _, p := range own {
		if len(p.ComputedFormula) > 0 {
			params = append(params, p)
		}
	}
	if len(params) == 0 {
		return
	}
	byName := formulaScope(scope, own)
	for range params {
		vars := map[string]formula.Value{}
		for name, p := range byName {
			vars[name] = toFormula(p, cur[p.ID])
		}
		for _, p := range params {
			e, err := formula.ParseTokens(p.ComputedFormula)
			if err != nil {
				continue
			}
			v, err := e.Eval(formula.Env{Vars: vars, Now: now})
			val := fromFormula(p, v)
			if err != nil {
				val = nil
			}
			cur[p.ID], data[p.ID] = val, val
		}
	}
}

// toFormula turns a stored value into a formula value by its parameter's type.
func toFormula(p Parameter, v any) formula.Value {
	s := firstItem(v)
	if v == nil || s == "" {
		return formula.Value{}
	}
	if p.Multiple() { // a list reads as its items joined by commas, as MULTI_SELECT does
		return formula.Str(strings.Join(itemStrings(v), ","))
	}
	switch p.Type {
	case TypeInt, TypeNumber, TypeFormula:
		if d, err := decimal.NewFromString(s); err == nil {
			return formula.Num(d)
		}
		if p.Type == TypeFormula {
			return formula.Str(s)
		}
	case TypeBoolean:
		return formula.Boolean(s == "true")
	case TypeDate:
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return formula.At(t)
		}
	case TypeDateTime:
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return formula.At(t)
		}
	case TypeMultiSelect:
		return formula.Str(strings.Join(itemStrings(v), ","))
	}
	return formula.Str(s)
}

// fromFormula turns a result into a stored value, rounded to the
// parameter's decimals (half-even); a number out of range is no value.
func fromFormula(p Parameter, v formula.Value) any {
	switch v.Kind {
	case formula.Number:
		d := v.Num
		if places := decimalsOf(p); places >= 0 {
			d = d.RoundBank(places)
		}
		if !inNumberRange(d) {
			return nil // as a failed formula: no value
		}
		return json.Number(d.String())
	case formula.String:
		return v.Str
	case formula.Bool:
		return v.Bool
	case formula.Date:
		return v.Time.UTC().Format(time.DateOnly)
	}
	return nil
}
