package sqlstore

import (
	"database/sql"
	"errors"
	"slices"
	"strings"

	"wps/internal/wps"
)

const notificationCols = `id, org_id, kind, user_id, recipient, subject, body, status, attempts, next_attempt_at, locked_until,
	give_up_at, last_error, created_at, sent_at`

func scanNotification(s interface{ Scan(...any) error }) (wps.Notification, error) {
	var n wps.Notification
	var next, giveUp, created int64
	var locked, sent sql.NullInt64
	if err := s.Scan(&n.ID, &n.OrgID, &n.Kind, &n.UserID, &n.To, &n.Subject, &n.Body, &n.Status, &n.Attempts, &next, &locked,
		&giveUp, &n.LastError, &created, &sent); err != nil {
		return n, err
	}
	n.NextAttemptAt, n.GiveUpAt, n.CreatedAt = wps.FromMillis(next), wps.FromMillis(giveUp), wps.FromMillis(created)
	n.LockedUntil, n.SentAt = optTime(locked), optTime(sent)
	return n, nil
}

func (t *tx) CreateNotification(n wps.Notification) error {
	err := t.later(`INSERT INTO notifications (`+notificationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, n.OrgID, n.Kind, n.UserID, n.To, n.Subject, n.Body, n.Status, n.Attempts, n.NextAttemptAt.Millis(), nullTime(n.LockedUntil),
		n.GiveUpAt.Millis(), n.LastError, n.CreatedAt.Millis(), nullTime(n.SentAt))
	return t.err(err, "notification", "notification exists")
}

func (t *tx) ListNotifications(orgID string, q wps.NotificationQuery) ([]wps.Notification, int, error) {
	where := `org_id = ?`
	args := []any{orgID}
	for _, f := range []struct{ col, v string }{{"user_id", q.UserID}, {"kind", q.Kind}, {"status", q.Status}} {
		if f.v != "" {
			where += ` AND ` + f.col + ` = ` + asText
			args = append(args, f.v)
		}
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM notifications WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+notificationCols+` FROM notifications WHERE `+where+` ORDER BY id DESC`+page(q.Page), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	list, err := collect(rows, scanNotification)
	return list, total, t.err(err, "", "")
}

// DueNotifications reads the partial index notifications_due: the pending
// messages by next attempt.
func (t *tx) DueNotifications(now wps.Time, limit int) ([]string, error) {
	rows, err := t.query(`SELECT id FROM notifications WHERE status = 'PENDING' AND next_attempt_at <= ?
		AND (locked_until IS NULL OR locked_until <= ?) ORDER BY next_attempt_at, id`+limitN(limit), now.Millis(), now.Millis())
	if err != nil {
		return nil, t.err(err, "", "")
	}
	ids, err := collect(rows, func(s interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, s.Scan(&id)
	})
	return ids, t.err(err, "", "")
}

// ClaimNotifications checks again, under the rows' locks on PostgreSQL
// (SKIP LOCKED: a message another worker is claiming is left to it; on
// SQLite the one writer serializes claims), that each message is still due
// and free, then leases them in one statement.
func (t *tx) ClaimNotifications(ids []string, now, leaseUntil wps.Time) ([]wps.Notification, error) {
	if len(ids) == 0 {
		return []wps.Notification{}, nil
	}
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE SKIP LOCKED`
	}
	args := make([]any, 0, len(ids)+2)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, now.Millis(), now.Millis())
	rows, err := t.query(`SELECT `+notificationCols+` FROM notifications WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)
		AND status = 'PENDING' AND next_attempt_at <= ? AND (locked_until IS NULL OR locked_until <= ?)`+skip, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	got, err := collect(rows, scanNotification)
	if err != nil || len(got) == 0 {
		return got, t.err(err, "", "")
	}
	slices.SortFunc(got, func(a, b wps.Notification) int { return slices.Index(ids, a.ID) - slices.Index(ids, b.ID) })
	leased := make([]string, len(got))
	for i := range got {
		got[i].Attempts++
		got[i].LockedUntil = &leaseUntil
		leased[i] = got[i].ID
	}
	return got, t.lease("notifications", leaseUntil, leased)
}

func (t *tx) FinishNotification(n wps.Notification) error {
	_, err := t.exec(`UPDATE notifications SET status = ?, attempts = ?, next_attempt_at = ?, locked_until = ?, last_error = ?,
		sent_at = ?, body = ?, subject = ? WHERE org_id = ? AND id = ? AND status = 'PENDING'`,
		n.Status, n.Attempts, n.NextAttemptAt.Millis(), nullTime(n.LockedUntil), n.LastError, nullTime(n.SentAt), n.Body, n.Subject, n.OrgID, n.ID)
	return t.err(err, "notification", "")
}

const resetCols = `id, org_id, user_id, token_hash, expires_at, used_at, created_at`

func (t *tx) CreatePasswordReset(r wps.PasswordReset) error {
	_, err := t.exec(`INSERT INTO password_resets (`+resetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.OrgID, r.UserID, r.TokenHash, r.ExpiresAt.Millis(), nullTime(r.UsedAt), r.CreatedAt.Millis())
	return t.err(err, "password reset", "password reset exists")
}

func (t *tx) GetPasswordResetByHash(hash string) (wps.PasswordReset, error) {
	var r wps.PasswordReset
	var expires, created int64
	var used sql.NullInt64
	err := t.queryRow(`SELECT `+resetCols+` FROM password_resets WHERE token_hash = ?`+t.forUpdate(), hash).
		Scan(&r.ID, &r.OrgID, &r.UserID, &r.TokenHash, &expires, &used, &created)
	r.ExpiresAt, r.CreatedAt, r.UsedAt = wps.FromMillis(expires), wps.FromMillis(created), optTime(used)
	return r, t.err(err, "password reset", "")
}

func (t *tx) EndPasswordResets(orgID, userID string, at wps.Time) error {
	_, err := t.exec(`UPDATE password_resets SET used_at = ? WHERE org_id = ? AND user_id = ? AND used_at IS NULL`, at.Millis(), orgID, userID)
	return t.err(err, "", "")
}

func (t *tx) GetNotificationPref(orgID, userID string) (string, error) {
	var pref string
	err := t.queryRow(`SELECT email FROM notification_prefs WHERE org_id = ? AND user_id = ?`, orgID, userID).Scan(&pref)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return pref, t.err(err, "", "")
}

func (t *tx) PutNotificationPref(orgID, userID, email string, at wps.Time) error {
	_, err := t.exec(`INSERT INTO notification_prefs (org_id, user_id, email, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (org_id, user_id) DO UPDATE SET email = excluded.email, updated_at = excluded.updated_at`, orgID, userID, email, at.Millis())
	return t.err(err, "", "")
}

func (t *tx) ListNotificationPrefs(orgID string) (map[string]string, error) {
	rows, err := t.query(`SELECT user_id, email FROM notification_prefs WHERE org_id = ? AND email <> 'immediate'`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	pairs, err := collect(rows, func(s interface{ Scan(...any) error }) ([2]string, error) {
		var p [2]string
		return p, s.Scan(&p[0], &p[1])
	})
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		out[p[0]] = p[1]
	}
	return out, t.err(err, "", "")
}

// ClaimDigests reads the partial index notification_prefs_daily and locks
// the rows it returns until the transaction ends.
func (t *tx) ClaimDigests(now wps.Time, limit int) ([]wps.DigestDue, error) {
	skip := ""
	if t.db.engine == Postgres {
		skip = ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := t.query(`SELECT org_id, user_id FROM notification_prefs WHERE email = 'daily' AND digest_due_at <= ?
		ORDER BY digest_due_at`+limitN(limit)+skip, now.Millis())
	if err != nil {
		return nil, t.err(err, "", "")
	}
	due, err := collect(rows, func(s interface{ Scan(...any) error }) (wps.DigestDue, error) {
		var d wps.DigestDue
		return d, s.Scan(&d.OrgID, &d.UserID)
	})
	return due, t.err(err, "", "")
}

func (t *tx) SetDigestDue(orgID, userID string, sent, next wps.Time) error {
	_, err := t.exec(`UPDATE notification_prefs SET digest_at = ?, digest_due_at = ? WHERE org_id = ? AND user_id = ?`,
		sent.Millis(), next.Millis(), orgID, userID)
	return t.err(err, "", "")
}
