package wps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Sheet kinds: an uploaded workbook (a Google Sheets connector would add
// its own kind behind the same SheetEngine).
const SheetKindXLSX = "XLSX"

// Sheet is a workbook that parameters link cells of (sheetData.sheetApiId
// is its id). Its bytes stay in the store; Pages are its worksheets.
type Sheet struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind" enum:"XLSX"`
	Pages     []string `json:"pages"`
	SHA256    string   `json:"sha256"`
	Size      int64    `json:"size"`
	CreatedAt Time     `json:"createdAt"`
	OrgID     string   `json:"-"`
	CreatedBy string   `json:"-"`
}

// MeasurementSheet is a measurement's own filled copy of a workbook, as
// its last recalculation left it.
type MeasurementSheet struct {
	OrgID, MeasurementID, SheetID string
	ActionID                      string // the action whose write recalculated it
	SHA256                        string
	Content                       []byte
	UpdatedAt                     Time
}

// SheetLink is one parameter's cell, as the engine sees it.
type SheetLink struct {
	Page, Cell string
	Output     bool
	// Formula is an OUTPUT's own formula, evaluated in the workbook in
	// place of the cell's content.
	Formula string
}

// SheetFile is a workbook the engine may have parsed already: SHA256 names
// its content, Load reads it when it has not.
type SheetFile struct {
	SHA256 string
	Load   func() ([]byte, error)
}

// SheetOutput is what a workbook computed in an OUTPUT cell: its raw
// value, or why there is none.
type SheetOutput struct {
	Value string
	Err   string
}

// SheetFill is a workbook filled with a measurement's inputs and
// recalculated.
type SheetFill struct {
	Content []byte
	SHA256  string
	Outputs map[int]SheetOutput // by index in the links
}

// LinkProblem is why a link cannot be used: Field is "page", "cell" or
// "formula".
type LinkProblem struct {
	Link           int
	Field, Message string
}

// SheetEngine reads, fills and recalculates workbooks of one kind. It is the
// only code that knows a spreadsheet format.
type SheetEngine interface {
	// Inspect checks an uploaded workbook and lists its pages. Errors:
	// CodeInvalid naming field "file" for a file it refuses.
	Inspect(content []byte) (pages []string, err error)
	// Check reports the links that cannot be used: a missing page or cell,
	// an INPUT on a formula, a formula that does not parse, calls a
	// function the engine lacks, reads itself, or takes too long.
	Check(f SheetFile, links []SheetLink) ([]LinkProblem, error)
	// Fill writes inputs (by link index: float64, string, bool or nil for
	// the workbook's own content) into the INPUT cells, recalculates, and
	// reads the OUTPUT links listed in want.
	Fill(f SheetFile, links []SheetLink, inputs []any, want []int) (SheetFill, error)
	// Rows reads the first page of a workbook as rows of cell text, for
	// record imports. Errors: CodeInvalid ("file").
	Rows(content []byte, fn func(header, row []string) error) error
}

// SheetRows reads the first page of an uploaded workbook for the records
// import, calling fn with the header and each row of cell text (numbers
// and dates as stored), one row at a time.
func (s *Service) SheetRows(content []byte, fn func(header, row []string) error) error {
	return s.sheets.Rows(content, fn)
}

// sheetEvidenceKey holds, in the data of an action that recalculated
// workbooks, the SHA-256 of each filled copy and why an OUTPUT has no value:
// the evidence is hashed into the ledger with the action's values.
const sheetEvidenceKey = "_sheets"

// SheetEvidence is what an action's data records of one recalculation.
type SheetEvidence struct {
	SheetAPIID string            `json:"sheetApiId"`
	SHA256     string            `json:"sha256"`
	Errors     map[string]string `json:"errors,omitempty" doc:"Why an OUTPUT parameter (by id) has no value"`
}

// linked reports whether p names a workbook cell.
func linked(p Parameter) bool { return p.SheetData != nil && p.SheetData.SheetAPIID != "" }

func isOutput(p Parameter) bool {
	return linked(p) && strings.EqualFold(p.SheetData.InputType, "OUTPUT")
}

// IsSheetOutput reports whether p's value is computed by a workbook (read
// only to clients).
func IsSheetOutput(p Parameter) bool { return isOutput(p) }

// sheetIDs lists the workbooks params link to, in order of first use.
func sheetIDs(params []Parameter) []string {
	var out []string
	for _, p := range params {
		if linked(p) && !slices.Contains(out, p.SheetData.SheetAPIID) {
			out = append(out, p.SheetData.SheetAPIID)
		}
	}
	return out
}

// inputTypes and outputTypes are the parameter types a cell can take from
// or give to.
var (
	inputTypes  = []string{TypeText, TypeLongText, TypeInt, TypeNumber, TypeBoolean, TypeDate, TypeDateTime, TypeSelect, TypeMultiSelect, TypeEmail, TypeURL, TypeEntity, TypeFormula}
	outputTypes = []string{TypeText, TypeLongText, TypeInt, TypeNumber, TypeBoolean, TypeDate, TypeDateTime, TypeSelect, TypeEmail, TypeURL}
)

// checkSheetLinks checks the sheetData of groups of parameters (a process's
// steps, or an entity) at save: field(i, j) is the path of parameter j of
// group i. The workbook, its page and cell must exist, an OUTPUT's formula
// must parse and use only supported functions (CodeInvalid naming
// ...sheetData.cell and so on).
func (s *Service) checkSheetLinks(tx Tx, orgID string, v *Validator, groups [][]Parameter, field func(i, j int) string) error {
	type at struct{ i, j int }
	byBook := map[string][]at{}
	var order []string
	for i, params := range groups {
		for j, p := range params {
			if p.SheetData == nil {
				continue
			}
			sd, f := p.SheetData, field(i, j)+".sheetData"
			if sd.SheetAPIID == "" {
				if sd.InputType != "" || sd.Cell != "" || sd.Formula != "" {
					v.Add(f+".sheetApiId", "is required to link a cell (the id of an uploaded sheet)")
				}
				continue
			}
			switch strings.ToUpper(sd.InputType) {
			case "INPUT":
				sd.InputType = "INPUT"
				v.Check(slices.Contains(inputTypes, p.Type), f+".inputType", "a %s parameter cannot be written into a cell", p.Type)
				v.Check(sd.Formula == "", f+".formula", "only an OUTPUT has a formula")
			case "OUTPUT":
				sd.InputType = "OUTPUT"
				v.Check(slices.Contains(outputTypes, p.Type), f+".inputType", "a %s parameter cannot take a cell's value", p.Type)
			default:
				v.Add(f+".inputType", "must be INPUT or OUTPUT")
				continue
			}
			if sd.Cell == "" {
				v.Add(f+".cell", "is required (a cell such as B2)")
				continue
			}
			if _, ok := byBook[sd.SheetAPIID]; !ok {
				order = append(order, sd.SheetAPIID)
			}
			byBook[sd.SheetAPIID] = append(byBook[sd.SheetAPIID], at{i, j})
		}
	}
	for _, id := range order {
		sh, err := tx.GetSheet(orgID, id)
		if IsCode(err, CodeNotFound) {
			for _, a := range byBook[id] {
				v.Add(field(a.i, a.j)+".sheetData.sheetApiId", "no sheet %q in this organization", id)
			}
			continue
		} else if err != nil {
			return err
		}
		var links []SheetLink
		for _, a := range byBook[id] {
			sd := groups[a.i][a.j].SheetData
			if sd.Page == "" && len(sh.Pages) > 0 {
				sd.Page = sh.Pages[0]
			}
			links = append(links, linkOf(*sd))
		}
		problems, err := s.sheets.Check(s.sheetFile(tx, sh), links)
		if err != nil {
			return err
		}
		for _, pr := range problems {
			a := byBook[id][pr.Link]
			v.Add(field(a.i, a.j)+".sheetData."+pr.Field, "%s", pr.Message)
		}
	}
	return nil
}

func linkOf(sd SheetData) SheetLink {
	return SheetLink{Page: sd.Page, Cell: strings.ToUpper(strings.ReplaceAll(sd.Cell, "$", "")), Output: strings.EqualFold(sd.InputType, "OUTPUT"), Formula: sd.Formula}
}

// sheetFile is the engine's handle on sh: its bytes are read from the
// store only when the engine has not parsed them.
func (s *Service) sheetFile(tx Tx, sh Sheet) SheetFile {
	return SheetFile{SHA256: sh.SHA256, Load: func() ([]byte, error) { return tx.SheetContent(sh.OrgID, sh.ID) }}
}

// fillSheets recalculates the workbooks that st's parameters link to, over
// the measurement's current values (every step's INPUTs): the OUTPUTs of st
// go into cur and data, each filled copy into r.filled and its evidence
// into data. It reports whether any workbook was recalculated.
func (r *run) fillSheets(st Step, cur, data map[string]any) (bool, error) {
	ids := sheetIDs(st.Parameters)
	if len(ids) == 0 {
		return false, nil
	}
	own := func(p Parameter) bool { return p.StepID == st.ID }
	var evidence []SheetEvidence
	for _, id := range ids {
		fill, outs, err := r.s.recalculate(r.tx, r.m.OrgID, id, paramGroups(r.proc.Steps), cur, own, r.filler())
		if err != nil {
			return false, err
		}
		ev := SheetEvidence{SheetAPIID: id, SHA256: fill.SHA256, Errors: map[string]string{}}
		if fill.Content != nil {
			r.filled = append(r.filled, MeasurementSheet{OrgID: r.m.OrgID, MeasurementID: r.m.ID, SheetID: id,
				SHA256: fill.SHA256, Content: fill.Content, UpdatedAt: r.now})
		}
		for pid, o := range outs {
			cur[pid], data[pid] = o.value, o.value
			if o.reason != "" {
				ev.Errors[pid] = o.reason
			}
		}
		evidence = append(evidence, ev)
	}
	data[sheetEvidenceKey] = evidenceData(evidence)
	return true, nil
}

// computed is an OUTPUT's value, or the reason it has none.
type computed struct {
	value  any
	reason string
}

// recalculate fills workbook sheetID with the INPUTs of groups found in
// cur and computes the OUTPUTs that want selects, by parameter id.
func (s *Service) recalculate(tx Tx, orgID, sheetID string, groups [][]Parameter, cur map[string]any, want func(Parameter) bool, fill filler) (SheetFill, map[string]computed, error) {
	var links []SheetLink
	var params []Parameter
	var inputs []any
	var wanted []int
	for _, group := range groups {
		for _, p := range group {
			if !linked(p) || p.SheetData.SheetAPIID != sheetID {
				continue
			}
			if isOutput(p) && want(p) {
				wanted = append(wanted, len(links))
			}
			links = append(links, linkOf(*p.SheetData))
			params = append(params, p)
			inputs = append(inputs, cellInput(p, cur[p.ID]))
		}
	}
	outs := map[string]computed{}
	sh, err := tx.GetSheet(orgID, sheetID)
	if IsCode(err, CodeNotFound) {
		for _, i := range wanted {
			outs[params[i].ID] = computed{reason: "the sheet was deleted"}
		}
		return SheetFill{}, outs, nil
	} else if err != nil {
		return SheetFill{}, nil, err
	}
	filled, err := fill(sh, links, inputs, wanted)
	if err != nil {
		return SheetFill{}, nil, err
	}
	for _, i := range wanted {
		val, reason := outputValue(params[i], filled.Outputs[i])
		outs[params[i].ID] = computed{val, reason}
	}
	return filled, outs, nil
}

// filler recalculates workbook sh (see SheetEngine.Fill).
type filler func(sh Sheet, links []SheetLink, inputs []any, want []int) (SheetFill, error)

// fillIn is the filler that recalculates inside the transaction tx.
func (s *Service) fillIn(tx Tx) filler {
	return func(sh Sheet, links []SheetLink, inputs []any, want []int) (SheetFill, error) {
		return s.sheets.Fill(s.sheetFile(tx, sh), links, inputs, want)
	}
}

// needFills stops a write that would recalculate a workbook inside its
// transaction (milliseconds of CPU, during which, on SQLite, every org's
// writes wait for the one writer): writeSigned fills it with no
// transaction open and the write runs again with the result, which it uses
// only for the same workbook, links and inputs. A write whose inputs keep
// changing fills inside its transaction after maxFillRounds.
type needFills struct{ job fillJob }

func (*needFills) Error() string { return "workbook recalculation needed" }

type fillJob struct {
	key    string
	sheet  Sheet
	links  []SheetLink
	inputs []any
	want   []int
}

// fillKey names one recalculation: the workbook's bytes, its links, the
// inputs and the outputs read. false when the inputs cannot be named
// (a number JSON cannot write).
func fillKey(sh Sheet, links []SheetLink, inputs []any, want []int) (string, bool) {
	b, err := json.Marshal([]any{sh.SHA256, links, inputs, want})
	if err != nil {
		return "", false
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), true
}

// filler is how the run recalculates: with the result of an earlier
// try's fill outside the transaction, or by asking for one (*needFills).
// A write that cannot give up its transaction (no attempt) fills in it.
func (r *run) filler() filler {
	in := r.s.fillIn(r.tx)
	if r.at == nil || r.at.fillInside {
		return in
	}
	return func(sh Sheet, links []SheetLink, inputs []any, want []int) (SheetFill, error) {
		key, ok := fillKey(sh, links, inputs, want)
		if !ok {
			return in(sh, links, inputs, want)
		}
		if f, ok := r.at.fills[key]; ok {
			return f, nil
		}
		return SheetFill{}, &needFills{fillJob{key, sh, links, inputs, want}}
	}
}

// fillOutside runs need's recalculation with no transaction open, reading
// the workbook's bytes (when the engine has not parsed them) in a read of
// its own, and keeps the result for the next try.
func (s *Service) fillOutside(ctx context.Context, need *needFills, at *attempt) error {
	j := need.job
	file := SheetFile{SHA256: j.sheet.SHA256, Load: func() (b []byte, err error) {
		err = s.store.Read(ctx, func(tx Tx) error {
			b, err = tx.SheetContent(j.sheet.OrgID, j.sheet.ID)
			return err
		})
		return b, err
	}}
	f, err := s.sheets.Fill(file, j.links, j.inputs, j.want)
	if err != nil {
		return err
	}
	if at.fills == nil {
		at.fills = map[string]SheetFill{}
	}
	at.fills[j.key] = f
	return nil
}

// recordSheets computes the OUTPUTs of an entity's record from its INPUTs
// (an OUTPUT that cannot be computed is left empty). It reports whether
// any was.
func (s *Service) recordSheets(tx Tx, e Entity, vals map[string]any) (bool, error) {
	ids := sheetIDs(e.Parameters)
	for _, id := range ids {
		_, outs, err := s.recalculate(tx, e.OrgID, id, [][]Parameter{e.Parameters}, vals, func(Parameter) bool { return true }, s.fillIn(tx))
		if err != nil {
			return false, err
		}
		for pid, o := range outs {
			vals[pid] = o.value
		}
	}
	return len(ids) > 0, nil
}

// cellInput is the value written into p's cell: numbers as numbers, dates
// as spreadsheet serial days, lists joined by commas; nil keeps the cell's
// own content.
func cellInput(p Parameter, v any) any {
	if v == nil || isOutput(p) {
		return nil
	}
	s := firstItem(v)
	if p.Multiple() || p.Type == TypeMultiSelect {
		return strings.Join(itemStrings(v), ",")
	}
	switch p.Type {
	case TypeInt, TypeNumber, TypeFormula:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case TypeBoolean:
		return s == "true"
	case TypeDate:
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return serialDay(t)
		}
	case TypeDateTime:
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return serialDay(t)
		}
	}
	if b, ok := v.(bool); ok {
		return b
	}
	return s
}

// excelEpoch is day 0 of spreadsheet serial dates (1900 system, after the
// 1900 leap-year quirk).
var excelEpoch = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)

func serialDay(t time.Time) float64 {
	return t.UTC().Sub(excelEpoch).Hours() / 24
}

// outputValue turns a cell's raw value into p's value, or gives the reason
// there is none.
func outputValue(p Parameter, out SheetOutput) (any, string) {
	if out.Err != "" {
		return nil, out.Err
	}
	raw := strings.TrimSpace(out.Value)
	if raw == "" {
		return nil, "the cell is empty"
	}
	switch p.Type {
	case TypeInt, TypeNumber:
		d, err := decimal.NewFromString(raw)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a number", raw)
		}
		if p.Type == TypeInt {
			if !d.Equal(d.Truncate(0)) {
				return nil, fmt.Sprintf("%s is not a whole number", raw)
			}
		} else if places := decimalsOf(p); places >= 0 {
			d = d.RoundBank(places)
		}
		if !inNumberRange(d) {
			return nil, fmt.Sprintf("%s is out of range", raw)
		}
		return json.Number(d.String()), ""
	case TypeBoolean:
		switch strings.ToUpper(raw) {
		case "TRUE", "1":
			return true, ""
		case "FALSE", "0":
			return false, ""
		}
		return nil, fmt.Sprintf("%q is not TRUE or FALSE", raw)
	case TypeDate, TypeDateTime:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || f < 0 || f > 2958465 {
			return nil, fmt.Sprintf("%q is not a date", raw)
		}
		t := excelEpoch.Add(time.Duration(math.Round(f*86400)) * time.Second)
		if p.Type == TypeDate {
			return t.Format(time.DateOnly), ""
		}
		return t.Format(time.RFC3339), ""
	case TypeSelect:
		if !slices.ContainsFunc(p.OptionItems, func(o OptionItem) bool { return o.Value == raw }) {
			return nil, fmt.Sprintf("%q is not one of the options", raw)
		}
	}
	return raw, ""
}

// evidenceData is evidence as the action's data keeps it: plain maps, so
// that it hashes the same before and after the store's round trip.
func evidenceData(ev []SheetEvidence) []any {
	out := make([]any, len(ev))
	for i, e := range ev {
		m := map[string]any{"sheetApiId": e.SheetAPIID, "sha256": e.SHA256}
		if len(e.Errors) > 0 {
			errs := map[string]any{}
			for k, v := range e.Errors {
				errs[k] = v
			}
			m["errors"] = errs
		}
		out[i] = m
	}
	return out
}

// Sheets returns the evidence of the recalculations an action made.
func (a Action) Sheets() []SheetEvidence {
	list, _ := a.Data[sheetEvidenceKey].([]any)
	out := make([]SheetEvidence, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		x := SheetEvidence{}
		x.SheetAPIID, _ = m["sheetApiId"].(string)
		x.SHA256, _ = m["sha256"].(string)
		if errs, ok := m["errors"].(map[string]any); ok {
			x.Errors = map[string]string{}
			for k, v := range errs {
				x.Errors[k], _ = v.(string)
			}
		}
		out = append(out, x)
	}
	return out
}

// sheetErrors is why each OUTPUT an action computed has no value, by
// parameter id.
func (a Action) sheetErrors() map[string]string {
	out := map[string]string{}
	for _, e := range a.Sheets() {
		for k, v := range e.Errors {
			out[k] = v
		}
	}
	return out
}

// UploadSheet stores a workbook (process:write). Errors: CodeInvalid
// ("file": not a workbook the engine accepts, or "name"), CodeTooLarge.
func (s *Service) UploadSheet(ctx context.Context, p *Principal, name string, content []byte) (Sheet, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Sheet{}, err
	}
	if name == "" || len(name) > 255 {
		return Sheet{}, Invalid("file", "needs a file name of at most 255 characters")
	}
	if int64(len(content)) > MaxAttachmentBytes {
		return Sheet{}, Errorf(CodeTooLarge, "a sheet is at most %d bytes", MaxAttachmentBytes)
	}
	pages, err := s.sheets.Inspect(content)
	if err != nil {
		return Sheet{}, err
	}
	sh := Sheet{ID: NewID(), OrgID: p.OrgID, Name: name, Kind: SheetKindXLSX, Pages: pages, SHA256: sha256Hex(content),
		Size: int64(len(content)), CreatedBy: p.UserID, CreatedAt: s.Now()}
	return sh, s.store.Write(ctx, func(tx Tx) error {
		if err := tx.CreateSheet(sh, content); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditSheetCreated, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetSheet, ID: sh.ID, Name: sh.Name},
			Changes: map[string]AuditChange{"name": {After: sh.Name}, "sha256": {After: sh.SHA256}, "size": {After: sh.Size}}})
	})
}

// ListSheets lists the org's workbooks (process:read).
func (s *Service) ListSheets(ctx context.Context, p *Principal, page Page) ([]Sheet, int, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, 0, err
	}
	var out []Sheet
	var total int
	err := s.store.View(ctx, func(tx Tx) (err error) {
		out, total, err = tx.ListSheets(p.OrgID, page)
		return err
	})
	return out, total, err
}

// GetSheet returns one workbook's description (process:read).
func (s *Service) GetSheet(ctx context.Context, p *Principal, id string) (Sheet, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return Sheet{}, err
	}
	var sh Sheet
	err := s.store.View(ctx, func(tx Tx) (err error) {
		sh, err = tx.GetSheet(p.OrgID, id)
		return err
	})
	return sh, err
}

// SheetContent returns a workbook as uploaded (process:read).
func (s *Service) SheetContent(ctx context.Context, p *Principal, id string) (Sheet, []byte, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return Sheet{}, nil, err
	}
	var sh Sheet
	var b []byte
	err := s.store.View(ctx, func(tx Tx) (err error) {
		if sh, err = tx.GetSheet(p.OrgID, id); err != nil {
			return err
		}
		b, err = tx.SheetContent(p.OrgID, id)
		return err
	})
	return sh, b, err
}

// DeleteSheet deletes a workbook (process:write). Errors: CodeConflict
// while a process (any version) or an entity links to it.
func (s *Service) DeleteSheet(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnProcessWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		sh, err := tx.GetSheet(p.OrgID, id)
		if err != nil {
			return err
		}
		users, err := tx.SheetUsers(p.OrgID, id)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return Errorf(CodeConflict, "the sheet is linked by %s; unlink it first", strings.Join(users, ", "))
		}
		if err := tx.DeleteSheet(p.OrgID, id); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditSheetDeleted, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetSheet, ID: sh.ID, Name: sh.Name},
			Changes: map[string]AuditChange{"name": {Before: sh.Name}, "sha256": {Before: sh.SHA256}}})
	})
}

// GetMeasurementSheet returns a measurement's filled copy of a workbook,
// to readers of the measurement who see every value linked to that
// workbook (semantics section 9); to others it is not found.
func (s *Service) GetMeasurementSheet(ctx context.Context, p *Principal, measurementID, sheetID string) (Sheet, MeasurementSheet, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return Sheet{}, MeasurementSheet{}, err
	}
	var sh Sheet
	var ms MeasurementSheet
	err := s.store.View(ctx, func(tx Tx) error {
		r, err := s.readRun(tx, p, measurementID)
		if err != nil {
			return err
		}
		hidden := r.hidden()
		for _, group := range paramGroups(r.proc.Steps) {
			for _, prm := range group {
				if linked(prm) && prm.SheetData.SheetAPIID == sheetID && hidden[prm.ID] {
					return NotFound("filled sheet")
				}
			}
		}
		if ms, err = tx.GetMeasurementSheet(p.OrgID, measurementID, sheetID); err != nil {
			return err
		}
		sh, err = tx.GetSheet(p.OrgID, sheetID)
		if IsCode(err, CodeNotFound) {
			sh, err = Sheet{ID: sheetID, Name: sheetID + ".xlsx", Kind: SheetKindXLSX}, nil
		}
		return err
	})
	return sh, ms, err
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// noSheets is the engine of a service without one: it refuses workbooks.
type noSheets struct{}

func (noSheets) Inspect([]byte) ([]string, error) {
	return nil, Invalid("file", "this server does not run spreadsheets")
}

func (noSheets) Check(SheetFile, []SheetLink) ([]LinkProblem, error) {
	return nil, Invalid("sheetData", "this server does not run spreadsheets")
}

func (noSheets) Fill(SheetFile, []SheetLink, []any, []int) (SheetFill, error) {
	return SheetFill{}, Invalid("sheetData", "this server does not run spreadsheets")
}

func (noSheets) Rows([]byte, func(header, row []string) error) error {
	return Invalid("file", "this server does not read spreadsheets")
}
