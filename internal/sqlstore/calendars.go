package sqlstore

import "wps/internal/wps"

func (t *tx) PutCalendar(orgID string, from wps.Time, spec string) error {
	_, err := t.exec(`INSERT INTO org_calendars (org_id, valid_from, spec) VALUES (?, ?, ?)
		ON CONFLICT (org_id, valid_from) DO UPDATE SET spec = excluded.spec`, orgID, from.Millis(), spec)
	return t.err(err, "", "")
}

func (t *tx) ListCalendars(orgID string) ([]wps.CalendarVersion, error) {
	rows, err := t.query(`SELECT valid_from, spec FROM org_calendars WHERE org_id = ? ORDER BY valid_from`, orgID)
	if err != nil {
		return nil, t.err(err, "", "")
	}
	list, err := collect(rows, scanCalendar)
	return list, t.err(err, "", "")
}

func scanCalendar(s interface{ Scan(...any) error }) (wps.CalendarVersion, error) {
	var v wps.CalendarVersion
	var from int64
	var spec string
	err := s.Scan(&from, &spec)
	v.From = wps.FromMillis(from)
	fromJSON(spec, &v.Calendar)
	return v, err
}
