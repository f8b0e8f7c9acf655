package sheets

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/xuri/efp"
	"github.com/xuri/excelize/v2"
)

// cellKey names one cell of a workbook: its page and coordinates.
type cellKey struct {
	page     string
	col, row int
}

func (k cellKey) String() string {
	name, _ := excelize.CoordinatesToCellName(k.col, k.row)
	return k.page + "!" + name
}

// area is a rectangle of one page that a formula reads.
type area struct {
	page                   string
	col1, row1, col2, row2 int
}

func (a area) holds(k cellKey) bool {
	return k.page == a.page && k.col >= a.col1 && k.col <= a.col2 && k.row >= a.row1 && k.row <= a.row2
}

// parsed is what the static checks know of one formula: the areas it
// reads, the functions it calls and the pages it names that do not exist.
type parsed struct {
	areas     []area
	functions []string
	missing   []string // pages referred to that the workbook lacks
}

// parseFormula reads the references and function names of formula, in the
// context of page. Names that are not cell references (defined names) are
// left out: the calculation resolves them.
func parseFormula(formula, page string, pages []string) parsed {
	var out parsed
	p := efp.ExcelParser()
	for _, t := range p.Parse("=" + strings.TrimPrefix(formula, "=")) {
		switch {
		case t.TType == efp.TokenTypeFunction && t.TSubType == efp.TokenSubTypeStart:
			out.functions = append(out.functions, strings.ToUpper(t.TValue))
		case t.TType == efp.TokenTypeOperand && t.TSubType == efp.TokenSubTypeRange:
			pg, ref := page, t.TValue
			if i := strings.LastIndex(ref, "!"); i >= 0 {
				pg, ref = strings.Trim(ref[:i], "'"), ref[i+1:]
				if !slices.Contains(pages, pg) {
					out.missing = append(out.missing, pg)
					continue
				}
			}
			if a, ok := parseArea(pg, ref); ok {
				out.areas = append(out.areas, a)
			}
		}
	}
	return out
}

// parseArea reads "A1", "$A$1:B2", "A:A" or "1:3" on page.
func parseArea(page, ref string) (area, bool) {
	ref = strings.ReplaceAll(ref, "$", "")
	from, to, isRange := strings.Cut(ref, ":")
	if !isRange {
		to = from
	}
	c1, r1, ok1 := parseCorner(from, true)
	c2, r2, ok2 := parseCorner(to, false)
	if !ok1 || !ok2 {
		return area{}, false
	}
	return area{page: page, col1: min(c1, c2), row1: min(r1, r2), col2: max(c1, c2), row2: max(r1, r2)}, true
}

// parseCorner reads a cell, a whole column ("A") or a whole row ("3");
// start says which end of a whole column or row it is.
func parseCorner(s string, start bool) (col, row int, ok bool) {
	if c, r, err := excelize.CellNameToCoordinates(s); err == nil {
		return c, r, true
	}
	edge := func(lo, hi int) int {
		if start {
			return lo
		}
		return hi
	}
	if c, err := excelize.ColumnNameToNumber(s); err == nil && isLetters(s) {
		return c, edge(1, excelize.TotalRows), true
	}
	var r int
	if _, err := fmt.Sscanf(s, "%d", &r); err == nil && r > 0 && r <= excelize.TotalRows {
		return edge(1, excelize.MaxColumns), r, true
	}
	return 0, 0, false
}

func isLetters(s string) bool {
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return s != ""
}

// graph is the formulas of a workbook and what each reads.
type graph struct {
	formulas map[cellKey]string
	reads    map[cellKey]parsed
	byPage   map[string][]cellKey // formula cells per page
}

func newGraph(formulas map[cellKey]string, pages []string) *graph {
	g := &graph{formulas: formulas, reads: map[cellKey]parsed{}, byPage: map[string][]cellKey{}}
	for k, f := range formulas {
		g.reads[k] = parseFormula(f, k.page, pages)
		g.byPage[k.page] = append(g.byPage[k.page], k)
	}
	return g
}

// deps lists the formula cells that the formula of k reads.
func (g *graph) deps(p parsed) []cellKey {
	var out []cellKey
	for _, a := range p.areas {
		for _, k := range g.byPage[a.page] {
			if a.holds(k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// walk visits the formulas that start reads, directly or not, with
// override as the formula of start. It reports the first circular
// reference as a path of cells, and calls visit for each formula seen.
func (g *graph) walk(start cellKey, override *parsed, visit func(cellKey, parsed)) (cycle []cellKey) {
	const (
		grey = 1
		done = 2
	)
	colour := map[cellKey]int{}
	var stack []cellKey
	var dfs func(k cellKey, p parsed) bool
	dfs = func(k cellKey, p parsed) bool {
		colour[k] = grey
		stack = append(stack, k)
		visit(k, p)
		deps := g.deps(p)
		if override != nil && !slices.Contains(deps, start) && slices.ContainsFunc(p.areas, func(a area) bool { return a.holds(start) }) {
			deps = append(deps, start) // the start cell's formula is the override, not in the graph
		}
		for _, d := range deps {
			switch colour[d] {
			case grey:
				i := slices.Index(stack, d)
				cycle = append(slices.Clone(stack[i:]), d)
				return true
			case 0:
				next := g.reads[d]
				if d == start && override != nil {
					next = *override
				}
				if dfs(d, next) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		colour[k] = done
		return false
	}
	p, ok := g.reads[start]
	if override != nil {
		p, ok = *override, true
	}
	if ok {
		dfs(start, p)
	}
	return cycle
}

// firstCycle finds a circular reference anywhere in the workbook.
func (g *graph) firstCycle() []cellKey {
	keys := make([]cellKey, 0, len(g.formulas))
	for k := range g.formulas {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b cellKey) int { return strings.Compare(a.String(), b.String()) })
	seen := map[cellKey]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		if c := g.walk(k, nil, func(k cellKey, _ parsed) { seen[k] = true }); c != nil {
			return c
		}
	}
	return nil
}

func pathString(cells []cellKey) string {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = c.String()
	}
	return strings.Join(s, " → ")
}

// supported remembers which function names the calculation engine knows.
var supported sync.Map // name → bool

// Supported reports whether the calculation engine implements function
// name. It asks the engine itself: a function it lacks is reported as
// "not support NAME function" whatever its arguments.
func Supported(name string) bool {
	name = strings.ToUpper(strings.TrimPrefix(strings.ToUpper(name), "_XLFN."))
	name = strings.TrimPrefix(name, "_XLWS.")
	if v, ok := supported.Load(name); ok {
		return v.(bool)
	}
	f := excelize.NewFile()
	defer f.Close()
	ok := true
	if err := f.SetCellFormula("Sheet1", "A1", name+"()"); err == nil {
		_, err := f.CalcCellValue("Sheet1", "A1")
		ok = err == nil || !strings.HasPrefix(err.Error(), "not support ")
	}
	supported.Store(name, ok)
	return ok
}
