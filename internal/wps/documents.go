package wps

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/contract"
	"wps/internal/engine"
)

// Documents (semantics section 11): when a step that names contract
// templates (its legalContractId, its parameters' contractTemplateId)
// reaches consensus, each is rendered to a PDF, stored with its bytes in
// the transaction of the consensus, and its SHA-256 recorded in the ledger
// in that transaction (recordDocument, a leaf of its own). The rendering
// itself runs outside any transaction: the consensus's write gives up
// once it knows each document's template and inputs (needRenders), they
// are rendered within DocumentConfig's limits, and the write runs again
// with the bytes, storing them only for the same body and inputs
// (writePrepared). Rendering is pure (contract.RenderWithin), so the same
// inputs give the same bytes in any try.

// DocumentConfig bounds contract documents (docs/contracts.md); zero
// values take the defaults.
type DocumentConfig struct {
	// Limits bound each rendering, at a consensus and when a verification
	// renders a document again.
	Limits contract.Limits
	// RerendersPerMinute is how many documents one user may have rendered
	// again per minute (GET /v1/documents/{id}/verify?rerender=true), in
	// bursts of as many.
	RerendersPerMinute int
	// Render renders a document: contract.RenderWithin unless a test
	// wraps it (to hold a rendering).
	Render func(ctx context.Context, body string, in contract.Inputs, lim contract.Limits) ([]byte, error)
}

// The defaults of DocumentConfig: at most, a document of 200,000
// characters of lines took 0.7 s and 2 MB (docs/contracts.md).
const (
	DefaultContractMaxChars      = 200_000
	DefaultContractMaxBytes      = 4 << 20
	DefaultContractRenderTimeout = 10 * time.Second
	DefaultRerendersPerMinute    = 6
)

func (c *DocumentConfig) defaults() {
	if c.Limits.MaxChars <= 0 {
		c.Limits.MaxChars = DefaultContractMaxChars
	}
	if c.Limits.MaxBytes <= 0 {
		c.Limits.MaxBytes = DefaultContractMaxBytes
	}
	if c.Limits.Timeout <= 0 {
		c.Limits.Timeout = DefaultContractRenderTimeout
	}
	if c.RerendersPerMinute <= 0 {
		c.RerendersPerMinute = DefaultRerendersPerMinute
	}
	if c.Render == nil {
		c.Render = contract.RenderWithin
	}
}

// Document is a rendered contract.
type Document struct {
	ID              string `json:"id"`
	MeasurementID   string `json:"measurementId"`
	StepID          string `json:"stepId"`
	ParameterID     string `json:"parameterId,omitempty" doc:"The parameter whose value this document is (contractTemplateId); absent for the step's legalContractId"`
	TemplateID      string `json:"templateId"`
	TemplateVersion int    `json:"templateVersion"`
	ActionID        string `json:"actionId" doc:"The action that completed the consensus: its ledger entry records the document's SHA-256"`
	SHA256          string `json:"sha256"`
	Size            int64  `json:"size"`
	CreatedAt       Time   `json:"createdAt"`
	Superseded      bool   `json:"superseded" doc:"The step was re-opened (a rejection or reproval) after this document was rendered"`
	// Opening is the opening of the step it was rendered at.
	Opening int             `json:"-"`
	OrgID   string          `json:"-"`
	Content []byte          `json:"-"`
	Inputs  contract.Inputs `json:"-"`
	Shown   DocumentShown   `json:"-"`
}

// DocumentShown lists what a document shows values of: who may read it
// must see each (section 9).
type DocumentShown struct {
	Params   []string `json:"params"`   // parameters of the measurement's process version
	Entities []string `json:"entities"` // entities whose records it shows fields of
	Fields   []string `json:"fields"`   // those fields
}

// DocumentDetail is a document with the inputs it was rendered from: with
// its template's version they give the same bytes again.
type DocumentDetail struct {
	Document
	Inputs contract.Inputs `json:"inputs"`
}

// LEDGER TOUCH POINT. A document's SHA-256 is a leaf of its org's ledger
// (a LeafDocument: the document's id and SHA-256), queued with the
// consensus that rendered it (recordDocument, from renderDocuments in
// save). Documents rendered before the ledger was a Merkle log were
// recorded in the data of the action that completed their consensus, under
// ledgerDocumentsKey, which that action's leaf covers; recordedDocument
// reads both.
const ledgerDocumentsKey = "$documents"

// recordDocument queues d's leaf with the run's ledger entries.
func (r *run) recordDocument(d Document) {
	r.entries = append(r.entries, leafEntry(Leaf{Kind: LeafDocument, OrgID: d.OrgID, MeasurementID: d.MeasurementID,
		SubjectID: d.ID, SHA256: d.SHA256, At: d.CreatedAt}))
}

// recordedDocument is the SHA-256 the ledger recorded for document id
// among a measurement's entries, and the entry that records it: the
// document's leaf, or, for a document recorded in the data of the action a
// that completed its consensus, that action's entry. "" and nil when none
// does.
func recordedDocument(entries []LedgerEntry, a Action, id string) (string, *LedgerEntry) {
	for i, e := range entries {
		var l Leaf
		if e.Kind == LeafDocument && json.Unmarshal(e.Payload, &l) == nil && l.SubjectID == id {
			return l.SHA256, &entries[i]
		}
	}
	list, _ := a.Data[ledgerDocumentsKey].([]any)
	for _, item := range list {
		m, _ := item.(map[string]any)
		if sha, ok := m["sha256"].(string); ok && m["id"] == id {
			for i, e := range entries {
				if e.ID == a.ID {
					return sha, &entries[i]
				}
			}
			return sha, nil
		}
	}
	return "", nil
}

// pendingDoc is a document whose consensus this run reached: its inputs
// are known, its bytes come when the run is saved (once the measurement
// has its name).
type pendingDoc struct {
	doc      Document
	body     string
	template string // the template's name
	field    string // what a document beyond the limits names: legalContractId or the parameter
}

// needRenders stops a write transaction whose documents are not rendered
// yet (a *needRenders error): writePrepared renders them with no
// transaction open and runs the write again with their bytes, at the same
// time and with the same ids (the documents print them).
type needRenders struct {
	docs []renderJob // every document of the try, rendered or not
	now  Time
	ids  map[string]string
	// orgID and process name the process of a measurement the write
	// creates: the documents print its name, its process's next number,
	// which a creation committed meanwhile changes.
	orgID, process string
}

func (*needRenders) Error() string { return "documents to render" }

// renderJob is one document to render.
type renderJob struct {
	key      string // renderKey(body, in)
	body     string
	in       contract.Inputs
	template string
	field    string
}

// renderKey names what a document is rendered from: the bytes are used
// only for the same body and inputs.
func renderKey(body string, in contract.Inputs) string {
	b, _ := json.Marshal([]any{body, in})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// render renders the jobs that had has not, within the limits, and
// returns the bytes of every job by key. Errors: CodeInvalid naming the
// field of a document beyond a limit (refuse), ctx's error.
func (s *Service) render(ctx context.Context, jobs []renderJob, had map[string][]byte) (map[string][]byte, error) {
	out := make(map[string][]byte, len(jobs))
	for _, j := range jobs {
		if pdf, ok := had[j.key]; ok {
			out[j.key] = pdf
			continue
		}
		pdf, err := s.docs.Render(ctx, j.body, j.in, s.docs.Limits)
		if err != nil {
			return nil, s.refuse(j, err)
		}
		out[j.key] = pdf
	}
	return out, nil
}

// refuse is the answer to a document that could not be rendered: a
// limit reached is CodeInvalid (beyond).
func (s *Service) refuse(j renderJob, err error) error {
	var le *contract.LimitError
	switch {
	case errors.As(err, &le):
		field, msg := beyond(j, le)
		return Invalid(field, "%s", msg)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded): // the request's
		return err
	}
	return Internal(fmt.Errorf("render document %s: %w", j.in.DocumentID, err))
}

// beyond says which limit a document reached, and names the field to
// change: the parameter whose value fills most of it, else the
// template's field (j.field).
func beyond(j renderJob, le *contract.LimitError) (field, msg string) {
	switch le.Limit {
	case contract.LimitChars:
		field, what := j.field, ""
		if name, ok := strings.CutPrefix(le.Placeholder, contract.KindParam+" "); ok {
			field = "parameters." + name
		}
		if le.Placeholder != "" {
			what = fmt.Sprintf(": {{%s}} prints %d of them (%d times)", le.Placeholder, le.Share, le.Uses)
		}
		return field, fmt.Sprintf("the contract %q would print %d characters, more than a document may hold (%d, WPS_CONTRACT_MAX_CHARS)%s", j.template, le.Got, le.Max, what)
	case contract.LimitBytes:
		return j.field, fmt.Sprintf("the contract %q renders to %d bytes, more than a document may take (%d, WPS_CONTRACT_MAX_BYTES)", j.template, le.Got, le.Max)
	}
	return j.field, fmt.Sprintf("rendering the contract %q took longer than %v (WPS_CONTRACT_RENDER_TIMEOUT)", j.template, time.Duration(le.Max))
}

// id is the id the run gives to what (the action, a document): one that
// an earlier try of its write gave it, else a new one.
func (r *run) id(what string) string {
	if id, ok := r.ids[what]; ok {
		return id
	}
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	r.ids[what] = NewID()
	return r.ids[what]
}

// resume gives the run what the earlier tries of its write kept: the API
// answers, the documents rendered, and the time and ids those print. The
// time only while the measurement is as unchanged as that time: a change
// recorded after it would come before it in time.
func (r *run) resume(at *attempt) {
	r.at, r.answers, r.ids = at, at.answers, maps.Clone(at.ids)
	if !at.now.IsZero() && !r.m.UpdatedAt.After(at.now.Time) {
		r.now = at.now
	}
}

// signer is who filled one seat of a consensed step.
type signer struct {
	policy string
	action Action
	user   User
	reader *Principal // the user as a reader, for what the document may show
}

// prepareDocuments readies the documents of st, which action a brings to
// consensus (state): one per template the step and its parameters name.
// A parameter's value is its document's id. A template that no longer
// exists (a reference saved before templates did) renders nothing: the
// consensus is not blocked.
func (r *run) prepareDocuments(st Step, a *Action, cur map[string]any, state engine.State) error {
	type job struct{ template, param string }
	var jobs []job
	if st.LegalContractID != "" {
		jobs = append(jobs, job{template: st.LegalContractID})
	}
	for _, p := range st.Parameters {
		if p.ContractTemplateID != "" {
			jobs = append(jobs, job{p.ContractTemplateID, p.ID})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	signers, err := r.signers(st, *a, state)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		tp, err := r.tx.GetTemplate(r.m.OrgID, j.template, 0, true)
		if IsCode(err, CodeNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		d := Document{ID: r.id("document " + tp.ID + " " + j.param), OrgID: r.m.OrgID, MeasurementID: r.m.ID, StepID: st.ID, Opening: state.Steps[st.ID].Opening,
			ParameterID: j.param, TemplateID: tp.ID, TemplateVersion: tp.Version, ActionID: a.ID, CreatedAt: r.now}
		if d.Inputs, d.Shown, err = r.contractInputs(st, tp, d.ID, cur, signers); err != nil {
			return err
		}
		pd := pendingDoc{doc: d, body: tp.Body, template: tp.Name, field: "legalContractId"}
		if j.param != "" {
			a.Data[j.param] = d.ID
			_, p := paramByID(st.Parameters, j.param)
			pd.field = "parameters." + p.Name
		}
		r.docs = append(r.docs, pd)
	}
	return nil
}

// renderDocuments stores the run's pending documents, rendered outside
// the transaction by an earlier try of its write, and records each in the
// ledger. When one is not rendered yet (or its inputs changed since), it
// gives up with *needRenders. A measurement created in this run is named
// first: on PostgreSQL its name comes with its insert, which the read
// sends (created: this try inserted it).
func (r *run) renderDocuments(created bool) error {
	if len(r.docs) == 0 {
		return nil
	}
	if r.at == nil {
		return Internal(errors.New("a consensus with documents in a write that cannot render them (use writePrepared)"))
	}
	if r.m.Name == "" {
		m, err := r.tx.GetMeasurement(r.m.OrgID, r.m.ID)
		if err != nil {
			return err
		}
		r.m.Name = m.Name
	}
	jobs := make([]renderJob, len(r.docs))
	missing := false
	for i := range r.docs {
		pd := &r.docs[i]
		pd.doc.Inputs.Measurement = r.m.Name
		if _, ok := pd.doc.Inputs.Values["measurement.name"]; ok {
			pd.doc.Inputs.Values["measurement.name"] = r.m.Name
		}
		jobs[i] = renderJob{key: renderKey(pd.body, pd.doc.Inputs), body: pd.body, in: pd.doc.Inputs, template: pd.template, field: pd.field}
		if r.at.renders[jobs[i].key] == nil {
			missing = true
		}
	}
	if missing {
		need := &needRenders{docs: jobs, now: r.now, ids: r.ids}
		if created {
			need.orgID, need.process = r.m.OrgID, r.m.ProcessID
		}
		return need
	}
	for i, pd := range r.docs {
		d := pd.doc
		pdf := r.at.renders[jobs[i].key]
		sum := sha256.Sum256(pdf)
		d.Content, d.SHA256, d.Size = pdf, hex.EncodeToString(sum[:]), int64(len(pdf))
		if err := r.tx.CreateDocument(d); err != nil {
			return err
		}
		r.recordDocument(d)
	}
	r.docs = nil
	return nil
}

// signers lists the seats of st as action a leaves them at its consensus,
// in the step's policy order: each seat's action and user.
func (r *run) signers(st Step, a Action, state engine.State) ([]signer, error) {
	policies := r.p.OrgPolicies
	if policies == nil {
		var err error
		if policies, err = r.tx.ListPolicies(r.m.OrgID); err != nil {
			return nil, err
		}
	}
	names := st.PolicyNames
	if len(names) == 0 {
		names = []string{engine.AnySeat}
	}
	var out []signer
	for _, name := range names {
		seat, ok := state.Steps[st.ID].Seats[name]
		if !ok {
			continue
		}
		s := signer{policy: name, action: a}
		if seat.ActionID != a.ID {
			i := slices.IndexFunc(r.actions, func(x Action) bool { return x.ID == seat.ActionID })
			if i < 0 {
				continue
			}
			s.action = r.actions[i]
		}
		switch {
		case s.action.UserID == r.user.ID:
			s.user = r.user
		default:
			u, err := r.tx.GetUser(r.m.OrgID, s.action.UserID)
			if IsCode(err, CodeNotFound) {
				u = User{ID: s.action.UserID, Name: s.action.Username}
			} else if err != nil {
				return nil, err
			}
			s.user = u
		}
		if s.user.ID == r.p.UserID {
			s.reader = r.p
		} else {
			held := []Policy{}
			for _, pol := range policies {
				if Holds(s.user.Roles, pol) {
					held = append(held, pol)
				}
			}
			s.reader = &Principal{OrgID: r.m.OrgID, UserID: s.user.ID, Roles: s.user.Roles, User: s.user, Policies: held, OrgPolicies: policies}
		}
		out = append(out, s)
	}
	return out, nil
}

// Texts that stand in a document where a value cannot.
const (
	docNoValue = "—"
	docHidden  = "[not shown: hidden from a signatory]"
)

// contractInputs works out what a document of template tp at st shows: the
// values visible to every signatory of the step (section 9, each as a
// reader with their roles and policies at the consensus), and the
// signature page. A linked record that is gone, or a field that is, is
// said in place of its value.
func (r *run) contractInputs(st Step, tp Template, docID string, cur map[string]any, signers []signer) (contract.Inputs, DocumentShown, error) {
	in := contract.Inputs{DocumentID: docID, Renderer: contract.Renderer, Title: tp.Name, Process: r.proc.Name, Measurement: r.m.Name,
		Step: st.Label, At: r.now.Time, Values: map[string]string{}}
	shown := DocumentShown{Params: []string{}, Entities: []string{}, Fields: []string{}}
	for _, s := range signers {
		policy := s.policy
		if policy == engine.AnySeat {
			policy = "any member"
		}
		cs := contract.Signature{Policy: policy, Name: cmp.Or(s.user.Name, s.action.Username), Email: s.user.Email,
			At: s.action.CreatedAt.Time, ActionID: s.action.ID, LedgerHash: s.action.LedgerHash}
		if sig := s.action.Signature; sig != nil { // as signed, not as the user reads now
			cs.Name, cs.Email, cs.At, cs.Meaning, cs.Method = sig.SignerName, sig.SignerEmail, sig.SignedAt.Time, sig.Meaning, sig.Method
		}
		if o := s.action.OnBehalfOf; o.UserID != "" { // filled by a delegate: "Ana for Bruno"
			cs.Name += " for " + o.Name
		}
		in.Signatures = append(in.Signatures, cs)
	}
	hidden := map[string]bool{}
	for _, s := range signers {
		for id, h := range newSight(r.tx, s.reader).hiddenFor(r) {
			hidden[id] = hidden[id] || h
		}
	}
	parsed, err := contract.Parse(tp.Body)
	if err != nil {
		return in, shown, Internal(fmt.Errorf("template %s version %d: %w", tp.ID, tp.Version, err))
	}
	pos, _ := stepByID(r.proc.Steps, st.ID)
	var record *Record
	var entity *Entity
	recordText := "" // why there is no record, when there is none
	if tp.TemplateEntityID != "" {
		if entity, record, recordText, err = r.linkedRecord(pos, tp.TemplateEntityID, cur); err != nil {
			return in, shown, err
		}
	}
	// The record's fields a signatory may not see: readable is whether
	// every signatory may read its records, inRecords what any of them
	// may not see in them.
	readable, inRecords := true, map[string]bool{}
	if record != nil {
		for _, s := range signers {
			readable = readable && canReadRecords(s.reader, *entity)
			for id := range hiddenInRecords(s.reader, *entity) {
				inRecords[id] = true
			}
		}
	}
	for _, ph := range parsed.Placeholders {
		key := ph.Key()
		switch ph.Kind {
		case contract.KindMeasurement:
			in.Values[key] = r.m.Name // the name of a new measurement comes at save (renderDocuments)
		case contract.KindProcess:
			in.Values[key] = r.proc.Name
		case contract.KindDate:
			in.Values[key] = r.now.UTC().Format("2006-01-02")
		case contract.KindParam:
			p, found := contractParam(r.proc.Steps, pos, ph.Name)
			switch {
			case found != 1:
				in.Values[key] = fmt.Sprintf("[no parameter %s]", ph.Name)
			case hidden[p.ID]:
				in.Values[key] = docHidden
			case cur[p.ID] == nil:
				in.Values[key] = docNoValue
			default:
				in.Values[key] = valueText(p, cur[p.ID], hidden)
				shown.Params = appendOnce(shown.Params, p.ID)
				for _, col := range p.Parameters { // the columns printed: a reader must see them too
					if !hidden[col.ID] {
						shown.Params = appendOnce(shown.Params, col.ID)
					}
				}
			}
		case contract.KindEntity:
			if record == nil {
				in.Values[key] = recordText
				continue
			}
			ep, ok := entity.ParamByName(ph.Name)
			if !ok {
				in.Values[key] = fmt.Sprintf("[%s has no field %s]", entity.Name, ph.Name)
				continue
			}
			switch {
			case !readable || inRecords[ep.ID]:
				in.Values[key] = docHidden
			case record.Values[ep.ID] == nil:
				in.Values[key] = docNoValue
			default:
				in.Values[key] = valueText(ep, record.Values[ep.ID], inRecords)
				shown.Entities = appendOnce(shown.Entities, entity.ID)
				shown.Fields = appendOnce(shown.Fields, ep.ID)
				for _, col := range ep.Parameters {
					if !inRecords[col.ID] {
						shown.Fields = appendOnce(shown.Fields, col.ID)
					}
				}
			}
		}
	}
	return in, shown, nil
}

// linkedRecord finds the record of entityID that the measurement links to
// through an ENTITY parameter (the contract step's own first), or says why
// there is none.
func (r *run) linkedRecord(pos int, entityID string, cur map[string]any) (*Entity, *Record, string, error) {
	e, err := r.tx.GetEntity(r.m.OrgID, entityID)
	if IsCode(err, CodeNotFound) {
		return nil, nil, "[the template's entity no longer exists]", nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	for _, p := range entityLinks(r.proc.Steps, pos, entityID) {
		id := firstItem(cur[p.ID])
		if id == "" {
			continue
		}
		rec, err := r.tx.GetRecord(r.m.OrgID, e.ID, id)
		if IsCode(err, CodeNotFound) {
			return &e, nil, fmt.Sprintf("[%s record %s not found: it was deleted]", e.Name, id), nil
		}
		if err != nil {
			return nil, nil, "", err
		}
		return &e, &rec, "", nil
	}
	return &e, nil, fmt.Sprintf("[no %s record linked]", e.Name), nil
}

// valueText is a value as a document shows it: display values joined by
// commas, a TABLE's rows one per line without the columns hidden from a
// signatory.
func valueText(p Parameter, v any, hidden map[string]bool) string {
	if p.Type == TypeTable {
		var lines []string
		for _, row := range tableRows(v) {
			var cells []string
			for _, col := range p.Parameters {
				if cv, ok := row[col.ID]; ok && cv != nil && !hidden[col.ID] {
					cells = append(cells, col.Label+": "+valueText(col, cv, hidden))
				}
			}
			lines = append(lines, strings.Join(cells, ", "))
		}
		return strings.Join(lines, "\n")
	}
	var out []string
	for _, s := range itemStrings(v) {
		out = append(out, DisplayValue(p, s))
	}
	return strings.Join(out, ", ")
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// readDocument loads a document the reader may read: they read the
// measurement, and see every value the document shows (section 9); else
// it is not found. The run is the measurement, read for the check.
func (s *Service) readDocument(tx Tx, p *Principal, id string, content bool) (Document, *run, error) {
	d, err := tx.GetDocument(p.OrgID, id, content)
	if err != nil {
		return d, nil, err
	}
	r, err := s.readRun(tx, p, d.MeasurementID)
	if err != nil {
		return d, nil, err
	}
	if !r.canRead(d) {
		return d, nil, NotFound("document")
	}
	return d, r, nil
}

// canRead reports whether the run's reader sees every value d shows.
func (r *run) canRead(d Document) bool {
	if r.p.IsAdmin() {
		return true
	}
	hidden := r.hidden()
	if slices.ContainsFunc(d.Shown.Params, func(id string) bool { return hidden[id] }) {
		return false
	}
	for _, id := range d.Shown.Entities {
		e, err := r.tx.GetEntity(r.m.OrgID, id)
		if err != nil || !canReadRecords(r.p, e) {
			return false
		}
		h := hiddenInRecords(r.p, e)
		if slices.ContainsFunc(d.Shown.Fields, func(f string) bool { return h[f] }) {
			return false
		}
	}
	return true
}

// ListDocuments lists a measurement's documents that the reader may read,
// superseded ones included. Errors: CodeNotFound, CodeForbidden.
func (s *Service) ListDocuments(ctx context.Context, p *Principal, measurementID string) ([]Document, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return nil, err
	}
	out := []Document{}
	err := s.store.Read(ctx, func(tx Tx) error {
		r, err := s.readRun(tx, p, measurementID)
		if err != nil {
			return err
		}
		docs, err := tx.ListDocuments(p.OrgID, measurementID)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if r.canRead(d) {
				out = append(out, d)
			}
		}
		return nil
	})
	return out, err
}

// GetDocument returns a document with the inputs it was rendered from.
// Errors: CodeNotFound, CodeForbidden.
func (s *Service) GetDocument(ctx context.Context, p *Principal, id string) (DocumentDetail, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return DocumentDetail{}, err
	}
	var out DocumentDetail
	err := s.store.Read(ctx, func(tx Tx) error {
		d, _, err := s.readDocument(tx, p, id, false)
		out = DocumentDetail{Document: d, Inputs: d.Inputs}
		return err
	})
	return out, err
}

// DocumentContent returns a document with its bytes. Errors: CodeNotFound,
// CodeForbidden.
func (s *Service) DocumentContent(ctx context.Context, p *Principal, id string) (Document, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return Document{}, err
	}
	var d Document
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		d, _, err = s.readDocument(tx, p, id, true)
		return err
	})
	return d, err
}

// DocumentCheck is the answer of a document's verification.
type DocumentCheck struct {
	OK         bool   `json:"ok" doc:"The stored bytes have the SHA-256 stored with them and the one the ledger recorded, the ledger entry is intact, and (when asked for) they render again the same"`
	DocumentID string `json:"documentId"`
	SHA256     string `json:"sha256" doc:"SHA-256 of the stored bytes, computed now"`
	Recorded   string `json:"recorded" doc:"The SHA-256 the ledger recorded: in the document's leaf (or, for a document of the hash chain's time, in the data of the action that completed the consensus)"`
	Stored     string `json:"stored" doc:"The SHA-256 stored with the document when it was rendered"`
	ActionID   string `json:"actionId"`
	LedgerHash string `json:"ledgerHash" doc:"That action's ledger hash"`
	LeafHash   string `json:"leafHash,omitempty" doc:"The leaf hash (base64) of the ledger entry that records the document"`
	LeafIndex  *int64 `json:"leafIndex,omitempty" doc:"Its index in the org's log, once integrated (GET /v1/ledger/verify checks the whole log)"`
	// LedgerIntact: the entry that records the document still hashes to
	// its leaf hash.
	LedgerIntact bool     `json:"ledgerIntact" doc:"The ledger entry that records the SHA-256 still hashes to its leaf hash"`
	Rerendered   *bool    `json:"rerendered" doc:"With rerender=true: rendering the template's version again with the document's inputs gives the stored bytes. Null when not asked for, or when the document came from another renderer version or its template version is gone"`
	Reasons      []string `json:"reasons" doc:"What failed, when ok is false"`
}

// VerifyDocument checks a document's stored bytes: their SHA-256,
// computed now, against the one stored with them and the one the ledger
// recorded, and that ledger entry against its leaf hash. With rerender,
// it also renders the template's version again with the document's
// inputs and compares the bytes: outside any transaction, within the
// limits of a rendering, and at most DocumentConfig.RerendersPerMinute
// times a minute per user. Errors: CodeNotFound, CodeForbidden,
// CodeRateLimited (with RetryAfter), CodeInvalid naming rerender when the
// rendering goes beyond a limit.
func (s *Service) VerifyDocument(ctx context.Context, p *Principal, id string, rerender bool) (DocumentCheck, error) {
	if err := p.Require(FnMeasurementRead); err != nil {
		return DocumentCheck{}, err
	}
	var out DocumentCheck
	var d Document
	var body string // the template version's, when it renders again
	err := s.store.Read(ctx, func(tx Tx) error {
		var r *run
		var err error
		if d, r, err = s.readDocument(tx, p, id, true); err != nil {
			return err
		}
		sum := sha256.Sum256(d.Content)
		out = DocumentCheck{DocumentID: d.ID, SHA256: hex.EncodeToString(sum[:]), Stored: d.SHA256, ActionID: d.ActionID, Reasons: []string{}}
		entries, err := tx.MeasurementLedger(p.OrgID, d.MeasurementID)
		if err != nil {
			return err
		}
		var a Action
		if i := slices.IndexFunc(r.actions, func(a Action) bool { return a.ID == d.ActionID }); i >= 0 {
			a = r.actions[i]
			out.LedgerHash = a.LedgerHash
		}
		var e *LedgerEntry
		if out.Recorded, e = recordedDocument(entries, a, d.ID); e != nil {
			data := leafData(*e, &a)
			out.LeafHash, out.LedgerIntact = e.LeafHash.String(), data != nil && tlog.RecordHash(data) == e.LeafHash
			if e.Integrated() {
				out.LeafIndex = &e.Index
			}
		}
		if !rerender || d.Inputs.Renderer != contract.Renderer {
			return nil
		}
		tp, err := tx.GetTemplate(p.OrgID, d.TemplateID, d.TemplateVersion, true)
		if IsCode(err, CodeNotFound) {
			return nil
		}
		body = tp.Body
		return err
	})
	if err != nil {
		return out, err
	}
	if body != "" {
		if wait := s.rerenders.take(p.UserID, s.Now().Time); wait > 0 {
			return out, &Error{Code: CodeRateLimited, RetryAfter: wait,
				Message: fmt.Sprintf("documents are rendered again at most %d times a minute per user (WPS_CONTRACT_RERENDERS_PER_MINUTE); verify without rerender checks the stored bytes and the ledger", s.docs.RerendersPerMinute)}
		}
		again, err := s.docs.Render(ctx, body, d.Inputs, s.docs.Limits)
		var le *contract.LimitError
		switch {
		case errors.As(err, &le):
			_, msg := beyond(renderJob{template: d.Inputs.Title}, le)
			return out, Invalid("rerender", "%s", msg)
		case err != nil && ctx.Err() != nil:
			return out, ctx.Err()
		}
		same := err == nil && bytes.Equal(again, d.Content)
		out.Rerendered = &same
	}
	switch {
	case out.Recorded == "":
		out.Reasons = append(out.Reasons, "the ledger holds no record of this document")
	case out.SHA256 != out.Recorded:
		out.Reasons = append(out.Reasons, "the stored bytes are not the ones the ledger recorded")
	}
	if out.SHA256 != out.Stored {
		out.Reasons = append(out.Reasons, "the stored bytes do not have the SHA-256 stored with them")
	}
	if out.Recorded != "" && !out.LedgerIntact {
		out.Reasons = append(out.Reasons, "the ledger entry that records the document was altered")
	}
	if out.Rerendered != nil && !*out.Rerendered {
		out.Reasons = append(out.Reasons, "rendering the template again with the document's inputs gives other bytes")
	}
	out.OK = len(out.Reasons) == 0
	return out, nil
}

// refuseDocuments refuses values sent for generated documents: their value
// is the id of the document rendered at the step's consensus.
func refuseDocuments(st Step, sent map[string]json.RawMessage) error {
	for _, p := range st.Parameters {
		if p.ContractTemplateID == "" {
			continue
		}
		_, byName := sent[p.Name]
		_, byLabel := sent[p.Label]
		if byName || byLabel {
			return Invalid("parameters."+p.Name, "is a generated document: wps sets it to the document it renders when the step reaches consensus")
		}
	}
	return nil
}
