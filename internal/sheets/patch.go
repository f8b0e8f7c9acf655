package sheets

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	"wps/internal/wps"
)

// A filled copy differs from its workbook's prepared copy only in the
// linked cells. Writing the whole copy through excelize at every write
// cost most of a fill: it encodes and deflates every part, then drops each
// page it wrote, which the next fill decodes again. So the prepared copy
// is written once per set of links as a template, its linked cells marked,
// and a write's copy is the template with those cells written in: the
// pages with links deflated again, every other part copied as it is
// compressed. The calculating copy is never written, so it keeps its pages.

// template is a prepared copy's bytes with its linked cells cut out.
type template struct {
	zip   *zip.Reader
	pages map[string]*pagePieces // by part name
}

// pagePieces is one page's XML around its linked cells, in document order:
// pieces[k] comes before cells[k], the last piece after the last cell.
type pagePieces struct {
	pieces [][]byte
	cells  []cutCell
}

type cutCell struct {
	link  int
	attrs string // the element's attributes but its type: ` r="B2" s="3"`
}

// marker is what a linked cell holds while the template is written.
func marker(i int) string { return "\uE000wps-link-" + strconv.Itoa(i) + "\uE001" }

// makeTemplate writes f as the template of links, with every linked cell
// marked, then puts back the cells as they were (original by link). It
// returns nil when the links cannot be cut out (two links on one cell),
// and the copy is then written whole at each write.
func makeTemplate(f *excelize.File, links []wps.SheetLink, original []cellValue, formula func(wps.SheetLink) string) (*template, error) {
	seen := map[cellKey]bool{}
	for _, l := range links {
		k := cellKeyOf(l)
		if seen[k] {
			return nil, nil
		}
		seen[k] = true
	}
	for i, l := range links {
		if err := f.SetCellDefault(l.Page, l.Cell, marker(i)); err != nil {
			return nil, err
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		return nil, err
	}
	for i, l := range links {
		fo := formula(l)
		if fo == "" {
			if _, err := setInput(f, l, nil, original[i]); err != nil {
				return nil, err
			}
			continue
		}
		if err := f.SetCellValue(l.Page, l.Cell, nil); err != nil {
			return nil, err
		}
		if err := f.SetCellFormula(l.Page, l.Cell, strings.TrimPrefix(fo, "=")); err != nil {
			return nil, err
		}
	}
	content := bytes.Clone(buf.Bytes())
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, err
	}
	t := &template{zip: zr, pages: map[string]*pagePieces{}}
	found := 0
	for _, zf := range zr.File {
		if !strings.HasPrefix(zf.Name, "xl/worksheets/") {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, err
		}
		page, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		pp, n := cut(page, len(links))
		if n < 0 {
			return nil, nil
		}
		if n > 0 {
			t.pages[zf.Name], found = pp, found+n
		}
	}
	if found != len(links) {
		return nil, nil
	}
	return t, nil
}

// cut splits a page's XML around the marked cells. It reports how many it
// found, or -1 when a mark is not where a cell's value would be.
func cut(page []byte, links int) (*pagePieces, int) {
	pp := &pagePieces{}
	rest := page
	for {
		at := bytes.Index(rest, []byte("\uE000wps-link-"))
		if at < 0 {
			pp.pieces = append(pp.pieces, rest)
			return pp, len(pp.cells)
		}
		num := rest[at+len("\uE000wps-link-"):]
		end := bytes.Index(num, []byte("\uE001"))
		i, err := strconv.Atoi(string(num[:max(end, 0)]))
		start := bytes.LastIndex(rest[:at], []byte("<c "))
		tagEnd := bytes.IndexByte(rest[max(start, 0):], '>')
		closing := bytes.Index(rest[at:], []byte("</c>"))
		if end < 0 || err != nil || i < 0 || i >= links || start < 0 || tagEnd < 0 || closing < 0 {
			return nil, -1
		}
		attrs := string(rest[start+len("<c") : start+tagEnd])
		attrs = strings.Replace(attrs, ` t="inlineStr"`, "", 1)
		pp.pieces = append(pp.pieces, rest[:start])
		pp.cells = append(pp.cells, cutCell{link: i, attrs: attrs})
		rest = rest[at+closing+len("</c>"):]
	}
}

// write is a write's copy: the template with each linked cell written in,
// inputs by link index (nil: the cell's own content, original), outputs
// with their values where they are numbers or booleans, their formulas
// left for spreadsheet programs to calculate otherwise.
func (t *template) write(links []wps.SheetLink, inputs []any, original []cellValue, outs map[int]wps.SheetOutput, formula func(wps.SheetLink) string) ([]byte, error) {
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	var cell bytes.Buffer
	for _, zf := range t.zip.File {
		pp := t.pages[zf.Name]
		if pp == nil {
			if err := zw.Copy(zf); err != nil {
				return nil, err
			}
			continue
		}
		w, err := zw.Create(zf.Name)
		if err != nil {
			return nil, err
		}
		for k, c := range pp.cells {
			cell.Reset()
			cell.Write(pp.pieces[k])
			l := links[c.link]
			if l.Output {
				writeOutput(&cell, c.attrs, formula(l), outs[c.link], original[c.link])
			} else {
				writeValue(&cell, c.attrs, inputs[c.link], original[c.link])
			}
			if _, err := w.Write(cell.Bytes()); err != nil {
				return nil, err
			}
		}
		if _, err := w.Write(pp.pieces[len(pp.pieces)-1]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeOutput writes an OUTPUT cell: its formula, with the value this fill
// computed when that is a number or a boolean; a cell without a formula
// keeps its own content.
func writeOutput(b *bytes.Buffer, attrs, fo string, o wps.SheetOutput, original cellValue) {
	if fo == "" {
		writeValue(b, attrs, nil, original)
		return
	}
	var typ, v string
	if o.Err == "" {
		if n, err := strconv.ParseFloat(o.Value, 64); err == nil {
			v = strconv.FormatFloat(n, 'f', -1, 64)
		} else if o.Value == "TRUE" || o.Value == "FALSE" {
			typ, v = ` t="b"`, pick(o.Value == "TRUE", "1", "0")
		}
	}
	fmt.Fprintf(b, "<c%s%s><f>", attrs, typ)
	_ = xml.EscapeText(b, []byte(strings.TrimPrefix(fo, "=")))
	b.WriteString("</f>")
	if v != "" {
		b.WriteString("<v>" + v + "</v>")
	}
	b.WriteString("</c>")
}

// writeValue writes an INPUT cell with v, as setInput writes it into the
// calculating copy (nil: the cell's own content); text is always an
// inline string, so nothing of a write is kept outside its cell.
func writeValue(b *bytes.Buffer, attrs string, v any, original cellValue) {
	if v == nil {
		switch original.kind {
		case excelize.CellTypeSharedString, excelize.CellTypeInlineString:
			v = original.value
		case excelize.CellTypeBool:
			v = original.value == "1" || original.value == "TRUE"
		default:
			if original.value == "" {
				fmt.Fprintf(b, "<c%s></c>", attrs)
				return
			}
			if n, err := strconv.ParseFloat(original.value, 64); err == nil {
				v = n
			} else {
				v = original.value
			}
		}
	}
	switch v := v.(type) {
	case float64:
		fmt.Fprintf(b, "<c%s><v>%s</v></c>", attrs, strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		fmt.Fprintf(b, `<c%s t="b"><v>%s</v></c>`, attrs, pick(v, "1", "0"))
	case string:
		fmt.Fprintf(b, `<c%s t="inlineStr"><is><t xml:space="preserve">`, attrs)
		_ = xml.EscapeText(b, []byte(v))
		b.WriteString("</t></is></c>")
	}
}
