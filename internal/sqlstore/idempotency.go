package sqlstore

import "wps/internal/wps"

func (t *tx) GetIdempotent(scope, key string) (wps.Idempotent, error) {
	r := wps.Idempotent{Scope: scope, Key: key}
	var header string
	var created int64
	err := t.queryRow(`SELECT request_hash, done, status, header, body, created_at FROM idempotency WHERE scope = ? AND key = ?`,
		scope, key).Scan(&r.RequestHash, &r.Done, &r.Status, &header, &r.Body, &created)
	if err != nil {
		return r, t.err(err, "idempotency key", "")
	}
	fromJSON(header, &r.Header)
	r.CreatedAt = wps.FromMillis(created)
	return r, nil
}

func (t *tx) ReserveIdempotent(r wps.Idempotent) error {
	_, err := t.exec(`INSERT INTO idempotency (scope, key, request_hash, done, created_at) VALUES (?, ?, ?, ?, ?)`,
		r.Scope, r.Key, r.RequestHash, false, r.CreatedAt.Millis())
	return t.err(err, "", "idempotency key in use")
}

func (t *tx) CompleteIdempotent(r wps.Idempotent) error {
	res, err := t.exec(`UPDATE idempotency SET done = ?, status = ?, header = ?, body = ? WHERE scope = ? AND key = ?`,
		true, r.Status, jsonText(r.Header), string(r.Body), r.Scope, r.Key)
	return t.err(affected(res, err, "idempotency key"), "idempotency key", "")
}

func (t *tx) DeleteIdempotent(scope, key string) error {
	_, err := t.exec(`DELETE FROM idempotency WHERE scope = ? AND key = ?`, scope, key)
	return t.err(err, "", "")
}
