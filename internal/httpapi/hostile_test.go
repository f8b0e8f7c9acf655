package httpapi_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// workbook is a minimal .xlsx whose first page's XML is sheet (the rows
// inside <sheetData>), built by hand so that a test can say what a
// spreadsheet program would not write.
func workbook(t *testing.T, sheet string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, part := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		{"xl/worksheets/sheet1.xml", sheet},
	} {
		w, err := z.Create(part.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(part.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sheetXML wraps rows in a worksheet, with text cells written inline.
func sheetXML(prolog, rows string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>` + prolog + `<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>` + rows + `</sheetData></worksheet>`
}

func textCell(ref, text string) string {
	return `<c r="` + ref + `" t="inlineStr"><is><t>` + text + `</t></is></c>`
}

// peakHeap runs fn while sampling the heap, and returns the most it held.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	fn()
	close(done)
	return peak.Load()
}

// TestHostileWorkbooks: a workbook within the upload's size limits that
// claims more than it holds, or cannot be read, answers 422 naming the file
// and writes nothing, without the server holding more than a bounded heap.
func TestHostileWorkbooks(t *testing.T) {
	tu.ForEachEngineAlone(t, func(t *testing.T, engine sqlstore.Engine) {
		env, entity := importSetup(t, engine)
		xlsx := map[string]string{"Content-Type": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
		send := func(content []byte) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: "/v1/entities/" + entity + "/records:import", Key: env.AdminKey, Body: string(content), Header: xlsx})
		}
		header := `<row r="1">` + textCell("A1", "tag") + `</row>`

		// 20,000 rows, each with one cell in the last column (XFD): 16,384 columns a row if padded.
		var rows strings.Builder
		rows.WriteString(header)
		for r := 2; r <= 20_001; r++ {
			fmt.Fprintf(&rows, `<row r="%d">%s</row>`, r, textCell(fmt.Sprintf("XFD%d", r), "x"))
		}
		wide := workbook(t, sheetXML("", rows.String()))
		if len(wide) > 200_000 {
			t.Fatalf("the hostile workbook is %d bytes: it should be small", len(wide))
		}
		runtime.GC()
		var res *tu.Response
		peak := peakHeap(func() { res = send(wide) })
		tu.Problem(t, res, 422, "file")
		if !strings.Contains(string(res.Body), "column XFD") {
			t.Fatalf("the answer does not say which column: %s", res.Body)
		}
		const limit = 512 << 20 // the heap of the whole test binary (no other test runs beside it)
		if peak > limit {
			t.Fatalf("the server held %d MiB of heap reading a %d-byte workbook (limit %d MiB)", peak>>20, len(wide), limit>>20)
		}
		t.Logf("%d-byte workbook of 20,000 cells at XFD: peak heap %d MiB", len(wide), peak>>20)

		for _, c := range []struct {
			name, sheet, says string
		}{
			{"a header wider than an import reads", sheetXML("", `<row r="1">`+textCell("A1", "tag")+textCell("ALN1", "far")+`</row>`), "at most 1000"},
			{"an empty page", sheetXML("", ""), "header row"},
			{"a NUL character reference", sheetXML("", header+`<row r="2">`+textCell("A2", "P-9&#0;")+`</row>`), ""},
			{"entities defined in a DTD (billion laughs)", sheetXML(`<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>`,
				header+`<row r="2">`+textCell("A2", "&lol2;")+`</row>`), ""},
			{"an external entity (XXE)", sheetXML(`<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>`, header+`<row r="2">`+textCell("A2", "&xxe;")+`</row>`), ""},
			{"not XML", "PK not a worksheet <", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := send(workbook(t, c.sheet))
				tu.Problem(t, res, 422, "file")
				if !strings.Contains(string(res.Body), c.says) {
					t.Fatalf("the answer does not say %q: %s", c.says, res.Body)
				}
			})
		}
		t.Run("an external link stored outside xl/externalLinks", func(t *testing.T) {
			wb := workbook(t, sheetXML("", header))
			res := send(withPart(t, wb, "xl/other/link1.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
				`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLink" Target="other.xml"/></Relationships>`, false))
			tu.Problem(t, res, 422, "file")
		})
		t.Run("a part larger than its zip entry says", func(t *testing.T) {
			big := sheetXML("", header+strings.Repeat(`<row>`+textCell("A2", "P-7")+`</row>`, 2000))
			tu.Problem(t, send(withPart(t, workbook(t, sheetXML("", header)), "xl/worksheets/sheet1.xml", big, true)), 422, "file")
		})
		if n := seen(t, env, entity); n != 2 {
			t.Fatalf("%d records after refused imports, want the 2 there were", n)
		}
	})
}

// withPart is the workbook wb with the part name added or replaced; lie
// stores it deflated with an uncompressed size of 100 bytes in its header.
func withPart(t *testing.T, wb []byte, name, body string, lie bool) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(wb), int64(len(wb)))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, f := range zr.File {
		if f.Name == name {
			continue
		}
		if err := z.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	if !lie {
		w, err := z.Create(name)
		if err == nil {
			_, err = w.Write([]byte(body))
		}
		if err != nil {
			t.Fatal(err)
		}
	} else {
		var deflated bytes.Buffer
		fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
		_, _ = fw.Write([]byte(body))
		_ = fw.Close()
		w, err := z.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE([]byte(body)),
			CompressedSize64: uint64(deflated.Len()), UncompressedSize64: 100})
		if err == nil {
			_, err = w.Write(deflated.Bytes())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
