package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"

	"wps/internal/reports"
	"wps/internal/wps"
)

// The Reports pages (docs/reports.md): an org-wide overview, and each
// process's figures drawn as charts (SVG made here, each with its title
// and a table beside it) and exported as CSV.

type overviewData struct {
	O     reports.Overview
	Chart barChart
}

type reportData struct {
	R          reports.ProcessReport
	Name       string
	Throughput columnChart
	Waits      barChart
	Fills      barChart
}

// reportRange reads ?from=&to= (a bad one is the page's 422, naming it).
func (c *Console) reportRange(q *req) (reports.Range, error) {
	return c.reports.ParseRange(q.r.URL.Query().Get("from"), q.r.URL.Query().Get("to"))
}

func (c *Console) reportsOverview(q *req) error {
	rg, err := c.reportRange(q)
	if err != nil {
		return err
	}
	var d overviewData
	err = c.svc.ReadReport(q.ctx(), q.p, "", func(tx wps.Tx, procs []wps.Process) (err error) {
		d.O, err = c.reports.Overview(tx, q.p.OrgID, procs, rg)
		return err
	})
	if err != nil {
		return err
	}
	var bars []bar
	for _, p := range d.O.Processes {
		bars = append(bars, bar{Label: p.Name, Value: float64(p.Open)})
	}
	d.Chart = newBarChart(q.t("rep.openByProcess"), bars, "")
	c.render(q, http.StatusOK, "reports", q.t("nav.reports"), d)
	return nil
}

func (c *Console) processReport(q *req) (reportData, error) {
	rg, err := c.reportRange(q)
	if err != nil {
		return reportData{}, err
	}
	var d reportData
	err = c.svc.ReadReport(q.ctx(), q.p, q.r.PathValue("id"), func(tx wps.Tx, procs []wps.Process) (err error) {
		d.Name = procs[0].Label
		d.R, err = c.reports.Process(tx, procs[0], rg)
		return err
	})
	return d, err
}

func (c *Console) report(q *req) error {
	d, err := c.processReport(q)
	if err != nil {
		return err
	}
	d.Throughput = newColumnChart(q.t("rep.byDay"), d.R.Throughput)
	var waits, fills []bar
	for _, s := range d.R.Steps {
		waits = append(waits, bar{Label: s.Label, Value: seconds(s.WaitTime.P50)})
	}
	for _, s := range d.R.Seats {
		fills = append(fills, bar{Label: stepLabel(d.R, s.StepID) + " · " + s.PolicyName, Value: seconds(s.FillTime.P50)})
	}
	d.Waits = newBarChart(q.t("rep.waitByStep"), waits, "s")
	d.Fills = newBarChart(q.t("rep.fillBySeat"), fills, "s")
	c.render(q, http.StatusOK, "report", d.Name, d)
	return nil
}

// reportCSV is the process's figures as CSV, one figure a row.
func (c *Console) reportCSV(q *req) error {
	d, err := c.processReport(q)
	if err != nil {
		return err
	}
	w := q.w
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "report-"+d.R.From+"-"+d.R.To+".csv"))
	cw := csv.NewWriter(w)
	r := d.R
	row := func(figure, stepID, label, policy, day string, v string) {
		_ = cw.Write([]string{figure, stepID, label, policy, day, v})
	}
	row("figure", "stepId", "label", "policyName", "day", "value")
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	opt := func(v *int64) string {
		if v == nil {
			return ""
		}
		return n(*v)
	}
	f := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	row("created", "", "", "", "", n(r.Created))
	row("approved", "", "", "", "", n(r.Approved))
	row("rejected", "", "", "", "", n(r.Rejected))
	row("open", "", "", "", "", n(r.Open))
	row("cycleTime.p50", "", "", "", "", opt(r.CycleTime.P50))
	row("cycleTime.p90", "", "", "", "", opt(r.CycleTime.P90))
	row("cycleTime.mean", "", "", "", "", f(r.CycleTime.Mean))
	row("firstPassYield", "", "", "", "", f(r.FirstPassYield))
	for _, s := range r.Steps {
		row("step.reached", s.StepID, s.Label, "", "", n(s.Reached))
		row("step.consensed", s.StepID, s.Label, "", "", n(s.Consensed))
		row("step.overdue", s.StepID, s.Label, "", "", n(s.Overdue))
		row("step.rejections", s.StepID, s.Label, "", "", n(s.Rejections))
		row("step.waitTime.p50", s.StepID, s.Label, "", "", opt(s.WaitTime.P50))
		row("step.waitTime.p90", s.StepID, s.Label, "", "", opt(s.WaitTime.P90))
	}
	for _, s := range r.Seats {
		row("seat.fillTime.p50", s.StepID, stepLabel(r, s.StepID), s.PolicyName, "", opt(s.FillTime.P50))
		row("seat.fillTime.p90", s.StepID, stepLabel(r, s.StepID), s.PolicyName, "", opt(s.FillTime.P90))
	}
	for _, day := range r.Throughput {
		row("day.created", "", "", "", day.Day, n(day.Created))
		row("day.approved", "", "", "", day.Day, n(day.Approved))
	}
	cw.Flush()
	return nil
}

func stepLabel(r reports.ProcessReport, id string) string {
	for _, s := range r.Steps {
		if s.StepID == id {
			return s.Label
		}
	}
	return id
}

func seconds(v *int64) float64 {
	if v == nil {
		return 0
	}
	return float64(*v)
}

// bar is one bar of a chart.
type bar struct {
	Label string
	Value float64
	// Drawn by newBarChart: the bar's place and length.
	Y, W float64
	Text string
}

// barChart is a horizontal bar chart drawn as SVG.
type barChart struct {
	Title         string
	Bars          []bar
	Width, Height float64
	LabelW        float64
}

func newBarChart(title string, bars []bar, unit string) barChart {
	const labelW, plotW, rowH = 220.0, 360.0, 26.0
	ch := barChart{Title: title, Width: labelW + plotW + 90, Height: rowH*float64(len(bars)) + 10, LabelW: labelW}
	top := 0.0
	for _, b := range bars {
		top = max(top, b.Value)
	}
	for i, b := range bars {
		b.Y = 5 + rowH*float64(i)
		if top > 0 {
			b.W = plotW * b.Value / top
		}
		b.Text = strconv.FormatFloat(b.Value, 'f', -1, 64) + unit
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// dayColumn is one day of a column chart: two columns, created and approved.
type dayColumn struct {
	Day                   string
	Created, Approved     int64
	X, CH, CY, AX, AH, AY float64
}

// columnChart draws created and approved by day.
type columnChart struct {
	Title         string
	Columns       []dayColumn
	Width, Height float64
	Base          float64
	Max           int64
}

func newColumnChart(title string, days []reports.Day) columnChart {
	const plotH, colW = 160.0, 8.0
	ch := columnChart{Title: title, Width: 40 + float64(len(days))*(2*colW+4), Height: plotH + 30, Base: plotH + 10}
	for _, d := range days {
		ch.Max = max(ch.Max, d.Created, d.Approved)
	}
	for i, d := range days {
		c := dayColumn{Day: d.Day, Created: d.Created, Approved: d.Approved, X: 30 + float64(i)*(2*colW+4)}
		c.AX = c.X + colW
		if ch.Max > 0 {
			c.CH = plotH * float64(d.Created) / float64(ch.Max)
			c.AH = plotH * float64(d.Approved) / float64(ch.Max)
		}
		c.CY, c.AY = ch.Base-c.CH, ch.Base-c.AH
		ch.Columns = append(ch.Columns, c)
	}
	return ch
}

// slug makes an element id of a chart's title.
func slug(s string) string {
	b := []byte("chart-")
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b = append(b, byte(r))
		case r >= 'A' && r <= 'Z':
			b = append(b, byte(r-'A'+'a'))
		default:
			if b[len(b)-1] != '-' {
				b = append(b, '-')
			}
		}
	}
	return string(b)
}
