package sqlstore

import "wps/internal/wps"

// KeepBadCount keeps a status counter row the batch's merge cannot take
// (an int64 count), for a test of a flush that panics; false on
// PostgreSQL, which keeps no rows.
func KeepBadCount(x wps.Tx, orgID string) (bool, error) {
	t := x.(*tx)
	if t.adds == nil {
		return false, nil
	}
	return true, t.add(countsTable, []any{orgID, "p", "OPEN", int64(1)})
}
