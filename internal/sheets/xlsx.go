// Package sheets runs the workbooks that parameters link to (semantics
// section 10) with the excelize library: it checks uploads, checks links
// at process save, and fills and recalculates a workbook per write. It is
// the wps.SheetEngine of kind XLSX.
package sheets

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xuri/excelize/v2"

	"wps/internal/wps"
)

// Limits bound what an uploaded workbook may cost.
type Limits struct {
	MaxUnzippedBytes int64         // the sum of its parts once unzipped (zip bombs)
	MaxPages         int           // worksheets
	MaxCells         int           // cells over every page's used range
	CalcTimeout      time.Duration // one recalculation
	CachedBooks      int           // parsed workbooks kept in memory
}

// DefaultLimits are the limits when a field is zero.
var DefaultLimits = Limits{MaxUnzippedBytes: 100 << 20, MaxPages: 50, MaxCells: 200_000, CalcTimeout: 2 * time.Second, CachedBooks: 64}

// XLSX is the engine for .xlsx workbooks. It keeps each parsed workbook
// (by the SHA-256 of its bytes) and a few parsed, ready-to-fill copies of
// it per set of links, so that a write does not parse the file again.
type XLSX struct {
	limits Limits
	// slots bounds the recalculations running at once to the processors:
	// more would only wait for them, each holding a copy of its workbook
	// (beyond the idle copies kept, a new copy is parsed and prepared).
	slots chan struct{}
	mu    sync.Mutex
	books map[string]*book
	order []string // books by first use, oldest first
}

// New returns an engine with limits (zero fields take DefaultLimits).
func New(l Limits) *XLSX {
	d := DefaultLimits
	if l.MaxUnzippedBytes <= 0 {
		l.MaxUnzippedBytes = d.MaxUnzippedBytes
	}
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.MaxCells <= 0 {
		l.MaxCells = d.MaxCells
	}
	if l.CalcTimeout <= 0 {
		l.CalcTimeout = d.CalcTimeout
	}
	if l.CachedBooks <= 0 {
		l.CachedBooks = d.CachedBooks
	}
	return &XLSX{limits: l, books: map[string]*book{}, slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

var _ wps.SheetEngine = (*XLSX)(nil)

// book is one parsed workbook: its bytes, pages and formulas, and idle
// copies ready to fill, per set of links.
type book struct {
	content   []byte
	pages     []string
	graph     *graph
	mu        sync.Mutex
	idle      map[string][]*copyOf
	templates map[string]*template // by set of links; nil: written whole
}

// copyOf is a parsed copy of a workbook prepared for one set of links:
// formulas unshared, cached values cleared, OUTPUT formulas in place, and
// the INPUT cells' own contents remembered.
type copyOf struct {
	f        *excelize.File
	original []cellValue // by link index: each linked cell's own content
	tpl      *template   // what a write's copy is made from (nil: f written whole)
}

type cellValue struct {
	kind  excelize.CellType
	value string
}

func refuse(format string, args ...any) error {
	return wps.Invalid("file", format, args...)
}

// Inspect checks an upload: a zip of modest unzipped size, no macros or
// external links, readable by excelize, within the page and cell limits,
// and without circular references.
func (x *XLSX) Inspect(content []byte) ([]string, error) {
	b, err := x.parse(content)
	if err != nil {
		return nil, err
	}
	if c := b.graph.firstCycle(); c != nil {
		return nil, refuse("the workbook has a circular reference: %s", pathString(c))
	}
	x.keep(sha(content), b)
	return b.pages, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// parse reads a workbook and indexes its formulas.
func (x *XLSX) parse(content []byte) (*book, error) {
	zr, err := checkZip(content, x.limits.MaxUnzippedBytes)
	if err != nil {
		return nil, err
	}
	f, err := x.open(content)
	if err != nil {
		return nil, refuse("the workbook cannot be read: %v", err)
	}
	defer f.Close()
	b := &book{content: content, pages: f.GetSheetList(), idle: map[string][]*copyOf{}, templates: map[string]*template{}}
	if len(b.pages) == 0 {
		return nil, refuse("the workbook has no worksheet")
	}
	if len(b.pages) > x.limits.MaxPages {
		return nil, refuse("the workbook has %d pages, over the limit of %d", len(b.pages), x.limits.MaxPages)
	}
	parts, err := worksheetParts(zr)
	if err != nil {
		return nil, refuse("the workbook cannot be read: %v", err)
	}
	formulas := map[cellKey]string{}
	cells := 0
	for _, page := range b.pages {
		zf := parts[page]
		if zf == nil {
			continue // a chart sheet or dialog: no cells
		}
		list, n, err := formulaCells(zf, x.limits.MaxCells-cells)
		if err != nil {
			return nil, refuse("page %q cannot be read: %v", page, err)
		}
		if cells += n; cells > x.limits.MaxCells {
			return nil, refuse("the workbook has more than %d cells", x.limits.MaxCells)
		}
		for _, name := range list {
			c, r, err := excelize.CellNameToCoordinates(name)
			if err != nil {
				continue
			}
			if fo, _ := f.GetCellFormula(page, name); fo != "" {
				formulas[cellKey{page, c, r}] = fo
			}
		}
	}
	b.graph = newGraph(formulas, b.pages)
	return b, nil
}

func (x *XLSX) open(content []byte) (*excelize.File, error) {
	return excelize.OpenReader(bytes.NewReader(content), excelize.Options{
		UnzipSizeLimit: x.limits.MaxUnzippedBytes, UnzipXMLSizeLimit: min(x.limits.MaxUnzippedBytes, 16<<20)})
}

// checkZip refuses what is not a plain .xlsx zip of modest unzipped size:
// an encrypted or legacy file, a zip bomb, macros, links to other files.
func checkZip(content []byte, maxUnzipped int64) (*zip.Reader, error) {
	if bytes.HasPrefix(content, []byte{0xD0, 0xCF, 0x11, 0xE0}) {
		return nil, refuse("the file is an encrypted or legacy (.xls) workbook; save it as an .xlsx workbook without a password")
	}
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, refuse("the file is not an .xlsx workbook (not a zip archive)")
	}
	var total uint64
	hasWorkbook := false
	for _, zf := range zr.File {
		total += zf.UncompressedSize64
		name := strings.ToLower(zf.Name)
		switch {
		case name == "xl/workbook.xml":
			hasWorkbook = true
		case strings.HasSuffix(name, "vbaproject.bin"):
			return nil, refuse("the workbook has macros; save it as an .xlsx workbook without them")
		case strings.HasPrefix(name, "xl/externallinks/"):
			return nil, refuse("the workbook links to other workbooks (external links); copy the values in and remove the links")
		}
	}
	if total > uint64(maxUnzipped) {
		return nil, refuse("the workbook unzips to %d bytes, over the limit of %d", total, maxUnzipped)
	}
	if !hasWorkbook {
		return nil, refuse("the file is not an .xlsx workbook (no xl/workbook.xml)")
	}
	var unzipped int64
	for _, zf := range zr.File {
		if err := checkPart(zf, maxUnzipped, &unzipped); err != nil {
			return nil, err
		}
	}
	return zr, nil
}

// checkPart reads one XML part of a workbook strictly, as excelize does
// not: it stops at the first malformed token of a worksheet and keeps the
// rows before, so a workbook whose XML is broken (a NUL character
// reference, an entity defined in a DTD, an external entity) would read
// as fewer rows. Spreadsheet programs never write a DTD, so none is
// accepted; nor a link to another workbook, wherever the part is stored.
// unzipped counts the bytes really unzipped (a zip's sizes may lie).
func checkPart(zf *zip.File, maxUnzipped int64, unzipped *int64) error {
	name := strings.ToLower(zf.Name)
	if !strings.HasSuffix(name, ".xml") && !strings.HasSuffix(name, ".rels") {
		return nil
	}
	rc, err := zf.Open()
	if err != nil {
		return refuse("the workbook's part %s cannot be unzipped: %v", zf.Name, err)
	}
	defer rc.Close()
	counted := &countingReader{r: io.LimitReader(rc, maxUnzipped-*unzipped+1)}
	d := xml.NewDecoder(counted)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if *unzipped+counted.n > maxUnzipped {
				return refuse("the workbook unzips to more than %d bytes", maxUnzipped)
			}
			return refuse("the workbook cannot be read: its part %s is not well-formed XML: %v", zf.Name, err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return refuse("the workbook's part %s declares a DTD, which spreadsheet programs never write", zf.Name)
		case xml.StartElement:
			for _, a := range t.Attr {
				if (a.Name.Local == "Type" || a.Name.Local == "ContentType") && strings.Contains(strings.ToLower(a.Value), "externallink") {
					return refuse("the workbook links to other workbooks (external links); copy the values in and remove the links")
				}
			}
		}
	}
	if *unzipped += counted.n; *unzipped > maxUnzipped {
		return refuse("the workbook unzips to more than %d bytes", maxUnzipped)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// keep caches a parsed book, forgetting the oldest beyond the limit.
func (x *XLSX) keep(key string, b *book) *book {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.books[key]; ok {
		return old
	}
	x.books[key] = b
	x.order = append(x.order, key)
	for len(x.order) > x.limits.CachedBooks {
		delete(x.books, x.order[0])
		x.order = x.order[1:]
	}
	return b
}

// load returns the parsed book of file, parsing it on first use.
func (x *XLSX) load(file wps.SheetFile) (*book, error) {
	x.mu.Lock()
	b := x.books[file.SHA256]
	x.mu.Unlock()
	if b != nil {
		return b, nil
	}
	content, err := file.Load()
	if err != nil {
		return nil, err
	}
	if b, err = x.parse(content); err != nil {
		return nil, err
	}
	return x.keep(file.SHA256, b), nil
}

// Check reports the links that cannot be used (see wps.SheetEngine).
func (x *XLSX) Check(file wps.SheetFile, links []wps.SheetLink) ([]wps.LinkProblem, error) {
	b, err := x.load(file)
	if err != nil {
		return nil, err
	}
	var out []wps.LinkProblem
	bad := func(i int, field, format string, args ...any) {
		out = append(out, wps.LinkProblem{Link: i, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	ok := true
	for i, l := range links {
		if !slices.Contains(b.pages, l.Page) {
			bad(i, "page", "the sheet has no page %q (it has %s)", l.Page, strings.Join(b.pages, ", "))
			ok = false
			continue
		}
		col, row, err := excelize.CellNameToCoordinates(l.Cell)
		if err != nil {
			bad(i, "cell", "%q is not a cell reference such as B2", l.Cell)
			ok = false
			continue
		}
		k := cellKey{l.Page, col, row}
		if !l.Output {
			if _, isFormula := b.graph.formulas[k]; isFormula {
				bad(i, "cell", "%s holds a formula; an INPUT writes into a value cell", k)
				ok = false
			}
			continue
		}
		var override *parsed
		field := "cell"
		if l.Formula != "" {
			p := parseFormula(l.Formula, l.Page, b.pages)
			override, field = &p, "formula"
			if len(p.missing) > 0 {
				bad(i, field, "refers to page %q, which the sheet does not have", p.missing[0])
				ok = false
				continue
			}
		}
		var unsupported []string
		cycle := b.graph.walk(k, override, func(at cellKey, p parsed) {
			for _, fn := range p.functions {
				if !Supported(fn) && !slices.Contains(unsupported, fn+" (in "+at.String()+")") {
					unsupported = append(unsupported, fn+" (in "+at.String()+")")
				}
			}
		})
		switch {
		case cycle != nil:
			bad(i, field, "the value depends on itself: %s", pathString(cycle))
			ok = false
		case len(unsupported) > 0:
			bad(i, field, "uses functions wps cannot calculate: %s", strings.Join(unsupported, ", "))
			ok = false
		}
	}
	if !ok {
		return out, nil
	}
	// A trial run over the workbook's own contents: a formula that does not
	// parse, or a calculation over the time limit, is refused now rather
	// than at every write.
	var want []int
	for i, l := range links {
		if l.Output {
			want = append(want, i)
		}
	}
	fill, err := x.fill(b, links, make([]any, len(links)), want, false)
	if err != nil {
		return nil, err
	}
	for _, i := range want {
		switch o := fill.Outputs[i]; {
		case o.Err == errNotValid:
			bad(i, pick(links[i].Formula != "", "formula", "cell"), "the formula is not valid")
		case strings.HasPrefix(o.Err, "the calculation took"):
			bad(i, pick(links[i].Formula != "", "formula", "cell"), "%s", o.Err)
		}
	}
	return out, nil
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

const errNotValid = "formula not valid"

// Fill writes the inputs, recalculates and reads the wanted outputs (see
// wps.SheetEngine).
func (x *XLSX) Fill(file wps.SheetFile, links []wps.SheetLink, inputs []any, want []int) (wps.SheetFill, error) {
	b, err := x.load(file)
	if err != nil {
		return wps.SheetFill{}, err
	}
	return x.fill(b, links, inputs, want, true)
}

// Rows reads the first page of a workbook for an import (see ReadRows):
// at most wps.MaxImportRows rows and wps.MaxImportColumns columns.
func (x *XLSX) Rows(content []byte, fn func(header, row []string) error) error {
	return ReadRows(content, RowLimits{MaxUnzipped: x.limits.MaxUnzippedBytes, MaxRows: wps.MaxImportRows, MaxColumns: wps.MaxImportColumns}, fn)
}

func linksKey(links []wps.SheetLink) string {
	var sb strings.Builder
	for _, l := range links {
		fmt.Fprintf(&sb, "%s\x00%s\x00%t\x00%s\x01", l.Page, l.Cell, l.Output, l.Formula)
	}
	return sb.String()
}

// take returns an idle copy for links, or prepares a new one.
func (x *XLSX) take(b *book, key string, links []wps.SheetLink) (*copyOf, error) {
	b.mu.Lock()
	if n := len(b.idle[key]); n > 0 {
		c := b.idle[key][n-1]
		b.idle[key] = b.idle[key][:n-1]
		b.mu.Unlock()
		return c, nil
	}
	b.mu.Unlock()
	f, err := x.open(b.content)
	if err != nil {
		return nil, err
	}
	c := &copyOf{f: f, original: make([]cellValue, len(links))}
	// Unshare every formula (a value written into the anchor of a shared
	// formula would drop the others), then clear every cached value: the
	// filled copy holds only values computed for its measurement, and asks
	// spreadsheet programs to recalculate the rest when they open it.
	for k, fo := range b.graph.formulas {
		name, _ := excelize.CoordinatesToCellName(k.col, k.row)
		if err := f.SetCellFormula(k.page, name, fo); err != nil {
			return nil, err
		}
	}
	if err := f.UpdateLinkedValue(); err != nil {
		return nil, err
	}
	full := true
	if err := f.SetCalcProps(&excelize.CalcPropsOptions{FullCalcOnLoad: &full}); err != nil {
		return nil, err
	}
	for i, l := range links {
		t, _ := f.GetCellType(l.Page, l.Cell)
		v, _ := f.GetCellValue(l.Page, l.Cell, excelize.Options{RawCellValue: true})
		c.original[i] = cellValue{t, v}
	}
	for _, l := range links {
		if l.Output && l.Formula != "" {
			if err := f.SetCellFormula(l.Page, l.Cell, strings.TrimPrefix(l.Formula, "=")); err != nil {
				return nil, err
			}
		}
	}
	b.mu.Lock()
	tpl, made := b.templates[key]
	b.mu.Unlock()
	if !made {
		var err error
		if tpl, err = makeTemplate(f, links, c.original, b.formula); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.templates[key] = tpl
		b.mu.Unlock()
	}
	c.tpl = tpl
	return c, nil
}

// formula is the formula of OUTPUT link l: its own, or its cell's.
func (b *book) formula(l wps.SheetLink) string {
	if l.Formula != "" {
		return l.Formula
	}
	return b.graph.formulas[cellKeyOf(l)]
}

// idleCopies is how many prepared copies of a workbook are kept per set of
// links: as many as recalculations may run at once, and a few more.
var idleCopies = max(4, runtime.GOMAXPROCS(0))

// put returns a copy for reuse, unless it took a value that left a trace
// (a shared string) or was abandoned.
func (b *book) put(key string, c *copyOf) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.idle[key]) < idleCopies {
		b.idle[key] = append(b.idle[key], c)
		return
	}
	c.f.Close()
}

func (x *XLSX) fill(b *book, links []wps.SheetLink, inputs []any, want []int, write bool) (wps.SheetFill, error) {
	x.slots <- struct{}{}
	defer func() { <-x.slots }()
	key := linksKey(links)
	c, err := x.take(b, key, links)
	if err != nil {
		return wps.SheetFill{}, err
	}
	f := c.f
	reusable := true
	for i, l := range links {
		if l.Output {
			continue
		}
		clean, err := setInput(f, l, inputs[i], c.original[i])
		if err != nil {
			f.Close()
			return wps.SheetFill{}, err
		}
		reusable = reusable && clean
	}
	out := wps.SheetFill{Outputs: map[int]wps.SheetOutput{}}
	type result struct {
		values map[int]wps.SheetOutput
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		values := map[int]wps.SheetOutput{}
		for _, i := range want {
			l := links[i]
			v, err := f.CalcCellValue(l.Page, l.Cell, excelize.Options{RawCellValue: true})
			o := wps.SheetOutput{Value: v}
			if err != nil {
				o = wps.SheetOutput{Err: calcError(v, err)}
			}
			values[i] = o
		}
		done <- result{values}
	}()
	// A result that comes after the limit is over it too, whichever of the
	// two the select saw first.
	var r result
	late := false
	select {
	case r = <-done:
		late = time.Since(start) > x.limits.CalcTimeout
	case <-time.After(x.limits.CalcTimeout):
		late = true // the copy is left to its goroutine and dropped
	}
	out.Outputs = r.values
	if late {
		out.Outputs = map[int]wps.SheetOutput{}
		for _, i := range want {
			out.Outputs[i] = wps.SheetOutput{Err: fmt.Sprintf("the calculation took longer than %s", x.limits.CalcTimeout)}
		}
		return out, nil
	}
	if write && c.tpl != nil {
		content, err := c.tpl.write(links, inputs, c.original, out.Outputs, b.formula)
		if err != nil {
			f.Close()
			return wps.SheetFill{}, err
		}
		out.Content, out.SHA256 = content, sha(content)
	} else if write {
		var cached []int // the outputs whose values the copy holds
		for _, i := range want {
			l, o := links[i], out.Outputs[i]
			if o.Err != "" {
				continue
			}
			var err error
			if n, perr := strconv.ParseFloat(o.Value, 64); perr == nil {
				err = f.SetCellFloat(l.Page, l.Cell, n, -1, 64)
			} else if o.Value == "TRUE" || o.Value == "FALSE" {
				err = f.SetCellBool(l.Page, l.Cell, o.Value == "TRUE")
			} else {
				continue // text results are recalculated on opening
			}
			fo := l.Formula
			if fo == "" {
				fo = b.graph.formulas[cellKeyOf(l)]
			}
			if err == nil && fo != "" {
				err = f.SetCellFormula(l.Page, l.Cell, strings.TrimPrefix(fo, "="))
			}
			if err != nil {
				f.Close()
				return wps.SheetFill{}, err
			}
			cached = append(cached, i)
		}
		buf, err := f.WriteToBuffer()
		if err != nil {
			f.Close()
			return wps.SheetFill{}, err
		}
		out.Content = bytes.Clone(buf.Bytes())
		out.SHA256 = sha(out.Content)
		for _, i := range cached { // back to no cached value
			l := links[i]
			fo := l.Formula
			if fo == "" {
				fo = b.graph.formulas[cellKeyOf(l)]
			}
			if err := f.SetCellValue(l.Page, l.Cell, nil); err != nil {
				reusable = false
			} else if fo != "" {
				if err := f.SetCellFormula(l.Page, l.Cell, strings.TrimPrefix(fo, "=")); err != nil {
					reusable = false
				}
			}
		}
	}
	if reusable {
		b.put(key, c)
	} else {
		f.Close()
	}
	return out, nil
}

func cellKeyOf(l wps.SheetLink) cellKey {
	c, r, _ := excelize.CellNameToCoordinates(l.Cell)
	return cellKey{l.Page, c, r}
}

// setInput writes v into l's cell, or the cell's own content when v is nil.
// It reports false when the write left a trace in the copy beyond the cell
// (a new shared string), so that the copy is not reused.
func setInput(f *excelize.File, l wps.SheetLink, v any, orig cellValue) (clean bool, err error) {
	if v == nil {
		switch orig.kind {
		case excelize.CellTypeSharedString, excelize.CellTypeInlineString:
			return true, f.SetCellStr(l.Page, l.Cell, orig.value) // the string is in the table already
		case excelize.CellTypeBool:
			return true, f.SetCellBool(l.Page, l.Cell, orig.value == "1" || orig.value == "TRUE")
		case excelize.CellTypeUnset, excelize.CellTypeNumber, excelize.CellTypeDate:
			if orig.value == "" {
				return true, f.SetCellValue(l.Page, l.Cell, nil)
			}
			n, err := strconv.ParseFloat(orig.value, 64)
			if err != nil {
				return true, f.SetCellDefault(l.Page, l.Cell, orig.value)
			}
			return true, f.SetCellFloat(l.Page, l.Cell, n, -1, 64)
		}
		return true, f.SetCellDefault(l.Page, l.Cell, orig.value)
	}
	switch v := v.(type) {
	case float64:
		return true, f.SetCellFloat(l.Page, l.Cell, v, -1, 64)
	case bool:
		return true, f.SetCellBool(l.Page, l.Cell, v)
	case string:
		if _, err := strconv.ParseFloat(v, 64); err != nil && v != "" {
			return true, f.SetCellDefault(l.Page, l.Cell, v) // an inline string: nothing outside the cell
		}
		return false, f.SetCellStr(l.Page, l.Cell, v) // text that reads as a number stays text
	}
	return true, fmt.Errorf("sheets: cannot write a %T", v)
}

// calcError is the reason a cell has no value.
func calcError(v string, err error) string {
	msg := err.Error()
	switch {
	case msg == errNotValid:
		return errNotValid
	case strings.HasPrefix(v, "#") && v != msg:
		return v + ": " + msg
	}
	return msg
}
