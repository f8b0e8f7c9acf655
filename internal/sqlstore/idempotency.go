package sqlstore

import "wps/internal/wps"

func (t *tx) GetIdempotent(scope, key string) (wps.Idempotent, error) {
	r := wps.Idempotent{Scope: scope, Key: key}
	var header string
	var created, lease int64
	err := t.queryRow(`SELECT request_hash, done, committed, status, header, body, created_at, lease_until FROM idempotency WHERE scope = ? AND key = ?`,
		scope, key).Scan(&r.RequestHash, &r.Done, &r.Committed, &r.Status, &header, &r.Body, &created, &lease)
	if err != nil {
		return r, t.err(err, "idempotency key", "")
	}
	fromJSON(header, &r.Header)
	r.CreatedAt, r.LeaseUntil = wps.FromMillis(created), wps.FromMillis(lease)
	return r, nil
}

func (t *tx) ReserveIdempotent(r wps.Idempotent) error {
	_, err := t.exec(`INSERT INTO idempotency (scope, key, request_hash, done, created_at, lease_until) VALUES (?, ?, ?, ?, ?, ?)`,
		r.Scope, r.Key, r.RequestHash, false, r.CreatedAt.Millis(), r.LeaseUntil.Millis())
	return t.err(err, "", "idempotency key in use")
}

func (t *tx) ExtendIdempotent(scope, key string, createdAt, until wps.Time) error {
	_, err := t.exec(`UPDATE idempotency SET lease_until = ? WHERE scope = ? AND key = ? AND created_at = ? AND done = ?`,
		until.Millis(), scope, key, createdAt.Millis(), false)
	return t.err(err, "", "")
}

func (t *tx) CompleteIdempotent(r wps.Idempotent) error {
	res, err := t.exec(`UPDATE idempotency SET done = ?, status = ?, header = ?, body = ? WHERE scope = ? AND key = ? AND created_at = ?`,
		true, r.Status, jsonText(r.Header), string(r.Body), r.Scope, r.Key, r.CreatedAt.Millis())
	return t.err(affected(res, err, "idempotency key"), "idempotency key", "")
}

func (t *tx) CommitIdempotent(scope, key string, createdAt wps.Time) error {
	_, err := t.exec(`UPDATE idempotency SET committed = ? WHERE scope = ? AND key = ? AND created_at = ?`, true, scope, key, createdAt.Millis())
	return t.err(err, "", "")
}

func (t *tx) DeleteIdempotent(scope, key string, createdAt wps.Time) error {
	_, err := t.exec(`DELETE FROM idempotency WHERE scope = ? AND key = ? AND created_at = ?`, scope, key, createdAt.Millis())
	return t.err(err, "", "")
}

func (t *tx) DeleteIdempotentBefore(before wps.Time, limit int) (int, error) {
	res, err := t.exec(`DELETE FROM idempotency WHERE (scope, key) IN (SELECT scope, key FROM idempotency WHERE created_at < ?`+limitN(limit)+`)`,
		before.Millis())
	if err != nil {
		return 0, t.err(err, "", "")
	}
	n, err := res.RowsAffected()
	return int(n), t.err(err, "", "")
}
