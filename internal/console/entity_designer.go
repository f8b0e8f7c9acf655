package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

// entityRoutes are the entity designer's pages and the records grid's
// changes; routes lists them with one call.
func (c *Console) entityRoutes() {
	m := c.mux
	m.HandleFunc("GET /entities/new", c.signedIn(c.newEntity))
	m.HandleFunc("POST /entities/new", c.signedIn(c.saveEntity))
	m.HandleFunc("GET /entities/{id}/design", c.signedIn(c.designEntity))
	m.HandleFunc("POST /entities/{id}/design", c.signedIn(c.saveEntity))
	m.HandleFunc("GET /entities/{id}/delete", c.signedIn(c.confirmDeleteEntity))
	m.HandleFunc("POST /entities/{id}/delete", c.signedIn(c.deleteEntity))
	m.HandleFunc("POST /entities/{id}/records", c.signedIn(c.saveRecord))
	m.HandleFunc("POST /entities/{id}/records/{rid}", c.signedIn(c.saveRecord))
	m.HandleFunc("POST /entities/{id}/records/{rid}/delete", c.signedIn(c.deleteRecord))
}

// The notices of the designer's changes (notices lists the others).
func init() { notices = append(notices, "created") }

// entityDesign is the entity designer's form: the entity as saved, or as
// sent and refused, with the server's messages by the API's field names.
type entityDesign struct {
	ID        string // "" for a new entity
	Name      string
	Label     string
	Policies  []option // the org's policies, Selected when they may see the entity
	PolicyTxt string   // the view policies as text, to a user who may not list policies
	Params    []paramForm
	Blank     paramForm // the template a new parameter starts from
	Types     []string
	Entities  []option // what an ENTITY parameter may link to
	Sheets    []option // the org's workbooks, for a field's spreadsheet cell
	Errors    map[string]string
	Error     string
	Dirty     bool   // the form is not what is saved (a field moved)
	Focus     string // the id of the control to focus (the button just pressed)
}

// paramForm is one parameter in the designer. Path is its API field name
// (parameters[2]); Raw keeps the saved parameter, so that what the form
// does not show stays.
type paramForm struct {
	Index                                int
	Row                                  string // its row in the form as posted (pN)
	First, Last                          bool
	Path                                 string
	ID, Raw                              string
	Name, Label, Type, Description       string
	IsRequired, IsUnique, IsPermanent    bool
	Decimals, Formula                    string
	EntityID                             string
	ShowColumns, ViewColumns, Columns    string
	Options                              []optionForm
	Tooltip, AdvDescription, Placeholder string
	Min, Max, MinLength, MaxLength       string
	AdvDecimals, Sort                    string
	Currency, Locale, DateFormat         string
	HiddenFrom                           string
	IsHidden, LeftFreeze, RightFreeze    bool
	HasCustomColor, IsMultiple           bool
	// Its spreadsheet cell (sheetData): workbook, page, cell, INPUT or
	// OUTPUT, and a formula in place of the cell's.
	SheetID, SheetPage, SheetCell, SheetIO, SheetFormula string
}

// optionForm is one option item: value, label and colour.
type optionForm struct {
	Index               int
	Value, Label, Color string
	ID                  string
}

// optionRows is how many empty option rows a parameter shows besides its
// options (the page's script adds more).
const optionRows = 2

func (c *Console) newEntity(q *req) error {
	if err := q.p.Require(wps.FnEntityWrite); err != nil {
		return err
	}
	return c.showEntityDesigner(q, http.StatusOK, entityDesign{Params: []paramForm{{Type: wps.TypeText}}})
}

func (c *Console) designEntity(q *req) error {
	if err := q.p.Require(wps.FnEntityWrite); err != nil {
		return err
	}
	e, err := c.svc.GetEntity(q.ctx(), q.p, q.r.PathValue("id"))
	if err != nil {
		return err
	}
	d := entityDesign{ID: e.ID, Name: e.Name, Label: e.Label}
	for _, p := range e.Parameters {
		d.Params = append(d.Params, paramToForm(p))
	}
	return c.showEntityDesigner(q, http.StatusOK, d, e.ViewPolicyNames...)
}

// showEntityDesigner renders the designer; views are the entity's view policies.
func (c *Console) showEntityDesigner(q *req, status int, d entityDesign, views ...string) error {
	if pols, err := c.svc.ListPolicies(q.ctx(), q.p); err == nil {
		for _, p := range pols {
			d.Policies = append(d.Policies, option{Value: p.Name, Label: p.Name, Selected: slices.Contains(views, p.Name)})
		}
	}
	d.PolicyTxt = strings.Join(views, ", ")
	if list, _, err := c.svc.ListEntities(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 200}, ""); err == nil {
		for _, e := range list {
			d.Entities = append(d.Entities, option{Value: e.ID, Label: or(e.Label, e.Name)})
		}
	}
	if sheets, _, err := c.svc.ListSheets(q.ctx(), q.p, wps.Page{Page: 1, PerPage: 100}); err == nil {
		for _, sh := range sheets {
			d.Sheets = append(d.Sheets, option{Value: sh.ID, Label: sh.Name})
		}
	}
	d.Types = wps.ParamTypes
	for i := range d.Params {
		d.Params[i].index(i)
		d.Params[i].First, d.Params[i].Last = i == 0, i == len(d.Params)-1
	}
	d.Blank = paramForm{Type: wps.TypeText, Last: true} // added at the end
	d.Blank.index(-1)
	title := q.t("design.new")
	if d.ID != "" {
		title = q.t("design.edit", "Name", or(d.Label, d.Name))
	}
	c.render(q, status, "entity_designer", title, d)
	return nil
}

// index numbers a parameter (and its option rows) as the form names them;
// -1 is the page's template for a new parameter (__P__).
func (p *paramForm) index(i int) {
	p.Index, p.Path = i, "parameters["+strconv.Itoa(i)+"]"
	for len(p.Options) < optionRows || p.Options[len(p.Options)-1].Value != "" {
		p.Options = append(p.Options, optionForm{})
	}
	for j := range p.Options {
		p.Options[j].Index = j
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// paramToForm is a saved parameter as the designer shows it.
func paramToForm(p wps.Parameter) paramForm {
	raw, _ := json.Marshal(p)
	f := paramForm{ID: p.ID, Raw: string(raw), Name: p.Name, Label: p.Label, Type: p.Type, Description: p.Description,
		IsRequired: p.IsRequired, IsUnique: p.IsUnique, IsPermanent: p.IsPermanent, Decimals: intText(p.Decimals),
		Formula: strings.Join(p.ComputedFormula, " "), EntityID: p.EntityID,
		ShowColumns: strings.Join(p.ShowColumns, ", "), ViewColumns: strings.Join(p.ViewColumns, ", ")}
	for _, o := range p.OptionItems {
		f.Options = append(f.Options, optionForm{ID: o.ID, Value: o.Value, Label: o.Label, Color: o.Color})
	}
	var cols []string
	for _, col := range p.Parameters {
		line := col.Name + " " + col.Type
		if col.Label != "" && col.Label != col.Name {
			line += " " + col.Label
		}
		cols = append(cols, line)
	}
	f.Columns = strings.Join(cols, "\n")
	if a := p.AdvancedOptions; a != nil {
		f.Tooltip, f.AdvDescription, f.Placeholder = a.Tooltip, a.Description, a.Placeholder
		f.Min, f.Max, f.MinLength, f.MaxLength = floatText(a.Min), floatText(a.Max), intText(a.MinLength), intText(a.MaxLength)
		f.AdvDecimals, f.Sort = intText(a.Decimals), intText(a.Sort)
		f.Currency, f.Locale, f.DateFormat = a.Currency, a.Locale, a.DateFormat
		f.HiddenFrom = strings.Join(a.HiddenFrom, ", ")
		f.IsHidden, f.LeftFreeze, f.RightFreeze = a.IsHidden, a.LeftFreeze, a.RightFreeze
		f.HasCustomColor, f.IsMultiple = a.HasCustomColor, a.IsMultiple
	}
	if sd := p.SheetData; sd != nil {
		f.SheetID, f.SheetPage, f.SheetCell, f.SheetIO, f.SheetFormula = sd.SheetAPIID, sd.Page, sd.Cell, strings.ToUpper(sd.InputType), sd.Formula
	}
	return f
}

// formParams reads the designer's parameters in the order the form has
// them (rows numbered pN, any N; a row marked removed is left out).
func formParams(f url.Values) []paramForm {
	var rows []int
	for _, s := range f["param"] {
		if n, err := strconv.Atoi(s); err == nil && !slices.Contains(rows, n) {
			rows = append(rows, n)
		}
	}
	var out []paramForm
	for _, n := range rows {
		k := func(name string) string { return "p" + strconv.Itoa(n) + "." + name }
		v := func(name string) string { return strings.TrimSpace(f.Get(k(name))) }
		on := func(name string) bool { return f.Get(k(name)) == "true" }
		if on("removed") {
			continue
		}
		p := paramForm{Row: strconv.Itoa(n), ID: v("id"), Raw: f.Get(k("raw")), Name: v("name"), Label: v("label"), Type: v("type"), Description: f.Get(k("description")),
			IsRequired: on("isRequired"), IsUnique: on("isUnique"), IsPermanent: on("isPermanent"), Decimals: v("decimals"),
			Formula: v("computedFormula"), EntityID: v("entityId"),
			ShowColumns: v("showColumns"), ViewColumns: v("viewColumns"), Columns: f.Get(k("columns")),
			Tooltip: v("tooltip"), AdvDescription: v("advDescription"), Placeholder: v("placeholder"),
			Min: v("min"), Max: v("max"), MinLength: v("minLength"), MaxLength: v("maxLength"),
			AdvDecimals: v("advDecimals"), Sort: v("sort"), Currency: v("currency"), Locale: v("locale"), DateFormat: v("dateFormat"),
			HiddenFrom: v("hiddenFrom"), IsHidden: on("isHidden"), LeftFreeze: on("leftFreeze"), RightFreeze: on("rightFreeze"),
			HasCustomColor: on("hasCustomColor"), IsMultiple: on("isMultiple"),
			SheetID: v("sheetId"), SheetPage: v("sheetPage"), SheetCell: v("sheetCell"), SheetIO: v("sheetIO"), SheetFormula: v("sheetFormula")}
		vals, labels, colors, ids := f[k("opt.value")], f[k("opt.label")], f[k("opt.color")], f[k("opt.id")]
		for j := range vals {
			o := optionForm{Value: strings.TrimSpace(vals[j]), Label: strings.TrimSpace(at(labels, j)), Color: strings.TrimSpace(at(colors, j)), ID: at(ids, j)}
			if o.Value != "" || o.Label != "" || o.Color != "" {
				p.Options = append(p.Options, o)
			}
		}
		out = append(out, p)
	}
	return out
}

func at(xs []string, i int) string {
	if i < len(xs) {
		return xs[i]
	}
	return ""
}

// fieldErr is a value the form cannot express (a number that is not
// one); it is refused by the field's name before the service is called.
type fieldErr struct{ field, msg string }

// param is the parameter the form describes: the saved one (Raw) with
// the form's fields over it.
func (f paramForm) param(q *req, errs *[]fieldErr) wps.Parameter {
	var p wps.Parameter
	if f.Raw != "" {
		_ = json.Unmarshal([]byte(f.Raw), &p)
	}
	p.ID, p.Name, p.Label, p.Type, p.Description = f.ID, f.Name, f.Label, f.Type, f.Description
	p.IsRequired, p.IsUnique, p.IsPermanent = f.IsRequired, f.IsUnique, f.IsPermanent
	num := func(field, s string, float bool) *float64 {
		if s == "" {
			return nil
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || !float && n != float64(int(n)) {
			*errs = append(*errs, fieldErr{f.Path + "." + field, q.t("design.notNumber")})
			return nil
		}
		return &n
	}
	integer := func(field, s string) *int {
		if n := num(field, s, false); n != nil {
			i := int(*n)
			return &i
		}
		return nil
	}
	p.Decimals = integer("decimals", f.Decimals)
	p.ComputedFormula = nil
	if f.Formula != "" {
		p.ComputedFormula = strings.Fields(f.Formula)
	}
	p.EntityID = ""
	if f.Type == wps.TypeEntity {
		p.EntityID = f.EntityID
	}
	p.ShowColumns, p.ViewColumns = list(f.ShowColumns), list(f.ViewColumns) // entityOperation: as saved (it acts in steps only)
	old := map[string]wps.OptionItem{}
	for _, o := range p.OptionItems {
		old[o.ID] = o
	}
	p.OptionItems = nil
	if f.Type == wps.TypeSelect || f.Type == wps.TypeMultiSelect {
		for _, o := range f.Options {
			if o == (optionForm{Index: o.Index}) {
				continue // an empty row
			}
			it := old[o.ID]
			it.ID, it.Value, it.Label, it.Color = o.ID, o.Value, o.Label, o.Color
			p.OptionItems = append(p.OptionItems, it)
		}
	}
	if f.Type == wps.TypeTable {
		oldCols := map[string]wps.Parameter{}
		for _, col := range p.Parameters {
			oldCols[col.Name] = col
		}
		p.Parameters = nil
		for _, line := range strings.Split(f.Columns, "\n") {
			parts := strings.Fields(line)
			if len(parts) == 0 {
				continue
			}
			col := oldCols[parts[0]]
			col.Name, col.Type, col.Label = parts[0], wps.TypeText, ""
			if len(parts) > 1 {
				col.Type = strings.ToUpper(parts[1])
			}
			if len(parts) > 2 {
				col.Label = strings.Join(parts[2:], " ")
			}
			p.Parameters = append(p.Parameters, col)
		}
	} else {
		p.Parameters = nil
	}
	a := wps.AdvancedOptions{}
	if p.AdvancedOptions != nil {
		a = *p.AdvancedOptions
	}
	a.Tooltip, a.Description, a.Placeholder = f.Tooltip, f.AdvDescription, f.Placeholder
	a.Min, a.Max = num("advancedOptions.min", f.Min, true), num("advancedOptions.max", f.Max, true)
	a.MinLength, a.MaxLength = integer("advancedOptions.minLength", f.MinLength), integer("advancedOptions.maxLength", f.MaxLength)
	a.Decimals, a.Sort = integer("advancedOptions.decimals", f.AdvDecimals), integer("advancedOptions.sort", f.Sort)
	a.Currency, a.Locale, a.DateFormat, a.HiddenFrom = f.Currency, f.Locale, f.DateFormat, list(f.HiddenFrom)
	a.IsHidden, a.LeftFreeze, a.RightFreeze = f.IsHidden, f.LeftFreeze, f.RightFreeze
	a.HasCustomColor, a.IsMultiple = f.HasCustomColor, f.IsMultiple
	a.HasMetadata = false // option metadata is written by steps: data has no use for it (refused)
	if !reflect.DeepEqual(a, wps.AdvancedOptions{}) || p.AdvancedOptions != nil {
		p.AdvancedOptions = &a
	}
	p.SheetData = nil
	if sd := (wps.SheetData{SheetAPIID: f.SheetID, Page: f.SheetPage, Cell: f.SheetCell, InputType: f.SheetIO, Formula: f.SheetFormula}); sd != (wps.SheetData{}) {
		p.SheetData = &sd
	}
	wps.ForType(&p) // what the form hid for this type is not sent
	return p
}

func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// saveEntity creates or changes an entity through the service, as the
// API does; a refusal shows the form again as sent, each message by the
// field it names, and nothing is stored.
func (c *Console) saveEntity(q *req) error {
	f := q.r.PostForm
	id := q.r.PathValue("id")
	d := entityDesign{ID: id, Name: strings.TrimSpace(f.Get("name")), Label: strings.TrimSpace(f.Get("label")), Params: formParams(f)}
	views := f["viewPolicyNames"]
	if _, typed := f["viewPolicyText"]; typed {
		views = list(f.Get("viewPolicyText"))
	}
	if dir, row, ok := strings.Cut(f.Get("move"), ":"); ok { // Move up or down: the form again, nothing saved
		if err := q.p.Require(wps.FnEntityWrite); err != nil {
			return err
		}
		d.Dirty = true
		if i := moveParam(d.Params, dir, row); i >= 0 {
			switch { // its button, or the other one at an end
			case dir == "up" && i == 0:
				dir = "down"
			case dir == "down" && i == len(d.Params)-1:
				dir = "up"
			}
			d.Focus = "p" + strconv.Itoa(i) + "-" + dir
		}
		return c.showEntityDesigner(q, http.StatusOK, d, views...)
	}
	var bad []fieldErr
	params := []wps.Parameter{}
	for i := range d.Params {
		d.Params[i].index(i)
		params = append(params, d.Params[i].param(q, &bad))
	}
	var err error
	if len(bad) > 0 {
		e := &wps.Error{Code: wps.CodeInvalid, Message: q.t("error.attention")}
		for _, b := range bad {
			e.Fields = append(e.Fields, wps.FieldError{Field: b.field, Message: b.msg})
		}
		err = e
	} else if id == "" {
		var e wps.Entity
		if e, err = c.svc.CreateEntity(q.ctx(), q.p, wps.EntityInput{Name: d.Name, Label: d.Label, ViewPolicyNames: views, Parameters: params}); err == nil {
			return q.redirect("/entities/"+url.PathEscape(e.ID), "saved")
		}
	} else {
		u := wps.EntityUpdate{Name: &d.Name, Label: &d.Label, ViewPolicyNames: &views, Parameters: &params}
		if _, err = c.svc.UpdateEntity(q.ctx(), q.p, id, u); err == nil {
			return q.redirect("/entities/"+url.PathEscape(id), "saved")
		}
	}
	if !isFormError(err) {
		return err
	}
	d.Errors, d.Error = q.placeErrors(err, d.known()), q.t("error.attention")
	if msg, ok := d.Errors[""]; ok {
		d.Error = msg
	}
	return c.showEntityDesigner(q, statusOf(err), d, views...)
}

// moveParam moves the parameter of form row row one place up or down in
// params, and returns where it is now (-1: no such row).
func moveParam(params []paramForm, dir, row string) int {
	i := slices.IndexFunc(params, func(p paramForm) bool { return p.Row == row })
	switch {
	case i > 0 && dir == "up":
		params[i-1], params[i] = params[i], params[i-1]
		return i - 1
	case i >= 0 && i < len(params)-1 && dir == "down":
		params[i+1], params[i] = params[i], params[i+1]
		return i + 1
	}
	return i
}

// known are the API field names the designer has a place for.
func (d entityDesign) known() map[string]bool {
	k := map[string]bool{"name": true, "label": true, "viewPolicyNames": true, "parameters": true}
	for _, p := range d.Params {
		k[p.Path] = true
		for _, n := range []string{"name", "label", "type", "description", "isRequired", "isUnique", "isPermanent", "decimals",
			"computedFormula", "entityId", "showColumns", "viewColumns", "optionItems", "parameters",
			"advancedOptions.tooltip", "advancedOptions.description", "advancedOptions.placeholder", "advancedOptions.min",
			"advancedOptions.max", "advancedOptions.minLength", "advancedOptions.maxLength", "advancedOptions.decimals",
			"advancedOptions.sort", "advancedOptions.currency", "advancedOptions.locale", "advancedOptions.dateFormat",
			"advancedOptions.hiddenFrom", "advancedOptions.isHidden", "advancedOptions.leftFreeze", "advancedOptions.rightFreeze",
			"advancedOptions.hasCustomColor", "advancedOptions.isMultiple",
			"sheetData", "sheetData.sheetApiId", "sheetData.page", "sheetData.cell", "sheetData.inputType", "sheetData.formula"} {
			k[p.Path+"."+n] = true
		}
		for j := range p.Options {
			for _, n := range []string{"value", "label", "color"} {
				k[p.Path+".optionItems["+strconv.Itoa(j)+"]."+n] = true
			}
		}
	}
	return k
}

var lastSegment = regexp.MustCompile(`(\[\d+\]|\.[^.\[\]]+)$`)

// placeErrors puts each of an error's messages at the nearest field the
// form has: parameters[0].optionItems[1].meta goes to the option's row,
// parameters[0].sheetData to the parameter; "" holds what has no place
// (a message not about a field, e.g. a name taken).
func (q *req) placeErrors(err error, known map[string]bool) map[string]string {
	out := map[string]string{}
	var e *wps.Error
	if !errors.As(err, &e) {
		return out
	}
	put := func(k, msg string) {
		if out[k] == "" {
			out[k] = msg
		}
	}
	for _, f := range e.Fields {
		name := f.Field
		for name != "" && !known[name] {
			next := lastSegment.ReplaceAllString(name, "")
			if next == name {
				next = ""
			}
			name = next
		}
		msg := q.say(f)
		if name == "" && f.Field != "" {
			msg = f.Field + ": " + msg
		}
		put(name, msg)
	}
	if len(e.Fields) == 0 {
		put("", q.message(e))
	}
	return out
}

// confirmDeleteEntity asks before an entity is deleted.
func (c *Console) confirmDeleteEntity(q *req) error {
	if err := q.p.Require(wps.FnEntityWrite); err != nil {
		return err
	}
	e, err := c.svc.GetEntity(q.ctx(), q.p, q.r.PathValue("id"))
	if err != nil {
		return err
	}
	c.render(q, http.StatusOK, "entity_delete", q.t("design.deleteTitle", "Name", or(e.Label, e.Name)), map[string]any{"E": e})
	return nil
}

// deleteEntity deletes an entity (softly: it can be restored from the
// entities page); one a live process links to is refused with the reason.
func (c *Console) deleteEntity(q *req) error {
	id := q.r.PathValue("id")
	if err := c.svc.DeleteEntity(q.ctx(), q.p, id); err != nil {
		if wps.ErrorCode(err) != wps.CodeConflict {
			return err
		}
		e, gerr := c.svc.GetEntity(q.ctx(), q.p, id)
		if gerr != nil {
			return err
		}
		c.render(q, statusOf(err), "entity_delete", q.t("design.deleteTitle", "Name", or(e.Label, e.Name)), map[string]any{"E": e, "Error": q.message(err)})
		return nil
	}
	return q.redirect("/entities", "deleted")
}

// dField is one of a parameter's simple controls in the designer.
type dField struct {
	ID, Name, Label, Value, Error, Input string
	Num                                  string // the parameter's number as the page shows it
	Checked                              bool
	Types                                string // the types it applies to ("": all)
	Hint                                 string // a message id that says what to write ("": none)
}

// hinted are the designer's fields whose input needs a word of help.
var hinted = []string{"computedFormula", "columns", "showColumns", "viewColumns", "hiddenFrom", "dateFormat", "name", "min", "max"}

// Key is the parameter's row in the form's names (__P__ in the page's
// template for a new one); Num is its number for people (__N__).
func (p paramForm) Key() string {
	if p.Index < 0 {
		return "__P__"
	}
	return strconv.Itoa(p.Index)
}

func (p paramForm) Num() string {
	if p.Index < 0 {
		return "__N__"
	}
	return strconv.Itoa(p.Index + 1)
}

func (p paramForm) field(name, input, value string, checked bool, types, errKey string, errs map[string]string) dField {
	f := dField{ID: "p" + p.Key() + "-" + name, Name: "p" + p.Key() + "." + name, Label: "design.f." + name, Value: value,
		Error: errs[p.Path+"."+errKey], Input: input, Num: p.Num(), Checked: checked, Types: types}
	if slices.Contains(hinted, name) {
		f.Hint = "design.h." + name
	}
	return f
}

// Basics are a parameter's first controls; Checks its yes/no ones;
// Typed those of some types only; Advanced its advancedOptions.
func (p paramForm) Basics(errs map[string]string) []dField {
	return []dField{
		p.field("name", "text", p.Name, false, "", "name", errs),
		p.field("label", "text", p.Label, false, "", "label", errs),
		p.field("description", "textarea", p.Description, false, "", "description", errs),
	}
}

func (p paramForm) Checks(errs map[string]string) []dField {
	return []dField{
		p.field("isRequired", "check", "", p.IsRequired, "", "isRequired", errs),
		p.field("isUnique", "check", "", p.IsUnique, "", "isUnique", errs),
		p.field("isPermanent", "check", "", p.IsPermanent, "", "isPermanent", errs),
	}
}

func (p paramForm) Typed(errs map[string]string) []dField {
	return []dField{
		p.field("decimals", "number", p.Decimals, false, "NUMBER FORMULA", "decimals", errs),
		p.field("computedFormula", "text", p.Formula, false, "FORMULA", "computedFormula", errs),
		p.field("showColumns", "text", p.ShowColumns, false, "ENTITY", "showColumns", errs),
		p.field("viewColumns", "text", p.ViewColumns, false, "ENTITY", "viewColumns", errs),
		p.field("columns", "textarea", p.Columns, false, "TABLE", "parameters", errs),
	}
}

// Colours is the option items' "use these colours" box (hasCustomColor).
func (p paramForm) Colours(errs map[string]string) dField {
	return p.field("hasCustomColor", "check", "", p.HasCustomColor, "", "advancedOptions.hasCustomColor", errs)
}

// Sheet are the text controls of the field's spreadsheet cell (the
// workbook and the direction are lists, drawn by the page).
func (p paramForm) Sheet(errs map[string]string) []dField {
	cell := func(name, value, errKey string) dField {
		f := p.field(name, "text", value, false, "", "sheetData."+errKey, errs)
		f.Label, f.Hint = "d."+name, "d."+name+"Hint"
		return f
	}
	return []dField{cell("sheetPage", p.SheetPage, "page"), cell("sheetCell", p.SheetCell, "cell"), cell("sheetFormula", p.SheetFormula, "formula")}
}

// SheetOpen is whether the spreadsheet cell's box starts open: a cell
// is linked, or the service refused something of it.
func (p paramForm) SheetOpen(errs map[string]string) bool {
	if p.SheetID != "" || p.SheetCell != "" {
		return true
	}
	for k := range errs {
		if strings.HasPrefix(k, p.Path+".sheetData") {
			return true
		}
	}
	return false
}

// SheetOpts are the workbooks, the field's selected (kept when not listed).
func (p paramForm) SheetOpts(all []option) []option { return withCurrent(all, p.SheetID) }

// IOOpts are a cell's directions, the field's selected.
func (p paramForm) IOOpts() []option {
	return []option{{Value: "INPUT", Label: "d.sheetIO.INPUT", Selected: p.SheetIO == "INPUT"}, {Value: "OUTPUT", Label: "d.sheetIO.OUTPUT", Selected: p.SheetIO == "OUTPUT"}}
}

func (p paramForm) Advanced(errs map[string]string) []dField {
	a := "advancedOptions."
	return []dField{
		p.field("tooltip", "text", p.Tooltip, false, "", a+"tooltip", errs),
		p.field("advDescription", "text", p.AdvDescription, false, "", a+"description", errs),
		p.field("placeholder", "text", p.Placeholder, false, "", a+"placeholder", errs),
		p.field("min", "text", p.Min, false, "", a+"min", errs),
		p.field("max", "text", p.Max, false, "", a+"max", errs),
		p.field("minLength", "text", p.MinLength, false, "", a+"minLength", errs),
		p.field("maxLength", "text", p.MaxLength, false, "", a+"maxLength", errs),
		p.field("advDecimals", "text", p.AdvDecimals, false, "", a+"decimals", errs),
		p.field("sort", "text", p.Sort, false, "", a+"sort", errs),
		p.field("currency", "text", p.Currency, false, "", a+"currency", errs),
		p.field("locale", "text", p.Locale, false, "", a+"locale", errs),
		p.field("dateFormat", "text", p.DateFormat, false, "", a+"dateFormat", errs),
		p.field("hiddenFrom", "text", p.HiddenFrom, false, "", a+"hiddenFrom", errs),
		p.field("isHidden", "check", "", p.IsHidden, "", a+"isHidden", errs),
		p.field("leftFreeze", "check", "", p.LeftFreeze, "", a+"leftFreeze", errs),
		p.field("rightFreeze", "check", "", p.RightFreeze, "", a+"rightFreeze", errs),
		p.field("isMultiple", "check", "", p.IsMultiple, "", a+"isMultiple", errs),
	}
}

// Err is the message at one of the parameter's own fields (errKey as in
// the API: "type", "optionItems[0].value"), or at the parameter itself ("").
func (p paramForm) Err(errs map[string]string, key string) string {
	if key == "" {
		return errs[p.Path]
	}
	return errs[p.Path+"."+key]
}

// OptErr is the message at an option's field.
func (p paramForm) OptErr(errs map[string]string, j int, key string) string {
	return errs[p.Path+".optionItems["+strconv.Itoa(j)+"]."+key]
}

// HasAdvanced reports advanced options set or refused: their box starts open.
func (p paramForm) HasAdvanced(errs map[string]string) bool {
	for _, f := range p.Advanced(errs) {
		if f.Value != "" || f.Checked || f.Error != "" {
			return true
		}
	}
	return false
}
