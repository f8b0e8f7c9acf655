package sheets

import (
	"bytes"
	"testing"

	"github.com/xuri/excelize/v2"

	"wps/internal/wps"
)

func workbook(t testing.TB, build func(f *excelize.File)) wps.SheetFile {
	t.Helper()
	f := excelize.NewFile()
	build(f)
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return wps.SheetFile{SHA256: sha(b), Load: func() ([]byte, error) { return b, nil }}
}

// A copy reused from the pool gives the same bytes as a fresh one for the
// same inputs: nothing of an earlier measurement stays in it, text that
// reads as a number included.
func TestFillReusesCleanCopies(t *testing.T) {
	file := workbook(t, func(f *excelize.File) {
		_ = f.SetCellValue("Sheet1", "B1", 7) // a default the inputs may replace
		_ = f.SetCellFormula("Sheet1", "C1", "A1*B1")
		_ = f.SetCellFormula("Sheet1", "C2", `A2&"!"`)
		// A shared formula: C3 anchors it for C3:C5.
		shared, ref := excelize.STCellFormulaTypeShared, "C3:C5"
		_ = f.SetCellFormula("Sheet1", "C3", "$A$1+B1", excelize.FormulaOpts{Type: &shared, Ref: &ref})
	})
	links := []wps.SheetLink{{Page: "Sheet1", Cell: "A1"}, {Page: "Sheet1", Cell: "B1"}, {Page: "Sheet1", Cell: "A2"},
		{Page: "Sheet1", Cell: "C1", Output: true}, {Page: "Sheet1", Cell: "C2", Output: true}, {Page: "Sheet1", Cell: "C4", Output: true}}
	want := []int{3, 4, 5}
	fill := func(x *XLSX, a, b, text any) wps.SheetFill {
		t.Helper()
		out, err := x.Fill(file, links, []any{a, b, text, nil, nil, nil}, want)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	used := New(Limits{})
	first := fill(used, 3.0, nil, "secret 42")
	if first.Outputs[3].Value != "21" || first.Outputs[4].Value != "secret 42!" || first.Outputs[5].Value != "3" {
		t.Fatalf("outputs: %v", first.Outputs)
	}
	fill(used, 2.0, 5.0, "0042") // text that reads as a number
	again := fill(used, 4.0, nil, "x")
	fresh := fill(New(Limits{}), 4.0, nil, "x")
	if again.SHA256 != fresh.SHA256 {
		t.Fatal("a reused copy differs from a fresh one")
	}
	if bytes.Contains(again.Content, []byte("secret")) || bytes.Contains(again.Content, []byte("0042")) {
		t.Fatal("an earlier measurement's input stayed in the copy")
	}
	if again.Outputs[3].Value != "28" || again.Outputs[5].Value != "4" { // B1 back to its default 7; C4 reads $A$1+B2
		t.Fatalf("outputs: %v", again.Outputs)
	}
	// The copy holds the inputs (text as written, markup and all), the
	// cells left to their own content, and the outputs with their formulas
	// and the values computed.
	marked := fill(used, 4.0, nil, `<b a="1">&amp;</b>`)
	f, err := excelize.OpenReader(bytes.NewReader(marked.Content))
	if err != nil {
		t.Fatal(err)
	}
	for cell, want := range map[string]string{"A1": "4", "B1": "7", "A2": `<b a="1">&amp;</b>`, "C1": "28", "C4": "4"} {
		if v, _ := f.GetCellValue("Sheet1", cell); v != want {
			t.Errorf("%s = %q, want %q", cell, v, want)
		}
	}
	for cell, want := range map[string]string{"C1": "A1*B1", "C2": `A2&"!"`, "C4": "$A$1+B2"} {
		if fo, _ := f.GetCellFormula("Sheet1", cell); fo != want {
			t.Errorf("%s's formula %q, want %q", cell, fo, want)
		}
	}
}

func TestParseArea(t *testing.T) {
	for ref, want := range map[string]area{
		"A1":      {"P", 1, 1, 1, 1},
		"$B$2:A1": {"P", 1, 1, 2, 2},
		"C:C":     {"P", 3, 1, 3, excelize.TotalRows},
		"2:3":     {"P", 1, 2, excelize.MaxColumns, 3},
	} {
		if got, ok := parseArea("P", ref); !ok || got != want {
			t.Errorf("%s: %v %v", ref, got, ok)
		}
	}
	if _, ok := parseArea("P", "Rate"); ok {
		t.Error("a defined name read as a cell")
	}
}

func TestSupported(t *testing.T) {
	for name, want := range map[string]bool{"SUM": true, "vlookup": true, "_xlfn.CONCAT": true, "Z.TEST": true, "NOSUCHFUNC": false, "CUBEVALUE": false} {
		if Supported(name) != want {
			t.Errorf("%s: want %v", name, want)
		}
	}
}

// Two links on one cell (two steps reading one total) cannot be cut out
// of a template: the copy is then written whole, with the same values.
func TestFillTwoLinksOnACell(t *testing.T) {
	file := workbook(t, func(f *excelize.File) { _ = f.SetCellFormula("Sheet1", "C1", "A1*2") })
	links := []wps.SheetLink{{Page: "Sheet1", Cell: "A1"}, {Page: "Sheet1", Cell: "C1", Output: true}, {Page: "Sheet1", Cell: "C1", Output: true}}
	out, err := New(Limits{}).Fill(file, links, []any{21.0, nil, nil}, []int{1, 2})
	if err != nil || out.Outputs[1].Value != "42" || out.Outputs[2].Value != "42" {
		t.Fatal(err, out.Outputs)
	}
	f, err := excelize.OpenReader(bytes.NewReader(out.Content))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.GetCellValue("Sheet1", "C1"); v != "42" {
		t.Fatalf("C1 = %q", v)
	}
}
