package lang

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// serviceFormats are the formats of the service's refusals in the Go code
// (not tests): wps.Invalid, wps.Errorf, fieldError, upstream, a value
// check's fail, and a Validator's Add and Check (the code names Validators
// v or all, or c.v), by format, where each is.
func serviceFormats(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				at := -1
				switch fn := c.Fun.(type) {
				case *ast.Ident:
					switch {
					case fn.Name == "Invalid" || fn.Name == "fieldError" || fn.Name == "upstream" && f.Name.Name == "wps":
						at = 1
					case fn.Name == "Errorf" && f.Name.Name == "wps":
						at = 1
					case fn.Name == "fail" && f.Name.Name == "wps":
						at = 0
					}
				case *ast.SelectorExpr:
					x, _ := fn.X.(*ast.Ident)
					if s, ok := fn.X.(*ast.SelectorExpr); ok && s.Sel.Name == "v" {
						x = s.Sel // c.v
					}
					switch {
					case x == nil:
					case x.Name == "wps" && (fn.Sel.Name == "Invalid" || fn.Sel.Name == "Errorf"):
						at = 1
					case (x.Name == "v" || x.Name == "all") && fn.Sel.Name == "Add":
						at = 1
					case (x.Name == "v" || x.Name == "all") && fn.Sel.Name == "Check":
						at = 2
					}
				}
				if at < 0 || len(c.Args) <= at {
					return true
				}
				if lit, ok := c.Args[at].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					if strings.IndexFunc(verbs.ReplaceAllString(s, ""), func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0 {
						out[s] = fset.Position(c.Pos()).String()
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out[" (and %d more)"] = "internal/wps/errors.go"
	return out
}

// verbs are fmt's verbs, with an argument index or not.
var verbs = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]`)

// argsOf lists which argument each verb of format prints, as fmt numbers
// them (%[2]q is the second, a plain verb the one after the previous).
func argsOf(format string) []string {
	var out []string
	next := 1
	for _, m := range verbs.FindAllStringSubmatch(format, -1) {
		v := m[0]
		if strings.HasSuffix(v, "%%") || v == "%%" {
			continue
		}
		n := next
		if m[1] != "" {
			n, _ = strconv.Atoi(strings.Trim(m[1], "[]"))
		}
		out = append(out, strconv.Itoa(n)+v[len(v)-1:])
		next = n + 1
	}
	slices.Sort(out)
	return out
}

// TestServiceMessagesComplete: every refusal the service words has its
// words in each language but English, printing the same arguments with
// the same verbs, and no catalogue keeps a format the code no longer has.
func TestServiceMessagesComplete(t *testing.T) {
	formats := serviceFormats(t)
	if len(formats) < 100 {
		t.Fatalf("found %d formats: the scan misses the service's refusals", len(formats))
	}
	for _, loc := range Supported[1:] {
		cat, err := ServiceCatalogue(loc)
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		for f, where := range formats {
			tr, ok := cat[f]
			switch {
			case !ok:
				t.Errorf("%s: no words for %q (%s)", loc, f, where)
			case !slices.Equal(argsOf(tr), argsOf(f)):
				t.Errorf("%s: %q prints %v, its words %q print %v", loc, f, argsOf(f), tr, argsOf(tr))
			}
		}
		for f := range cat {
			if _, ok := formats[f]; !ok {
				t.Errorf("%s: %q is no format of the service's any more", loc, f)
			}
		}
	}
	if got := For("pt-BR").Format("%q is not a kind of leaf one may append"); got == "%q is not a kind of leaf one may append" {
		t.Errorf("pt-BR says a refusal in English: %q", got)
	}
}
