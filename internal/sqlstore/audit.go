package sqlstore

import (
	"wps/internal/wps"
)

// The audit events (migration 42): data is the event's leaf, the other
// columns what lists filter on.

func (t *tx) InsertAuditEvent(e wps.AuditEvent) error {
	return t.err(t.later(`INSERT INTO audit_events (org_id, id, type, at, actor_id, target_kind, target_id, leaf_hash, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.OrgID, e.ID, e.Type, e.At.Millis(), e.Actor.ID, e.Target.Kind, e.Target.ID, e.LeafHash,
		string(e.Leaf)), "", "audit event exists")
}

func scanAuditEvent(s interface{ Scan(...any) error }) (wps.AuditEvent, error) {
	var data, hash string
	if err := s.Scan(&hash, &data); err != nil {
		return wps.AuditEvent{}, err
	}
	e, err := wps.AuditLeafEvent([]byte(data))
	e.LeafHash = hash
	return e, err
}

func (t *tx) GetAuditEvent(orgID, id string) (wps.AuditEvent, error) {
	e, err := scanAuditEvent(t.queryRow(`SELECT leaf_hash, data FROM audit_events WHERE org_id = ? AND id = ?`, orgID, id))
	return e, t.err(err, "audit event", "")
}

func (t *tx) ListAuditEvents(orgID string, q wps.AuditQuery) ([]wps.AuditEvent, int, error) {
	where := `org_id = ?`
	args := []any{orgID}
	for _, f := range []struct{ col, v string }{{"type", q.Type}, {"actor_id", q.ActorID}, {"target_id", q.TargetID}} {
		if f.v != "" {
			where += ` AND ` + f.col + ` = ?`
			args = append(args, f.v)
		}
	}
	if q.From != nil {
		where += ` AND at >= ?`
		args = append(args, q.From.Millis())
	}
	if q.To != nil {
		where += ` AND at < ?`
		args = append(args, q.To.Millis())
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM audit_events WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT leaf_hash, data FROM audit_events WHERE `+where+` ORDER BY at DESC, id DESC`+page(q.Page), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanAuditEvent)
	return list, total, t.err(err, "", "")
}

func (t *tx) CountAuditEvents(orgID string) (events, entries int64, err error) {
	err = t.queryRow(`SELECT (SELECT count(*) FROM audit_events WHERE org_id = ?),
		(SELECT count(*) FROM ledger_leaves WHERE org_id = ? AND kind = 'audit') + (SELECT count(*) FROM ledger_pending WHERE org_id = ? AND kind = 'audit')`,
		orgID, orgID, orgID).Scan(&events, &entries)
	return events, entries, t.err(err, "", "")
}
