package wps

import (
	"context"
	"slices"
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

// EvidenceSource is what a measurement's evidence bundle is made from, as
// its reader may see it, in one read transaction (ReadEvidence):
// internal/evidence gathers the bundle's leaves and files from it.
type EvidenceSource struct {
	Tx        Tx
	ProcessID string
	// SheetIDs are the workbooks its parameters link; each is in the
	// bundle as GetMeasurementSheet gives it to the reader.
	SheetIDs []string
	run      *run
	log      LedgerLog
	hr       *hashReader
	actions  map[string]*Action
}

// CanRead tells whether the reader may read document d (section 9).
func (src *EvidenceSource) CanRead(d Document) bool { return src.run.canRead(d) }

// ProveEntry is one of the measurement's ledger entries with its leaf data
// (an action's made from its row, which shows no value) and its inclusion
// proof in the tree of the bundle's checkpoint.
func (src *EvidenceSource) ProveEntry(e LedgerEntry) (EvidenceLeaf, error) {
	return src.Prove(e, leafData(e, src.actions[e.ID]))
}

// Prove is entry e, whose leaf data is data, with its inclusion proof in
// the tree of the bundle's checkpoint. Errors: CodeConflict (with
// RetryAfter) while e waits to be integrated into the log.
func (src *EvidenceSource) Prove(e LedgerEntry, data []byte) (EvidenceLeaf, error) {
	if !e.Integrated() {
		return EvidenceLeaf{}, &Error{Code: CodeConflict, Message: "an entry of the measurement is not in the log yet; its evidence follows within a second", RetryAfter: time.Second}
	}
	proof, err := tlog.ProveRecord(src.log.Size, e.Index, src.hr)
	if err != nil {
		return EvidenceLeaf{}, err
	}
	return EvidenceLeaf{Kind: e.Kind, ID: e.ID, LeafIndex: e.Index, LeafHash: e.LeafHash.String(), TreeSize: src.log.Size,
		Proof: hashStrings(proof), Leaf: data}, nil
}

// ReadEvidence reads what a measurement's evidence bundle holds for its
// reader: it answers the Evidence with the measurement as GetMeasurement
// shows it, the log's checkpoint and the key, and calls fn, in the same
// read transaction, to gather the leaves and the documents the reader may
// read (internal/evidence.Gather). Errors: CodeForbidden without
// ledger:read and measurement:read, CodeNotFound, and fn's.
func (s *Service) ReadEvidence(ctx context.Context, p *Principal, id string, fn func(src *EvidenceSource) error) (Evidence, error) {
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
	err = s.store.Read(ctx, func(tx Tx) error {
		r, err := s.readRun(tx, p, id)
		if err != nil {
			return err
		}
		ev.Measurement = r.view()
		log, err := tx.GetLedgerLog(p.OrgID)
		if err != nil {
			return err
		}
		cp, err := k.checkpointAt(tx, p.OrgID, log, log.Size)
		if err != nil {
			return err
		}
		ev.Checkpoint = cp.Checkpoint
		src := &EvidenceSource{Tx: tx, ProcessID: r.m.ProcessID, run: r, log: log, hr: newHashReader(tx, p.OrgID), actions: map[string]*Action{}}
		for i := range r.actions {
			src.actions[r.actions[i].ID] = &r.actions[i]
		}
		for _, group := range paramGroups(r.proc.Steps) {
			for _, prm := range group {
				if linked(prm) && !slices.Contains(src.SheetIDs, prm.SheetData.SheetAPIID) {
					src.SheetIDs = append(src.SheetIDs, prm.SheetData.SheetAPIID)
				}
			}
		}
		return fn(src)
	})
	return ev, err
}
