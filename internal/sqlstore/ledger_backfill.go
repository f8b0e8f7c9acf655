package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"wps/internal/wps"
)

// backfillLedger is migration 23, in Go: the entries of the ledger made
// before the Merkle log, queued (ledger_pending) for each org's integrator
// to make its log's first leaves. The actions come in the order of the
// hash chain they extended (seq), each as a leaf that also holds its link
// in the chain (wps.LeafChainedAction), so the ledgerHash and
// transactionHash values shown before stay what they were and verifiable.
// Before a measurement's first action comes its creation, which the
// engine started it from (at its occurrence when it was made PENDING
// ahead); then the measurements without actions, the PENDING ones the
// scheduler opened since, and the marks of the actions superseded and
// reproved. On PostgreSQL it also makes the sequence ledger_seq, from
// which new actions and entries take their numbers, after every number
// used.
func (db *DB) backfillLedger(ctx context.Context, tx *sql.Tx) error {
	q := func(query string, args ...any) (*sql.Rows, error) {
		return tx.QueryContext(ctx, db.rebind(query), args...)
	}
	orgs, err := q(`SELECT DISTINCT org_id FROM measurements ORDER BY org_id`)
	if err != nil {
		return err
	}
	ids, err := collect(orgs, func(s interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	if err != nil {
		return err
	}
	for _, org := range ids {
		if err := db.backfillOrg(ctx, tx, org); err != nil {
			return fmt.Errorf("ledger of org %s: %w", org, err)
		}
	}
	if db.engine == Postgres {
		_, err := tx.ExecContext(ctx, `CREATE SEQUENCE IF NOT EXISTS ledger_seq`)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `SELECT setval('ledger_seq', greatest(1,
			(SELECT coalesce(max(seq), 0) FROM actions), (SELECT coalesce(max(seq), 0) FROM ledger_pending)))`)
		return err
	}
	return nil
}

// legacyMeasurement is what a measurement's creation entry needs.
type legacyMeasurement struct {
	m         wps.Measurement
	startedAt wps.Time
	pending   bool // made PENDING ahead of its occurrence
	opened    bool // and no longer PENDING
	entered   bool
}

func (db *DB) backfillOrg(ctx context.Context, tx *sql.Tx, org string) error {
	rows, err := tx.QueryContext(ctx, db.rebind(`SELECT m.id, m.process_id, m.version, m.created_by, m.created_at, m.status, coalesce(o.occurs_at, 0)
		FROM measurements m LEFT JOIN occurrences o ON o.measurement_id = m.id WHERE m.org_id = ? ORDER BY m.created_at, m.id`), org)
	if err != nil {
		return err
	}
	var order []string
	ms := map[string]*legacyMeasurement{}
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			l := &legacyMeasurement{m: wps.Measurement{OrgID: org}}
			var created, occurs int64
			if err := rows.Scan(&l.m.ID, &l.m.ProcessID, &l.m.Version, &l.m.CreatedBy, &created, &l.m.Status, &occurs); err != nil {
				return err
			}
			l.m.CreatedAt, l.startedAt = wps.FromMillis(created), wps.FromMillis(created)
			if occurs > created {
				l.startedAt, l.pending, l.opened = wps.FromMillis(occurs), true, l.m.Status != "PENDING"
			}
			if _, dup := ms[l.m.ID]; !dup {
				ms[l.m.ID] = l
				order = append(order, l.m.ID)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return err
	}
	pend := rowBatch{table: "ledger_pending", cols: "org_id, seq, id, kind, measurement_id, payload, leaf_hash, created_at", width: 8}
	var seq int64
	add := func(e wps.LedgerEntry) error {
		seq++
		return pend.add(ctx, db, tx, org, seq, e.ID, e.Kind, e.MeasurementID, string(e.Payload), e.LeafHash.String(), e.CreatedAt.Millis())
	}
	enter := func(l *legacyMeasurement) error {
		if l.entered {
			return nil
		}
		l.entered = true
		return add(wps.MeasurementEntry(l.m, l.startedAt, l.pending))
	}
	superseded := map[string][]string{}
	var reproved []wps.Action
	now := wps.At(time.Now())
	for after := int64(-1 << 63); ; {
		rows, err := tx.QueryContext(ctx, db.rebind(`SELECT `+legacyActionCols+` FROM actions WHERE org_id = ? AND seq > ? ORDER BY seq`+limitN(1000)), org, after)
		if err != nil {
			return err
		}
		page, err := collect(rows, scanLegacyAction)
		if err != nil {
			return err
		}
		for _, a := range page {
			if l := ms[a.MeasurementID]; l != nil {
				if err := enter(l); err != nil {
					return err
				}
			}
			e := wps.LedgerEntry{OrgID: org, ID: a.ID, Kind: wps.LeafChainedAction, MeasurementID: a.MeasurementID, CreatedAt: a.CreatedAt}
			e.LeafHash = tlog.RecordHash(wps.ActionLeaf(a, e.Kind, nil))
			if h := tlog.RecordHash(wps.ActionLeaf(a, wps.LeafAction, nil)); a.PrevHash == "" && a.LedgerHash == hex.EncodeToString(h[:]) {
				e.Kind, e.LeafHash = wps.LeafAction, h // recorded in the log already (a database taken back to an older release)
			}
			if err := add(e); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, db.rebind(`UPDATE actions SET leaf_hash = ? WHERE org_id = ? AND id = ?`), e.LeafHash.String(), org, a.ID); err != nil {
				return err
			}
			if a.Superseded {
				superseded[a.MeasurementID] = append(superseded[a.MeasurementID], a.ID)
			}
			if a.ReprovesActionID != "" {
				reproved = append(reproved, a)
			}
			after = a.Seq
		}
		if len(page) < 1000 {
			break
		}
	}
	for _, id := range order {
		if err := enter(ms[id]); err != nil {
			return err
		}
	}
	for _, id := range order {
		if l := ms[id]; l.opened {
			if err := add(wps.MarkEntry(wps.LeafOpened, org, id, nil, "", now)); err != nil {
				return err
			}
		}
	}
	marked := make([]string, 0, len(superseded))
	for id := range superseded {
		marked = append(marked, id)
	}
	slices.Sort(marked)
	for _, id := range marked {
		if err := add(wps.MarkEntry(wps.LeafSuperseded, org, id, superseded[id], "", now)); err != nil {
			return err
		}
	}
	for _, r := range reproved {
		if err := add(wps.MarkEntry(wps.LeafReproved, org, r.MeasurementID, []string{r.ReprovesActionID}, r.ID, r.CreatedAt)); err != nil {
			return err
		}
	}
	return pend.flush(ctx, db, tx)
}
