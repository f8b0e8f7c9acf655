package httpapi_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"wps/internal/sheets"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// pricing is the workbook of the tests: inputs on page Inputs, a rate table
// on page Rates, and a chain of formulas (SUM, VLOOKUP, ROUND, IF).
func pricing(t *testing.T) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.SetSheetName("Sheet1", "Inputs"))
	_, err := f.NewSheet("Rates")
	must(err)
	for i, r := range []struct {
		code string
		rate float64
	}{{"A", 0.1}, {"B", 0.2}, {"C", 0}} {
		must(f.SetCellValue("Rates", "A"+string(rune('1'+i)), r.code))
		must(f.SetCellValue("Rates", "B"+string(rune('1'+i)), r.rate))
	}
	must(f.SetCellValue("Inputs", "A1", "Quantity"))
	must(f.SetCellValue("Inputs", "B3", "A")) // the default code
	for cell, fo := range map[string]string{
		"B5":  "SUM(B1*B2)",
		"B6":  "VLOOKUP(B3,Rates!A1:B3,2,FALSE)",
		"B7":  "ROUND(B5*(1-B6),2)",
		"B8":  `IF(B7>1000,"REVIEW","OK")`,
		"B9":  "B1/B4",
		"B10": "SUM(B5:B7)",
	} {
		must(f.SetCellFormula("Inputs", cell, fo))
	}
	var buf bytes.Buffer
	must(f.Write(&buf))
	return buf.Bytes()
}

// rezip copies a workbook's parts and adds extra ones.
func rezip(t *testing.T, content []byte, extra map[string][]byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if _, replaced := extra[f.Name]; replaced {
			continue
		}
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range extra {
		w, _ := zw.Create(name)
		_, _ = w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// data is the values and errors of an action's data items by parameter name.
func sheetData(a map[string]any) (vals, errs map[string]string) {
	vals, errs = map[string]string{}, map[string]string{}
	for _, d := range a["data"].([]any) {
		item := d.(map[string]any)["dataItems"].([]any)[0].(map[string]any)
		name := item["param"].(map[string]any)["name"].(string)
		if e, ok := item["error"].(string); ok {
			errs[name] = e
		} else {
			vals[name] = item["value"].(string)
		}
	}
	return vals, errs
}

func TestSheets(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine, tu.Options{Sheets: sheets.Limits{MaxUnzippedBytes: 4 << 20}})
		book := pricing(t)
		res := uploadTo(t, env, "/v1/sheets", env.AdminKey, "file", "pricing.xlsx", book)
		if res.Status != 201 {
			t.Fatalf("upload: %d %s", res.Status, res.Body)
		}
		sh := res.JSON()
		id := sh["id"].(string)
		sum := sha256.Sum256(book)
		if sh["kind"] != "XLSX" || sh["name"] != "pricing.xlsx" || sh["sha256"] != hex.EncodeToString(sum[:]) || strings.Join(strs(sh["pages"]), ",") != "Inputs,Rates" {
			t.Fatalf("sheet: %v", sh)
		}
		if got := env.Do(tu.Request{Method: get, Path: "/v1/sheets/" + id + "/content", Key: env.AdminKey}); got.Status != 200 || !bytes.Equal(got.Body, book) {
			t.Fatalf("content: %d", got.Status)
		}
		if list := env.Call(get, "/v1/sheets", env.AdminKey, nil, 200).JSON(); len(list["data"].([]any)) != 1 {
			t.Fatalf("list: %v", list)
		}

		t.Run("bad workbooks are refused at upload", func(t *testing.T) {
			var bomb bytes.Buffer
			zw := zip.NewWriter(&bomb)
			w, _ := zw.Create("xl/workbook.xml")
			_, _ = w.Write(bytes.Repeat([]byte{' '}, 8<<20))
			_ = zw.Close()
			loop := excelize.NewFile()
			_ = loop.SetCellFormula("Sheet1", "A1", "B1+1")
			_ = loop.SetCellFormula("Sheet1", "B1", "A1+1")
			var looped bytes.Buffer
			_ = loop.Write(&looped)
			for name, c := range map[string]struct {
				content []byte
				want    string
			}{
				"text":      {[]byte("qty,price\n1,2\n"), "not an .xlsx"},
				"encrypted": {append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 600)...), "encrypted"},
				"bomb":      {bomb.Bytes(), "unzips to"},
				"macros":    {rezip(t, book, map[string][]byte{"xl/vbaProject.bin": []byte("x")}), "macros"},
				"links":     {rezip(t, book, map[string][]byte{"xl/externalLinks/externalLink1.xml": []byte("<x/>")}), "external links"},
				"corrupt":   {rezip(t, book, map[string][]byte{"xl/workbook.xml": []byte("<workbook")}), "cannot be read"},
				"circular":  {looped.Bytes(), "circular reference: Sheet1!A1 → Sheet1!B1 → Sheet1!A1"},
			} {
				p := tu.Problem(t, uploadTo(t, env, "/v1/sheets", env.AdminKey, "file", name+".xlsx", c.content), 422, "file")
				if !strings.Contains(p["detail"].(string), c.want) {
					t.Errorf("%s: %v", name, p["detail"])
				}
			}
		})

		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		work := []string{"measurement:read", "action:write", "action:approve"}
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Checker", "roles": []string{"CHECKER"}, "functions": work}, 201)
		_, checker := member(t, env, "carla@example.com", "CHECKER")
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Viewer", "roles": []string{"VIEWER"}, "functions": []string{"measurement:read"}}, 201)
		_, viewer := member(t, env, "vera@example.com", "VIEWER")
		link := func(name, typ, inout, cell, formula string) map[string]any {
			p := map[string]any{"name": name, "type": typ, "sheetData": map[string]any{"sheetApiId": id, "page": "Inputs", "cell": cell, "inputType": inout, "formula": formula}}
			if typ == "NUMBER" {
				p["decimals"] = 2
			}
			return p
		}
		params := func(extra ...map[string]any) []map[string]any {
			return append([]map[string]any{
				withHidden(link("qty", "NUMBER", "INPUT", "B1", ""), "Viewer"),
				link("price", "NUMBER", "INPUT", "B2", ""),
				link("code", "TEXT", "INPUT", "B3", ""),
				link("total", "NUMBER", "OUTPUT", "B7", ""),
				link("flag", "TEXT", "OUTPUT", "B8", ""),
				link("ratio", "NUMBER", "OUTPUT", "B9", ""),
				link("withTax", "NUMBER", "OUTPUT", "C1", "=B7*1.1"),
				{"name": "net", "type": "FORMULA", "computedFormula": []string{"total", "-", "1"}},
			}, extra...)
		}
		process := func(ps []map[string]any) map[string]any {
			return map[string]any{"name": "Quote", "steps": []any{
				map[string]any{"label": "Order", "policyNames": []string{"Admins", "Checker"}, "orderedPolicies": []string{"Admins", "Checker"}, "parameters": ps},
				map[string]any{"label": "Review", "policyNames": []string{"Admins"}, "stepIdsDependencies": []string{"Order"}},
			}}
		}

		t.Run("links are checked when the process is saved", func(t *testing.T) {
			for field, p := range map[string]map[string]any{
				"sheetData.sheetApiId": {"name": "x", "type": "NUMBER", "sheetData": map[string]any{"sheetApiId": "00000000-0000-0000-0000-000000000000", "cell": "A1", "inputType": "INPUT"}},
				"sheetData.page":       {"name": "x", "type": "NUMBER", "sheetData": map[string]any{"sheetApiId": id, "page": "Totals", "cell": "A1", "inputType": "INPUT"}},
				"sheetData.cell":       link("x", "NUMBER", "INPUT", "B7", ""), // a formula cell
				"sheetData.formula":    link("x", "NUMBER", "OUTPUT", "D1", "=SUM(B1"),
				"sheetData.inputType":  link("x", "ATTACHMENT", "OUTPUT", "D1", ""),
			} {
				tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: process(params(p))}), 422, "steps[0].parameters[8]."+field)
			}
			for want, formula := range map[string]string{"NOSUCHFUNC": "=NOSUCHFUNC(B1)", "depends on itself": "=D1+B7", "page \"Nope\"": "=Nope!A1"} {
				p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: process(params(link("x", "NUMBER", "OUTPUT", "D1", formula)))}),
					422, "steps[0].parameters[8].sheetData.formula")
				if !strings.Contains(p["detail"].(string), want) {
					t.Errorf("%s: %v", formula, p["detail"])
				}
			}
			tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: process(params(link("x", "NUMBER", "INPUT", "ZZ", "")))}),
				422, "steps[0].parameters[8].sheetData.cell")
		})

		proc := env.Call(post, "/v1/process", env.AdminKey, process(params()), 201).JSON()
		order, review := steps(proc)[0]["id"].(string), steps(proc)[1]["id"].(string)
		tu.Problem(t, env.Do(tu.Request{Method: del, Path: "/v1/sheets/" + id, Key: env.AdminKey}), 409, "")

		// Inputs flow in, the chain of formulas flows out; a formula error
		// leaves the value empty with its reason.
		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc["id"],
			"parameters": map[string]any{"qty": 3, "price": 100}}, 201).JSON()
		mid := m["id"].(string)
		full := env.Call(get, "/v1/measurements/"+mid, env.AdminKey, nil, 200).JSON()
		st := steps(full["process"].(map[string]any))[0]
		if st["hasGSheetKey"] != true || st["hasGSheetInputParameter"] != true {
			t.Fatalf("step flags: %v %v", st["hasGSheetKey"], st["hasGSheetInputParameter"])
		}
		first := full["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)
		vals, errs := sheetData(first)
		if vals["total"] != "270" || vals["flag"] != "OK" || vals["withTax"] != "297" || vals["net"] != "269" || !strings.HasPrefix(errs["ratio"], "#DIV/0!") {
			t.Fatalf("computed: %v %v", vals, errs)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/measurements/" + mid + "/actions", Key: checker,
			Body: map[string]any{"stepId": order, "type": "WRITE_DATA", "parameters": map[string]any{"total": 1}}}), 422, "parameters.total")

		// A second write recomputes over its own and the earlier inputs.
		a := env.Call(post, "/v1/measurements/"+mid+"/actions", checker, map[string]any{"stepId": order, "type": "WRITE_DATA",
			"parameters": map[string]any{"qty": 5, "code": "B"}, "observation": "recounted"}, 201).JSON() // a changed value states its reason
		if vals, _ := sheetData(a); vals["total"] != "400" || vals["withTax"] != "440" {
			t.Fatalf("rewrite: %v", vals)
		}

		// A rejection re-opens Order; the rework recomputes without the
		// superseded inputs.
		env.Call(post, "/v1/measurements/"+mid+"/actions", env.AdminKey, map[string]any{"stepId": review, "type": "REJECTION", "observation": "too cheap"}, 201)
		a = env.Call(post, "/v1/measurements/"+mid+"/actions", env.AdminKey, map[string]any{"stepId": order, "type": "WRITE_DATA",
			"parameters": map[string]any{"qty": 20, "price": 100, "code": "C"}}, 201).JSON()
		if vals, _ := sheetData(a); vals["total"] != "2000" || vals["flag"] != "REVIEW" || vals["withTax"] != "2200" {
			t.Fatalf("rework: %v", vals)
		}
		evidence := a["sheets"].([]any)[0].(map[string]any)

		// The filled copy holds the inputs and computed values, and its
		// hash is the one the action recorded.
		got := env.Do(tu.Request{Method: get, Path: "/v1/measurements/" + mid + "/sheets/" + id, Key: env.AdminKey})
		gotSum := sha256.Sum256(got.Body)
		if got.Status != 200 || evidence["sheetApiId"] != id || evidence["sha256"] != hex.EncodeToString(gotSum[:]) || got.Header.Get("ETag") != `"`+evidence["sha256"].(string)+`"` {
			t.Fatalf("filled copy: %d %v %s", got.Status, evidence, got.Header.Get("ETag"))
		}
		f, err := excelize.OpenReader(bytes.NewReader(got.Body))
		if err != nil {
			t.Fatal(err)
		}
		for cell, want := range map[string]string{"B1": "20", "B2": "100", "B3": "C", "B7": "2000", "C1": "2200"} {
			if v, _ := f.GetCellValue("Inputs", cell); v != want {
				t.Errorf("filled %s = %q, want %q", cell, v, want)
			}
		}
		if fo, _ := f.GetCellFormula("Inputs", "C1"); fo != "B7*1.1" {
			t.Errorf("C1 formula %q", fo)
		}
		// A reader who may not see an input sees neither the OUTPUTs computed
		// from it nor the filled copy.
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements/" + mid + "/sheets/" + id, Key: viewer}), 404, "")
		seen := env.Call(get, "/v1/measurements/"+mid, viewer, nil, 200).JSON()
		for _, act := range seen["process"].(map[string]any)["actions"].([]any) {
			if vals, errs := sheetData(act.(map[string]any)); vals["qty"] != "" || vals["total"] != "" || vals["withTax"] != "" || errs["ratio"] != "" {
				t.Fatalf("the viewer sees %v %v", vals, errs)
			}
		}

		// The ledger still verifies with the evidence in the data.
		if v := env.Call(get, "/v1/ledger/verify", env.AdminKey, nil, 200).JSON(); v["ok"] != true {
			t.Fatalf("ledger: %v", v)
		}

		// The evidence bundle holds the filled copy, as downloaded.
		if files := bundleChecked(t, env, env.AdminKey, mid, "workbooks/"+id+".xlsx"); !bytes.Equal(files["workbooks/"+id+".xlsx"], got.Body) {
			t.Fatalf("the bundle's workbook is not the filled copy")
		}

		// Deleting: refused while the process links the sheet.
		env.Call(del, "/v1/process/"+proc["id"].(string), env.AdminKey, nil, 204)
		env.Call(del, "/v1/sheets/"+id, env.AdminKey, nil, 204)
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/sheets/" + id, Key: env.AdminKey}), 404, "")
	})
}

// A calculation over the time limit is refused when the process is saved.
func TestSheetCalcLimit(t *testing.T) {
	env := tu.NewEnv(t, sqlstore.SQLite, tu.Options{Sheets: sheets.Limits{CalcTimeout: time.Nanosecond}})
	id := uploadTo(t, env, "/v1/sheets", env.AdminKey, "file", "pricing.xlsx", pricing(t)).JSON()["id"]
	env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	p := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: map[string]any{"name": "Slow", "steps": []any{
		map[string]any{"label": "Order", "policyNames": []string{"Admins"}, "parameters": []any{map[string]any{"name": "total", "type": "NUMBER",
			"sheetData": map[string]any{"sheetApiId": id, "page": "Inputs", "cell": "B10", "inputType": "OUTPUT"}}}}}}}), 422, "steps[0].parameters[0].sheetData.cell")
	if !strings.Contains(p["detail"].(string), "took longer than") {
		t.Fatalf("detail: %v", p["detail"])
	}
}

// A workbook is recalculated with no transaction open: while one write's
// recalculation is held, other writes commit (on SQLite they would wait
// for the one writer), another recalculation among them, and the held
// write then completes with its outputs.
func TestSheetFillOutsideTheWriter(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		var hold atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		env := tu.NewEnv(t, engine, tu.Options{BeforeFill: func() {
			if hold.CompareAndSwap(true, false) {
				close(entered)
				<-release
			}
		}})
		id := uploadTo(t, env, "/v1/sheets", env.AdminKey, "file", "pricing.xlsx", pricing(t)).JSON()["id"]
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		link := func(name, inout, cell string) map[string]any {
			return map[string]any{"name": name, "type": "NUMBER", "sheetData": map[string]any{"sheetApiId": id, "page": "Inputs", "cell": cell, "inputType": inout}}
		}
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Quote", "steps": []any{map[string]any{"label": "Order", "policyNames": []string{"Admins"},
			"parameters": []any{link("qty", "INPUT", "B1"), link("price", "INPUT", "B2"), link("total", "OUTPUT", "B7")}}}}, 201).JSON()
		create := func(qty int) *tu.Response {
			return env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
				Body: map[string]any{"processUuid": proc["id"], "parameters": map[string]any{"qty": qty, "price": 10}}})
		}
		total := func(res *tu.Response) string {
			t.Helper()
			if res.Status != 201 {
				t.Fatalf("create: %d %s", res.Status, res.Body)
			}
			m := env.Call(get, "/v1/measurements/"+res.JSON()["id"].(string), env.AdminKey, nil, 200).JSON()
			vals, _ := sheetData(m["process"].(map[string]any)["actions"].([]any)[0].(map[string]any))
			return vals["total"]
		}
		hold.Store(true)
		held := make(chan *tu.Response, 1)
		go func() { held <- create(3) }()
		<-entered
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Others", "roles": []string{"OTHER"}}, 201)
		if got := total(create(5)); got != "45" {
			t.Errorf("the write beside the held one: total %q", got)
		}
		close(release)
		if got := total(<-held); got != "27" {
			t.Errorf("the held write: total %q", got)
		}
	})
}

func withHidden(p map[string]any, policies ...string) map[string]any {
	p["advancedOptions"] = map[string]any{"hiddenFrom": policies}
	return p
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// Entity records go out to and come back from .xlsx workbooks.
func TestRecordsXLSX(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		e := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "Supplier", "parameters": []map[string]any{
			{"name": "name", "label": "Name", "type": "TEXT"}, {"name": "rating", "label": "Rating", "type": "NUMBER"},
			{"name": "active", "label": "Active", "type": "BOOLEAN"}, {"name": "since", "label": "Since", "type": "DATE"}}}, 201).JSON()
		path := "/v1/entities/" + e["id"].(string) + "/records"
		env.Call(post, path, env.AdminKey, map[string]any{"values": map[string]any{"name": "Açores Lda", "rating": 4.5, "active": true, "since": "2024-02-29"}}, 201)

		got := env.Do(tu.Request{Method: get, Path: path + ":export?format=xlsx", Key: env.AdminKey})
		if got.Status != 200 || got.Header.Get("Content-Type") != "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" {
			t.Fatalf("export: %d %v %s", got.Status, got.Header, got.Body)
		}
		f, err := excelize.OpenReader(bytes.NewReader(got.Body))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := f.GetRows("Sheet1")
		if len(rows) != 2 || strings.Join(rows[0], ",") != "id,name,rating,active,since,createdAt,updatedAt" ||
			rows[1][1] != "Açores Lda" || rows[1][2] != "4.5" || rows[1][3] != "TRUE" || rows[1][4] != "2024-02-29" {
			t.Fatalf("exported rows: %v", rows)
		}

		// A workbook made by hand: labels as headers, a real date cell.
		in := excelize.NewFile()
		_ = in.SetSheetRow("Sheet1", "A1", &[]any{"Name", "Rating", "Active", "Since"})
		_ = in.SetSheetRow("Sheet1", "A2", &[]any{"Bergen AS", 3, false, time.Date(2023, 5, 1, 0, 0, 0, 0, time.UTC)})
		_ = in.SetSheetRow("Sheet1", "A3", &[]any{"Čapek s.r.o.", 5})
		var buf bytes.Buffer
		_ = in.Write(&buf)
		xlsx := map[string]string{"Content-Type": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
		res := env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: buf.Bytes(), Header: xlsx})
		if res.Status != 200 || res.JSON()["imported"] != float64(2) {
			t.Fatalf("import: %d %s", res.Status, res.Body)
		}
		list := env.Call(get, path+"?filter[name]=Bergen%20AS", env.AdminKey, nil, 200).JSON()["data"].([]any)
		if len(list) != 1 {
			t.Fatalf("imported: %v", list)
		}
		vals := list[0].(map[string]any)["values"].(map[string]any)
		if vals["rating"] != float64(3) || vals["active"] != false || vals["since"] != "2023-05-01" {
			t.Fatalf("imported values: %v", vals)
		}
		// The export imports as is (the id and time columns are ignored).
		res = env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: got.Body, Header: xlsx})
		if res.Status != 200 || res.JSON()["imported"] != float64(1) {
			t.Fatalf("re-import: %d %s", res.Status, res.Body)
		}
		tu.Problem(t, env.Do(tu.Request{Method: post, Path: path + ":import", Key: env.AdminKey, Body: []byte("name\nx\n"), Header: xlsx}), 422, "file")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: path + ":export?format=ods", Key: env.AdminKey}), 422, "format")
	})
}

// GET /v1/measurements:export: one row per measurement, one column per
// parameter, hidden values left out, as CSV or a workbook.
func TestMeasurementsExport(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		env := tu.NewEnv(t, engine)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Viewer", "roles": []string{"VIEWER"}, "functions": []string{"measurement:read"}}, 201)
		_, viewer := member(t, env, "vera@example.com", "VIEWER")
		proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Check", "steps": []any{map[string]any{"label": "Inspect", "policyNames": []string{"Admins"},
			"parameters": []map[string]any{{"name": "asset", "type": "TEXT"}, withHidden(map[string]any{"name": "cost", "type": "NUMBER"}, "Viewer")}}}}, 201).JSON()
		for _, asset := range []string{"P-1", "P-2, north"} {
			env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": proc["id"], "parameters": map[string]any{"asset": asset, "cost": 12.5}}, 201)
		}
		path := "/v1/measurements:export?processId=" + proc["id"].(string)
		got := env.Call(get, path, env.AdminKey, nil, 200)
		lines := strings.Split(strings.TrimSpace(string(got.Body)), "\n")
		if len(lines) != 3 || lines[0] != "id,name,status,createdAt,updatedAt,Inspect.asset,Inspect.cost" ||
			!strings.Contains(string(got.Body), `,"P-2, north",12.5`) || !strings.Contains(string(got.Body), ",P-1,12.5") {
			t.Fatalf("csv:\n%s", got.Body)
		}
		if seen := string(env.Call(get, path, viewer, nil, 200).Body); strings.Contains(seen, "12.5") || !strings.Contains(seen, "P-1,") {
			t.Fatalf("the viewer's export:\n%s", seen)
		}
		x := env.Call(get, path+"&format=xlsx", env.AdminKey, nil, 200)
		f, err := excelize.OpenReader(bytes.NewReader(x.Body))
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := f.GetRows("Sheet1")
		if len(rows) != 3 || rows[0][6] != "Inspect.cost" || rows[1][6] != "12.5" {
			t.Fatalf("xlsx: %v", rows)
		}
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements:export?processId=00000000-0000-0000-0000-000000000000", Key: env.AdminKey}), 404, "")
		tu.Problem(t, env.Do(tu.Request{Method: get, Path: "/v1/measurements:export", Key: env.AdminKey}), 422, "processId")
	})
}
