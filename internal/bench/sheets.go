package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"

	"github.com/xuri/excelize/v2"
)

// sheetBench is a workbook of 200 formulas (SUM, IF, VLOOKUP, ROUND) over
// 10 inputs, and two processes whose one step writes 10 NUMBER values:
// with the sheet, 5 OUTPUT parameters are recalculated by each write;
// without, the 5 parameters stay empty. The same run measures both.
type sheetBench struct {
	withSheet, without string // process ids
}

// pricingBook builds the workbook: inputs in Calc!B1:B10, a rate table in
// Rates!A1:B50, formulas in Calc!C1:C200, each reading the one before.
func pricingBook() ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", "Calc"); err != nil {
		return nil, err
	}
	if _, err := f.NewSheet("Rates"); err != nil {
		return nil, err
	}
	for i := 1; i <= 50; i++ {
		_ = f.SetCellValue("Rates", fmt.Sprintf("A%d", i), i)
		_ = f.SetCellValue("Rates", fmt.Sprintf("B%d", i), 1+float64(i)/100)
	}
	for i := 1; i <= 200; i++ {
		in := fmt.Sprintf("B%d", 1+i%10)
		prev := "0"
		if i > 1 {
			prev = fmt.Sprintf("C%d", i-1)
		}
		var fo string
		switch i % 4 {
		case 0:
			fo = fmt.Sprintf("SUM(B1:B10)+%s/1000", prev)
		case 1:
			fo = fmt.Sprintf("IF(%s>50,%s*0.9,%s)+%s/1000", in, in, in, prev)
		case 2:
			fo = fmt.Sprintf("VLOOKUP(MOD(%s,50)+1,Rates!A1:B50,2,FALSE)*%s", in, prev)
		case 3:
			fo = fmt.Sprintf("ROUND(%s/3+%s,2)", prev, in)
		}
		if err := f.SetCellFormula("Calc", fmt.Sprintf("C%d", i), fo); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	err := f.Write(&buf)
	return buf.Bytes(), err
}

// seedSheets uploads the workbook and creates both processes.
func seedSheets(c *client, s *seeded) (*sheetBench, error) {
	book, err := pricingBook()
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", "pricing.xlsx")
	_, _ = part.Write(book)
	_ = w.Close()
	req, _ := http.NewRequest("POST", c.base+"/v1/sheets", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+s.adminKey)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var sheet struct{ ID string }
	if res.StatusCode != 201 {
		b, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("upload: %d %s", res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(&sheet); err != nil {
		return nil, err
	}
	sb := &sheetBench{}
	for _, linked := range []bool{true, false} {
		var params []map[string]any
		for i := 1; i <= 15; i++ {
			p := map[string]any{"name": fmt.Sprintf("v%d", i), "type": "NUMBER", "decimals": 2}
			if linked {
				sd := map[string]any{"sheetApiId": sheet.ID, "page": "Calc", "inputType": "INPUT", "cell": fmt.Sprintf("B%d", i)}
				if i > 10 {
					sd["inputType"], sd["cell"] = "OUTPUT", fmt.Sprintf("C%d", 185+3*(i-10))
				}
				p["sheetData"] = sd
			}
			params = append(params, p)
		}
		var proc struct{ ID string }
		name := map[bool]string{true: "Quote with sheet", false: "Quote without sheet"}[linked]
		if _, err := c.do("POST", "/v1/process", s.adminKey, map[string]any{"name": name, "steps": []map[string]any{
			{"label": "Quote", "policyNames": []string{"Inspector"}, "parameters": params}}}, &proc); err != nil {
			return nil, err
		}
		if linked {
			sb.withSheet = proc.ID
		} else {
			sb.without = proc.ID
		}
	}
	return sb, nil
}

// write is the inspector's simplified creation with 10 values.
func (sb *sheetBench) write(c *client, s *seeded, rng *rand.Rand, processID string) (int, error) {
	vals := map[string]any{}
	for i := 1; i <= 10; i++ {
		vals[fmt.Sprintf("v%d", i)] = float64(rng.IntN(10000)) / 100
	}
	return c.do("POST", "/v1/measurements/simplified", s.inspector, map[string]any{"processUuid": processID, "parameters": vals}, nil)
}
