package wps

import (
	"context"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Evidence is what a measurement's evidence bundle holds (internal/evidence
// writes and checks it): the measurement as its reader sees it, every
// ledger leaf of the measurement and the audit events of its process, each
// with its inclusion proof in one signed checkpoint, the documents and
// filled workbooks the reader may read, and the verifier key.
type Evidence struct {
	OrgID       string
	Measurement MeasurementView
	// Leaves are the measurement's ledger entries in log order (its
	// actions, its creation, marks, documents), Audit the audit events of
	// its process (target the process), oldest first.
	Leaves, Audit []EvidenceLeaf
	Documents     []EvidenceFile
	Workbooks     []EvidenceFile
	Checkpoint    string // the signed note of the tree the proofs are for
	Key           string // the verifier key
	signer        note.Signer
}

// EvidenceLeaf is a leaf with its inclusion proof.
type EvidenceLeaf struct {
	Kind      string   `json:"kind"`
	ID        string   `json:"id"`
	LeafIndex int64    `json:"leafIndex"`
	LeafHash  string   `json:"leafHash"`
	TreeSize  int64    `json:"treeSize"`
	Proof     []string `json:"proof"`
	Leaf      []byte   `json:"leaf"` // the leaf's data (canonical JSON, base64), as hashed
}

// EvidenceFile is a document or a filled workbook.
type EvidenceFile struct {
	ID      string
	SHA256  string
	Content []byte
}

// EvidenceOrigin is the first line of a bundle's signed manifest: not a
// checkpoint's origin, so a manifest is never taken for a checkpoint.
func EvidenceOrigin(orgID, measurementID string) string {
	return LedgerOrigin(orgID) + " evidence " + measurementID
}

// SignManifest signs a bundle's manifest (lines of files and hashes) with
// the installation's key, as a signed note whose text starts with
// EvidenceOrigin.
func (e Evidence) SignManifest(lines string) (string, error) {
	msg, err := note.Sign(&note.Note{Text: EvidenceOrigin(e.OrgID, e.Measurement.ID) + "\n" + lines}, e.signer)
	if err != nil {
		return "", Internal(err)
	}
	return string(msg), nil
}

// MeasurementEvidence gathers a measurement's evidence for its reader: the
// measurement as GetMeasurement shows it, and only the documents and
// workbooks the reader may read (section 9); the leaves show no value (an
// action's values are a hash in its leaf). Errors: CodeForbidden without
// ledger:read and measurement:read, CodeNotFound, CodeConflict (with
// RetryAfter) while one of its entries waits to be integrated into the log.
func (s *Service) MeasurementEvidence(ctx context.Context, p *Principal, id string) (Evidence, error) {
	if err := p.Require(FnLedgerRead); err != nil {
		return Evidence{}, err
	}
	if err := p.Require(FnMeasurementRead); err != nil {
		return Evidence{}, err
	}
	k, err := s.ledgerKey(ctx)
	if err != nil {
		return Evidence{}, err
	}
	ev := Evidence{OrgID: p.OrgID, Key: k.vkey, signer: k.signer}
	var sheetIDs []string
	err = s.store.Read(ctx, func(tx Tx) error {
		r, err := s.readRun(tx, p, id)
		if err != nil {
			return err
		}
		ev.Measurement = r.view()
		entries, err := tx.MeasurementLedger(p.OrgID, id)
		if err != nil {
			return err
		}
		audit, _, err := tx.ListAuditEvents(p.OrgID, AuditQuery{TargetID: r.m.ProcessID, Page: Page{Page: 1, PerPage: maxEvidenceAudit}})
		if err != nil {
			return err
		}
		log, err := tx.GetLedgerLog(p.OrgID)
		if err != nil {
			return err
		}
		cp, err := k.checkpointAt(tx, p.OrgID, log, log.Size)
		if err != nil {
			return err
		}
		ev.Checkpoint = cp.Checkpoint
		hr := newHashReader(tx, p.OrgID)
		prove := func(e LedgerEntry, data []byte) (EvidenceLeaf, error) {
			if !e.Integrated() {
				return EvidenceLeaf{}, &Error{Code: CodeConflict, Message: "an entry of the measurement is not in the log yet; its evidence follows within a second", RetryAfter: time.Second}
			}
			proof, err := tlog.ProveRecord(log.Size, e.Index, hr)
			if err != nil {
				return EvidenceLeaf{}, err
			}
			return EvidenceLeaf{Kind: e.Kind, ID: e.ID, LeafIndex: e.Index, LeafHash: e.LeafHash.String(), TreeSize: log.Size,
				Proof: hashStrings(proof), Leaf: data}, nil
		}
		actions := map[string]*Action{}
		for i := range r.actions {
			actions[r.actions[i].ID] = &r.actions[i]
		}
		for _, e := range entries {
			l, err := prove(e, leafData(e, actions[e.ID]))
			if err != nil {
				return err
			}
			ev.Leaves = append(ev.Leaves, l)
		}
		for i := len(audit) - 1; i >= 0; i-- {
			a := audit[i]
			e, err := tx.GetLedgerEntry(p.OrgID, "", a.ID)
			if err != nil {
				return err
			}
			l, err := prove(e, a.Leaf)
			if err != nil {
				return err
			}
			ev.Audit = append(ev.Audit, l)
		}
		docs, err := tx.ListDocuments(p.OrgID, id)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if !r.canRead(d) {
				continue
			}
			full, err := tx.GetDocument(p.OrgID, d.ID, true)
			if err != nil {
				return err
			}
			ev.Documents = append(ev.Documents, EvidenceFile{ID: d.ID, SHA256: sha256Hex(full.Content), Content: full.Content})
		}
		for _, group := range paramGroups(r.proc.Steps) {
			for _, prm := range group {
				if linked(prm) && !contains(sheetIDs, prm.SheetData.SheetAPIID) {
					sheetIDs = append(sheetIDs, prm.SheetData.SheetAPIID)
				}
			}
		}
		return nil
	})
	if err != nil {
		return Evidence{}, err
	}
	for _, sid := range sheetIDs { // as GET /v1/measurements/{id}/sheets/{sheetApiId} gives them to this reader
		_, ms, err := s.GetMeasurementSheet(ctx, p, id, sid)
		if IsCode(err, CodeNotFound) {
			continue
		}
		if err != nil {
			return Evidence{}, err
		}
		ev.Workbooks = append(ev.Workbooks, EvidenceFile{ID: sid, SHA256: sha256Hex(ms.Content), Content: ms.Content})
	}
	return ev, nil
}

// maxEvidenceAudit bounds the audit events of a process in a bundle.
const maxEvidenceAudit = 10000

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
