package console

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// The process designer: a process's definition is one form, which every
// button posts back (add, remove, move a step or a field, undo, save) and
// the page draws again, its flow diagram from what is being edited. Only
// saving writes anything, through the same service calls as the API
// (CreateProcess, UpdateProcess); the service's 422 answers are shown at
// the fields they name. A save made from a page drawn from a version that
// is no longer the latest is refused (409, nothing stored: someone else
// saved since), and one that changes nothing writes nothing. A save that
// would make a new version while some running measurements could not
// move to it says so first (the migration dry run,
// wps.Service.PreviewProcessUpdate).

// drawnFrom is the process as a page was first drawn from it (hidden
// fields version and stamp, carried through every redraw): a save checks
// that no one saved since (wps.ProcessUpdate.FromVersion, FromUpdatedAt).
type drawnFrom struct {
	version int
	stamp   int64 // its updatedAt, Unix ms
}

// drawnFromForm reads them from a posted designer.
func drawnFromForm(f url.Values) drawnFrom {
	v, _ := strconv.Atoi(f.Get("version"))
	ms, _ := strconv.ParseInt(f.Get("stamp"), 10, 64)
	return drawnFrom{v, ms}
}

// draft is the process being designed, as the API's body has it.
type draft struct {
	Name     string     `json:"name"`
	Label    string     `json:"label"`
	IconName string     `json:"iconName"`
	Code     string     `json:"code"`
	Steps    []wps.Step `json:"steps"`
}

// undoDepth is how many earlier drafts Undo can go back to.
const undoDepth = 20

type designData struct {
	ID, Version   string
	D             draft
	Steps         []designStep
	Policies      []string
	Entities      []option
	Icons         []string
	Types         []string
	Sheets        []option // the org's workbooks a field may link a cell of
	Processes     []option // what a field may read other measurements of
	MetaFields    []string // the facts a record written to data may carry
	DeadlineTypes []string
	Diagram       diagram
	Errs          map[string]string
	General       string
	Base, Undo    string
	Dirty         bool
	CanUndo       bool
	Preview       *wps.Migration
	Newer         int    // the latest version, when a save was refused as made from an older one
	Stamp         string // the process's updatedAt (Unix ms) when the page was first drawn
}

type designStep struct {
	I, N        int
	Prefix      string // the step's form names start with it: s0
	S           wps.Step
	Others      []stepChoice // the other steps, to wait for or re-open
	All         []stepChoice // every step a routing rule may name
	Rules       []ruleRow    // the step's rules and an empty one to add
	Roles       string
	Ordered     string
	RouteParam  string
	RouteEntity string
	Escalations []escRow
	Extra       string
	Names       []string // what a formula may name: the process's fields
	Params      []designParam
	First, Last bool
}

type stepChoice struct {
	ID, Label     string
	Dep, Reproval bool // ticked in Waits for, in Re-opened with it
}

// escRow is one of a step's escalations: after a duration past the
// step's due time, the holders of a policy are told.
type escRow struct {
	K                 int
	After, PolicyName string
}

// callRow is one API call that fills a field: its endpoint, method,
// the fields whose values it sends (names), and where its answer's value is.
type callRow struct {
	K                                         int
	URL, Method, Params, ResultPath, Describe string
	MethodOpts                                []option
}

// readRow is one field copied from another measurement: its field there
// and the field it fills here.
type readRow struct {
	K           int
	Read, Write string
}

type ruleRow struct {
	K             int
	Value, StepID string
	Unknown       bool // the step it names is not in the draft
}

type designParam struct {
	J, N                                int
	Prefix                              string // s0.p1
	P                                   wps.Parameter
	Decimals, Min, Max, MinLen, MaxLen  string
	Placeholder, Tooltip                string
	IsMultiple, IsHidden, CustomColor   bool
	HiddenFrom                          []string
	ViewColumns                         string
	Options, ShowColumns, Formula, Cols string
	Keep                                string // kept: what the option and column lines do not show
	RFEEntity, RFERead, RFEOrigin       string
	RFETargets                          string
	SheetID, SheetPage, SheetCell       string
	SheetIO, SheetFormula               string
	Calls                               []callRow
	ROMProcess, ROMSearch, ROMRead      string
	ROMFields                           []readRow // its rows and an empty one to add
	InsertOn, AutoFill, EntityParam     string
	InsertMeta                          []string
	WriteLinked                         bool
	SheetOpts, ProcOpts, InsertOpts     []option // the choices, the current one selected
	LinkedOpts                          []option // the step's other Linked record fields
	IOOpts                              []option // a cell written or read
	LinksOpen                           bool     // a link set or refused: its box starts open
	Extra                               string
	First, Last                         bool
}

// designNew shows the designer for a new process with one empty step.
func (c *Console) designNew(q *req) error {
	if err := q.p.Require(wps.FnProcessWrite); err != nil {
		return err
	}
	d := draft{Steps: []wps.Step{{ID: newStepKey()}}}
	return c.showDesigner(q, http.StatusOK, "", drawnFrom{}, d, nil, nil, nil, nil)
}

// designEdit shows the designer for a process at its latest version.
func (c *Console) designEdit(q *req) error {
	if err := q.p.Require(wps.FnProcessWrite); err != nil {
		return err
	}
	p, err := c.svc.GetProcess(q.ctx(), q.p, q.r.PathValue("id"), 0)
	if err != nil {
		return err
	}
	return c.showDesigner(q, http.StatusOK, p.ID, drawnFrom{p.Version, p.UpdatedAt.Millis()}, draft{Name: p.Name, Label: p.Label, IconName: p.IconName, Code: p.Code, Steps: p.Steps}, nil, nil, nil, nil)
}

// design applies one of the designer's buttons (op) to the posted draft.
func (c *Console) design(q *req) error {
	if err := q.p.Require(wps.FnProcessWrite); err != nil {
		return err
	}
	f := q.r.PostForm
	id := f.Get("id")
	from := drawnFromForm(f)
	cur, bad := parseDraft(f)
	var undo []draft
	_ = json.Unmarshal([]byte(f.Get("undo")), &undo)
	var base draft
	_ = json.Unmarshal([]byte(f.Get("base")), &base)
	edited := f.Get("changed") == "1" || f.Get("js") != "1" && mustJSONText(cur) != mustJSONText(base)
	push := func(d draft) {
		undo = append(undo, d)
		if len(undo) > undoDepth {
			undo = undo[len(undo)-undoDepth:]
		}
	}
	op, arg := f.Get("op"), ""
	if i := strings.IndexByte(op, ':'); i > 0 {
		op, arg = op[:i], op[i+1:]
	}
	if op == "undo" {
		switch {
		case edited:
			cur = base // the edits since the page was drawn
		case len(undo) > 0:
			cur, undo = undo[len(undo)-1], undo[:len(undo)-1]
		}
		return c.showDesigner(q, http.StatusOK, id, from, cur, undo, nil, nil, nil)
	}
	if edited {
		push(base)
	}
	if op == "save" || op == "saveAnyway" {
		if len(bad) > 0 { // nothing is sent while a box is not JSON
			return c.showDesigner(q, http.StatusUnprocessableEntity, id, from, cur, undo, nil, nil, bad)
		}
		return c.saveDesign(q, id, from, compact(cur), undo, op == "saveAnyway")
	}
	next := applyOp(cur, op, arg)
	if mustJSONText(next) != mustJSONText(cur) {
		push(cur)
	}
	if op != "redraw" {
		bad = nil // the boxes may have moved: as the draft has them
	}
	return c.showDesigner(q, http.StatusOK, id, from, next, undo, nil, nil, bad)
}

// saveDesign saves the draft through the service; on a refusal the
// designer shows again with the messages at their fields.
func (c *Console) saveDesign(q *req, id string, from drawnFrom, d draft, undo []draft, anyway bool) error {
	var p wps.Process
	var err error
	if id == "" {
		p, err = c.svc.CreateProcess(q.ctx(), q.p, wps.ProcessInput{Name: d.Name, Label: d.Label, IconName: d.IconName, Code: d.Code, Steps: d.Steps})
	} else {
		u := wps.ProcessUpdate{Name: &d.Name, Label: &d.Label, IconName: &d.IconName, Code: &d.Code, Steps: &d.Steps, FromVersion: from.version}
		if from.stamp > 0 {
			u.FromUpdatedAt = wps.FromMillis(from.stamp) // an edit in place since keeps the version: this tells it
		}
		if !anyway {
			var m wps.Migration
			if m, err = c.svc.PreviewProcessUpdate(q.ctx(), q.p, id, u); err == nil && m.Blocked > 0 {
				return c.showDesigner(q, http.StatusOK, id, from, d, undo, nil, &m, nil)
			}
		}
		if err == nil {
			p, err = c.svc.UpdateProcess(q.ctx(), q.p, id, u)
		}
	}
	if err == nil {
		return q.redirect("/processes/"+url.PathEscape(p.ID), "saved")
	}
	switch {
	case wps.IsNewerVersion(err): // drawn from a version someone else's save has replaced
		return c.showDesigner(q, http.StatusConflict, id, from, d, undo, err, nil, nil)
	case wps.IsCode(err, wps.CodeInvalid), wps.IsCode(err, wps.CodeConflict):
		return c.showDesigner(q, http.StatusUnprocessableEntity, id, from, d, undo, err, nil, nil)
	}
	return err
}

// designDiagram draws the posted draft's flow (the page's script asks for
// it after each change).
func (c *Console) designDiagram(q *req) error {
	if err := q.p.Require(wps.FnProcessWrite); err != nil {
		return err
	}
	d, _ := parseDraft(q.r.PostForm)
	var buf bytes.Buffer
	t := c.pagesFor(q.lang, q.loc)["designer"]
	if err := t.ExecuteTemplate(&buf, "dsvg", designData{D: d, Diagram: layout(d.Steps)}); err != nil {
		return wps.Internal(err)
	}
	q.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	q.w.Header().Set("Cache-Control", "no-store")
	_, _ = q.w.Write(buf.Bytes())
	return nil
}

// deleteProcess deletes a process (the page asks first; it can be restored).
func (c *Console) deleteProcess(q *req) error {
	if err := c.svc.DeleteProcess(q.ctx(), q.p, q.r.PathValue("id")); err != nil {
		return err
	}
	return q.redirect("/processes", "deleted")
}

// showDesigner draws the designer for draft d: err's messages at their
// fields, preview's blocked measurements before a save, and the
// "Other settings" boxes in bad as they were typed.
func (c *Console) showDesigner(q *req, status int, id string, from drawnFrom, d draft, undo []draft, err error, preview *wps.Migration, bad map[string]badText) error {
	data := designData{ID: id, D: d, Types: wps.ParamTypes, Icons: wps.IconNames, Errs: map[string]string{}, Preview: preview,
		DeadlineTypes: []string{"HOURS", "DAYS", "BUSINESS_HOURS", "BUSINESS_DAYS", "DATE"}, Diagram: layout(d.Steps),
		Undo: mustJSONText(undo), CanUndo: len(undo) > 0, Dirty: len(undo) > 0 || err != nil || preview != nil}
	if from.version > 0 {
		data.Version, data.Stamp = strconv.Itoa(from.version), strconv.FormatInt(from.stamp, 10)
	}
	if undo == nil {
		data.Undo = "[]"
	}
	pols, perr := c.svc.ListPolicies(q.ctx(), q.p)
	if perr != nil {
		return perr
	}
	for _, p := range pols {
		data.Policies = append(data.Policies, p.Name)
	}
	refs := map[string]string{} // parameter ids → names, shown for what the service stored as ids
	ents, _, eerr := c.svc.ListEntities(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 100}, "")
	if eerr != nil && !wps.IsCode(eerr, wps.CodeForbidden) {
		return eerr
	}
	for _, e := range ents {
		data.Entities = append(data.Entities, option{Value: e.ID, Label: e.Label})
		for _, p := range e.Parameters {
			refs[p.ID] = p.Name
		}
	}
	if sheets, _, serr := c.svc.ListSheets(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 100}); serr == nil {
		for _, sh := range sheets {
			data.Sheets = append(data.Sheets, option{Value: sh.ID, Label: sh.Name})
		}
	}
	if procs, _, perr := c.svc.ListProcesses(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 100}, ""); perr == nil {
		for _, p := range procs {
			data.Processes = append(data.Processes, option{Value: p.ID, Label: or(p.Label, p.Name)})
			paramNames(p.Steps, refs)
		}
	}
	data.MetaFields = wps.MetadataFields
	data.Steps = designSteps(d, data.Entities, refs)
	switch {
	case wps.IsNewerVersion(err):
		data.Newer = from.version + 1
		if latest, gerr := c.svc.GetProcess(q.ctx(), q.p, id, 0); gerr == nil {
			data.Newer = latest.Version
		}
	case err != nil:
		data.Errs, data.General = q.designErrors(err)
	}
	for i := range data.Steps {
		st := &data.Steps[i]
		for j := range st.Params {
			dp := &st.Params[j]
			dp.SheetOpts, dp.ProcOpts, dp.InsertOpts = withCurrent(data.Sheets, dp.SheetID), withCurrent(data.Processes, dp.ROMProcess), withCurrent(data.Entities, dp.InsertOn)
			var linked []option
			for _, o := range st.S.Parameters {
				if o.Type == wps.TypeEntity && o.Name != "" && o.Name != dp.P.Name {
					linked = append(linked, option{Value: o.Name, Label: or(o.Label, o.Name)})
				}
			}
			dp.LinkedOpts = withCurrent(linked, dp.AutoFill)
			dp.LinksOpen = dp.RFEEntity != "" || dp.P.ContractTemplateID != "" || dp.Extra != "" || dp.SheetID != "" || len(dp.Calls) > 0 ||
				dp.ROMProcess != "" || dp.InsertOn != "" || dp.AutoFill != "" || dp.WriteLinked || len(dp.InsertMeta) > 0
			for name := range data.Errs {
				if c, ok := strings.CutPrefix(name, dp.Prefix+"."); ok && !slices.Contains(basicControls, c) {
					dp.LinksOpen = true
				}
			}
		}
		if b, ok := bad[st.Prefix+".extra"]; ok {
			st.Extra, data.Errs[st.Prefix+".extra"] = b.Text, q.t("d.badJSON", "Why", b.Why)
		}
		for j := range st.Params {
			if b, ok := bad[st.Params[j].Prefix+".extra"]; ok {
				st.Params[j].Extra, data.Errs[st.Params[j].Prefix+".extra"] = b.Text, q.t("d.badJSON", "Why", b.Why)
				st.Params[j].LinksOpen = true
			}
		}
	}
	if len(bad) > 0 {
		data.Dirty = true
	}
	// Base is the form as drawn, read back as it will be posted: without
	// script, the next post differs from it only by what its user edited
	// (the draft itself holds what the form does not show, the ids and
	// times the service adds, and ids where the form shows names).
	var drawn bytes.Buffer
	if err := c.pagesFor(q.lang, q.loc)["designer"].ExecuteTemplate(&drawn, "content", page{Data: data}); err != nil {
		return wps.Internal(err)
	}
	base, _ := parseDraft(drawnForm(drawn.Bytes(), "designer"))
	data.Base = mustJSONText(base)
	title := q.t("d.newTitle")
	if id != "" {
		title = q.t("d.editTitle", "Process", d.Label)
	}
	c.render(q, status, "designer", title, data)
	return nil
}

// paramNames adds the names of steps' parameters to refs, by id.
func paramNames(steps []wps.Step, refs map[string]string) {
	for _, st := range steps {
		for _, p := range st.Parameters {
			if p.ID != "" && p.Name != "" {
				refs[p.ID] = p.Name
			}
		}
	}
}

// basicControls are a field's controls outside its Links box.
var basicControls = []string{"name", "label", "type", "description", "isRequired", "isUnique", "isPermanent", "isMultiple", "min", "max",
	"decimals", "minLength", "maxLength", "placeholder", "tooltip", "options", "entityId", "showColumns", "formula", "columns",
	"isHidden", "hiddenFrom", "hasCustomColor", "viewColumns"}

// designSteps builds the view of each step of d; refs names parameters
// by id (other processes' too), for references the service stored as ids.
func designSteps(d draft, entities []option, refs map[string]string) []designStep {
	var names []string
	for _, st := range d.Steps {
		for _, p := range st.Parameters {
			if p.Name != "" {
				names = append(names, p.Name)
			}
		}
	}
	paramNames(d.Steps, refs)
	out := make([]designStep, len(d.Steps))
	for i, st := range d.Steps {
		ds := designStep{I: i, N: i + 1, Prefix: "s" + strconv.Itoa(i), S: st, First: i == 0, Last: i == len(d.Steps)-1,
			Roles: rolesText(st.Roles), Ordered: strings.Join(st.OrderedPolicies, ", "), Extra: stepExtra(st), Names: names}
		for j, o := range d.Steps {
			ch := stepChoice{ID: o.ID, Label: orDash(o.Label, j)}
			ds.All = append(ds.All, ch)
			if j != i {
				ch.Dep, ch.Reproval = slices.Contains(st.StepIDsDependencies, o.ID), slices.Contains(st.StepIDsReprovalDependencies, o.ID)
				ds.Others = append(ds.Others, ch)
			}
		}
		if st.Routing != nil {
			ds.RouteParam, ds.RouteEntity = st.Routing.EntityParamName, st.Routing.EntityID
			for k, r := range st.Routing.Rules {
				known := slices.ContainsFunc(d.Steps, func(o wps.Step) bool { return o.ID == r.StepID || o.Label == r.StepID })
				ds.Rules = append(ds.Rules, ruleRow{K: k, Value: r.Value, StepID: r.StepID, Unknown: !known && r.StepID != ""})
			}
		}
		ds.Rules = append(ds.Rules, ruleRow{K: len(ds.Rules)})
		for k, e := range st.Escalations {
			ds.Escalations = append(ds.Escalations, escRow{K: k, After: e.After, PolicyName: e.PolicyName})
		}
		for j, p := range st.Parameters {
			ds.Params = append(ds.Params, designParamOf(i, j, p, len(st.Parameters), refs))
		}
		out[i] = ds
	}
	return out
}

func orDash(label string, i int) string {
	if strings.TrimSpace(label) == "" {
		return "#" + strconv.Itoa(i+1)
	}
	return label
}

func designParamOf(i, j int, p wps.Parameter, n int, refs map[string]string) designParam {
	name := func(ref string) string { return or(refs[ref], ref) }
	dp := designParam{J: j, N: j + 1, Prefix: "s" + strconv.Itoa(i) + ".p" + strconv.Itoa(j), P: p, First: j == 0, Last: j == n-1,
		ShowColumns: strings.Join(p.ShowColumns, ", "), ViewColumns: strings.Join(p.ViewColumns, ", "), Formula: strings.Join(p.ComputedFormula, " "), Extra: paramExtra(p)}
	if p.Decimals != nil {
		dp.Decimals = strconv.Itoa(*p.Decimals)
	}
	if a := p.AdvancedOptions; a != nil {
		dp.Min, dp.Max = floatText(a.Min), floatText(a.Max)
		dp.MinLen, dp.MaxLen = intText(a.MinLength), intText(a.MaxLength)
		dp.Placeholder, dp.Tooltip, dp.IsMultiple = a.Placeholder, a.Tooltip, a.IsMultiple
		dp.IsHidden, dp.CustomColor, dp.HiddenFrom = a.IsHidden, a.HasCustomColor, a.HiddenFrom
	}
	var lines []string
	for _, o := range p.OptionItems {
		line := o.Value
		if o.Label != "" || o.Color != "" {
			line += " | " + o.Label
		}
		if o.Color != "" {
			line += " | " + o.Color
		}
		lines = append(lines, line)
	}
	dp.Options = strings.Join(lines, "\n")
	lines = nil
	for _, col := range p.Parameters {
		lines = append(lines, col.Name+" | "+col.Label+" | "+col.Type)
	}
	dp.Cols = strings.Join(lines, "\n")
	if len(p.OptionItems) > 0 || len(p.Parameters) > 0 || len(p.APICalls) > 0 {
		dp.Keep = mustJSONText(kept{p.OptionItems, p.Parameters, p.APICalls})
	}
	if r := p.ReadFromEntity; r != nil {
		var targets []string
		for _, t := range r.TargetParameterIDs {
			targets = append(targets, name(t))
		}
		dp.RFEEntity, dp.RFERead, dp.RFEOrigin, dp.RFETargets = r.EntityID, name(r.ReadParameterID), name(r.OriginParameterID), strings.Join(targets, ", ")
	}
	if sd := p.SheetData; sd != nil {
		dp.SheetID, dp.SheetPage, dp.SheetCell, dp.SheetIO, dp.SheetFormula = sd.SheetAPIID, sd.Page, sd.Cell, strings.ToUpper(sd.InputType), sd.Formula
	}
	dp.IOOpts = []option{{Value: "INPUT", Selected: dp.SheetIO == "INPUT"}, {Value: "OUTPUT", Selected: dp.SheetIO == "OUTPUT"}}
	for k, l := range p.APICalls {
		row := callRow{K: k, Method: "POST"}
		if a := l.APICall; a != nil {
			var sent []string
			for _, ref := range a.Parameters {
				sent = append(sent, name(fmt.Sprint(ref)))
			}
			row.URL, row.Method, row.Params, row.ResultPath, row.Describe = a.URL, or(a.Type, "POST"), strings.Join(sent, ", "), a.ResultPath, a.Description
		}
		row.MethodOpts = withCurrent([]option{{Value: "POST", Label: "POST"}, {Value: "GET", Label: "GET"}}, row.Method)
		dp.Calls = append(dp.Calls, row)
	}
	if r := p.ReadFromOtherMeasurementData; r != nil {
		dp.ROMProcess, dp.ROMSearch, dp.ROMRead = r.ProcessID, name(r.SearchFieldID), name(r.ReadParameterID)
		for k, sf := range r.SelectedFields {
			dp.ROMFields = append(dp.ROMFields, readRow{K: k, Read: name(sf.ReadParameterID), Write: name(sf.WriteParameterID)})
		}
	}
	dp.ROMFields = append(dp.ROMFields, readRow{K: len(dp.ROMFields)})
	dp.AutoFill, dp.WriteLinked = name(p.AutoFillEntityRelation), slices.Contains(p.EntityOperation, "WRITE")
	if a := p.AdvancedOptions; a != nil {
		dp.InsertOn, dp.InsertMeta, dp.EntityParam = a.InsertOnEntity, a.InsertOnEntityMetadata, name(a.EntityParameterID)
		dp.WriteLinked = dp.WriteLinked || slices.Contains(a.EntityOperation, "WRITE")
	}
	return dp
}

// withCurrent is opts with v selected, and v itself added when it is not
// among them (a reference the list does not offer, kept as it is).
func withCurrent(opts []option, v string) []option {
	out := make([]option, 0, len(opts)+1)
	found := false
	for _, o := range opts {
		o.Selected = o.Value == v
		found = found || o.Selected
		out = append(out, o)
	}
	if !found && v != "" {
		out = append(out, option{Value: v, Label: v, Selected: true})
	}
	return out
}

func floatText(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func intText(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

func rolesText(roles []wps.StepRole) string {
	var parts []string
	for _, r := range roles {
		parts = append(parts, r.P+": "+strings.Join(r.R, ", "))
	}
	return strings.Join(parts, "; ")
}

// stepExtra is what the form has no control of its own for (whatever
// the API adds), as JSON.
func stepExtra(st wps.Step) string {
	m := jsonMap(st)
	for _, k := range []string{"id", "label", "description", "prompt", "processId", "tokenIds", "policyNames", "roles", "orderedPolicies",
		"viewPolicyNames", "routing", "webhookUrls", "legalContractId", "frequency", "deadline", "deadlineType", "frequencyDate",
		"stepIdsDependencies", "stepIdsReprovalDependencies", "parameters", "signatureMeaning", "escalations", "createdAt", "updatedAt", "deletedAt"} {
		delete(m, k)
	}
	return extraText(m)
}

// paramExtra is what the form has no control of its own for: contract
// templates written in place, and the rarer options (sheet links, API
// calls, reading from other measurements and writing to data have theirs).
func paramExtra(p wps.Parameter) string {
	m := jsonMap(p)
	for _, k := range []string{"id", "name", "label", "type", "description", "index", "decimals", "isRequired", "isUnique", "isPermanent",
		"computedFormula", "parameterId", "stepId", "entityId", "showColumns", "viewColumns", "optionItems", "parameters", "readFromEntity", "createdAt", "updatedAt",
		"sheetData", "apiCalls", "readFromOtherMeasurementData", "readFromOtherMeasurementDataId", "autoFillEntityRelation", "entityOperation"} {
		delete(m, k)
	}
	if a, ok := m["advancedOptions"].(map[string]any); ok {
		for _, k := range []string{"id", "min", "max", "minLength", "maxLength", "placeholder", "tooltip", "isMultiple", "createdAt", "updatedAt", "deletedAt",
			"insertOnEntity", "insertOnEntityMetadata", "entityParameterId", "hiddenFrom", "isHidden", "hasCustomColor"} {
			delete(a, k)
		}
		if ops, ok := a["entityOperation"].([]any); ok { // WRITE is the "write a record" box
			a["entityOperation"] = slices.DeleteFunc(ops, func(o any) bool { return o == "WRITE" })
		}
		prune(a)
		if len(a) == 0 {
			delete(m, "advancedOptions")
		}
	}
	return extraText(m)
}

func jsonMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	return m
}

// prune drops empty values (false, "", [], {}, null) from m.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case bool:
			if !x {
				delete(m, k)
			}
		case string:
			if x == "" {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
			}
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		}
	}
}

func extraText(m map[string]any) string {
	prune(m)
	if len(m) == 0 {
		return ""
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// newStepKey names a step not saved yet: steps of the same body may refer
// to it, and the service gives it its id.
func newStepKey() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "new-" + hex.EncodeToString(b)
}

// parseDraft reads the designer's form. An "Other settings" box that is
// not JSON is left out of the draft and returned in bad (form name →
// the text as typed, and why), for the page to show again at its field.
func parseDraft(f url.Values) (d draft, bad map[string]badText) {
	bad = map[string]badText{}
	d = draft{Name: strings.TrimSpace(f.Get("name")), Label: strings.TrimSpace(f.Get("label")), IconName: f.Get("iconName"), Code: strings.TrimSpace(f.Get("code"))}
	n, _ := strconv.Atoi(f.Get("steps"))
	for i := range min(n, wps.MaxStepsPerProcess+1) {
		s := "s" + strconv.Itoa(i) + "."
		var st wps.Step
		extra(f, s+"extra", &st, bad)
		st.ID, st.Label, st.Description, st.Prompt = f.Get(s+"id"), strings.TrimSpace(f.Get(s+"label")), f.Get(s+"description"), f.Get(s+"prompt")
		st.PolicyNames, st.ViewPolicyNames = ticked(f, s+"policyNames"), ticked(f, s+"viewPolicyNames")
		st.OrderedPolicies = splitList(f.Get(s + "orderedPolicies"))
		st.Roles = parseRoles(f.Get(s + "roles"))
		st.StepIDsDependencies, st.StepIDsReprovalDependencies = f[s+"deps"], f[s+"reproval"]
		st.Deadline, st.DeadlineType = strings.TrimSpace(f.Get(s+"deadline")), f.Get(s+"deadlineType")
		st.Frequency, st.FrequencyDate = strings.TrimSpace(f.Get(s+"frequency")), strings.TrimSpace(f.Get(s+"frequencyDate"))
		st.WebhookURLs, st.LegalContractID = strings.TrimSpace(f.Get(s+"webhookUrls")), strings.TrimSpace(f.Get(s+"legalContractId"))
		st.SignatureMeaning = strings.TrimSpace(f.Get(s + "signatureMeaning"))
		r := &wps.Routing{EntityParamName: strings.TrimSpace(f.Get(s + "routeParam")), EntityID: f.Get(s + "routeEntity")}
		rules, _ := strconv.Atoi(f.Get(s + "rules"))
		for k := range min(rules, 200) {
			v, to := strings.TrimSpace(f.Get(s+"r"+strconv.Itoa(k)+".value")), f.Get(s+"r"+strconv.Itoa(k)+".step")
			if v != "" || to != "" {
				r.Rules = append(r.Rules, wps.RoutingRule{Value: v, StepID: to})
			}
		}
		if r.EntityParamName != "" || r.EntityID != "" || len(r.Rules) > 0 {
			st.Routing = r
		}
		if ne, _ := strconv.Atoi(f.Get(s + "escalations")); ne > 0 { // rows kept, empty or not, until saved
			st.Escalations = nil
			for k := range min(ne, wps.MaxEscalations+1) {
				e := s + "e" + strconv.Itoa(k) + "."
				st.Escalations = append(st.Escalations, wps.Escalation{After: strings.TrimSpace(f.Get(e + "after")), PolicyName: f.Get(e + "policy")})
			}
		}
		np, _ := strconv.Atoi(f.Get(s + "params"))
		for j := range min(np, 500) {
			st.Parameters = append(st.Parameters, parseParam(f, s+"p"+strconv.Itoa(j)+".", bad))
		}
		d.Steps = append(d.Steps, st)
	}
	return d, bad
}

// ticked is the policies ticked in the boxes of name, in the order they
// were drawn with (name.was): the boxes stand in the org's order of
// policies, so a list saved in another order would come back reordered
// (a change, and a new version, for nothing). Those still ticked keep
// their order, new ticks follow in the boxes' order.
func ticked(f url.Values, name string) []string {
	on := f[name]
	var out []string
	for _, p := range f[name+".was"] {
		if slices.Contains(on, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range on {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// badText is an "Other settings" box that is not JSON: as typed, and why.
type badText struct{ Text, Why string }

// extra reads the JSON of box name into v (nothing, and a note in bad, when it is not JSON).
func extra(f url.Values, name string, v any, bad map[string]badText) {
	x := strings.TrimSpace(f.Get(name))
	if x == "" {
		return
	}
	if err := json.Unmarshal([]byte(x), v); err != nil {
		bad[name] = badText{Text: f.Get(name), Why: err.Error()}
	}
}

func parseParam(f url.Values, s string, bad map[string]badText) wps.Parameter {
	var p wps.Parameter
	extra(f, s+"extra", &p, bad)
	p.ID, p.Name, p.Label, p.Type = f.Get(s+"id"), strings.TrimSpace(f.Get(s+"name")), strings.TrimSpace(f.Get(s+"label")), f.Get(s+"type")
	p.Description = f.Get(s + "description")
	p.IsRequired, p.IsUnique, p.IsPermanent = f.Get(s+"isRequired") != "", f.Get(s+"isUnique") != "", f.Get(s+"isPermanent") != ""
	p.Decimals = intOf(f.Get(s + "decimals"))
	a := p.AdvancedOptions
	if a == nil {
		a = &wps.AdvancedOptions{}
	}
	a.Min, a.Max = floatOf(f.Get(s+"min")), floatOf(f.Get(s+"max"))
	a.MinLength, a.MaxLength = intOf(f.Get(s+"minLength")), intOf(f.Get(s+"maxLength"))
	a.Placeholder, a.Tooltip, a.IsMultiple = f.Get(s+"placeholder"), f.Get(s+"tooltip"), f.Get(s+"isMultiple") != ""
	a.IsHidden, a.HasCustomColor, a.HiddenFrom = f.Get(s+"isHidden") != "", f.Get(s+"hasCustomColor") != "", ticked(f, s+"hiddenFrom")
	if extraText(jsonMap(a)) != "" {
		p.AdvancedOptions = a
	} else {
		p.AdvancedOptions = nil
	}
	var had kept // the options and columns as they were, for what their lines do not show
	_ = json.Unmarshal([]byte(f.Get(s+"keep")), &had)
	p.OptionItems = nil
	for _, line := range strings.Split(f.Get(s+"options"), "\n") {
		parts := strings.Split(line, "|")
		if strings.TrimSpace(parts[0]) == "" {
			continue
		}
		o := wps.OptionItem{Value: strings.TrimSpace(parts[0])}
		if k := slices.IndexFunc(had.Options, func(x wps.OptionItem) bool { return x.Value == o.Value }); k >= 0 {
			o = had.Options[k]
			o.Label, o.Color = "", ""
		}
		if len(parts) > 1 {
			o.Label = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 {
			o.Color = strings.TrimSpace(parts[2])
		}
		p.OptionItems = append(p.OptionItems, o)
	}
	p.EntityID, p.ShowColumns, p.ViewColumns = f.Get(s+"entityId"), splitList(f.Get(s+"showColumns")), splitList(f.Get(s+"viewColumns"))
	p.ComputedFormula = nil
	if x := strings.TrimSpace(f.Get(s + "formula")); x != "" {
		p.ComputedFormula = strings.Fields(x)
	}
	p.Parameters = nil
	for _, line := range strings.Split(f.Get(s+"columns"), "\n") {
		parts := strings.Split(line, "|")
		if strings.TrimSpace(parts[0]) == "" {
			continue
		}
		col := wps.Parameter{Name: strings.TrimSpace(parts[0])}
		if k := slices.IndexFunc(had.Columns, func(x wps.Parameter) bool { return x.Name == col.Name }); k >= 0 {
			col = had.Columns[k]
			col.Label = ""
		}
		col.Type = wps.TypeText
		if len(parts) > 1 {
			col.Label = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 && strings.TrimSpace(parts[2]) != "" {
			col.Type = strings.ToUpper(strings.TrimSpace(parts[2]))
		}
		p.Parameters = append(p.Parameters, col)
	}
	p.ReadFromEntity = nil
	if e := f.Get(s + "rfeEntity"); e != "" {
		p.ReadFromEntity = &wps.ReadFromEntity{EntityID: e, ReadParameterID: strings.TrimSpace(f.Get(s + "rfeRead")),
			OriginParameterID: strings.TrimSpace(f.Get(s + "rfeOrigin")), TargetParameterIDs: splitList(f.Get(s + "rfeTargets"))}
	}
	p.ContractTemplateID = strings.TrimSpace(f.Get(s + "contractTemplateId"))
	parseLinks(f, s, &p, had.Calls)
	wps.ForType(&p) // what the form hid for this type is not sent
	return p
}

// parseLinks reads a field's sheet cell, API calls, reading from other
// measurements and writing to data. A control left empty leaves what
// "Other settings" says about it.
func parseLinks(f url.Values, s string, p *wps.Parameter, hadCalls []wps.APICallLink) {
	get := func(name string) string { return strings.TrimSpace(f.Get(s + name)) }
	if sd := (wps.SheetData{SheetAPIID: get("sheetId"), Page: get("sheetPage"), Cell: get("sheetCell"), InputType: get("sheetIO"),
		Formula: get("sheetFormula")}); sd != (wps.SheetData{}) {
		p.SheetData = &sd
	}
	if n, _ := strconv.Atoi(f.Get(s + "calls")); n > 0 { // rows kept, empty or not, until saved
		p.APICalls = nil
		for k := range min(n, 50) {
			c := "c" + strconv.Itoa(k) + "."
			a := &wps.APICall{}
			link := wps.APICallLink{APICall: a}
			if k < len(hadCalls) && hadCalls[k].APICall != nil { // what the row does not show (ids, sort)
				link, *a = hadCalls[k], *hadCalls[k].APICall
				link.APICall = a
			}
			a.URL, a.Type, a.ResultPath, a.Description, a.Parameters = get(c+"url"), get(c+"method"), get(c+"resultPath"), get(c+"description"), nil
			for _, name := range splitList(get(c + "params")) {
				a.Parameters = append(a.Parameters, name)
			}
			p.APICalls = append(p.APICalls, link)
		}
	}
	r := &wps.ReadFromOtherMeasurementData{ProcessID: get("romProcess"), SearchFieldID: get("romSearch"), ReadParameterID: get("romRead")}
	n, _ := strconv.Atoi(f.Get(s + "romFields"))
	for k := range min(n, 200) {
		m := "m" + strconv.Itoa(k) + "."
		if sf := (wps.SelectedField{ReadParameterID: get(m + "read"), WriteParameterID: get(m + "write")}); sf != (wps.SelectedField{}) {
			r.SelectedFields = append(r.SelectedFields, sf)
		}
	}
	if r.ProcessID != "" || r.SearchFieldID != "" || r.ReadParameterID != "" || len(r.SelectedFields) > 0 {
		p.ReadFromOtherMeasurementData = r
	}
	if f.Get(s+"writeLinked") != "" {
		p.EntityOperation = append(slices.DeleteFunc(p.EntityOperation, func(o string) bool { return o == "WRITE" }), "WRITE")
	}
	if x := get("autoFill"); x != "" {
		p.AutoFillEntityRelation = x
	}
	on, meta, field := get("insertOn"), f[s+"insertMeta"], get("entityParam")
	if on == "" && len(meta) == 0 && field == "" {
		return
	}
	if p.AdvancedOptions == nil {
		p.AdvancedOptions = &wps.AdvancedOptions{}
	}
	a := p.AdvancedOptions
	a.InsertOnEntity, a.EntityParameterID = or(on, a.InsertOnEntity), or(field, a.EntityParameterID)
	if len(meta) > 0 {
		a.InsertOnEntityMetadata = meta
	}
}

// kept is what the lines of a field's options (value | label | colour)
// and table columns (name | label | TYPE), and the rows of its API calls,
// do not show: each option's and column's other settings, carried through
// the form and given back to the line of the same value or name (a call's
// to its row), so that editing them loses nothing.
type kept struct {
	Options []wps.OptionItem  `json:"optionItems,omitempty"`
	Columns []wps.Parameter   `json:"parameters,omitempty"`
	Calls   []wps.APICallLink `json:"apiCalls,omitempty"` // by row: a call's ids and sort
}

// compact drops the rows added and left empty (escalations, API calls)
// from a draft about to be saved.
func compact(d draft) draft {
	d = applyOp(d, "", "") // a copy
	for i := range d.Steps {
		st := &d.Steps[i]
		st.Escalations = slices.DeleteFunc(st.Escalations, func(e wps.Escalation) bool { return e == wps.Escalation{} })
		if len(st.Escalations) == 0 {
			st.Escalations = nil
		}
		for j := range st.Parameters {
			p := &st.Parameters[j]
			p.APICalls = slices.DeleteFunc(p.APICalls, func(l wps.APICallLink) bool {
				a := l.APICall
				return a == nil || a.URL == "" && len(a.Parameters) == 0 && a.ResultPath == "" && a.Description == ""
			})
			if len(p.APICalls) == 0 {
				p.APICalls = nil
			}
		}
	}
	return d
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseRoles reads "Policy: ROLE, ROLE; Other: ROLE".
func parseRoles(s string) []wps.StepRole {
	var out []wps.StepRole
	for _, part := range strings.Split(s, ";") {
		p, r, ok := strings.Cut(part, ":")
		if !ok || strings.TrimSpace(p) == "" {
			continue
		}
		out = append(out, wps.StepRole{P: strings.TrimSpace(p), R: splitList(r)})
	}
	return out
}

func intOf(s string) *int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return nil
	}
	return &n
}

func floatOf(s string) *float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return nil
	}
	return &f
}

// applyOp is the draft after a button: addStep, removeStep:i, upStep:i,
// downStep:i, addParam:i, removeParam:i.j, upParam:i.j, downParam:i.j,
// addEscalation:i, removeEscalation:i.k, addCall:i.j, removeCall:i.j.k
// (anything else, such as redraw: the draft as it is).
func applyOp(d draft, op, arg string) draft {
	b, _ := json.Marshal(d.Steps) // a copy: d's steps stay as they were
	d.Steps = nil
	_ = json.Unmarshal(b, &d.Steps)
	ix := []int{-1, -1, -1} // step, field or row, row of a field
	for n, a := range strings.SplitN(arg, ".", 3) {
		if v, err := strconv.Atoi(a); err == nil {
			ix[n] = v
		}
	}
	i, j, k := ix[0], ix[1], ix[2]
	okStep := i >= 0 && i < len(d.Steps)
	okParam := okStep && j >= 0 && j < len(d.Steps[i].Parameters)
	switch op {
	case "addStep":
		if len(d.Steps) < wps.MaxStepsPerProcess {
			d.Steps = append(d.Steps, wps.Step{ID: newStepKey()})
		}
	case "removeStep":
		if okStep && len(d.Steps) > 1 {
			d.Steps = slices.Delete(d.Steps, i, i+1)
		}
	case "upStep":
		if okStep && i > 0 {
			d.Steps[i-1], d.Steps[i] = d.Steps[i], d.Steps[i-1]
		}
	case "downStep":
		if okStep && i < len(d.Steps)-1 {
			d.Steps[i+1], d.Steps[i] = d.Steps[i], d.Steps[i+1]
		}
	case "addParam":
		if okStep {
			d.Steps[i].Parameters = append(d.Steps[i].Parameters, wps.Parameter{Type: wps.TypeText})
		}
	case "removeParam":
		if okParam {
			d.Steps[i].Parameters = slices.Delete(d.Steps[i].Parameters, j, j+1)
		}
	case "upParam":
		if okParam && j > 0 {
			ps := d.Steps[i].Parameters
			ps[j-1], ps[j] = ps[j], ps[j-1]
		}
	case "downParam":
		if okParam && j < len(d.Steps[i].Parameters)-1 {
			ps := d.Steps[i].Parameters
			ps[j+1], ps[j] = ps[j], ps[j+1]
		}
	case "addEscalation":
		if okStep && len(d.Steps[i].Escalations) < wps.MaxEscalations {
			d.Steps[i].Escalations = append(d.Steps[i].Escalations, wps.Escalation{})
		}
	case "removeEscalation": // i.k
		if okStep && j >= 0 && j < len(d.Steps[i].Escalations) {
			d.Steps[i].Escalations = slices.Delete(d.Steps[i].Escalations, j, j+1)
		}
	case "addCall":
		if okParam {
			p := &d.Steps[i].Parameters[j]
			p.APICalls = append(p.APICalls, wps.APICallLink{APICall: &wps.APICall{Type: "POST"}})
		}
	case "removeCall": // i.j.k
		if okParam && k >= 0 && k < len(d.Steps[i].Parameters[j].APICalls) {
			p := &d.Steps[i].Parameters[j]
			p.APICalls = slices.Delete(p.APICalls, k, k+1)
		}
	}
	return d
}

var (
	stepPath  = regexp.MustCompile(`^steps\[(\d+)\]\.?(.*)$`)
	paramPath = regexp.MustCompile(`^parameters\[(\d+)\]\.?(.*)$`)
	rulePath  = regexp.MustCompile(`^routing\.rules\[(\d+)\]\.(value|stepId)`)
	escPath   = regexp.MustCompile(`^escalations\[(\d+)\]\.?(policyName)?`)
	callPath  = regexp.MustCompile(`^apiCalls\[(\d+)\](?:\.apiCall)?\.?(type|parameters|resultPath|description)?`)
	readPath  = regexp.MustCompile(`^readFromOtherMeasurementData\.selectedFields\[(\d+)\]\.?(writeParameterId)?`)
	indexes   = regexp.MustCompile(`\[\d+\]`)
)

// stepFields and paramFields map the API's field names to the designer's
// controls; a name not listed is shown at its nearest listed parent.
var stepFields = map[string]string{"label": "label", "description": "description", "prompt": "prompt", "policyNames": "policyNames",
	"orderedPolicies": "orderedPolicies", "roles": "roles", "viewPolicyNames": "viewPolicyNames", "stepIdsDependencies": "deps",
	"stepIdsReprovalDependencies": "reproval", "routing": "routeParam", "routing.entityParamName": "routeParam", "routing.entityId": "routeEntity",
	"routing.rules": "routeParam", "deadline": "deadline", "deadlineType": "deadlineType", "frequency": "frequency", "frequencyDate": "frequencyDate",
	"webhookUrls": "webhookUrls", "legalContractId": "legalContractId", "signatureMeaning": "signatureMeaning", "parameters": "params",
	"escalations": "escalations", "": "label"}

var paramFields = map[string]string{"name": "name", "label": "label", "type": "type", "description": "description", "isRequired": "isRequired",
	"isUnique": "isUnique", "isPermanent": "isPermanent", "decimals": "decimals", "advancedOptions.min": "min", "advancedOptions.max": "max",
	"advancedOptions.minLength": "minLength", "advancedOptions.maxLength": "maxLength", "advancedOptions.placeholder": "placeholder",
	"advancedOptions.tooltip": "tooltip", "advancedOptions.isMultiple": "isMultiple", "optionItems": "options", "entityId": "entityId",
	"advancedOptions.isHidden": "isHidden", "advancedOptions.hiddenFrom": "hiddenFrom", "advancedOptions.hasCustomColor": "hasCustomColor",
	"showColumns": "showColumns", "viewColumns": "viewColumns", "computedFormula": "formula", "parameters": "columns", "readFromEntity": "rfeEntity",
	"readFromEntity.entityId": "rfeEntity", "readFromEntity.readParameterId": "rfeRead", "readFromEntity.originParameterId": "rfeOrigin",
	"readFromEntity.targetParameterIds": "rfeTargets", "contractTemplateId": "contractTemplateId",
	"sheetData": "sheetId", "sheetData.sheetApiId": "sheetId", "sheetData.entityId": "sheetId", "sheetData.page": "sheetPage",
	"sheetData.cell": "sheetCell", "sheetData.inputType": "sheetIO", "sheetData.formula": "sheetFormula", "apiCalls": "calls",
	"readFromOtherMeasurementData": "romProcess", "readFromOtherMeasurementData.processId": "romProcess",
	"readFromOtherMeasurementData.searchFieldId": "romSearch", "readFromOtherMeasurementData.readParameterId": "romRead",
	"advancedOptions.insertOnEntity": "insertOn", "advancedOptions.insertOnEntityMetadata": "insertMeta",
	"advancedOptions.entityParameterId": "entityParam", "autoFillEntityRelation": "autoFill", "entityOperation": "writeLinked", "": "name"}

// callFields and so on name the controls of a row's API field names (""
// the row itself).
var (
	escFields  = map[string]string{"": "after", "policyName": "policy"}
	callFields = map[string]string{"": "url", "type": "method", "parameters": "params", "resultPath": "resultPath", "description": "description"}
	readFields = map[string]string{"": "read", "writeParameterId": "write"}
)

// designErrors places an error's messages at the designer's controls (by
// form name); what names no control is the general message.
func (q *req) designErrors(err error) (map[string]string, string) {
	out := map[string]string{}
	var e *wps.Error
	if !errors.As(err, &e) {
		return out, ""
	}
	put := func(name, msg string) {
		if out[name] == "" {
			out[name] = msg
		} else if !strings.Contains(out[name], msg) {
			out[name] += "; " + msg
		}
	}
	general := ""
	for _, fe := range e.Fields {
		if name := controlOf(fe.Field); name != "" {
			put(name, q.say(fe))
		} else {
			general = q.message(e)
		}
	}
	if len(e.Fields) == 0 {
		general = q.message(e)
		if e.Code == wps.CodeConflict && strings.Contains(e.Message, "process") {
			// a code or label another live process has: at the field it names
			if strings.Contains(e.Message, "labelled") {
				put("label", general)
			} else {
				put("code", general)
			}
			general = ""
		}
	}
	return out, general
}

// controlOf is the form name of the control an API field name belongs to.
func controlOf(field string) string {
	switch field {
	case "name", "label", "code", "iconName", "steps":
		return field
	}
	m := stepPath.FindStringSubmatch(field)
	if m == nil {
		return ""
	}
	s, rest := "s"+m[1]+".", m[2]
	if pm := paramPath.FindStringSubmatch(rest); pm != nil {
		q := s + "p" + pm[1] + "."
		if m := callPath.FindStringSubmatch(pm[2]); m != nil {
			return q + "c" + m[1] + "." + callFields[m[2]]
		}
		if m := readPath.FindStringSubmatch(pm[2]); m != nil {
			return q + "m" + m[1] + "." + readFields[m[2]]
		}
		return q + nearest(paramFields, indexes.ReplaceAllString(pm[2], ""), "extra")
	}
	if m := escPath.FindStringSubmatch(rest); m != nil {
		return s + "e" + m[1] + "." + escFields[m[2]]
	}
	if rm := rulePath.FindStringSubmatch(rest); rm != nil {
		if rm[2] == "stepId" {
			return s + "r" + rm[1] + ".step"
		}
		return s + "r" + rm[1] + ".value"
	}
	return s + nearest(stepFields, indexes.ReplaceAllString(rest, ""), "extra")
}

// nearest is fields[name], else that of name's nearest parent, else other.
func nearest(fields map[string]string, name, other string) string {
	for {
		if c, ok := fields[name]; ok {
			return c
		}
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			return other
		}
		name = name[:i]
	}
}
