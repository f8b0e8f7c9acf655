package sqlstore

import "wps/internal/wps"

const delegationCols = `id, org_id, from_user_id, to_user_id, starts_at, ends_at, policy_names, reason, created_by, created_at, revoked_at`

func scanDelegation(s interface{ Scan(...any) error }) (wps.Delegation, error) {
	var d wps.Delegation
	var names string
	var starts, ends, created, revoked int64
	if err := s.Scan(&d.ID, &d.OrgID, &d.FromUserID, &d.ToUserID, &starts, &ends, &names, &d.Reason, &d.CreatedBy, &created, &revoked); err != nil {
		return d, err
	}
	fromJSON(names, &d.PolicyNames)
	if d.PolicyNames == nil {
		d.PolicyNames = []string{}
	}
	d.StartsAt, d.EndsAt, d.CreatedAt = wps.FromMillis(starts), wps.FromMillis(ends), wps.FromMillis(created)
	if revoked > 0 {
		d.RevokedAt = wps.FromMillis(revoked)
	}
	return d, nil
}

func (t *tx) CreateDelegation(d wps.Delegation) error {
	names := d.PolicyNames
	if names == nil {
		names = []string{}
	}
	_, err := t.exec(`INSERT INTO delegations (`+delegationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
		d.ID, d.OrgID, d.FromUserID, d.ToUserID, d.StartsAt.Millis(), d.EndsAt.Millis(), jsonText(names), d.Reason, d.CreatedBy, d.CreatedAt.Millis())
	return t.err(err, "delegation", "delegation exists")
}

func (t *tx) GetDelegation(orgID, id string) (wps.Delegation, error) {
	d, err := scanDelegation(t.queryRow(`SELECT `+delegationCols+` FROM delegations WHERE org_id = ? AND id = ?`, orgID, id))
	return d, t.err(err, "delegation", "")
}

func (t *tx) ListDelegations(orgID, userID string, now wps.Time) ([]wps.Delegation, error) {
	q := `SELECT ` + delegationCols + ` FROM delegations WHERE org_id = ? AND revoked_at = 0 AND ends_at > ?`
	args := []any{orgID, now.Millis()}
	if userID != "" {
		q += ` AND (to_user_id = ? OR from_user_id = ?)`
		args = append(args, userID, userID)
	}
	rows, err := t.query(q+` ORDER BY starts_at, id`, args...)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanDelegation)
	return list, t.err(err, "", "")
}

func (t *tx) RevokeDelegation(orgID, id string, at wps.Time) error {
	res, err := t.exec(`UPDATE delegations SET revoked_at = ? WHERE org_id = ? AND id = ? AND revoked_at = 0`, at.Millis(), orgID, id)
	return t.err(affected(res, err, "delegation"), "delegation", "")
}
