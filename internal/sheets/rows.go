package sheets

import (
	"bytes"
	"io"
	"slices"
	"strconv"

	"github.com/xuri/excelize/v2"
)

// RowLimits bound what ReadRows reads: a small file can claim a cell in
// the last of 16,384 columns on each of a million rows.
type RowLimits struct {
	MaxUnzipped int64 // the workbook's parts once unzipped
	MaxRows     int   // rows after the header
	MaxColumns  int   // the header's width
}

// ReadRows reads the first page of an .xlsx workbook row by row and calls
// fn with each row of cell text after the header (numbers and dates as
// stored, dates as serial days; booleans as TRUE or FALSE), the header
// first. A row is cut to the header's width, so what is held at once is one
// row; fn keeps what it needs. Errors: CodeInvalid ("file") for a file
// checkZip refuses or excelize cannot read, an empty first page, a header
// wider than MaxColumns, a value in a column without a header, more than
// MaxRows rows; and fn's errors.
func ReadRows(content []byte, lim RowLimits, fn func(header, row []string) error) error {
	if _, err := checkZip(content, lim.MaxUnzipped); err != nil {
		return err
	}
	f, err := excelize.OpenReader(bytes.NewReader(content), excelize.Options{UnzipSizeLimit: lim.MaxUnzipped, UnzipXMLSizeLimit: min(lim.MaxUnzipped, 16<<20)})
	if err != nil {
		return refuse("the workbook cannot be read: %v", err)
	}
	defer f.Close()
	pages := f.GetSheetList()
	if len(pages) == 0 {
		return refuse("the workbook has no worksheet")
	}
	it, err := f.Rows(pages[0])
	if err != nil {
		return refuse("the first page cannot be read: %v", err)
	}
	defer it.Close()
	var header []string
	rows := 0
	for n := 1; it.Next(); n++ {
		cells, err := it.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			return refuse("row %d cannot be read: %v", n, err)
		}
		width := len(cells)
		for width > 0 && cells[width-1] == "" {
			width--
		}
		if header == nil {
			if width == 0 {
				continue // blank rows above the header
			}
			if width > lim.MaxColumns {
				return refuse("the header row has %d columns; an import reads at most %d", width, lim.MaxColumns)
			}
			header = slices.Clone(cells[:width]) // not the row's backing array, which may be 16,384 wide
			continue
		}
		if width > len(header) {
			col, _ := excelize.ColumnNumberToName(width)
			return refuse("row %d has a value in column %s, which has no header", n, col)
		}
		if width == 0 {
			continue // a blank row
		}
		if rows++; rows > lim.MaxRows {
			return refuse("the first page has more than %d rows", lim.MaxRows)
		}
		if err := fn(header, cells[:width]); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return refuse("the first page cannot be read: %v", err)
	}
	if header == nil {
		return refuse("the first page is empty: an import needs a header row of parameter names")
	}
	return nil
}

// RowWriter builds a one-page workbook row by row (excelize's stream
// writer: rows past its buffer go to a temporary file, not to memory).
type RowWriter struct {
	f    *excelize.File
	sw   *excelize.StreamWriter
	next int
}

// NewRowWriter starts a workbook with a bold header row.
func NewRowWriter(header []string) (*RowWriter, error) {
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return nil, err
	}
	bold, err := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}})
	if err != nil {
		return nil, err
	}
	head := make([]any, len(header))
	for i, h := range header {
		head[i] = excelize.Cell{StyleID: bold, Value: h}
	}
	w := &RowWriter{f: f, sw: sw, next: 1}
	return w, w.Add(head)
}

// Add appends a row of float64, bool or string cells (nil: empty).
func (w *RowWriter) Add(row []any) error {
	err := w.sw.SetRow("A"+strconv.Itoa(w.next), row)
	w.next++
	return err
}

// WriteTo finishes the workbook into out and releases it.
func (w *RowWriter) WriteTo(out io.Writer) (int64, error) {
	defer w.f.Close()
	if err := w.sw.Flush(); err != nil {
		return 0, err
	}
	return w.f.WriteTo(out)
}
