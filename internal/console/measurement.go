package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"wps/internal/wps"
)

// measurementData is the measurement page.
type measurementData struct {
	M        wps.MeasurementView
	Process  string
	Icon     string
	Steps    []timelineStep
	Forms    []stepForm
	History  []wps.MeasurementActionView
	Labels   map[string]string // step id → label
	Reprove  map[string]bool   // the actions the user may reprove, by id
	Ledger   *wps.LedgerReport // after "Check the ledger"
	CanCheck bool
	Error    string
	// Workbooks are the measurement's filled copies of sheets, each with
	// the SHA-256 its last recalculation recorded.
	Workbooks []workbookLink
	// Documents are the contracts rendered at consensus that the user may
	// read; each links to its PDF in the API, which takes the session.
	Documents []wps.Document
	// Meanings are the steps' signatureMeanings, by step id: reproving an
	// action of such a step is signed. SSOOnly: the user has no password
	// and signs with their single sign-on sign-in.
	Meanings map[string]string
	SSOOnly  bool
	// Reproving is the reprove form that was sent and refused, shown
	// open again with its errors.
	Reproving *reproveForm
}

// sigField is the signature part of a form: its id, the meaning signed,
// the error of the last try, and whether the user signs by SSO.
type sigField struct {
	ID, Meaning, Error string
	SSOOnly            bool
}

// reproveForm is a refused reprove of an action: what was sent and why.
type reproveForm struct {
	ActionID, Observation, Error, SignatureError string
}

type workbookLink struct {
	Name, URL, SHA256 string
}

// timelineStep is a step as the timeline shows it: its state and seats.
type timelineStep struct {
	ID, Label, Status string
	Seats             []seat
	Values            []shownValue
}

type seat struct {
	Policy, By, Action string
	At                 wps.Time
	Filled             bool
}

// shownValue is a value in the read view: its text (with the colour of an
// option), its files, and the description of the API call that gave it.
type shownValue struct {
	Label, Value, Color string
	Files               []fileLink
	Source              string
}

// fileLink is a file a page links to; in a form, Dropped is a file shown
// unticked (its Keep was unticked when the form was sent and refused).
type fileLink struct {
	ID, Name, Size string
	Dropped        bool
}

// stepForm is the form of an open step the user holds a policy of.
type stepForm struct {
	StepID, Label, Prompt string
	Fields                []field
	Policies              []string // the step's policies the user holds (a choice when several)
	HasData               bool     // Save: the step takes values and the user may write them
	Approve               bool     // Approve and Reject: the user may approve
	Observation           string
	ObservationError      string
	Error                 string
	// Meaning is the step's signatureMeaning: its actions are signed with
	// the user's password (SignatureError: why the last one was refused).
	Meaning        string
	SignatureError string
	// Holds: the step holds values, so changing one needs a reason.
	Holds bool
}

func (c *Console) measurement(q *req) error {
	return c.showMeasurement(q, http.StatusOK, nil)
}

// showMeasurement renders the page, with failed, the step form that was
// sent and refused, shown again.
func (c *Console) showMeasurement(q *req, status int, failed *stepForm) error {
	return c.showMeasurementWith(q, status, failed, nil)
}

// showMeasurementWith renders the page; failed is the form that was sent
// and refused (its values and errors are shown again), rep the reprove.
// It offers only what the user may do: the forms of the seats they can
// fill now, Save with action:write, Approve and Reject with
// action:approve, Reprove on the actions the service would let them
// reprove. At a step with a signatureMeaning the form asks for the
// password (a user without one signs with their SSO sign-in).
func (c *Console) showMeasurementWith(q *req, status int, failed *stepForm, rep *reproveForm) error {
	id := q.r.PathValue("id")
	m, can, err := c.svc.GetMeasurementPermitted(q.ctx(), q.p, id)
	if err != nil {
		return err
	}
	seats := map[string][]string{} // step → the seats the user can fill now
	for _, a := range can.Steps {
		seats[a.StepID] = slices.DeleteFunc(a.PolicyNames, func(s string) bool { return s == "*" })
		if seats[a.StepID] == nil {
			seats[a.StepID] = []string{}
		}
	}
	d := measurementData{M: m, Process: m.Process.Label, Icon: m.Process.IconName, Labels: map[string]string{}, Reprove: map[string]bool{},
		CanCheck: q.p.Can(wps.FnLedgerRead), Meanings: map[string]string{}, Reproving: rep}
	if me, err := c.svc.Me(q.ctx(), q.p); err == nil {
		d.SSOOnly = me.PasswordHash == ""
	}
	for _, a := range can.Reprovable {
		d.Reprove[a] = true
	}
	if d.Process == "" {
		d.Process = m.Process.Name
	}
	d.Workbooks = c.workbooks(q, m)
	current, last := currentValues(q.words(), m, false), currentValues(q.words(), m, true)
	var files [][]fileLink
	for _, st := range m.Process.Steps {
		d.Labels[st.ID] = st.Label
		if st.SignatureMeaning != "" {
			d.Meanings[st.ID] = st.SignatureMeaning
		}
		ts := timelineStep{ID: st.ID, Label: st.Label, Status: st.Status}
		for _, pol := range st.PolicyNames {
			s := seat{Policy: pol}
			for _, a := range m.Process.Actions {
				if a.StepID == st.ID && a.PolicyName == pol && !a.Superseded && !a.Reproved && a.Type != "REJECTION" {
					s = seat{Policy: pol, By: a.Username, At: a.CreatedAt, Action: a.ActionID, Filled: true}
				}
			}
			ts.Seats = append(ts.Seats, s)
		}
		for _, p := range st.Parameters {
			if v, ok := current[p.ID]; ok && !hiddenInUI(p.Parameter) {
				ts.Values = append(ts.Values, c.shown(q, p, v))
				files = append(files, v.files)
			}
		}
		d.Steps = append(d.Steps, ts)
		held, ok := seats[st.ID]
		if !ok {
			continue
		}
		f := stepForm{StepID: st.ID, Label: st.Label, Prompt: st.Prompt, Policies: held}
		if failed != nil && failed.StepID == st.ID {
			f = *failed
			f.Label, f.Prompt, f.Policies = st.Label, st.Prompt, held
		} else {
			f.Fields = c.fields(q, st.Parameters, last) // rework starts from the values sent back
		}
		if !can.Write { // values to read, not to change
			for i := range f.Fields {
				readOnlyField(&f.Fields[i])
			}
		}
		f.HasData = can.Write && slices.ContainsFunc(f.Fields, func(x field) bool { return !x.ReadOnly })
		f.Meaning = st.SignatureMeaning
		f.Holds = f.HasData && slices.ContainsFunc(m.Process.Actions, func(a wps.MeasurementActionView) bool {
			return a.StepID == st.ID && a.Type == "WRITE_DATA" && !a.Superseded && !a.Reproved && len(a.Data) > 0
		})
		f.Approve = can.Approve
		if !f.HasData && !f.Approve {
			continue // a seat the user holds but no function to fill it with
		}
		for _, fl := range f.Fields {
			files = append(files, fl.Files)
		}
		d.Forms = append(d.Forms, f)
	}
	c.nameFiles(q, files...)
	if d.Documents, err = c.svc.ListDocuments(q.ctx(), q.p, id); err != nil {
		return err
	}
	slices.Reverse(d.Documents) // the newest first, as the history
	d.History = slices.Clone(m.Process.Actions)
	slices.Reverse(d.History)
	if q.r.URL.Query().Get("check") == "ledger" {
		rep, err := c.svc.VerifyLedger(q.ctx(), q.p)
		if err != nil {
			return err
		}
		d.Ledger = &rep
	}
	c.render(q, status, "measurement", m.Name, d)
	return nil
}

// shown is a parameter's current value as the read view shows it.
func (c *Console) shown(q *req, p wps.StepParameter, v current) shownValue {
	sv := shownValue{Label: labelOf(p.Parameter), Value: v.display, Files: v.files}
	switch p.Type {
	case wps.TypeEntity: // a linked record by its columns; its id to one who may not read it
		var shown []string
		for _, it := range v.items {
			if l, ok := c.recordLabel(q, p.Parameter, it.Value); ok {
				shown = append(shown, l)
			} else {
				shown = append(shown, "record "+it.Value)
			}
		}
		sv.Value = strings.Join(shown, "; ")
	case wps.TypeSelect:
		if len(v.items) == 1 {
			sv.Color = optionColor(p.Parameter, v.items[0].Value)
		}
	}
	for _, call := range p.APICalls {
		if call.ID == v.apiCall && v.apiCall != "" {
			sv.Source = call.Description
			if sv.Source == "" {
				sv.Source = q.t("measurement.apiCall")
			}
		}
	}
	return sv
}

// readOnlyField turns a control into the value it shows, for a user who
// may not write.
func readOnlyField(f *field) {
	if f.ReadOnly {
		return
	}
	if f.Display == "" {
		f.Display = f.Value
	}
	f.Input, f.ReadOnly = "readonly", true
}

// current is a parameter's latest value in the measurement.
type current struct {
	items   []wps.DataItemView
	display string
	files   []fileLink
	apiCall string // the id of the apiCall that gave it, if one did
}

// currentValues are each parameter's latest value: the last action that
// wrote it and was not superseded or reproved wins. With sentBack, the
// values of superseded and reproved actions count too: a form to rework
// starts from them.
func currentValues(w words, m wps.MeasurementView, sentBack bool) map[string]current {
	out := map[string]current{}
	for _, a := range m.Process.Actions {
		if (a.Superseded || a.Reproved) && !sentBack {
			continue
		}
		for _, dv := range a.Data {
			cur := current{items: dv.DataItems, apiCall: dv.APICallID}
			var shown []string
			for _, it := range dv.DataItems {
				if it.Type == wps.TypeAttachment {
					cur.files = append(cur.files, fileLink{ID: it.Value, Name: it.Value})
					continue
				}
				v := itemText(w, it)
				if len(it.DataItems) > 0 { // a TABLE row
					var cells []string
					for _, cell := range it.DataItems {
						cells = append(cells, cell.Label+": "+itemText(w, cell))
					}
					v = strings.Join(cells, ", ")
				}
				shown = append(shown, v)
			}
			cur.display = strings.Join(shown, "; ")
			out[dv.ParameterID] = cur
		}
	}
	return out
}

// itemText is a data item as people read it (valueText of its parameter).
func itemText(w words, it wps.DataItemView) string {
	if it.Param != nil {
		return valueText(w, *it.Param, it.Value)
	}
	if it.DisplayValue != "" {
		return it.DisplayValue
	}
	return it.Value
}

// act records the action a form asked for: Save (WRITE_DATA with the
// form's values), Approve or Reject.
func (c *Console) act(q *req) error {
	id := q.r.PathValue("id")
	m, err := c.svc.GetMeasurement(q.ctx(), q.p, id)
	if err != nil {
		return err
	}
	stepID := q.r.PostFormValue("stepId")
	var step *wps.StepView
	for i := range m.Process.Steps {
		if m.Process.Steps[i].ID == stepID {
			step = &m.Process.Steps[i]
		}
	}
	if step == nil {
		return wps.Invalid("stepId", "is not a step of this measurement")
	}
	in := wps.ActInput{StepID: stepID, Type: q.r.PostFormValue("type"), PolicyName: q.r.PostFormValue("policyName"),
		Observation: strings.TrimSpace(q.r.PostFormValue("observation")), Signature: signatureOf(q)}
	fields := c.fields(q, step.Parameters, nil)
	formErrs := map[string]string{}
	if in.Type == "WRITE_DATA" {
		in.Parameters, formErrs = c.readForm(q, step.Parameters)
	}
	if len(formErrs) == 0 {
		_, err = c.svc.Act(q.ctx(), q.p, id, in)
		if err == nil {
			done := map[string]string{"WRITE_DATA": "saved", "APPROVAL": "approved", "REJECTION": "rejected"}[in.Type]
			return q.redirect("/measurements/"+url.PathEscape(id), done)
		}
		if !isFormError(err) && wps.ErrorCode(err) != wps.CodeRateLimited {
			return err
		}
		formErrs = q.fieldErrors(err, "parameters.")
	}
	// Show the form again with what was sent and the errors by its fields.
	f := stepForm{StepID: stepID, Observation: in.Observation, Fields: fields}
	for i := range f.Fields {
		keep(&f.Fields[i], q.r, in.Parameters)
		f.Fields[i].Error = formErrs[f.Fields[i].Name]
		delete(formErrs, f.Fields[i].Name)
	}
	if e, ok := q.fieldErrors(err, "")["observation"]; ok {
		f.ObservationError = e
	}
	if e, ok := q.fieldErrors(err, "")["signature"]; ok {
		f.SignatureError = e
	}
	f.Error = q.t("error.attention")
	if err != nil && len(q.fieldErrors(err, "parameters.")) == 0 && f.ObservationError == "" && f.SignatureError == "" {
		f.Error = q.message(err) // not about a field: a seat taken, a step closed
	}
	for k, v := range formErrs { // about a field the form does not show
		if k != "observation" && k != "signature" {
			f.Error += " " + k + ": " + v
		}
	}
	return c.showMeasurement(q, statusOf(orInvalid(err)), &f)
}

// isFormError reports an error the person can fix in the form.
func isFormError(err error) bool {
	switch wps.ErrorCode(err) {
	case wps.CodeInvalid, wps.CodeConflict, wps.CodeForbidden, wps.CodeTooLarge, wps.CodeUpstream:
		return true
	}
	return false
}

func orInvalid(err error) error {
	if err == nil {
		return wps.Errorf(wps.CodeInvalid, "invalid")
	}
	return err
}

// fieldErrors maps an error's fields to form names: "parameters.temp[0]"
// names the field "temp" (prefix trimmed, then up to the first [ or .).
func (q *req) fieldErrors(err error, prefix string) map[string]string {
	out := map[string]string{}
	var e *wps.Error
	if !errors.As(err, &e) {
		return out
	}
	for _, f := range e.Fields {
		name := strings.TrimPrefix(f.Field, prefix)
		if i := strings.IndexAny(name, "[."); i > 0 {
			name = name[:i]
		}
		if out[name] == "" {
			out[name] = q.say(f)
		}
	}
	return out
}

// reprove reproves an action; refused for something the person can fix
// (a reason, the signature), the page shows the reprove form again.
func (c *Console) reprove(q *req) error {
	id, obs := q.r.PathValue("id"), strings.TrimSpace(q.r.PostFormValue("observation"))
	a, err := c.svc.Reprove(q.ctx(), q.p, id, obs, "", signatureOf(q))
	if err == nil {
		return q.redirect("/measurements/"+url.PathEscape(a.MeasurementID), "reproved")
	}
	if wps.ErrorCode(err) != wps.CodeInvalid && wps.ErrorCode(err) != wps.CodeRateLimited {
		return err
	}
	target, gerr := c.svc.GetAction(q.ctx(), q.p, id)
	if gerr != nil {
		return err
	}
	rep := &reproveForm{ActionID: id, Observation: obs, Error: q.message(err)}
	errs := q.fieldErrors(err, "")
	if e, ok := errs["signature"]; ok {
		rep.SignatureError, rep.Error = e, ""
	}
	if e, ok := errs["observation"]; ok {
		rep.Error = e
	}
	q.r.SetPathValue("id", target.MeasurementID)
	return c.showMeasurementWith(q, statusOf(err), nil, rep)
}

// signatureOf is the signature a form sends: the password typed, or the
// user's single sign-on sign-in when the form offered that instead.
func signatureOf(q *req) wps.SignatureInput {
	return wps.SignatureInput{Password: q.r.PostFormValue("signaturePassword"), SSO: q.r.PostFormValue("signatureSSO") == "true"}
}

func labelOf(p wps.Parameter) string {
	if p.Label != "" {
		return p.Label
	}
	return p.Name
}

func hiddenInUI(p wps.Parameter) bool { return p.AdvancedOptions != nil && p.AdvancedOptions.IsHidden }

// keep puts the submitted values back into a field, for a form shown again;
// sent are the action's parameters as read from the form (the files kept
// and uploaded are attachments by then, shown again as kept).
func keep(f *field, r *http.Request, sent map[string]json.RawMessage) {
	if f.ReadOnly {
		return
	}
	switch f.Input {
	case "multiselect", "select-multiple":
		f.Values = r.PostForm["p."+f.Name]
		for i := range f.Options {
			f.Options[i].Selected = slices.Contains(f.Values, f.Options[i].Value)
		}
	case "table":
		f.Rows = nil
		for _, idx := range tableRowIndexes(r, f.Name) {
			var cells []field
			for _, col := range f.Columns {
				cell := col
				cell.Value = r.PostFormValue(tableCellName(f.Name, idx, col.Name))
				cells = append(cells, cell)
			}
			f.Rows = append(f.Rows, tableRow{Index: idx, Cells: cells})
		}
	case "file":
		ids := r.PostForm["k."+f.Name] // the form did not get as far as reading the files
		if raw, ok := sent[f.Name]; ok {
			ids = attachmentIDs(raw)
		}
		f.Files = nil
		for _, id := range ids {
			f.Files = append(f.Files, fileLink{ID: id, Name: id})
		}
		for _, id := range r.PostForm["f."+f.Name] { // shown, not kept: shown again unticked
			if id != "" && !slices.Contains(ids, id) && !slices.ContainsFunc(f.Files, func(l fileLink) bool { return l.ID == id }) {
				f.Files = append(f.Files, fileLink{ID: id, Name: id, Dropped: true})
			}
		}
	default:
		f.Value = r.PostFormValue("p." + f.Name)
		for i := range f.Options {
			f.Options[i].Selected = f.Options[i].Value == f.Value
		}
	}
}

// readForm turns a step's form into the action's parameters: each value
// as JSON of its parameter's type. Values the form cannot even express
// (a file that fails to upload) are errors by field name; everything else
// is the service's to check.
func (c *Console) readForm(q *req, params []wps.StepParameter) (map[string]json.RawMessage, map[string]string) {
	out := map[string]json.RawMessage{}
	errs := map[string]string{}
	r := q.r
	for _, sp := range params {
		p := sp.Parameter
		if readOnly(p) || hiddenInUI(p) {
			continue
		}
		name := "p." + p.Name
		multiple := p.AdvancedOptions != nil && p.AdvancedOptions.IsMultiple
		switch p.Type {
		case wps.TypeAttachment:
			// The files shown as kept stay (a rework form starts from the
			// values sent back), then the new ones; one file replaces the
			// kept one of a single-file parameter. The form marks each file
			// it showed (f.NAME): none kept nor added then clears the value
			// (null, the service's "no value"; a required one is refused).
			// Without the mark (nothing shown) the value stays as it is.
			ids := slices.DeleteFunc(slices.Clone(r.PostForm["k."+p.Name]), func(s string) bool { return s == "" })
			var added []string
			if r.MultipartForm != nil {
				for _, fh := range r.MultipartForm.File[name] {
					f, err := fh.Open()
					if err != nil {
						errs[p.Name] = q.t("measurement.cannotRead")
						continue
					}
					a, err := c.svc.Upload(q.ctx(), q.p, c.opt.Blobs, fh.Filename, fh.Header.Get("Content-Type"), f)
					f.Close()
					if err != nil {
						errs[p.Name] = q.message(err)
						continue
					}
					added = append(added, a.ID)
				}
			}
			if !multiple && len(added) > 0 {
				ids = added[:1]
			} else {
				ids = append(ids, added...)
			}
			if len(ids) == 0 {
				if shownFiles(r, p.Name) && errs[p.Name] == "" {
					out[p.Name] = json.RawMessage("null") // every file shown unticked
				}
				continue
			}
			if multiple {
				out[p.Name] = mustJSON(ids)
			} else {
				out[p.Name] = mustJSON(ids[0])
			}
		case wps.TypeMultiSelect:
			if vs := r.PostForm[name]; len(vs) > 0 {
				out[p.Name] = mustJSON(vs)
			}
		case wps.TypeTable:
			var rows []map[string]json.RawMessage
			for _, idx := range tableRowIndexes(r, p.Name) {
				row := map[string]json.RawMessage{}
				for _, col := range p.Parameters {
					if v := strings.TrimSpace(r.PostFormValue(tableCellName(p.Name, idx, col.Name))); v != "" {
						row[col.Name] = scalarJSON(q.words(), col, v)
					}
				}
				if len(row) > 0 {
					rows = append(rows, row)
				}
			}
			if len(rows) > 0 {
				out[p.Name] = mustJSON(rows)
			}
		default:
			if multiple {
				var vs []string
				for _, v := range r.PostForm[name] {
					for _, line := range strings.Split(v, "\n") {
						if line = strings.TrimSpace(line); line != "" {
							vs = append(vs, line)
						}
					}
				}
				if len(vs) > 0 {
					out[p.Name] = mustJSON(vs)
				}
				continue
			}
			v := r.PostFormValue(name)
			if p.Type != wps.TypeLongText {
				v = strings.TrimSpace(v)
			}
			if v != "" {
				out[p.Name] = scalarJSON(q.words(), p, v)
			}
		}
	}
	return out, errs
}

// scalarJSON is a form's text as JSON of the parameter's type: numbers and
// booleans as such when they parse (else as text, for the service to
// refuse with its message), dates from the parameter's dateFormat (else the
// language's) as yyyy-mm-dd, instants from the reader's time zone as UTC.
func scalarJSON(w words, p wps.Parameter, v string) json.RawMessage {
	switch p.Type {
	case wps.TypeInt, wps.TypeNumber:
		if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXnN") {
			return json.RawMessage(v)
		}
	case wps.TypeBoolean:
		if v == "true" || v == "false" {
			return json.RawMessage(v)
		}
	case wps.TypeDate:
		layout, _ := w.dateLayout(p)
		if d, err := time.Parse(layout, v); err == nil {
			v = d.Format(time.DateOnly)
		}
	case wps.TypeDateTime:
		for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
			if t, err := time.ParseInLocation(layout, v, w.loc); err == nil {
				v = t.UTC().Format(time.RFC3339)
				break
			}
		}
	}
	return mustJSON(v)
}

// attachmentIDs are the ids of an ATTACHMENT value as the form sent it:
// one id, or a list of them.
// shownFiles reports that the form sent showed files for the parameter
// name (each with its Keep box), so that none kept means none wanted.
func shownFiles(r *http.Request, name string) bool {
	return slices.ContainsFunc(r.PostForm["f."+name], func(s string) bool { return s != "" })
}

func attachmentIDs(raw json.RawMessage) []string {
	var ids []string
	if json.Unmarshal(raw, &ids) == nil {
		return ids
	}
	var id string
	if json.Unmarshal(raw, &id) == nil && id != "" {
		return []string{id}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// tableRowIndexes are the row numbers a TABLE's inputs were sent with,
// in order (rows added in the browser take new numbers).
func tableRowIndexes(r *http.Request, table string) []int {
	var out []int
	prefix := "t." + table + "."
	for k := range r.PostForm {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 {
				if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 0 && n < 1000 && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func tableCellName(table string, row int, col string) string {
	return "t." + table + "." + strconv.Itoa(row) + "." + col
}

// workbooks lists the sheets the measurement's writes recalculated, with
// the latest hash of each filled copy (named by the sheet when the reader
// may see processes).
func (c *Console) workbooks(q *req, m wps.MeasurementView) []workbookLink {
	var out []workbookLink
	at := map[string]int{}
	for _, a := range m.Process.Actions {
		for _, h := range a.Sheets {
			i, ok := at[h.SheetAPIID]
			if !ok {
				i, at[h.SheetAPIID] = len(out), len(out)
				name := "workbook.xlsx"
				if sh, err := c.svc.GetSheet(q.ctx(), q.p, h.SheetAPIID); err == nil {
					name = sh.Name
				}
				out = append(out, workbookLink{Name: name, URL: "/v1/measurements/" + m.ID + "/sheets/" + h.SheetAPIID})
			}
			out[i].SHA256 = h.SHA256
		}
	}
	return out
}
