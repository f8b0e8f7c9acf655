package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"wps/internal/wps"
)

// maxAudit bounds the audit events of a process in a bundle.
const maxAudit = 10000

// Gather collects a measurement's evidence for its reader, from what the
// domain lets them see (wps.Service.ReadEvidence): every ledger entry of
// the measurement with its proof (the leaves show no value: an action's
// values are a hash in its leaf), the audit events of its process, oldest
// first, the documents and workbooks the reader may read (section 9).
// Errors: as ReadEvidence; CodeConflict (with RetryAfter) while one of its
// entries waits to be integrated into the log.
func Gather(ctx context.Context, s *wps.Service, p *wps.Principal, id string) (wps.Evidence, error) {
	var leaves, audit []wps.EvidenceLeaf
	var docs []wps.EvidenceFile
	var sheetIDs []string
	ev, err := s.ReadEvidence(ctx, p, id, func(src *wps.EvidenceSource) error {
		tx := src.Tx
		leaves, audit, docs, sheetIDs = nil, nil, nil, src.SheetIDs
		entries, err := tx.MeasurementLedger(p.OrgID, id)
		if err != nil {
			return err
		}
		for _, e := range entries {
			l, err := src.ProveEntry(e)
			if err != nil {
				return err
			}
			leaves = append(leaves, l)
		}
		events, _, err := tx.ListAuditEvents(p.OrgID, wps.AuditQuery{TargetID: src.ProcessID, Page: wps.Page{Page: 1, PerPage: maxAudit}})
		if err != nil {
			return err
		}
		for i := len(events) - 1; i >= 0; i-- {
			a := events[i]
			e, err := tx.GetLedgerEntry(p.OrgID, "", a.ID)
			if err != nil {
				return err
			}
			l, err := src.Prove(e, a.Leaf)
			if err != nil {
				return err
			}
			audit = append(audit, l)
		}
		list, err := tx.ListDocuments(p.OrgID, id)
		if err != nil {
			return err
		}
		for _, d := range list {
			if !src.CanRead(d) {
				continue
			}
			full, err := tx.GetDocument(p.OrgID, d.ID, true)
			if err != nil {
				return err
			}
			docs = append(docs, wps.EvidenceFile{ID: d.ID, SHA256: sha256Hex(full.Content), Content: full.Content})
		}
		return nil
	})
	if err != nil {
		return wps.Evidence{}, err
	}
	ev.Leaves, ev.Audit, ev.Documents = leaves, audit, docs
	for _, sid := range sheetIDs { // as GET /v1/measurements/{id}/sheets/{sheetApiId} gives them to this reader
		_, ms, err := s.GetMeasurementSheet(ctx, p, id, sid)
		if wps.IsCode(err, wps.CodeNotFound) {
			continue
		}
		if err != nil {
			return wps.Evidence{}, err
		}
		ev.Workbooks = append(ev.Workbooks, wps.EvidenceFile{ID: sid, SHA256: sha256Hex(ms.Content), Content: ms.Content})
	}
	return ev, nil
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
