package console_test

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// TestConsoleReports: the Reports page lists the processes and draws its
// charts as SVG, each with a title and a table beside it; a process's
// report exports its figures as CSV; people without both functions see
// neither the page nor its link.
func TestConsoleReports(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		c := newClient(t, o.env.Server.URL)
		c.signIn("ines@example.com")
		res, page := c.do(get, "/reports", nil)
		if res.StatusCode != 200 || !strings.Contains(page, `href="/reports" aria-current="page"`) {
			t.Fatalf("overview: %d, no current Reports link in %s", res.StatusCode, page)
		}
		if !strings.Contains(page, `<title id="chart-open-measurements-by-process">Open measurements by process</title>`) ||
			!strings.Contains(page, `<th scope="col">Median cycle time (s)</th>`) || !strings.Contains(page, `href="/reports/`+o.process+`?from=`) {
			t.Fatalf("overview without its chart, table or link: %s", page)
		}

		res, page = c.do(get, "/reports/"+o.process, nil)
		if res.StatusCode != 200 {
			t.Fatalf("report: %d %s", res.StatusCode, page)
		}
		for _, title := range []string{"Created and approved by day", "Median wait by step", "Median fill time by seat"} {
			if strings.Count(page, ">"+title+"</title>") != 1 || !strings.Contains(page, "<caption>"+title+"</caption>") {
				t.Fatalf("no chart titled %q with its table: %s", title, page)
			}
		}
		if strings.Count(page, "<svg role=\"img\"") < 3 {
			t.Fatalf("charts: %s", page)
		}

		res, body := c.do(get, "/reports/"+o.process+"/csv", nil)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("csv: %d %v", res.StatusCode, res.Header)
		}
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil || len(rows) < 9 || strings.Join(rows[0], ",") != "figure,stepId,label,policyName,day,value" {
			t.Fatalf("csv: %v %q", err, body)
		}
		if rows[1][0] != "created" || rows[1][5] == "0" {
			t.Fatalf("csv's created: %v", rows[1])
		}
		if res, _ := c.do(get, "/reports?from=2026-02-30", nil); res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("bad from: %d", res.StatusCode)
		}

		person(t, o.env, "nobody@example.com", "NOBODY")
		n := newClient(t, o.env.Server.URL)
		n.signIn("nobody@example.com")
		if res, page := n.do(get, "/reports", nil); res.StatusCode != http.StatusForbidden || strings.Contains(page, `href="/reports"`) {
			t.Fatalf("without the functions: %d", res.StatusCode)
		}
	})
}

// TestReportCSVLinkKeepsRange: a process's report for chosen dates links
// its CSV with those dates, and the CSV followed is of that range.
func TestReportCSVLinkKeepsRange(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		c := newClient(t, o.env.Server.URL)
		c.signIn("ines@example.com")
		res, page := c.do(get, "/reports/"+o.process+"?from=2026-01-02&to=2026-01-20", nil)
		if res.StatusCode != 200 {
			t.Fatalf("report: %d %s", res.StatusCode, page)
		}
		_, rest, _ := strings.Cut(page, `<a href="/reports/`+o.process+`/csv`)
		link, _, _ := strings.Cut(rest, `"`)
		res, _ = c.do(get, "/reports/"+o.process+"/csv"+strings.ReplaceAll(link, "&amp;", "&"), nil)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Disposition"), `"report-2026-01-02-2026-01-20.csv"`) {
			t.Fatalf("csv link %q: %d %v", link, res.StatusCode, res.Header)
		}
	})
}
