package sqlstore

import (
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"wps/internal/wps"
)

func (t *tx) GetEvent(orgID, id string) (wps.Event, error) {
	var e wps.Event
	var payload string
	var created int64
	err := t.queryRow(`SELECT id, org_id, type, measurement_id, step_id, action_id, payload, created_at FROM events WHERE org_id = ? AND id = ?`, orgID, id).
		Scan(&e.ID, &e.OrgID, &e.Type, &e.MeasurementID, &e.StepID, &e.ActionID, &payload, &created)
	e.Payload, e.CreatedAt = []byte(payload), wps.FromMillis(created)
	return e, t.err(err, "event", "")
}

const webhookCols = `id, org_id, url, events, created_at, updated_at`

func scanWebhook(s interface{ Scan(...any) error }) (wps.Webhook, error) {
	var w wps.Webhook
	var events string
	var created, updated int64
	if err := s.Scan(&w.ID, &w.OrgID, &w.URL, &events, &created, &updated); err != nil {
		return w, err
	}
	fromJSON(events, &w.Events)
	w.CreatedAt, w.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	return w, nil
}

func (t *tx) CreateWebhook(w wps.Webhook) error {
	t.hooks = nil
	_, err := t.exec(`INSERT INTO webhooks (`+webhookCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		w.ID, w.OrgID, w.URL, jsonText(w.Events), w.CreatedAt.Millis(), w.UpdatedAt.Millis())
	return t.err(err, "webhook", "webhook exists")
}

func (t *tx) GetWebhook(orgID, id string) (wps.Webhook, error) {
	w, err := scanWebhook(t.queryRow(`SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND id = ?`, orgID, id))
	return w, t.err(err, "webhook", "")
}

func (t *tx) ListWebhooks(orgID string) ([]wps.Webhook, error) {
	if h := t.hooks; h != nil && h.orgID == orgID {
		return slices.Clone(h.list), nil // their Events are shared: read only
	}
	rows, err := t.query(`SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? ORDER BY id`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanWebhook)
	return list, t.err(err, "", "")
}

// prefetchedHooks are an org's webhooks, read by a PostgreSQL write
// transaction with its first read of a process or a measurement (hooksCol):
// a write that records actions needs them for its deliveries, and reading
// them in a statement of their own is a round trip more.
type prefetchedHooks struct {
	orgID string
	list  []wps.Webhook
}

// hooksCol returns, in a PostgreSQL write transaction that has not read
// orgID's webhooks, a select-list column that reads them as JSON, its
// argument and its scan destination (keepHooks takes it); else "".
func (t *tx) hooksCol(orgID string) (string, []any, *string) {
	if t.db.engine != Postgres || !t.write || (t.hooks != nil && t.hooks.orgID == orgID) {
		return "", nil, nil
	}
	return hooksSelect, []any{orgID}, new(string)
}

// hooksSelect is hooksCol's column.
const hooksSelect = `, (SELECT coalesce(json_agg(json_build_object('id', id, 'url', url, 'events', events::json,
	'createdAt', created_at, 'updatedAt', updated_at) ORDER BY id), '[]'::json) FROM webhooks WHERE org_id = ?)`

// keepHooks keeps the webhooks a hooksCol column read.
func (t *tx) keepHooks(orgID string, text *string) {
	if text == nil {
		return
	}
	var rows []struct {
		ID        string   `json:"id"`
		URL       string   `json:"url"`
		Events    []string `json:"events"`
		CreatedAt int64    `json:"createdAt"`
		UpdatedAt int64    `json:"updatedAt"`
	}
	fromJSON(*text, &rows)
	h := &prefetchedHooks{orgID: orgID, list: make([]wps.Webhook, len(rows))}
	for i, r := range rows {
		h.list[i] = wps.Webhook{ID: r.ID, OrgID: orgID, URL: r.URL, Events: r.Events,
			CreatedAt: wps.FromMillis(r.CreatedAt), UpdatedAt: wps.FromMillis(r.UpdatedAt)}
	}
	t.hooks = h
}

func (t *tx) UpdateWebhook(w wps.Webhook) error {
	t.hooks = nil
	res, err := t.exec(`UPDATE webhooks SET url = ?, events = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
		w.URL, jsonText(w.Events), w.UpdatedAt.Millis(), w.OrgID, w.ID)
	return t.err(affected(res, err, "webhook"), "webhook", "")
}

func (t *tx) DeleteWebhook(orgID, id string) error {
	t.hooks = nil
	res, err := t.exec(`DELETE FROM webhooks WHERE org_id = ? AND id = ?`, orgID, id)
	return t.err(affected(res, err, "webhook"), "webhook", "")
}

func (t *tx) GetSigningSecret(orgID string) (wps.SigningSecret, error) {
	s := wps.SigningSecret{OrgID: orgID}
	var until, rotated int64
	err := t.queryRow(`SELECT secret, previous, previous_until, rotated_at FROM webhook_secrets WHERE org_id = ?`, orgID).
		Scan(&s.Secret, &s.Previous, &until, &rotated)
	s.PreviousUntil, s.RotatedAt = wps.FromMillis(until), wps.FromMillis(rotated)
	return s, t.err(err, "signing secret", "")
}

func (t *tx) PutSigningSecret(s wps.SigningSecret) error {
	_, err := t.exec(`INSERT INTO webhook_secrets (org_id, secret, previous, previous_until, rotated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id) DO UPDATE SET secret = excluded.secret, previous = excluded.previous,
			previous_until = excluded.previous_until, rotated_at = excluded.rotated_at`,
		s.OrgID, s.Secret, s.Previous, s.PreviousUntil.Millis(), s.RotatedAt.Millis())
	return t.err(err, "", "")
}

const deliveryCols = `d.id, d.org_id, d.event_id, d.event_type, d.webhook_id, d.url, d.measurement_id, d.status, d.attempts,
	d.next_attempt_at, d.locked_until, d.give_up_at, d.last_status, d.last_error, d.created_at, d.updated_at, d.delivered_at, e.payload`

const deliveryFrom = ` FROM deliveries d JOIN events e ON e.id = d.event_id `

func scanDelivery(s interface{ Scan(...any) error }) (wps.Delivery, error) {
	var d wps.Delivery
	var next, giveUp, created, updated int64
	var locked, delivered sql.NullInt64
	var payload string
	if err := s.Scan(&d.ID, &d.OrgID, &d.EventID, &d.EventType, &d.WebhookID, &d.URL, &d.MeasurementID, &d.Status, &d.Attempts,
		&next, &locked, &giveUp, &d.LastStatus, &d.LastError, &created, &updated, &delivered, &payload); err != nil {
		return d, err
	}
	d.NextAttemptAt, d.GiveUpAt, d.CreatedAt, d.UpdatedAt = wps.FromMillis(next), wps.FromMillis(giveUp), wps.FromMillis(created), wps.FromMillis(updated)
	d.LockedUntil, d.DeliveredAt = optTime(locked), optTime(delivered)
	d.Payload = []byte(payload)
	d.History = []wps.Attempt{}
	return d, nil
}

func optTime(v sql.NullInt64) *wps.Time {
	if !v.Valid {
		return nil
	}
	t := wps.FromMillis(v.Int64)
	return &t
}

func nullTime(t *wps.Time) any {
	if t == nil {
		return nil
	}
	return t.Millis()
}

func (t *tx) CreateDelivery(d wps.Delivery) error {
	return t.add(deliveriesTable, []any{d.ID, d.OrgID, d.EventID, d.EventType, d.WebhookID, d.URL, d.MeasurementID, d.Status, d.Attempts,
		d.NextAttemptAt.Millis(), nullTime(d.LockedUntil), d.GiveUpAt.Millis(), d.LastStatus, d.LastError,
		d.CreatedAt.Millis(), d.UpdatedAt.Millis(), nullTime(d.DeliveredAt), queue(d)})
}

func (t *tx) GetDelivery(orgID, id string) (wps.Delivery, error) {
	d, err := scanDelivery(t.queryRow(`SELECT `+deliveryCols+deliveryFrom+`WHERE d.org_id = ? AND d.id = ?`, orgID, id))
	if err != nil {
		return d, t.err(err, "delivery", "")
	}
	d.History, err = t.attempts(orgID, []string{d.ID})
	return d, err
}

func (t *tx) UpdateDelivery(d wps.Delivery) error {
	res, err := t.exec(`UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, locked_until = ?, give_up_at = ?,
		last_status = ?, last_error = ?, updated_at = ?, delivered_at = ?, queue = ? WHERE org_id = ? AND id = ?`,
		d.Status, d.Attempts, d.NextAttemptAt.Millis(), nullTime(d.LockedUntil), d.GiveUpAt.Millis(), d.LastStatus, d.LastError,
		d.UpdatedAt.Millis(), nullTime(d.DeliveredAt), queue(d), d.OrgID, d.ID)
	return t.err(affected(res, err, "delivery"), "delivery", "")
}

func (t *tx) FinishDelivery(d wps.Delivery) error {
	_, err := t.exec(`UPDATE deliveries SET status = ?, attempts = ?, next_attempt_at = ?, locked_until = ?, give_up_at = ?,
		last_status = ?, last_error = ?, updated_at = ?, delivered_at = ? WHERE org_id = ? AND id = ? AND (status = 'PENDING' OR ? = 'SUCCEEDED')`,
		d.Status, d.Attempts, d.NextAttemptAt.Millis(), nullTime(d.LockedUntil), d.GiveUpAt.Millis(), d.LastStatus, d.LastError,
		d.UpdatedAt.Millis(), nullTime(d.DeliveredAt), d.OrgID, d.ID, d.Status)
	return t.err(err, "delivery", "")
}

// CancelDeliveries finds the subscription's pending deliveries through the
// partial index deliveries_webhook_pending (migration 25), not among all of
// the org's deliveries.
func (t *tx) CancelDeliveries(orgID, webhookID, reason string, now wps.Time) error {
	_, err := t.exec(`UPDATE deliveries SET status = 'CANCELLED', locked_until = NULL, last_error = ?, updated_at = ?
		WHERE webhook_id = ? AND org_id = ? AND status = 'PENDING'`, reason, now.Millis(), webhookID, orgID)
	return t.err(err, "", "")
}

func (t *tx) ListDeliveries(orgID string, q wps.DeliveryQuery) ([]wps.Delivery, int, error) {
	where := `d.org_id = ?`
	args := []any{orgID}
	if q.Status != "" {
		where += ` AND d.status = ?`
		args = append(args, q.Status)
	}
	if q.EventID != "" {
		where += ` AND d.event_id = ?`
		args = append(args, q.EventID)
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM deliveries d WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+deliveryCols+deliveryFrom+`WHERE `+where+` ORDER BY d.id DESC`+page(q.Page), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.ID
	}
	all, err := t.attempts(orgID, ids)
	for i := range list {
		for _, a := range all {
			if a.DeliveryID == list[i].ID {
				list[i].History = append(list[i].History, a)
			}
		}
	}
	return list, total, err
}

func (t *tx) attempts(orgID string, deliveryIDs []string) ([]wps.Attempt, error) {
	if len(deliveryIDs) == 0 {
		return nil, nil
	}
	args := []any{orgID}
	for _, id := range deliveryIDs {
		args = append(args, id)
	}
	rows, err := t.query(`SELECT id, delivery_id, attempted_at, status_code, error, duration_ms FROM delivery_attempts
		WHERE org_id = ? AND delivery_id IN (?`+strings.Repeat(", ?", len(deliveryIDs)-1)+`) ORDER BY attempted_at, id`, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.Attempt, error) {
		var a wps.Attempt
		var at int64
		err := s.Scan(&a.ID, &a.DeliveryID, &at, &a.StatusCode, &a.Error, &a.DurationMs)
		a.At = wps.FromMillis(at)
		return a, err
	})
	return list, t.err(err, "", "")
}

// queue is a delivery's claim queue (migration 30): its org and
// destination.
func queue(d wps.Delivery) string { return d.OrgID + " " + wps.DestinationOf(d.URL) }

// DueDeliveries steps through the queues that have pending deliveries (a
// loose scan of deliveries_queue: one index probe per queue, whatever its
// backlog), takes the first due ones of each that no worker holds and no
// earlier delivery of their measurement to their URL waits before (a
// scalar subquery per place: the first of every queue, the next ones, up
// to limit, of the queues that have a first), keeps those within the
// queue's free places, and ranks them by org: each org's rank starts after
// its deliveries in flight, so orgs take turns. The leased ones are counted
// through deliveries_leased. SQLite, which plans without statistics, is
// told these indexes (indexedBy).
func (t *tx) DueDeliveries(now wps.Time, limit, perDestination int) ([]string, error) {
	byQueue, leasedBy := t.indexedBy("deliveries_queue"), t.indexedBy("deliveries_leased")
	var args []any
	// place is the i-th (from 0) free due delivery of queue q.
	place := func(i int) string {
		args = append(args, now.Millis(), now.Millis())
		return `SELECT q.queue, ` + strconv.Itoa(i+1) + ` AS place,
			(SELECT x.id FROM deliveries x` + byQueue + ` WHERE x.queue = q.queue AND x.status = 'PENDING' AND x.next_attempt_at <= ?
				AND (x.locked_until IS NULL OR x.locked_until <= ?) AND NOT EXISTS (` + earlierPending("x") + `)
				ORDER BY x.next_attempt_at, x.id LIMIT 1 OFFSET ` + strconv.Itoa(i) + `) AS id`
	}
	first := place(0) + ` FROM queues q WHERE q.queue IS NOT NULL`
	places := []string{`SELECT queue, place, id FROM firsts WHERE id IS NOT NULL`}
	for i := 1; i < min(perDestination, limit); i++ {
		places = append(places, place(i)+` FROM firsts q WHERE q.id IS NOT NULL`)
	}
	const leased = `status = 'PENDING' AND locked_until IS NOT NULL AND locked_until > ?`
	args = append(args, now.Millis(), now.Millis(), perDestination)
	rows, err := t.query(`WITH RECURSIVE
		queues(queue) AS (
			SELECT min(queue) FROM deliveries`+byQueue+` WHERE status = 'PENDING'
			UNION ALL
			SELECT (SELECT min(x.queue) FROM deliveries x`+byQueue+` WHERE x.status = 'PENDING' AND x.queue > q.queue)
			FROM queues q WHERE q.queue IS NOT NULL),
		firsts AS MATERIALIZED (`+first+`),
		heads AS MATERIALIZED (`+strings.Join(places, " UNION ALL ")+`),
		busy_queue AS (SELECT queue, count(*) AS n FROM deliveries`+leasedBy+` WHERE `+leased+` GROUP BY queue),
		busy_org AS (SELECT org_id, count(*) AS n FROM deliveries`+leasedBy+` WHERE `+leased+` GROUP BY org_id),
		fair AS MATERIALIZED (SELECT h.id, d.next_attempt_at,
				ROW_NUMBER() OVER (PARTITION BY d.org_id ORDER BY d.next_attempt_at, d.id) + COALESCE(bo.n, 0) AS turn
			FROM heads h CROSS JOIN deliveries d
			LEFT JOIN busy_queue bq ON bq.queue = h.queue
			LEFT JOIN busy_org bo ON bo.org_id = d.org_id
			WHERE d.id = h.id AND h.place + COALESCE(bq.n, 0) <= ?)
		SELECT id FROM fair ORDER BY turn, next_attempt_at, id`+limitN(limit), args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	ids, err := collect(rows, func(s interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	return ids, t.err(err, "", "")
}

// earlierPending finds a pending delivery to the URL of the delivery d
// (its alias) for d's measurement that was made before d: d waits for it.
func earlierPending(d string) string {
	return `SELECT 1 FROM deliveries o WHERE o.url = ` + d + `.url AND o.measurement_id = ` + d + `.measurement_id
		AND ` + d + `.measurement_id <> '' AND o.status = 'PENDING' AND o.id < ` + d + `.id`
}

// ClaimDeliveries checks again, under the rows' locks on PostgreSQL (SKIP
// LOCKED: a delivery another worker is claiming is left to it), that each
// delivery is still due, free and not waiting, then leases them in one
// statement.
func (t *tx) ClaimDeliveries(ids []string, now, leaseUntil wps.Time) ([]wps.Delivery, error) {
	if len(ids) == 0 {
		return []wps.Delivery{}, nil
	}
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE OF d SKIP LOCKED`
	}
	var args []any
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, now.Millis(), now.Millis())
	// From the ids (CROSS JOIN keeps SQLite to that order: one primary key
	// lookup each, not a scan of the due ones).
	rows, err := t.query(`WITH wanted(id) AS (VALUES (?)`+strings.Repeat(", (?)", len(ids)-1)+`)
		SELECT `+deliveryCols+` FROM wanted w CROSS JOIN deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.id = w.id AND d.status = 'PENDING' AND d.next_attempt_at <= ? AND (d.locked_until IS NULL OR d.locked_until <= ?)
		AND NOT EXISTS (`+earlierPending("d")+`)`+skip, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	got, err := collect(rows, scanDelivery)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list := make([]wps.Delivery, 0, len(got))
	for _, id := range ids { // in the order given
		if i := slices.IndexFunc(got, func(d wps.Delivery) bool { return d.ID == id }); i >= 0 {
			list = append(list, got[i])
		}
	}
	if len(list) == 0 {
		return list, nil
	}
	leased := make([]string, len(list))
	for i := range list {
		list[i].Attempts++
		list[i].LockedUntil = &leaseUntil
		leased[i] = list[i].ID
	}
	return list, t.lease("deliveries", leaseUntil, leased)
}

// lease counts an attempt of each row of table (deliveries, notifications)
// and holds it until until: the claim of the outboxes' workers.
func (t *tx) lease(table string, until wps.Time, ids []string) error {
	args := []any{until.Millis()}
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := t.exec(`UPDATE `+table+` SET attempts = attempts + 1, locked_until = ? WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	return t.err(err, "", "")
}

func (t *tx) AddAttempt(a wps.Attempt) error {
	_, err := t.exec(`INSERT INTO delivery_attempts (id, delivery_id, org_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.DeliveryID, a.OrgID, a.At.Millis(), a.StatusCode, a.Error, a.DurationMs)
	return t.err(err, "", "attempt exists")
}

func (t *tx) ClaimOverdue(now wps.Time, limit int) ([]wps.OpenStep, error) {
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := t.query(`SELECT measurement_id, org_id, step_id, opening, opened_at, due_at FROM measurement_open_steps
		WHERE due_at IS NOT NULL AND due_at <= ? AND overdue_notified = ? ORDER BY due_at`+limitN(limit)+skip, now.Millis(), false)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.OpenStep, error) {
		var o wps.OpenStep
		var opened int64
		var due sql.NullInt64
		err := s.Scan(&o.MeasurementID, &o.OrgID, &o.StepID, &o.Opening, &opened, &due)
		o.OpenedAt, o.DueAt = wps.FromMillis(opened), optTime(due)
		return o, err
	})
	if err != nil {
		return nil, t.err(err, "", "")
	}
	for _, o := range list {
		if _, err := t.exec(`UPDATE measurement_open_steps SET overdue_notified = ? WHERE measurement_id = ? AND step_id = ?`, true, o.MeasurementID, o.StepID); err != nil {
			return nil, t.err(err, "", "")
		}
	}
	return list, nil
}

func (t *tx) ClaimEscalations(now wps.Time, limit int) ([]wps.OpenStep, error) {
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := t.query(`SELECT measurement_id, org_id, step_id, opening, opened_at, due_at, escalate_at, escalated FROM measurement_open_steps
		WHERE escalate_at IS NOT NULL AND escalate_at <= ? ORDER BY escalate_at`+limitN(limit)+skip, now.Millis())
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.OpenStep, error) {
		var o wps.OpenStep
		var opened int64
		var due, esc sql.NullInt64
		err := s.Scan(&o.MeasurementID, &o.OrgID, &o.StepID, &o.Opening, &opened, &due, &esc, &o.Escalated)
		o.OpenedAt, o.DueAt, o.EscalateAt = wps.FromMillis(opened), optTime(due), optTime(esc)
		return o, err
	})
	return list, t.err(err, "", "")
}

func (t *tx) MarkEscalated(o wps.OpenStep) error {
	_, err := t.exec(`UPDATE measurement_open_steps SET escalated = ?, escalate_at = ? WHERE org_id = ? AND measurement_id = ? AND step_id = ? AND opening = ?`,
		o.Escalated, nullTime(o.EscalateAt), o.OrgID, o.MeasurementID, o.StepID, o.Opening)
	return t.err(err, "", "")
}

func (t *tx) RecurringProcesses() ([]wps.Process, error) {
	rows, err := t.query(`SELECT ` + processCols + ` ` + processJoin + `p.version
		WHERE p.deleted_at IS NULL AND p.recurrence <> '' ORDER BY p.id`)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, t.scanProcess)
	return list, t.err(err, "", "")
}

func (t *tx) ClaimOccurrence(orgID, processID string, at wps.Time, measurementID string) (bool, error) {
	res, err := t.exec(`INSERT INTO occurrences (process_id, occurs_at, org_id, measurement_id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		processID, at.Millis(), orgID, measurementID)
	if err != nil {
		return false, t.err(err, "", "")
	}
	n, err := res.RowsAffected()
	return n == 1, t.err(err, "", "")
}

func (t *tx) DuePending(now wps.Time, limit int) ([]wps.Occurrence, error) {
	rows, err := t.query(`SELECT o.org_id, o.measurement_id, o.occurs_at FROM measurements m JOIN occurrences o ON o.measurement_id = m.id
		WHERE m.status = 'PENDING' AND o.occurs_at <= ? ORDER BY o.occurs_at`+limitN(limit), now.Millis())
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.Occurrence, error) {
		var o wps.Occurrence
		var at int64
		err := s.Scan(&o.OrgID, &o.MeasurementID, &at)
		o.At = wps.FromMillis(at)
		return o, err
	})
	return list, t.err(err, "", "")
}

// SkipOccurrences records until as an occurrence without a measurement
// (measurement_id empty): the occurrences up to it are settled.
func (t *tx) SkipOccurrences(orgID, processID string, until wps.Time) error {
	_, err := t.exec(`INSERT INTO occurrences (process_id, occurs_at, org_id, measurement_id) VALUES (?, ?, ?, '') ON CONFLICT DO NOTHING`,
		processID, until.Millis(), orgID)
	return t.err(err, "", "")
}

func (t *tx) LastOccurrence(orgID, processID string) (*wps.Time, error) {
	var at sql.NullInt64
	err := t.queryRow(`SELECT max(occurs_at) FROM occurrences WHERE org_id = ? AND process_id = ?`, orgID, processID).Scan(&at)
	return optTime(at), t.err(err, "", "")
}
