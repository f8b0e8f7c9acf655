package wps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"wps/internal/contract"
)

// Contract templates (semantics section 11): a body of paragraphs, #
// headings and placeholders, versioned once a document was rendered from
// it. Rendering documents at consensus is in documents.go.

// Template is a contract template at one of its versions.
type Template struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	Body               string   `json:"body"`
	TemplateEntityID   string   `json:"templateEntityId" doc:"The entity whose linked record fills {{entity FIELD}}; empty for none"`
	TemplateEntityName string   `json:"templateEntityName"`
	Version            int      `json:"version"`
	InUse              bool     `json:"inUse" doc:"A document was rendered from this version: an edit makes a new version"`
	Placeholders       []string `json:"placeholders" doc:"The body's placeholders, each once: param NAME, entity FIELD, measurement.name, process.name, date"`
	CreatedAt          Time     `json:"createdAt"`
	UpdatedAt          Time     `json:"updatedAt"`
	OrgID              string   `json:"-"`
	DeletedAt          *Time    `json:"-"`
}

// TemplateInput is the body of a template create.
type TemplateInput struct {
	Name             string
	Body             string
	TemplateEntityID string
}

// TemplateUpdate changes a template; nil fields stay.
type TemplateUpdate struct {
	Name             *string
	Body             *string
	TemplateEntityID *string
}

// DefaultMaxTemplateBytes is the default limit of a template's body.
const DefaultMaxTemplateBytes = 64 << 10

// checkTemplate validates a template and resolves its entity (id or name)
// to an id. Errors: CodeInvalid naming name, body (and the placeholder at
// fault) or templateEntityId.
func (s *Service) checkTemplate(tx Tx, tp *Template) error {
	var v Validator
	tp.Name = strings.TrimSpace(tp.Name)
	v.Check(validName(tp.Name, 200), "name", "must be 1 to 200 printable characters")
	if len(tp.Body) > s.maxTemplateBytes {
		v.Add("body", "must be at most %d bytes (it has %d)", s.maxTemplateBytes, len(tp.Body))
		return v.Err()
	}
	v.Check(strings.TrimSpace(tp.Body) != "", "body", "must not be empty")
	parsed, err := contract.Parse(tp.Body)
	var ce *contract.Error
	if errors.As(err, &ce) {
		v.Add("body", "%s", ce.Msg)
	}
	tp.TemplateEntityName = ""
	var e *Entity
	if tp.TemplateEntityID != "" {
		found, err := findEntity(tx, tp.OrgID, tp.TemplateEntityID)
		switch {
		case IsCode(err, CodeNotFound):
			v.Add("templateEntityId", "no entity named or with id %q", tp.TemplateEntityID)
		case err != nil:
			return err
		default:
			e = &found
			tp.TemplateEntityID, tp.TemplateEntityName = found.ID, found.Name
		}
	}
	for _, ph := range parsed.Placeholders {
		if ph.Kind != contract.KindEntity {
			continue
		}
		switch {
		case tp.TemplateEntityID == "":
			v.Add("body", "%s needs the template's templateEntityId: the entity whose linked record it reads", ph.Text)
		case e == nil: // reported above
		default:
			if _, ok := e.ParamByName(ph.Name); !ok {
				v.Add("body", "%s: entity %q has no parameter %q", ph.Text, e.Name, ph.Name)
			}
		}
	}
	tp.Placeholders = placeholderKeys(parsed)
	return v.Err()
}

func placeholderKeys(t contract.Template) []string {
	out := []string{}
	for _, ph := range t.Placeholders {
		out = append(out, ph.Key())
	}
	return out
}

// decorate fills what answers show of a stored template: its placeholders
// and its entity's name.
func decorate(tx Tx, tp *Template) {
	parsed, _ := contract.Parse(tp.Body)
	tp.Placeholders = placeholderKeys(parsed)
	if tp.TemplateEntityID != "" {
		if e, err := tx.GetEntity(tp.OrgID, tp.TemplateEntityID); err == nil {
			tp.TemplateEntityName = e.Name
		}
	}
}

// CreateTemplate adds a contract template. Errors: CodeInvalid (see
// checkTemplate), CodeConflict for a name in use.
func (s *Service) CreateTemplate(ctx context.Context, p *Principal, in TemplateInput) (Template, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Template{}, err
	}
	now := s.Now()
	tp := Template{ID: NewID(), OrgID: p.OrgID, Name: in.Name, Body: in.Body, TemplateEntityID: in.TemplateEntityID, Version: 1, CreatedAt: now, UpdatedAt: now}
	err := s.store.Write(ctx, func(tx Tx) error {
		t := tp
		if err := s.checkTemplate(tx, &t); err != nil {
			return err
		}
		tp = t
		if err := tx.CreateTemplate(tp); err != nil {
			return err
		}
		return s.auditChange(tx, p, AuditTemplateCreated, TargetTemplate, tp.ID, tp.Name, nil, tp)
	})
	return tp, err
}

// GetTemplate returns a live template at its current version, or at
// version when it is not 0. Errors: CodeNotFound.
func (s *Service) GetTemplate(ctx context.Context, p *Principal, id string, version int) (Template, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return Template{}, err
	}
	var tp Template
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if tp, err = tx.GetTemplate(p.OrgID, id, version, false); err != nil {
			return err
		}
		decorate(tx, &tp)
		return nil
	})
	return tp, err
}

// ListTemplates pages the org's live templates at their current versions.
func (s *Service) ListTemplates(ctx context.Context, p *Principal, page Page, search string) ([]Template, int, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, 0, err
	}
	var list []Template
	var total int
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if list, total, err = tx.ListTemplates(p.OrgID, page, search); err != nil {
			return err
		}
		for i := range list {
			decorate(tx, &list[i])
		}
		return nil
	})
	return list, total, err
}

// ListTemplateVersions lists a live template's versions, newest first (each
// with the time it was made as createdAt and updatedAt). Errors: CodeNotFound.
func (s *Service) ListTemplateVersions(ctx context.Context, p *Principal, id string) ([]Template, error) {
	if err := p.Require(FnProcessRead); err != nil {
		return nil, err
	}
	var list []Template
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		if list, err = tx.ListTemplateVersions(p.OrgID, id); err != nil {
			return err
		}
		if len(list) == 0 {
			return NotFound("contract template")
		}
		for i := range list {
			decorate(tx, &list[i])
		}
		return nil
	})
	return list, err
}

// UpdateTemplate edits a template: in place while no document was
// rendered from its current version, else as a new version (documents keep
// theirs). The live processes that name it must still resolve its
// placeholders. Errors: as CreateTemplate, plus CodeNotFound.
func (s *Service) UpdateTemplate(ctx context.Context, p *Principal, id string, u TemplateUpdate) (Template, error) {
	if err := p.Require(FnProcessWrite); err != nil {
		return Template{}, err
	}
	var out Template
	err := s.store.Write(ctx, func(tx Tx) error {
		cur, err := tx.LockTemplate(p.OrgID, id) // renders of it (FOR SHARE) finish first
		if err != nil {
			return err
		}
		next := cur
		setIf(&next.Name, u.Name)
		setIf(&next.Body, u.Body)
		setIf(&next.TemplateEntityID, u.TemplateEntityID)
		if err := s.checkTemplate(tx, &next); err != nil {
			return err
		}
		if next.Name == cur.Name && next.Body == cur.Body && next.TemplateEntityID == cur.TemplateEntityID {
			out = next
			return nil
		}
		if err := checkTemplateUsers(tx, next); err != nil {
			return err
		}
		next.UpdatedAt = s.Now()
		newVersion := cur.InUse
		if newVersion {
			next.Version, next.InUse = cur.Version+1, false
		}
		out = next
		if err := tx.SaveTemplate(next, newVersion); err != nil {
			return err
		}
		changes := diffFields(cur, next, "inUse")
		if next.Version != cur.Version {
			changes["version"] = AuditChange{Before: cur.Version, After: next.Version}
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditTemplateUpdated, Actor: actorOf(p),
			Target: AuditTarget{Kind: TargetTemplate, ID: next.ID, Name: next.Name}, Changes: changes})
	})
	return out, err
}

// DeleteTemplate removes a template that no live process names (soft: the
// versions of processes that still name it keep rendering it). Errors:
// CodeNotFound; CodeConflict listing the processes that name it.
func (s *Service) DeleteTemplate(ctx context.Context, p *Principal, id string) error {
	if err := p.Require(FnProcessWrite); err != nil {
		return err
	}
	return s.store.Write(ctx, func(tx Tx) error {
		tp, err := tx.LockTemplate(p.OrgID, id)
		if err != nil {
			return err
		}
		users, err := templateUsers(tx, tp.OrgID, tp.ID)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			var names []string
			for _, u := range users {
				names = append(names, u.ProcessName)
			}
			return Errorf(CodeConflict, "contract template %q is named by processes %s", tp.Name, strings.Join(names, ", "))
		}
		if err := tx.SoftDeleteTemplate(p.OrgID, id, s.Now()); err != nil {
			return err
		}
		return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditTemplateDeleted, Actor: actorOf(p),
			Target:  AuditTarget{Kind: TargetTemplate, ID: tp.ID, Name: tp.Name},
			Changes: map[string]AuditChange{"deleted": {Before: false, After: true}}})
	})
}

// templateUsers lists the latest versions of live processes that name a
// template, in a step's legalContractId or a parameter's contractTemplateId.
func templateUsers(tx Tx, orgID, templateID string) ([]MentioningVersion, error) {
	versions, err := tx.ProcessVersionsMentioning(orgID, `"`+templateID+`"`)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(versions, func(v MentioningVersion) bool {
		return !v.Live || len(templateRefs(v.Steps, templateID)) == 0
	}), nil
}

// templateRef is where a process names a template: the step (by index),
// and the parameter (nil for the step's legalContractId).
type templateRef struct {
	step  int
	param *Parameter
}

// templateRefs lists where steps name a template.
func templateRefs(steps []Step, templateID string) []templateRef {
	var out []templateRef
	for i := range steps {
		if steps[i].LegalContractID == templateID {
			out = append(out, templateRef{step: i})
		}
		for j := range steps[i].Parameters {
			if steps[i].Parameters[j].ContractTemplateID == templateID {
				out = append(out, templateRef{step: i, param: &steps[i].Parameters[j]})
			}
		}
	}
	return out
}

// checkTemplateUsers checks a template against every live process that
// names it. Errors: CodeInvalid on body, naming the process and placeholder.
func checkTemplateUsers(tx Tx, tp Template) error {
	users, err := templateUsers(tx, tp.OrgID, tp.ID)
	if err != nil {
		return err
	}
	var v Validator
	for _, u := range users {
		for _, ref := range templateRefs(u.Steps, tp.ID) {
			for _, problem := range templateProblems(u.Steps, ref.step, tp) {
				v.Add("body", "process %q, step %q: %s", u.ProcessName, u.Steps[ref.step].Label, problem)
			}
		}
	}
	return v.Err()
}

// templateProblems lists what keeps a template from rendering at steps[i]:
// {{param NAME}} naming no parameter of the process (or several), and
// {{entity FIELD}} when no ENTITY parameter links to the template's entity.
func templateProblems(steps []Step, i int, tp Template) []string {
	parsed, err := contract.Parse(tp.Body)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	entityDone := false
	for _, ph := range parsed.Placeholders {
		switch ph.Kind {
		case contract.KindParam:
			if _, found := contractParam(steps, i, ph.Name); found == 0 {
				out = append(out, fmt.Sprintf("%s names no parameter of this process", ph.Text))
			} else if found > 1 {
				out = append(out, fmt.Sprintf("%s is ambiguous: several steps have a parameter %q, and step %q has none", ph.Text, ph.Name, steps[i].Label))
			}
		case contract.KindEntity:
			if entityDone || tp.TemplateEntityID == "" {
				continue
			}
			entityDone = true
			if len(entityLinks(steps, i, tp.TemplateEntityID)) == 0 {
				out = append(out, fmt.Sprintf("%s reads the linked record of entity %q, but no ENTITY parameter of this process links to it",
					ph.Text, cmp.Or(tp.TemplateEntityName, tp.TemplateEntityID)))
			}
		}
	}
	return out
}

// contractParam resolves {{param NAME}} at steps[i]: the step's own
// parameter of that name, else the one parameter of the process with it.
// found counts the candidates (1 when resolved).
func contractParam(steps []Step, i int, name string) (p Parameter, found int) {
	for _, sp := range steps[i].Parameters {
		if sp.Name == name {
			return sp, 1
		}
	}
	for _, st := range steps {
		for _, sp := range st.Parameters {
			if sp.Name == name {
				p, found = sp, found+1
			}
		}
	}
	return p, found
}

// entityLinks lists the ENTITY parameters that link to entityID, the
// step's own (steps[i]) first, then the others in step order.
func entityLinks(steps []Step, i int, entityID string) []Parameter {
	var out []Parameter
	add := func(st Step) {
		for _, p := range st.Parameters {
			if p.Type == TypeEntity && p.EntityID == entityID {
				out = append(out, p)
			}
		}
	}
	add(steps[i])
	for j, st := range steps {
		if j != i {
			add(st)
		}
	}
	return out
}

// findTemplate finds a live template by id or else by name, locked
// against edits until the transaction ends.
func findTemplate(tx Tx, orgID, ref string) (Template, error) {
	tp, err := tx.GetTemplate(orgID, ref, 0, false)
	if IsCode(err, CodeNotFound) {
		return tx.FindTemplateByName(orgID, ref)
	}
	return tp, err
}

// checkContracts resolves each step's legalContractId and each parameter's
// contractTemplateId (a template's id or name) to an id, checks that the
// template renders there, and describes it in the parameter's
// contractTemplate. A generated document's parameter is TEXT.
func (c *stepCheck) checkContracts() error {
	for i := range c.steps {
		st := &c.steps[i]
		f := fieldIndex("steps", i)
		resolve := func(ref *string, field string) (*Template, error) {
			tp, err := findTemplate(c.tx, c.orgID, *ref)
			if IsCode(err, CodeNotFound) {
				c.v.Add(field, "no contract template named or with id %q", *ref)
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			*ref = tp.ID
			decorate(c.tx, &tp)
			for _, problem := range templateProblems(c.steps, i, tp) {
				c.v.Add(field, "contract template %q: %s", tp.Name, problem)
			}
			return &tp, nil
		}
		if st.LegalContractID != "" {
			if _, err := resolve(&st.LegalContractID, f+".legalContractId"); err != nil {
				return err
			}
		}
		for j := range st.Parameters {
			p := &st.Parameters[j]
			pf := fieldIndex(f+".parameters", j)
			p.ContractTemplate = nil
			if p.ContractTemplateID == "" {
				continue
			}
			if p.Type != TypeText {
				c.v.Add(pf+".type", "a generated document (contractTemplateId) is a TEXT parameter: its value is the document's id")
			}
			tp, err := resolve(&p.ContractTemplateID, pf+".contractTemplateId")
			if err != nil {
				return err
			}
			if tp != nil {
				p.ContractTemplate = &ContractTemplate{TemplateEntityID: tp.TemplateEntityID, TemplateEntityName: tp.TemplateEntityName}
			}
		}
	}
	return nil
}
