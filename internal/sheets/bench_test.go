package sheets

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xuri/excelize/v2"

	"wps/internal/wps"
)

// BenchmarkFill is one write's recalculation: 10 inputs into a workbook of
// 200 chained formulas (SUM, IF, VLOOKUP, ROUND), 5 outputs read, the
// filled copy written out.
func BenchmarkFill(b *testing.B) {
	file := workbook(b, func(f *excelize.File) {
		_, _ = f.NewSheet("Rates")
		for i := 1; i <= 50; i++ {
			_ = f.SetCellValue("Rates", fmt.Sprintf("A%d", i), i)
			_ = f.SetCellValue("Rates", fmt.Sprintf("B%d", i), 1+float64(i)/100)
		}
		for i := 1; i <= 200; i++ {
			in, prev := fmt.Sprintf("B%d", 1+i%10), "0"
			if i > 1 {
				prev = fmt.Sprintf("C%d", i-1)
			}
			fo := map[int]string{
				0: fmt.Sprintf("SUM(B1:B10)+%s/1000", prev),
				1: fmt.Sprintf("IF(%s>50,%s*0.9,%s)+%s/1000", in, in, in, prev),
				2: fmt.Sprintf("VLOOKUP(MOD(%s,50)+1,Rates!A1:B50,2,FALSE)*%s", in, prev),
				3: fmt.Sprintf("ROUND(%s/3+%s,2)", prev, in),
			}[i%4]
			_ = f.SetCellFormula("Sheet1", fmt.Sprintf("C%d", i), fo)
		}
	})
	var links []wps.SheetLink
	var want []int
	for i := 1; i <= 10; i++ {
		links = append(links, wps.SheetLink{Page: "Sheet1", Cell: fmt.Sprintf("B%d", i)})
	}
	for i := 1; i <= 5; i++ {
		want = append(want, len(links))
		links = append(links, wps.SheetLink{Page: "Sheet1", Cell: fmt.Sprintf("C%d", 185+3*i), Output: true})
	}
	x := New(Limits{})
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		inputs := make([]any, len(links))
		for i := range 10 {
			inputs[i] = float64(rng.IntN(10000)) / 100
		}
		out, err := x.Fill(file, links, inputs, want)
		if err != nil || out.Outputs[want[0]].Err != "" {
			b.Fatal(err, out.Outputs)
		}
	}
}
