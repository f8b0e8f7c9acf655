package sqlstore

import (
	"database/sql"
	"encoding/json"
	"strings"

	gojson "github.com/goccy/go-json"

	"wps/internal/wps"
)

// jsonText is the stored form of a list or map. It stays encoding/json,
// which ledger hashes are computed with: the ledger is verified by hashing
// what was stored, and goccy/go-json writes some numbers differently
// (1e-07 for 1e-7).
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain values are stored this way
	}
	return string(b)
}

// fromJSON reads a stored list or map; the store wrote it, so it parses.
// goccy/go-json decodes it several times faster than encoding/json.
func fromJSON(s string, dst any) {
	if err := gojson.UnmarshalNoEscape([]byte(s), dst); err != nil {
		panic(err)
	}
}

// fromJSONNumbers reads stored values keeping numbers exact (json.Number).
// goccy/go-json refuses a number a double cannot hold, which the service
// no longer accepts but older data may hold: encoding/json reads those.
func fromJSONNumbers(s string, dst any) error {
	d := gojson.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if d.Decode(dst) == nil {
		return nil
	}
	e := json.NewDecoder(strings.NewReader(s))
	e.UseNumber()
	return e.Decode(dst)
}

func (t *tx) ClaimBootstrap(at wps.Time) (bool, error) {
	res, err := t.exec(`INSERT INTO bootstrap (id, created_at) VALUES (1, ?) ON CONFLICT DO NOTHING`, at.Millis())
	if err != nil {
		return false, t.err(err, "", "")
	}
	n, err := res.RowsAffected()
	return n == 1, t.err(err, "", "")
}

func (t *tx) CreateOrg(o wps.Org) error {
	_, err := t.exec(`INSERT INTO orgs (id, name, logo_key, pinned_url, theme_color, operations, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.Name, o.LogoKey, o.PinnedURL, o.ThemeColor, jsonText(o.Operations), o.CreatedAt.Millis(), o.UpdatedAt.Millis())
	return t.err(err, "organization", "organization exists")
}

func (t *tx) GetOrg(orgID string) (wps.Org, error) {
	var o wps.Org
	var ops string
	var created, updated int64
	err := t.queryRow(`SELECT id, name, logo_key, pinned_url, theme_color, operations, created_at, updated_at
		FROM orgs WHERE id = ?`, orgID).
		Scan(&o.ID, &o.Name, &o.LogoKey, &o.PinnedURL, &o.ThemeColor, &ops, &created, &updated)
	if err != nil {
		return o, t.err(err, "organization", "")
	}
	fromJSON(ops, &o.Operations)
	o.CreatedAt, o.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	return o, nil
}

func (t *tx) UpdateOrg(o wps.Org) error {
	res, err := t.exec(`UPDATE orgs SET logo_key = ?, pinned_url = ?, theme_color = ?, operations = ?, updated_at = ?
		WHERE id = ?`, o.LogoKey, o.PinnedURL, o.ThemeColor, jsonText(o.Operations), o.UpdatedAt.Millis(), o.ID)
	return t.err(affected(res, err, "organization"), "organization", "")
}

func (t *tx) LockOrg(orgID string) error {
	var id string
	err := t.queryRow(`SELECT id FROM orgs WHERE id = ?`+t.forUpdate(), orgID).Scan(&id)
	return t.err(err, "organization", "")
}

const userCols = `id, org_id, email, name, roles, status, password_hash, last_sign_in_at, created_at, updated_at, external_id, time_zone, locale`

func scanUser(s interface{ Scan(...any) error }) (wps.User, error) {
	var u wps.User
	var roles string
	var signIn, created, updated int64
	if err := s.Scan(&u.ID, &u.OrgID, &u.Email, &u.Name, &roles, &u.Status, &u.PasswordHash, &signIn, &created, &updated, &u.ExternalID, &u.TimeZone, &u.Locale); err != nil {
		return u, err
	}
	fromJSON(roles, &u.Roles)
	u.LastSignInAt, u.CreatedAt, u.UpdatedAt = wps.FromMillis(signIn), wps.FromMillis(created), wps.FromMillis(updated)
	return u, nil
}

func (t *tx) CreateUser(u wps.User) error {
	if u.Status == "" {
		u.Status = wps.UserActive
	}
	_, err := t.exec(`INSERT INTO users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.OrgID, u.Email, u.Name, jsonText(u.Roles), u.Status, u.PasswordHash, u.LastSignInAt.Millis(), u.CreatedAt.Millis(), u.UpdatedAt.Millis(), u.ExternalID,
		u.TimeZone, u.Locale)
	return t.err(err, "user", "a user with this email exists")
}

func (t *tx) UpdateUser(u wps.User) error {
	res, err := t.exec(`UPDATE users SET email = ?, name = ?, status = ?, password_hash = ?, last_sign_in_at = ?, updated_at = ?, external_id = ?,
		time_zone = ?, locale = ? WHERE org_id = ? AND id = ?`,
		u.Email, u.Name, u.Status, u.PasswordHash, u.LastSignInAt.Millis(), u.UpdatedAt.Millis(), u.ExternalID, u.TimeZone, u.Locale, u.OrgID, u.ID)
	return t.err(affected(res, err, "user"), "user", "a user with this email exists")
}

func (t *tx) FindUsersByEmail(email string) ([]wps.User, error) {
	rows, err := t.query(`SELECT `+userCols+` FROM users WHERE email = ? AND email <> '' ORDER BY last_sign_in_at DESC, id`+limitN(100), email)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	users, err := collect(rows, scanUser)
	return users, t.err(err, "", "")
}

func (t *tx) RevokeUserAPIKeys(orgID, userID string, at wps.Time) error {
	_, err := t.exec(`UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND user_id = ? AND revoked_at IS NULL`, at.Millis(), orgID, userID)
	return t.err(err, "", "")
}

const sessionCols = `id, org_id, user_id, token_hash, created_at, last_seen_at, expires_at`

func (t *tx) CreateSession(s wps.Session) error {
	_, err := t.exec(`INSERT INTO sessions (`+sessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.OrgID, s.UserID, s.TokenHash, s.CreatedAt.Millis(), s.LastSeenAt.Millis(), s.ExpiresAt.Millis())
	return t.err(err, "session", "session exists")
}

func (t *tx) GetSessionByHash(hash string) (wps.Session, error) {
	var s wps.Session
	var created, seen, expires int64
	err := t.queryRow(`SELECT `+sessionCols+` FROM sessions WHERE token_hash = ?`, hash).
		Scan(&s.ID, &s.OrgID, &s.UserID, &s.TokenHash, &created, &seen, &expires)
	s.CreatedAt, s.LastSeenAt, s.ExpiresAt = wps.FromMillis(created), wps.FromMillis(seen), wps.FromMillis(expires)
	return s, t.err(err, "session", "")
}

func (t *tx) TouchSession(orgID, id string, at wps.Time) error {
	_, err := t.exec(`UPDATE sessions SET last_seen_at = ? WHERE org_id = ? AND id = ?`, at.Millis(), orgID, id)
	return t.err(err, "", "")
}

func (t *tx) DeleteSessions(orgID, userID, exceptID string) error {
	_, err := t.exec(`DELETE FROM sessions WHERE org_id = ? AND user_id = ? AND id <> ?`, orgID, userID, exceptID)
	return t.err(err, "", "")
}

func (t *tx) DeleteSession(orgID, id string) error {
	_, err := t.exec(`DELETE FROM sessions WHERE org_id = ? AND id = ?`, orgID, id)
	return t.err(err, "", "")
}

func (t *tx) DeleteExpiredSessions(expiredBefore, idleBefore wps.Time, limit int) (int, error) {
	res, err := t.exec(`DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at < ? OR last_seen_at < ?`+limitN(limit)+`)`,
		expiredBefore.Millis(), idleBefore.Millis())
	if err != nil {
		return 0, t.err(err, "", "")
	}
	n, err := res.RowsAffected()
	return int(n), t.err(err, "", "")
}

func (t *tx) GetUser(orgID, userID string) (wps.User, error) {
	u, err := scanUser(t.queryRow(`SELECT `+userCols+` FROM users WHERE org_id = ? AND id = ?`, orgID, userID))
	return u, t.err(err, "user", "")
}

func (t *tx) LockUser(orgID, userID string) (wps.User, error) {
	u, err := scanUser(t.queryRow(`SELECT `+userCols+` FROM users WHERE org_id = ? AND id = ?`+t.forUpdate(), orgID, userID))
	return u, t.err(err, "user", "")
}

func (t *tx) FindUserByEmail(orgID, email string) (wps.User, error) {
	u, err := scanUser(t.queryRow(`SELECT `+userCols+` FROM users WHERE org_id = ? AND email = ? AND email <> ''`, orgID, email))
	return u, t.err(err, "user", "")
}

func (t *tx) ListUsers(orgID string, p wps.Page) ([]wps.User, int, error) {
	var total int
	if err := t.queryRow(`SELECT count(*) FROM users WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+userCols+` FROM users WHERE org_id = ? ORDER BY id`+page(p), orgID)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	users, err := collect(rows, scanUser)
	return users, total, t.err(err, "", "")
}

// FindUsers is ListUsers narrowed to the users matching every field of q
// that is set (a role by the quoted name, as CountUsersWithRole).
func (t *tx) FindUsers(orgID string, q wps.UserQuery, p wps.Page) ([]wps.User, int, error) {
	where, args := ` WHERE org_id = ?`, []any{orgID}
	if q.Email != "" {
		where, args = where+` AND email = ?`, append(args, q.Email)
	}
	if q.ExternalID != "" {
		where, args = where+` AND external_id = ?`, append(args, q.ExternalID)
	}
	if q.Role != "" {
		where, args = where+` AND roles LIKE `+asText, append(args, `%"`+q.Role+`"%`)
	}
	var total int
	if err := t.queryRow(`SELECT count(*) FROM users`+where, args...).Scan(&total); err != nil {
		return nil, 0, t.err(err, "", "")
	}
	rows, err := t.query(`SELECT `+userCols+` FROM users`+where+` ORDER BY id`+page(p), args...)
	if err != nil {
		return nil, 0, t.err(err, "", "")
	}
	users, err := collect(rows, scanUser)
	return users, total, t.err(err, "", "")
}

func (t *tx) SetUserRoles(orgID, userID string, roles []string, at wps.Time) error {
	res, err := t.exec(`UPDATE users SET roles = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
		jsonText(roles), at.Millis(), orgID, userID)
	return t.err(affected(res, err, "user"), "user", "")
}

// CountUsersWithRole relies on roles being stored as a JSON array of
// [A-Z0-9_] strings, so that the quoted name matches exactly one element.
func (t *tx) CountUsersWithRole(orgID, role string) (int, error) {
	var n int
	err := t.queryRow(`SELECT count(*) FROM users WHERE org_id = ? AND status = 'ACTIVE' AND roles LIKE `+asText, orgID, `%"`+role+`"%`).Scan(&n)
	return n, t.err(err, "", "")
}

const keyCols = `id, org_id, user_id, name, prefix, hash, created_at, revoked_at`

func scanKey(s interface{ Scan(...any) error }) (wps.APIKey, error) {
	var k wps.APIKey
	var created int64
	var revoked sql.NullInt64
	if err := s.Scan(&k.ID, &k.OrgID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &created, &revoked); err != nil {
		return k, err
	}
	k.CreatedAt = wps.FromMillis(created)
	k.RevokedAt = optTime(revoked)
	return k, nil
}

func (t *tx) CreateAPIKey(k wps.APIKey) error {
	_, err := t.exec(`INSERT INTO api_keys (`+keyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
		k.ID, k.OrgID, k.UserID, k.Name, k.Prefix, k.Hash, k.CreatedAt.Millis())
	return t.err(err, "API key", "API key exists")
}

func (t *tx) GetAPIKeyByHash(hash string) (wps.APIKey, error) {
	k, err := scanKey(t.queryRow(`SELECT `+keyCols+` FROM api_keys WHERE hash = ? AND revoked_at IS NULL`, hash))
	return k, t.err(err, "API key", "")
}

func (t *tx) ListAPIKeys(orgID, userID string) ([]wps.APIKey, error) {
	rows, err := t.query(`SELECT `+keyCols+` FROM api_keys WHERE org_id = ? AND user_id = ? AND revoked_at IS NULL ORDER BY id`,
		orgID, userID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	keys, err := collect(rows, scanKey)
	return keys, t.err(err, "", "")
}

func (t *tx) RevokeAPIKey(orgID, userID, keyID string, at wps.Time) error {
	res, err := t.exec(`UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND user_id = ? AND id = ? AND revoked_at IS NULL`,
		at.Millis(), orgID, userID, keyID)
	return t.err(affected(res, err, "API key"), "API key", "")
}

const inviteCols = `id, org_id, email, name, roles, status, token_hash, expires_at, created_at`

func scanInvite(s interface{ Scan(...any) error }) (wps.Invite, error) {
	var i wps.Invite
	var roles string
	var expires, created int64
	if err := s.Scan(&i.ID, &i.OrgID, &i.Email, &i.Name, &roles, &i.Status, &i.TokenHash, &expires, &created); err != nil {
		return i, err
	}
	fromJSON(roles, &i.Roles)
	i.ExpiresAt, i.CreatedAt = wps.FromMillis(expires), wps.FromMillis(created)
	return i, nil
}

func (t *tx) CreateInvite(i wps.Invite) error {
	_, err := t.exec(`INSERT INTO invites (`+inviteCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		i.ID, i.OrgID, i.Email, i.Name, jsonText(i.Roles), i.Status, i.TokenHash, i.ExpiresAt.Millis(), i.CreatedAt.Millis())
	return t.err(err, "invite", "a pending invite for this email exists")
}

func (t *tx) GetInvite(orgID, id string) (wps.Invite, error) {
	i, err := scanInvite(t.queryRow(`SELECT `+inviteCols+` FROM invites WHERE org_id = ? AND id = ?`, orgID, id))
	return i, t.err(err, "invite", "")
}

func (t *tx) GetInviteByTokenHash(hash string) (wps.Invite, error) {
	i, err := scanInvite(t.queryRow(`SELECT `+inviteCols+` FROM invites WHERE token_hash = ?`+t.forUpdate(), hash))
	return i, t.err(err, "invite", "")
}

func (t *tx) FindPendingInvite(orgID, email string) (wps.Invite, error) {
	i, err := scanInvite(t.queryRow(`SELECT `+inviteCols+` FROM invites WHERE org_id = ? AND email = ? AND status = 'PENDING'`+t.forUpdate(), orgID, email))
	return i, t.err(err, "invite", "")
}

func (t *tx) ListInvites(orgID string) ([]wps.Invite, error) {
	rows, err := t.query(`SELECT `+inviteCols+` FROM invites WHERE org_id = ? ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanInvite)
	return list, t.err(err, "", "")
}

func (t *tx) SetInviteStatus(orgID, id, status string) error {
	res, err := t.exec(`UPDATE invites SET status = ? WHERE org_id = ? AND id = ?`, status, orgID, id)
	return t.err(affected(res, err, "invite"), "invite", "")
}

// scanString reads a row of one text column, for collect.
func scanString(s interface{ Scan(...any) error }) (string, error) {
	var v string
	return v, s.Scan(&v)
}

// collect scans every row with scan; the result is never nil.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
