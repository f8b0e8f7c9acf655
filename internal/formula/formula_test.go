package formula

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func num(s string) Value { return Num(decimal.RequireFromString(s)) }

func TestEval(t *testing.T) {
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	vars := map[string]Value{
		"a": num("0.1"), "b": num("0.2"), "qty": num("3"), "price": num("19.99"), "name": Str("Pump"),
		"ok": Boolean(true), "start": At(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)), "Gross weight": num("10"),
	}
	cases := map[string]string{
		"a + b":                             "0.3",
		"qty * price":                       "59.97",
		"10 / 4":                            "2.5",
		"1 / 3 * 3":                         "0.9999999999999999",
		"10 % 4":                            "2",
		"-qty + 1":                          "-2",
		"2 + 3 * 4":                         "14",
		"(2 + 3) * 4":                       "20",
		"qty / 0":                           "",
		"missing + 1":                       "",
		"if(qty > 2, 'many', 'few')":        "many",
		"if(not ok, 1, 2)":                  "2",
		"sum(1, 2, 3.5, missing)":           "6.5",
		"min(3, 1, 2)":                      "1",
		"max(3, 1, 2)":                      "3",
		"round(2.675, 2)":                   "2.68",
		"round(2.5)":                        "2",
		"abs(-4.2)":                         "4.2",
		"concat(name, '-', qty)":            "Pump-3",
		"len(name)":                         "4",
		"dateDiff(start, today())":          "9",
		"dateDiff(start, today(), 'hours')": "216",
		"qty >= 3 and price < 20":           "true",
		"qty == 3 || false":                 "true",
		"name = 'Pump'":                     "true",
		"`Gross weight` * 2":                "20",
		"\"a\" + 'b'":                       "ab",
		"qty != 3":                          "false",
		"1.50 == 1.5":                       "true",
		"if(missing > 1, 1, 2)":             "",
		"dateDiff(start, missing)":          "",
		"today() > start":                   "true",
	}
	for src, want := range cases {
		e, err := Parse(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		v, err := e.Eval(Env{Vars: vars, Now: now})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		got := v.String()
		if v.Kind == Date {
			got = v.Time.Format(time.DateOnly)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
}

func TestEvalTypeErrors(t *testing.T) {
	for _, src := range []string{"name * 2", "not qty", "qty and ok", "if(qty, 1, 2)", "len(qty)", "sum(name)", "name < 3", "round(1, -1)", "dateDiff(qty, qty)", "dateDiff(today(), today(), 'weeks')"} {
		e, err := Parse(src)
		if err != nil {
			t.Errorf("%s: parse: %v", src, err)
			continue
		}
		if _, err := e.Eval(Env{Vars: map[string]Value{"name": Str("x"), "qty": num("1"), "ok": Boolean(true)}}); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"", "1 +", "(1", "1)", "a b", "1..2", "'open", "f(1,", "sum(,)", "`", "``", "and", "1 ? 2", "\xff"} {
		if _, err := Parse(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestCheckAndRefs(t *testing.T) {
	e, err := ParseTokens([]string{"if(", "a", ">", "b", ",", "sum(a, c)", ",", "0)"})
	if err != nil {
		t.Fatal(err)
	}
	if refs := e.Refs(); len(refs) != 3 || refs[0] != "a" || refs[2] != "c" {
		t.Fatalf("refs %v", refs)
	}
	known := func(n string) bool { return n != "c" }
	if err := e.Check(known); err == nil {
		t.Fatal("unknown name accepted")
	}
	for _, src := range []string{"nope(1)", "if(1, 2)", "abs(1, 2)", "today(1)"} {
		e, _ := Parse(src)
		if err := e.Check(func(string) bool { return true }); err == nil {
			t.Errorf("%s passed the check", src)
		}
	}
}

func TestCycle(t *testing.T) {
	if c := Cycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"x"}}); c != nil {
		t.Fatalf("false cycle %v", c)
	}
	if c := Cycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}); len(c) != 4 {
		t.Fatalf("cycle %v", c)
	}
	if c := Cycle(map[string][]string{"a": {"a"}}); len(c) != 2 {
		t.Fatalf("self cycle %v", c)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"a + b * 2", "if(x > 1, 'a', \"b\")", "sum(1, 2, `p q`)", "not (a and b) or c", "((((1))))", "-1 % 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		_ = e.Refs()
		_ = e.Check(func(string) bool { return true })
		_, _ = e.Eval(Env{Vars: map[string]Value{"a": num("1"), "b": Str("x"), "c": Boolean(true)}, Now: time.Unix(0, 0)})
	})
}

func BenchmarkEval(b *testing.B) {
	e, err := Parse("if(qty > 2, round(qty * price * (1 + rate / 100), 2), 0)")
	if err != nil {
		b.Fatal(err)
	}
	env := Env{Vars: map[string]Value{"qty": num("3"), "price": num("19.99"), "rate": num("12.5")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("if(qty > 2, round(qty * price * (1 + rate / 100), 2), 0)"); err != nil {
			b.Fatal(err)
		}
	}
}

// Nesting is bounded whichever construct nests: parentheses, not, sign.
func TestParseDepth(t *testing.T) {
	for _, open := range []string{"(", "not ", "-"} {
		deep := strings.Repeat(open, MaxDepth+1) + "1" + strings.Repeat(")", strings.Count(open, "(")*(MaxDepth+1))
		if _, err := Parse(deep); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
			t.Errorf("%q × %d: %v", open, MaxDepth+1, err)
		}
		ok := strings.Repeat(open, MaxDepth/4) + "1" + strings.Repeat(")", strings.Count(open, "(")*(MaxDepth/4))
		if _, err := Parse(ok); err != nil {
			t.Errorf("%q × %d: %v", open, MaxDepth/4, err)
		}
	}
}
