package sqlstore

import "wps/internal/wps"

const chatCols = `id, org_id, kind, url, events, created_at, updated_at`

func scanChatChannel(s interface{ Scan(...any) error }) (wps.ChatChannel, error) {
	var c wps.ChatChannel
	var events string
	var created, updated int64
	if err := s.Scan(&c.ID, &c.OrgID, &c.Kind, &c.URL, &events, &created, &updated); err != nil {
		return c, err
	}
	fromJSON(events, &c.Events)
	if c.Events == nil {
		c.Events = []string{}
	}
	c.CreatedAt, c.UpdatedAt = wps.FromMillis(created), wps.FromMillis(updated)
	return c, nil
}

func (t *tx) CreateChatChannel(c wps.ChatChannel) error {
	_, err := t.exec(`INSERT INTO chat_channels (`+chatCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.OrgID, c.Kind, c.URL, jsonText(c.Events), c.CreatedAt.Millis(), c.UpdatedAt.Millis())
	return t.err(err, "chat channel", "chat channel exists")
}

func (t *tx) GetChatChannel(orgID, id string) (wps.ChatChannel, error) {
	c, err := scanChatChannel(t.queryRow(`SELECT `+chatCols+` FROM chat_channels WHERE org_id = ? AND id = ?`, orgID, id))
	return c, t.err(err, "chat channel", "")
}

func (t *tx) ListChatChannels(orgID string) ([]wps.ChatChannel, error) {
	rows, err := t.query(`SELECT `+chatCols+` FROM chat_channels WHERE org_id = ? ORDER BY id`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanChatChannel)
	return list, t.err(err, "", "")
}

func (t *tx) DeleteChatChannel(orgID, id string) error {
	res, err := t.exec(`DELETE FROM chat_channels WHERE org_id = ? AND id = ?`, orgID, id)
	return t.err(affected(res, err, "chat channel"), "chat channel", "")
}
