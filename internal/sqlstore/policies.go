package sqlstore

import "wps/internal/wps"

const policyCols = `id, org_id, name, roles, functions, created_at, updated_at`

func scanPolicy(s interface{ Scan(...any) error }) (wps.Policy, error) {
	var p wps.Policy
	var roles, fns string
	var created, updated int64
	if err := s.Scan(&p.ID, &p.OrgID, &p.Name, &roles, &fns, &created, &updated); err != nil {
		return p, err
	}
	fromJSON(roles, &p.Roles)
	fromJSON(fns, &p.Functions)
	p.CreatedAt, p.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	return p, nil
}

func (t *tx) CreatePolicy(p wps.Policy) error {
	_, err := t.exec(`INSERT INTO policies (`+policyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrgID, p.Name, jsonText(p.Roles), jsonText(p.Functions), p.CreatedAt.Millis(), p.UpdatedAt.Millis())
	return t.err(err, "policy", "a policy named "+p.Name+" exists")
}

func (t *tx) GetPolicy(orgID, id string) (wps.Policy, error) {
	p, err := scanPolicy(t.queryRow(`SELECT `+policyCols+` FROM policies WHERE org_id = ? AND id = ?`+t.forUpdate(), orgID, id))
	return p, t.err(err, "policy", "")
}

func (t *tx) ListPolicies(orgID string) ([]wps.Policy, error) {
	rows, err := t.query(`SELECT `+policyCols+` FROM policies WHERE org_id = ? ORDER BY name`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanPolicy)
	return list, t.err(err, "", "")
}

func (t *tx) UpdatePolicy(p wps.Policy) error {
	res, err := t.exec(`UPDATE policies SET name = ?, roles = ?, functions = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
		p.Name, jsonText(p.Roles), jsonText(p.Functions), p.UpdatedAt.Millis(), p.OrgID, p.ID)
	return t.err(affected(res, err, "policy"), "policy", "a policy named "+p.Name+" exists")
}

func (t *tx) DeletePolicy(orgID, id string) error {
	res, err := t.exec(`DELETE FROM policies WHERE org_id = ? AND id = ?`, orgID, id)
	return t.err(affected(res, err, "policy"), "policy", "")
}
