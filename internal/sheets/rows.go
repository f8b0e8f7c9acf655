package sheets

import (
	"bytes"
	"io"
	"strconv"

	"github.com/xuri/excelize/v2"
)

// ReadRows reads the first page of an .xlsx workbook as rows of cell text:
// numbers and dates as stored (dates as serial days), booleans as TRUE or
// FALSE. Errors: CodeInvalid ("file") for a file checkZip refuses or
// excelize cannot read.
func ReadRows(content []byte, maxUnzipped int64) ([][]string, error) {
	if _, err := checkZip(content, maxUnzipped); err != nil {
		return nil, err
	}
	f, err := excelize.OpenReader(bytes.NewReader(content), excelize.Options{UnzipSizeLimit: maxUnzipped, UnzipXMLSizeLimit: min(maxUnzipped, 16<<20)})
	if err != nil {
		return nil, refuse("the workbook cannot be read: %v", err)
	}
	defer f.Close()
	pages := f.GetSheetList()
	if len(pages) == 0 {
		return nil, refuse("the workbook has no worksheet")
	}
	rows, err := f.GetRows(pages[0], excelize.Options{RawCellValue: true})
	if err != nil {
		return nil, refuse("the first page cannot be read: %v", err)
	}
	return rows, nil
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
