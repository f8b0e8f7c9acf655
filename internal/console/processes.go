package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"wps/internal/wps"
)

type processesData struct {
	Items    []wps.Process
	Deleted  []wps.Process // to a user who may restore them
	CanStart bool
	CanWrite bool // may design processes
}

func (c *Console) processes(q *req) error {
	list, _, err := c.svc.ListProcesses(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 200}, q.r.URL.Query().Get("q"))
	if err != nil {
		return err
	}
	d := processesData{Items: list, CanStart: q.p.Can(wps.FnMeasurementCreate), CanWrite: q.p.Can(wps.FnProcessWrite)}
	if d.CanWrite {
		if d.Deleted, _, err = c.svc.ListDeletedProcesses(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 200}, ""); err != nil {
			return err
		}
	}
	c.render(q, http.StatusOK, "processes", q.t("nav.processes"), d)
	return nil
}

// restoreProcess brings a deleted process back (the service says when it
// cannot: its code or label taken meanwhile).
func (c *Console) restoreProcess(q *req) error {
	p, err := c.svc.RestoreProcess(q.ctx(), q.p, q.r.PathValue("id"))
	if err != nil {
		return err
	}
	return q.redirect("/processes/"+url.PathEscape(p.ID), "restored")
}

type processData struct {
	P        wps.Process
	Versions []wps.ProcessVersion
	Diagram  diagram
	Labels   map[string]string
	CanStart bool
	CanEdit  bool // may open the designer
	// Latest is the latest version's number when the page shows an older
	// one (0 otherwise): starting and editing act on the latest, so the
	// page offers them there.
	Latest int
	// Older are the versions whose measurements may move to the latest
	// (to a user who may move them).
	Older []int
}

func (c *Console) process(q *req) error {
	version, _ := strconv.Atoi(q.r.URL.Query().Get("version"))
	p, err := c.svc.GetProcess(q.ctx(), q.p, q.r.PathValue("id"), version)
	if err != nil {
		return err
	}
	versions, err := c.svc.ListProcessVersions(q.ctx(), q.p, p.ID)
	if err != nil {
		return err
	}
	d := processData{P: p, Versions: versions, Diagram: layout(p.Steps), Labels: map[string]string{}, CanStart: q.p.Can(wps.FnMeasurementCreate)}
	for _, st := range p.Steps {
		d.Labels[st.ID] = st.Label
	}
	for _, v := range versions {
		if v.Version > p.Version {
			d.Latest = max(d.Latest, v.Version)
		}
	}
	if q.p.Can(wps.FnProcessWrite) {
		d.CanEdit = true
		for _, v := range versions {
			if v.Version < len(versions) && v.Locked {
				d.Older = append(d.Older, v.Version)
			}
		}
	}
	c.render(q, http.StatusOK, "process", p.Label, d)
	return nil
}

// migrate moves a version's running measurements to the latest version:
// a dry run first, whose page offers the move itself.
func (c *Console) migrate(q *req) error {
	id := q.r.PathValue("id")
	from, _ := strconv.Atoi(q.r.PostForm.Get("fromVersion"))
	dry := q.r.PostForm.Get("dryRun") == "true"
	m, err := c.svc.MigrateMeasurements(q.ctx(), q.p, id, wps.MigrationInput{FromVersion: from, DryRun: dry})
	if err != nil {
		return err
	}
	p, err := c.svc.GetProcess(q.ctx(), q.p, id, 0)
	if err != nil {
		return err
	}
	c.render(q, http.StatusOK, "migration", p.Label, migrationData{P: p, M: m})
	return nil
}

type migrationData struct {
	P wps.Process
	M wps.Migration
}

// diagram is a process drawn as SVG: steps in columns by how many steps
// come before them, arrows for dependencies, dashed arrows for routing.
type diagram struct {
	Width, Height int
	Nodes         []node
	Edges         []edge
}

type node struct {
	X, Y, W, H int
	Label      string
	Policies   string
	TextX      int
	TextY      int
	SubY       int
}

type edge struct {
	X1, Y1, X2, Y2 int
	Route          bool
	Label          string
	LX, LY         int
}

const (
	nodeW, nodeH = 180, 56
	gapX, gapY   = 60, 24
	pad          = 16
)

// dependencies are the steps a step waits for: its stepIdsDependencies,
// else the step before it.
func dependencies(steps []wps.Step, i int) []string {
	if len(steps[i].StepIDsDependencies) > 0 {
		return steps[i].StepIDsDependencies
	}
	if i == 0 {
		return nil
	}
	return []string{steps[i-1].ID}
}

// layout places each step in the column after its latest dependency.
func layout(steps []wps.Step) diagram {
	index := map[string]int{}
	for i, st := range steps {
		index[st.ID] = i
	}
	col := make([]int, len(steps))
	for range steps { // relax: at most len(steps) rounds (dependencies have no cycles)
		changed := false
		for i := range steps {
			for _, dep := range dependencies(steps, i) {
				if j, ok := index[dep]; ok && col[j]+1 > col[i] {
					col[i], changed = col[j]+1, true
				}
			}
		}
		if !changed {
			break
		}
	}
	rows := map[int]int{}
	pos := make([][2]int, len(steps))
	var d diagram
	for i, st := range steps {
		x := pad + col[i]*(nodeW+gapX)
		y := pad + rows[col[i]]*(nodeH+gapY)
		rows[col[i]]++
		pos[i] = [2]int{x, y}
		n := node{X: x, Y: y, W: nodeW, H: nodeH, Label: clip(st.Label, 24), Policies: clip(strings.Join(st.PolicyNames, ", "), 28),
			TextX: x + 10, TextY: y + 22, SubY: y + 42}
		d.Nodes = append(d.Nodes, n)
		d.Width = max(d.Width, x+nodeW+pad)
		d.Height = max(d.Height, y+nodeH+pad)
	}
	for i, st := range steps {
		for _, dep := range dependencies(steps, i) {
			if j, ok := index[dep]; ok {
				d.Edges = append(d.Edges, edge{X1: pos[j][0] + nodeW, Y1: pos[j][1] + nodeH/2, X2: pos[i][0], Y2: pos[i][1] + nodeH/2})
			}
		}
		if st.Routing != nil {
			for _, r := range st.Routing.Rules {
				if j, ok := index[r.StepID]; ok {
					e := edge{X1: pos[i][0] + nodeW/2, Y1: pos[i][1] + nodeH, X2: pos[j][0] + nodeW/2, Y2: pos[j][1], Route: true, Label: clip(r.Value, 16)}
					e.LX, e.LY = (e.X1+e.X2)/2+4, (e.Y1+e.Y2)/2
					d.Edges = append(d.Edges, e)
				}
			}
		}
	}
	return d
}

// clip shortens s to n characters with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
